package vfs_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// mountByPath finds the mountinfo entry of the topmost mount at path.
func mountByPath(tr *tree, path string) (vfs.MountInfo, bool) {
	var found vfs.MountInfo
	ok := false
	for _, m := range vfs.Mounts(tr.root) {
		if m.Path == path {
			found, ok = m, true
		}
	}
	return found, ok
}

func TestBindMountShowsTheSameFilesThroughANewMount(t *testing.T) {
	tr := newTree(t)
	tr.ok(vfs.Mkdir(root, tr.target("/src"), 0o755))
	tr.create(root, "/src/f", 0o644)
	tr.ok(vfs.Mkdir(root, tr.target("/dst"), 0o755))
	if _, err := vfs.BindMount(tr.path("/src"), tr.path("/dst"), 0); err != nil {
		t.Fatal(err)
	}
	if a, b := tr.stat("/src/f"), tr.stat("/dst/f"); a.Ino != b.Ino || a.Dev != b.Dev {
		t.Errorf("/dst/f is %d:%d, /src/f %d:%d: want one file", b.Dev, b.Ino, a.Dev, a.Ino)
	}
	// A name made through one is there through the other.
	tr.create(root, "/dst/g", 0o644)
	if _, err := tr.res().Lookup("/src/g", false); err != nil {
		t.Errorf("/src/g after creating /dst/g: %v", err)
	}
	if tr.path("/dst").Mount == tr.path("/src").Mount {
		t.Error("/dst is reached through the mount of /src: want a mount of its own")
	}
}

func TestReadOnlyBindOfAPathOnItselfRefusesWritesThere(t *testing.T) {
	tr := newTree(t)
	tr.ok(vfs.Mkdir(root, tr.target("/etc"), 0o755))
	tr.ok(vfs.Mkdir(root, tr.target("/etc/sub"), 0o755))
	p := tr.path("/etc/sub")
	if _, err := vfs.BindMount(p, p, unix.MS_RDONLY); err != nil {
		t.Fatal(err)
	}
	if _, err := vfs.Create(root, tr.target("/etc/sub/x"), 0o644); err != unix.EROFS {
		t.Errorf("create under the read-only bind: %v, want EROFS", err)
	}
	// The rest of the file system, reached through its own mount, is
	// still writable.
	if _, err := vfs.Create(root, tr.target("/etc/y"), 0o644); err != nil {
		t.Errorf("create beside the bind: %v", err)
	}
	m, ok := mountByPath(tr, "/etc/sub")
	if !ok {
		t.Fatal("no mountinfo entry for /etc/sub")
	}
	// Linux: the mount is ro, its superblock (the tmpfs) still rw, and
	// its root is the bound directory within the file system.
	if m.Flags&unix.MS_RDONLY == 0 || m.SuperRO || m.Root != "/etc/sub" || m.Type != "tmpfs" {
		t.Errorf("mountinfo for the bind = %+v; want a ro mount of the rw tmpfs rooted at /etc/sub", m)
	}
	if rootMount, _ := mountByPath(tr, "/"); m.ParentID != rootMount.ID {
		t.Errorf("the bind's parent id %d, want the root mount's %d", m.ParentID, rootMount.ID)
	}
}

func TestRecursiveBindBringsTheMountsBelowAndAPlainOneDoesNot(t *testing.T) {
	tr := newTree(t)
	tr.ok(vfs.Mkdir(root, tr.target("/src"), 0o755))
	tr.ok(vfs.Mkdir(root, tr.target("/src/sub"), 0o755))
	inner := tmpfs.New(testMem(t), tmpfs.DefaultOptions())
	if _, err := vfs.Attach(tr.path("/src/sub"), inner, "tmpfs", unix.MS_NOEXEC); err != nil {
		t.Fatal(err)
	}
	tr.create(root, "/src/sub/in-inner", 0o644)
	for _, c := range []struct {
		dst   string
		flags int
		sees  bool
	}{{"/plain", 0, false}, {"/rec", unix.MS_REC, true}} {
		tr.ok(vfs.Mkdir(root, tr.target(c.dst), 0o755))
		if _, err := vfs.BindMount(tr.path("/src"), tr.path(c.dst), c.flags); err != nil {
			t.Fatal(err)
		}
		_, err := tr.res().Lookup(c.dst+"/sub/in-inner", false)
		if sees := err == nil; sees != c.sees {
			t.Errorf("bind with flags %#x: %s/sub/in-inner found %v, want %v", c.flags, c.dst, sees, c.sees)
		}
	}
	m, ok := mountByPath(tr, "/rec/sub")
	if !ok || m.Flags != unix.MS_NOEXEC {
		t.Errorf("the copy of /src/sub at /rec/sub: %+v (listed %v), want its original's noexec", m, ok)
	}
	if _, ok := mountByPath(tr, "/plain/sub"); ok {
		t.Error("a plain bind listed a mount at /plain/sub")
	}
}

