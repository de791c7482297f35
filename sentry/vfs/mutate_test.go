package vfs_test

import (
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/devfs"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

const allCaps = 1<<41 - 1

var (
	root  = &vfs.Creds{Caps: allCaps}
	alice = &vfs.Creds{FSUID: 1000, FSGID: 1000, Groups: []uint32{50}}
	bob   = &vfs.Creds{FSUID: 1001, FSGID: 1001}
	// noCaps is root without capabilities, as in a container that grants
	// none.
	noCaps = &vfs.Creds{}
)

// tree is a tmpfs root (mode 0755) with /tmp (1777), /ro (a read-only
// tmpfs), /other (another tmpfs) and /dev (devfs, which cannot change).
type tree struct {
	t    *testing.T
	root vfs.Path
}

var (
	memOnce sync.Once
	mem     *memfile.File
)

// testMem is the memory file the tests' tmpfs trees keep data in.
func testMem(t *testing.T) *memfile.File {
	t.Helper()
	memOnce.Do(func() {
		var err error
		if mem, err = memfile.New(); err != nil {
			t.Fatal(err)
		}
	})
	return mem
}

func newTree(t *testing.T) *tree {
	t.Helper()
	opts := tmpfs.DefaultOptions()
	opts.Mode = 0o755
	tr := &tree{t: t, root: vfs.NewRootMount(tmpfs.New(testMem(t), opts), "tmpfs", 0).Root()}
	tr.ok(vfs.Mkdir(root, tr.target("/tmp"), 0o777))
	tr.ok(vfs.Chmod(root, tr.path("/tmp"), 0o1777))
	dev, _ := devfs.New(unix.Timespec{}, nil)
	for _, m := range []struct {
		name  string
		fs    *vfs.Dentry
		flags int
	}{
		{"ro", tmpfs.New(testMem(t), tmpfs.DefaultOptions()), unix.MS_RDONLY},
		{"other", tmpfs.New(testMem(t), tmpfs.DefaultOptions()), 0},
		{"dev", dev, 0},
	} {
		tr.ok(vfs.Mkdir(root, tr.target("/"+m.name), 0o755))
		if _, err := vfs.Attach(tr.path("/"+m.name), m.fs, "tmpfs", m.flags); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

func (tr *tree) res() vfs.Resolver { return vfs.Resolver{Root: tr.root, Start: tr.root, Creds: *root} }

func (tr *tree) target(name string) vfs.Target {
	tr.t.Helper()
	tg, err := tr.res().LookupTarget(name)
	if err != nil {
		tr.t.Fatalf("LookupTarget(%q): %v", name, err)
	}
	return tg
}

func (tr *tree) path(name string) vfs.Path {
	tr.t.Helper()
	p, err := tr.res().Lookup(name, false)
	if err != nil {
		tr.t.Fatalf("Lookup(%q): %v", name, err)
	}
	return p
}

func (tr *tree) stat(name string) vfs.Stat {
	tr.t.Helper()
	st, err := tr.path(name).Dentry.Inode().Stat()
	if err != nil {
		tr.t.Fatal(err)
	}
	return st
}

func (tr *tree) ok(err error) {
	tr.t.Helper()
	if err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *tree) create(c *vfs.Creds, name string, mode uint32) {
	tr.t.Helper()
	_, err := vfs.Create(c, tr.target(name), mode)
	tr.ok(err)
}

func TestErrnos(t *testing.T) {
	tr := newTree(t)
	tr.create(root, "/file", 0o644)
	tr.ok(vfs.Mkdir(root, tr.target("/dir"), 0o755))
	tr.create(root, "/dir/inner", 0o644)
	tr.ok(vfs.Mkdir(root, tr.target("/dir/sub"), 0o755))
	tr.ok(vfs.Mkdir(root, tr.target("/empty"), 0o755))
	tr.ok(vfs.Symlink(root, tr.target("/link"), "file"))
	tr.create(alice, "/tmp/alices", 0o644)
	tr.create(root, "/tmp/roots", 0o666)
	tr.ok(vfs.Mkdir(alice, tr.target("/tmp/alicedir"), 0o755))
	tr.create(bob, "/tmp/bobs", 0o644)

	for _, c := range []struct {
		name string
		op   func() error
		want error
	}{
		// Creating names.
		{"mkdir existing", func() error { return vfs.Mkdir(root, tr.target("/dir"), 0o755) }, unix.EEXIST},
		{"mkdir over a file", func() error { return vfs.Mkdir(root, tr.target("/file/"), 0o755) }, unix.EEXIST},
		{"mkdir .", func() error { return vfs.Mkdir(root, tr.target("/dir/."), 0o755) }, unix.EEXIST},
		{"mkdir /", func() error { return vfs.Mkdir(root, tr.target("/"), 0o755) }, unix.EEXIST},
		{"mkdir read-only", func() error { return vfs.Mkdir(root, tr.target("/ro/x"), 0o755) }, unix.EROFS},
		{"mkdir existing read-only", func() error { return vfs.Mkdir(root, tr.target("/ro"), 0o755) }, unix.EEXIST},
		{"mkdir devfs", func() error { return vfs.Mkdir(root, tr.target("/dev/x"), 0o755) }, unix.EROFS},
		{"mkdir unwritable dir", func() error { return vfs.Mkdir(alice, tr.target("/x"), 0o755) }, unix.EACCES},
		{"mkdir without caps", func() error { return vfs.Mkdir(noCaps, tr.target("/tmp/alicedir/x"), 0o755) }, unix.EACCES},
		{"create name/", func() error { return errOf(vfs.Create(root, tr.target("/new/"), 0o644)) }, unix.ENOENT},
		{"symlink name/", func() error { return vfs.Symlink(root, tr.target("/new/"), "x") }, unix.ENOENT},
		{"mknod dir", func() error { return vfs.Mknod(root, tr.target("/n"), unix.S_IFDIR|0o755, 0) }, unix.EPERM},
		{"mknod bad type", func() error { return vfs.Mknod(root, tr.target("/n"), 0o170000|0o644, 0) }, unix.EINVAL},
		{"mknod device unprivileged", func() error { return vfs.Mknod(alice, tr.target("/tmp/n"), unix.S_IFCHR|0o644, 0) }, unix.EPERM},

		// Links.
		{"link a directory", func() error { return vfs.Link(root, tr.path("/dir"), tr.target("/d2")) }, unix.EPERM},
		{"link over a name", func() error { return vfs.Link(root, tr.path("/file"), tr.target("/dir")) }, unix.EEXIST},
		{"link across mounts", func() error { return vfs.Link(root, tr.path("/file"), tr.target("/other/f")) }, unix.EXDEV},
		{"link into devfs", func() error { return vfs.Link(root, tr.path("/file"), tr.target("/dev/f")) }, unix.EXDEV},
		{"link into read-only", func() error { return vfs.Link(root, tr.path("/file"), tr.target("/ro/f")) }, unix.EROFS},
		{"link someone else's file", func() error { return vfs.Link(bob, tr.path("/tmp/roots"), tr.target("/tmp/l")) }, nil},
		{"link someone else's private file", func() error { return vfs.Link(bob, tr.path("/tmp/alices"), tr.target("/tmp/l2")) }, unix.EPERM},

		// Removing names.
		{"unlink a directory", func() error { return vfs.Unlink(root, tr.target("/dir")) }, unix.EISDIR},
		{"unlink dir/", func() error { return vfs.Unlink(root, tr.target("/dir/")) }, unix.EISDIR},
		{"unlink file/", func() error { return vfs.Unlink(root, tr.target("/file/")) }, unix.ENOTDIR},
		{"unlink missing", func() error { return vfs.Unlink(root, tr.target("/missing")) }, unix.ENOENT},
		{"unlink .", func() error { return vfs.Unlink(root, tr.target("/dir/.")) }, unix.EISDIR},
		{"unlink read-only missing", func() error { return vfs.Unlink(root, tr.target("/ro/missing")) }, unix.EROFS},
		{"rmdir non-empty", func() error { return vfs.Rmdir(root, tr.target("/dir")) }, unix.ENOTEMPTY},
		{"rmdir a file", func() error { return vfs.Rmdir(root, tr.target("/file")) }, unix.ENOTDIR},
		{"rmdir .", func() error { return vfs.Rmdir(root, tr.target("/dir/.")) }, unix.EINVAL},
		{"rmdir ..", func() error { return vfs.Rmdir(root, tr.target("/dir/..")) }, unix.ENOTEMPTY},
		{"rmdir /", func() error { return vfs.Rmdir(root, tr.target("/")) }, unix.EBUSY},
		{"rmdir a mount point", func() error { return vfs.Rmdir(root, tr.target("/other")) }, unix.EBUSY},
		{"unlink in an unwritable dir", func() error { return vfs.Unlink(alice, tr.target("/file")) }, unix.EACCES},

		// The sticky bit: only the file's owner, the directory's or
		// CAP_FOWNER.
		{"sticky: not the owner", func() error { return vfs.Unlink(bob, tr.target("/tmp/alices")) }, unix.EPERM},
		{"sticky: rename away", func() error { return vfs.Rename(bob, tr.target("/tmp/alices"), tr.target("/tmp/b"), 0) }, unix.EPERM},
		{"sticky: rename over", func() error { return vfs.Rename(bob, tr.target("/tmp/bobs"), tr.target("/tmp/alices"), 0) }, unix.EPERM},

		// Renames.
		{"rename file over dir", func() error { return vfs.Rename(root, tr.target("/file"), tr.target("/empty"), 0) }, unix.EISDIR},
		{"rename dir over file", func() error { return vfs.Rename(root, tr.target("/empty"), tr.target("/file"), 0) }, unix.ENOTDIR},
		{"rename over non-empty", func() error { return vfs.Rename(root, tr.target("/empty"), tr.target("/dir"), 0) }, unix.ENOTEMPTY},
		{"rename into itself", func() error { return vfs.Rename(root, tr.target("/dir"), tr.target("/dir/sub/x"), 0) }, unix.EINVAL},
		{"rename over an ancestor", func() error { return vfs.Rename(root, tr.target("/dir/sub"), tr.target("/dir"), 0) }, unix.ENOTEMPTY},
		{"exchange with an ancestor", func() error {
			return vfs.Rename(root, tr.target("/dir/sub"), tr.target("/dir"), unix.RENAME_EXCHANGE)
		}, unix.EINVAL},
		{"rename across mounts", func() error { return vfs.Rename(root, tr.target("/file"), tr.target("/other/f"), 0) }, unix.EXDEV},
		{"rename a mount point", func() error { return vfs.Rename(root, tr.target("/other"), tr.target("/o2"), 0) }, unix.EBUSY},
		{"rename over a mount point", func() error { return vfs.Rename(root, tr.target("/empty"), tr.target("/other"), 0) }, unix.EBUSY},
		{"rename .", func() error { return vfs.Rename(root, tr.target("/dir/."), tr.target("/x"), 0) }, unix.EBUSY},
		{"rename to ..", func() error { return vfs.Rename(root, tr.target("/file"), tr.target("/dir/.."), 0) }, unix.EBUSY},
		{"rename missing", func() error { return vfs.Rename(root, tr.target("/missing"), tr.target("/x"), 0) }, unix.ENOENT},
		{"rename file/", func() error { return vfs.Rename(root, tr.target("/file/"), tr.target("/x"), 0) }, unix.ENOTDIR},
		{"rename to x/", func() error { return vfs.Rename(root, tr.target("/file"), tr.target("/x/"), 0) }, unix.ENOTDIR},
		{"noreplace", func() error {
			return vfs.Rename(root, tr.target("/file"), tr.target("/link"), unix.RENAME_NOREPLACE)
		}, unix.EEXIST},
		{"exchange missing", func() error {
			return vfs.Rename(root, tr.target("/file"), tr.target("/x"), unix.RENAME_EXCHANGE)
		}, unix.ENOENT},
		{"bad flags", func() error {
			return vfs.Rename(root, tr.target("/file"), tr.target("/x"), unix.RENAME_EXCHANGE|unix.RENAME_NOREPLACE)
		}, unix.EINVAL},
		{"whiteout", func() error { return vfs.Rename(alice, tr.target("/tmp/alices"), tr.target("/tmp/x"), 1<<2) }, unix.EPERM},
		{"rename read-only", func() error { return vfs.Rename(root, tr.target("/ro/a"), tr.target("/ro/b"), 0) }, unix.EROFS},

		// Attributes.
		{"chmod someone else's", func() error { return vfs.Chmod(alice, tr.path("/file"), 0o777) }, unix.EPERM},
		{"chmod read-only", func() error { return vfs.Chmod(root, tr.path("/ro"), 0o777) }, unix.EROFS},
		{"chmod devfs", func() error { return vfs.Chmod(root, tr.path("/dev/null"), 0o600) }, unix.EROFS},
		{"chown away", func() error { return vfs.Chown(alice, tr.path("/tmp/alices"), 1001, -1) }, unix.EPERM},
		{"chown to self", func() error { return vfs.Chown(alice, tr.path("/tmp/alices"), 1000, -1) }, nil},
		{"chgrp to a group of hers", func() error { return vfs.Chown(alice, tr.path("/tmp/alices"), -1, 50) }, nil},
		{"chgrp to another", func() error { return vfs.Chown(alice, tr.path("/tmp/alices"), -1, 51) }, unix.EPERM},
		{"chgrp someone else's", func() error { return vfs.Chown(alice, tr.path("/tmp/roots"), -1, 50) }, unix.EPERM},
		{"touch writable", func() error { return vfs.Utimes(alice, tr.path("/tmp/roots"), nil) }, nil},
		{"touch unwritable", func() error { return vfs.Utimes(alice, tr.path("/file"), nil) }, unix.EACCES},
		{"set times of another's", func() error {
			return vfs.Utimes(alice, tr.path("/tmp/roots"), &[2]unix.Timespec{{Sec: 1}, {Sec: 2}})
		}, unix.EPERM},
		{"both now of another's", func() error {
			now := unix.Timespec{Nsec: unix.UTIME_NOW}
			return vfs.Utimes(alice, tr.path("/tmp/roots"), &[2]unix.Timespec{now, now})
		}, nil},
		{"bad nanoseconds", func() error {
			return vfs.Utimes(root, tr.path("/file"), &[2]unix.Timespec{{Nsec: 1e9}, {}})
		}, unix.EINVAL},
		{"both omitted read-only", func() error {
			omit := unix.Timespec{Nsec: unix.UTIME_OMIT}
			return vfs.Utimes(root, tr.path("/ro"), &[2]unix.Timespec{omit, omit})
		}, nil},
		{"truncate a directory", func() error { return vfs.Truncate(root, tr.path("/dir"), 0) }, unix.EISDIR},
		{"truncate a device", func() error { return vfs.Truncate(root, tr.path("/dev/null"), 0) }, unix.EINVAL},
		{"truncate unwritable", func() error { return vfs.Truncate(alice, tr.path("/file"), 0) }, unix.EACCES},
	} {
		if err := c.op(); err != c.want {
			t.Errorf("%s: %v, want %v", c.name, errName(err), errName(c.want))
		}
	}
}

func errOf(_ vfs.Path, err error) error { return err }

func errName(err error) string {
	if err == nil {
		return "success"
	}
	if e, ok := err.(unix.Errno); ok {
		return unix.ErrnoName(e)
	}
	return err.Error()
}

func TestOwnership(t *testing.T) {
	tr := newTree(t)
	tr.ok(vfs.Mkdir(root, tr.target("/sg"), 0o777))
	tr.ok(vfs.Chown(root, tr.path("/sg"), -1, 77))
	tr.ok(vfs.Chmod(root, tr.path("/sg"), 0o2777))

	// In a setgid directory a new file takes the directory's group, a new
	// directory the setgid bit too; a group-executable setgid file made
	// by someone outside the group loses the bit.
	tr.create(alice, "/sg/f", 0o2755)
	if st := tr.stat("/sg/f"); st.UID != 1000 || st.GID != 77 || st.Mode != unix.S_IFREG|0o755 {
		t.Errorf("file in setgid dir: uid %d gid %d mode %o", st.UID, st.GID, st.Mode)
	}
	tr.create(root, "/sg/rootf", 0o2755)
	if st := tr.stat("/sg/rootf"); st.Mode != unix.S_IFREG|0o2755 {
		t.Errorf("CAP_FSETID keeps setgid: mode %o", st.Mode)
	}
	tr.ok(vfs.Mkdir(alice, tr.target("/sg/d"), 0o755))
	if st := tr.stat("/sg/d"); st.GID != 77 || st.Mode != unix.S_IFDIR|0o2755 {
		t.Errorf("dir in setgid dir: gid %d mode %o", st.GID, st.Mode)
	}

	// chmod by someone outside the file's group drops setgid.
	tr.ok(vfs.Chmod(alice, tr.path("/sg/f"), 0o2755))
	if st := tr.stat("/sg/f"); st.Mode&0o7777 != 0o755 {
		t.Errorf("chmod g+s outside the group: %o", st.Mode)
	}
	// chown drops setuid, and setgid with group execute.
	tr.ok(vfs.Chmod(root, tr.path("/sg/rootf"), 0o6755))
	tr.ok(vfs.Chown(root, tr.path("/sg/rootf"), -1, -1))
	if st := tr.stat("/sg/rootf"); st.Mode&0o7777 != 0o755 {
		t.Errorf("after chown: %o", st.Mode)
	}
	// Truncating by someone without CAP_FSETID drops setuid; root keeps it.
	tr.ok(vfs.Chmod(alice, tr.path("/sg/f"), 0o4755))
	tr.ok(vfs.Truncate(alice, tr.path("/sg/f"), 10))
	if st := tr.stat("/sg/f"); st.Mode&0o7777 != 0o755 || st.Size != 10 {
		t.Errorf("after truncate: mode %o size %d", st.Mode, st.Size)
	}
	tr.ok(vfs.Chmod(root, tr.path("/sg/f"), 0o4755))
	tr.ok(vfs.Truncate(root, tr.path("/sg/f"), 0))
	if st := tr.stat("/sg/f"); st.Mode&0o7777 != 0o4755 {
		t.Errorf("after root's truncate: %o", st.Mode)
	}

	// The sticky directory's owner may remove what others put there.
	tr.ok(vfs.Mkdir(bob, tr.target("/tmp/bobs"), 0o777))
	tr.ok(vfs.Chmod(bob, tr.path("/tmp/bobs"), 0o1777))
	tr.create(alice, "/tmp/bobs/a", 0o644)
	tr.create(alice, "/tmp/bobs/b", 0o644)
	tr.ok(vfs.Unlink(bob, tr.target("/tmp/bobs/a")))
	tr.ok(vfs.Unlink(alice, tr.target("/tmp/bobs/b")))
}

func TestDentryCache(t *testing.T) {
	tr := newTree(t)
	tr.ok(vfs.Mkdir(root, tr.target("/a"), 0o755))
	tr.ok(vfs.Mkdir(root, tr.target("/a/sub"), 0o755))
	p, err := vfs.Create(root, tr.target("/a/sub/f"), 0o644)
	tr.ok(err)
	impl, err := p.Dentry.Inode().Open(unix.O_RDWR)
	tr.ok(err)
	f := vfs.NewFile(impl, p, unix.O_RDWR)
	defer f.DecRef()
	sub := tr.path("/a/sub")

	// A renamed directory is found at its new name only, with what is
	// under it, and names of what was open there follow.
	tr.ok(vfs.Rename(root, tr.target("/a"), tr.target("/b"), 0))
	if _, err := tr.res().Lookup("/a/sub/f", true); err != unix.ENOENT {
		t.Errorf("old name: %v", err)
	}
	if got := tr.path("/b/sub/f"); got.Dentry != p.Dentry {
		t.Error("new name finds another dentry")
	}
	if got := vfs.PathName(sub, tr.root); got != "/b/sub" {
		t.Errorf("PathName = %q", got)
	}
	if got := tr.path("/b/sub/.."); got != tr.path("/b") {
		t.Error(".. of the moved directory")
	}

	// An unlinked file is not found again, but its open File works.
	tr.ok(vfs.Unlink(root, tr.target("/b/sub/f")))
	if _, err := tr.res().Lookup("/b/sub/f", true); err != unix.ENOENT {
		t.Errorf("after unlink: %v", err)
	}
	if n, err := f.Pwrite(vfs.NewIOSeqBuffer([]byte("kept")), 0); n != 4 || err != nil {
		t.Errorf("write after unlink: %d, %v", n, err)
	}
	buf := make([]byte, 4)
	if n, err := f.Pread(vfs.NewIOSeqBuffer(buf), 0); n != 4 || err != nil || string(buf) != "kept" {
		t.Errorf("read after unlink: %d, %v, %q", n, err, buf)
	}
	tr.ok(vfs.Ftruncate(root, f, 2))
	if st, _ := f.Stat(); st.Size != 2 || st.Nlink != 0 {
		t.Errorf("after ftruncate: %+v", st)
	}
	// A new file of that name is another file.
	q, err := vfs.Create(root, tr.target("/b/sub/f"), 0o644)
	tr.ok(err)
	if q.Dentry == p.Dentry || tr.path("/b/sub/f").Dentry != q.Dentry {
		t.Error("the new file's dentry")
	}

	// An exchange swaps the types the cache knows.
	if err := vfs.Rename(root, tr.target("/b/sub/f"), tr.target("/b"), unix.RENAME_EXCHANGE); err != unix.EINVAL {
		t.Fatalf("exchange with an ancestor: %v", err)
	}
	tr.ok(vfs.Mkdir(root, tr.target("/c"), 0o755))
	tr.create(root, "/d", 0o644)
	tr.ok(vfs.Rename(root, tr.target("/c"), tr.target("/d"), unix.RENAME_EXCHANGE))
	if !tr.path("/d").Dentry.IsDir() || tr.path("/c").Dentry.IsDir() {
		t.Error("exchange: types in the cache")
	}
	if _, err := tr.res().Lookup("/c/", true); err != unix.ENOTDIR {
		t.Errorf("c/ after exchange: %v", err)
	}

	// Removing a directory drops its dentry; creating in it afterwards
	// fails, as on Linux.
	tr.ok(vfs.Rmdir(root, tr.target("/d")))
	if _, err := tr.res().Lookup("/d", true); err != unix.ENOENT {
		t.Errorf("after rmdir: %v", err)
	}
}

func TestLookupCreate(t *testing.T) {
	tr := newTree(t)
	tr.ok(vfs.Symlink(root, tr.target("/dangling"), "tmp/target"))
	tr.ok(vfs.Symlink(root, tr.target("/loop"), "loop"))
	p, tg, err := tr.res().LookupCreate("/dangling", true)
	if err != nil || p.Dentry != nil || tg.Name != "target" || tg.Dir != tr.path("/tmp") {
		t.Errorf("dangling: %v %+v %v", p, tg, err)
	}
	p, _, err = tr.res().LookupCreate("/dangling", false)
	if err != nil || p.Dentry == nil {
		t.Errorf("dangling, not followed: %v %v", p, err)
	}
	if _, _, err := tr.res().LookupCreate("/loop", true); err != unix.ELOOP {
		t.Errorf("loop: %v", err)
	}
	if _, _, err := tr.res().LookupCreate("/missing/x", true); err != unix.ENOENT {
		t.Errorf("missing parent: %v", err)
	}
}

// TestAbsentNames: a name looked up and not found is remembered as absent,
// and every way of making it makes it found.
func TestAbsentNames(t *testing.T) {
	tr := newTree(t)
	tr.create(root, "/tmp/src", 0o644)
	tr.create(root, "/tmp/moved", 0o644)
	makers := map[string]func(name string) error{
		"create":  func(n string) error { _, err := vfs.Create(root, tr.target(n), 0o644); return err },
		"mkdir":   func(n string) error { return vfs.Mkdir(root, tr.target(n), 0o755) },
		"symlink": func(n string) error { return vfs.Symlink(root, tr.target(n), "src") },
		"link":    func(n string) error { return vfs.Link(root, tr.path("/tmp/src"), tr.target(n)) },
		"rename":  func(n string) error { return vfs.Rename(root, tr.target("/tmp/moved"), tr.target(n), 0) },
	}
	for how, mk := range makers {
		name := "/tmp/" + how
		for range 2 { // the second look-up is answered from the cache
			if _, err := tr.res().Lookup(name, false); err != unix.ENOENT {
				t.Fatalf("%s: before: %v", how, err)
			}
		}
		tr.ok(mk(name))
		if _, err := tr.res().Lookup(name, false); err != nil {
			t.Errorf("%s: the name made is not found: %v", how, err)
		}
	}
	// A name that goes is absent again.
	tr.ok(vfs.Unlink(root, tr.target("/tmp/create")))
	if _, err := tr.res().Lookup("/tmp/create", false); err != unix.ENOENT {
		t.Errorf("after unlink: %v", err)
	}
}