func TestBindMountOfADirectoryOnAFileIsENOTDIR(t *testing.T) {
	tr := newTree(t)
	tr.create(root, "/file", 0o644)
	if _, err := vfs.BindMount(tr.path("/tmp"), tr.path("/file"), 0); err != unix.ENOTDIR {
		t.Errorf("bind of a directory on a file: %v, want ENOTDIR", err)
	}
	if _, err := vfs.BindMount(tr.path("/file"), tr.path("/tmp"), 0); err != unix.ENOTDIR {
		t.Errorf("bind of a file on a directory: %v, want ENOTDIR", err)
	}
}

func TestMountsListsParentsBeforeChildrenWithDistinctIDs(t *testing.T) {
	tr := newTree(t)
	ms := vfs.Mounts(tr.root)
	ids := map[int32]bool{}
	for i, m := range ms {
		if ids[m.ID] {
			t.Errorf("mount id %d listed twice", m.ID)
		}
		ids[m.ID] = true
		if i > 0 && !ids[m.ParentID] {
			t.Errorf("%s (id %d) comes before its parent %d", m.Path, m.ID, m.ParentID)
		}
	}
	if len(ms) == 0 || ms[0].Path != "/" || ids[ms[0].ParentID] {
		t.Errorf("the first mount %+v: want / with a parent id outside the tree", ms[0])
	}
}

func TestMakeMountPathMakesMissingParentsInTheTreeOnly(t *testing.T) {
	tr := newTree(t)
	// /ro is a read-only tmpfs: nothing can be made in it, but mount
	// points can.
	p, err := vfs.MakeMountPath(tr.root, "/ro/a/b/c", true)
	if err != nil {
		t.Fatalf("MakeMountPath: %v", err)
	}
	if !p.Dentry.IsDir() {
		t.Error("the made path is not a directory")
	}
	if _, err := tr.res().Lookup("/ro/a/b", false); err != nil {
		t.Errorf("the made parent /ro/a/b: %v", err)
	}
	f, err := vfs.MakeMountPath(tr.root, "/ro/a/file", false)
	if err != nil || f.Dentry.IsDir() {
		t.Errorf("MakeMountPath of a file: dir %v, %v; want a file", f.Dentry.IsDir(), err)
	}
	tr.create(root, "/plainfile", 0o644)
	if _, err := vfs.MakeMountPath(tr.root, "/plainfile/x", true); err != unix.ENOTDIR {
		t.Errorf("MakeMountPath under a file: %v, want ENOTDIR", err)
	}
	// The runtime makes mount points below any directory, as runc does
	// as root: a user's 0700 home is no obstacle.
	tr.ok(vfs.Mkdir(root, tr.target("/home"), 0o755))
	tr.ok(vfs.Mkdir(root, tr.target("/home/alice"), 0o700))
	tr.ok(vfs.Chown(root, tr.path("/home/alice"), 1000, 1000))
	if _, err := vfs.MakeMountPath(tr.root, "/home/alice/.cache/x", true); err != nil {
		t.Errorf("MakeMountPath below another user's 0700 directory: %v", err)
	}
}

// volatileDir is a directory whose look-ups are never cached (as /proc's)
// with one child, the same inode at every look-up.
type volatileDir struct{ child *volatileDir }

func (d *volatileDir) Stat() (vfs.Stat, error) {
	return vfs.Stat{Ino: 7, Mode: unix.S_IFDIR | 0o555, Nlink: 2}, nil
}
func (d *volatileDir) Lookup(name string) (vfs.Inode, error) {
	if name == "sys" && d.child != nil {
		return d.child, nil
	}
	return nil, unix.ENOENT
}
func (d *volatileDir) ReadDir() ([]vfs.Dirent, error) { return nil, nil }
func (d *volatileDir) Readlink() (string, error)      { return "", unix.EINVAL }
func (d *volatileDir) Open(int) (vfs.FileImpl, error) { return nil, unix.EACCES }
func (d *volatileDir) Volatile() bool                 { return true }

func TestAMountOnAVolatileDirectorysChildIsFoundAtEachLookup(t *testing.T) {
	tr := newTree(t)
	tr.ok(vfs.Mkdir(root, tr.target("/proc"), 0o755))
	if _, err := vfs.Attach(tr.path("/proc"), vfs.NewRoot(&volatileDir{child: &volatileDir{}}), "proc", 0); err != nil {
		t.Fatal(err)
	}
	p := tr.path("/proc/sys")
	if _, err := vfs.BindMount(p, p, unix.MS_RDONLY); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if got := tr.path("/proc/sys"); got.Mount.Flags&unix.MS_RDONLY == 0 {
			t.Errorf("look-up %d of /proc/sys does not reach the read-only bind on it", i)
		}
	}
}
