package goferfs

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

var (
	memOnce sync.Once
	mem     *memfile.File
)

// testMem is the memory file the tests' caches use.
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

// served runs a gofer in-process on dir and returns the goferfs tree it
// serves, writable.
func served(t *testing.T, dir string) vfs.Path {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- gofer.Serve(fds[1], dir, false)
		unix.Close(fds[1])
	}()
	c := gofer.NewClient(fds[0])
	t.Cleanup(func() {
		c.Close()
		if err := <-done; err != nil {
			t.Errorf("gofer: %v", err)
		}
	})
	root, err := New(c, testMem(t), false)
	if err != nil {
		t.Fatal(err)
	}
	return vfs.NewRootMount(root, "9p", 0).Root()
}

// me is the test process's own credentials, with no capabilities: the
// files it makes on the host are its own.
func me() *vfs.Creds {
	return &vfs.Creds{FSUID: uint32(os.Geteuid()), FSGID: uint32(os.Getegid())}
}

func target(t *testing.T, root vfs.Path, name string) vfs.Target {
	t.Helper()
	tg, err := vfs.Resolver{Root: root, Start: root}.LookupTarget(name)
	if err != nil {
		t.Fatalf("target %s: %v", name, err)
	}
	return tg
}

func lookup(t *testing.T, root vfs.Path, name string) vfs.Path {
	t.Helper()
	p, err := vfs.Resolver{Root: root, Start: root}.Lookup(name, false)
	if err != nil {
		t.Fatalf("lookup %s: %v", name, err)
	}
	return p
}

func stat(t *testing.T, p vfs.Path) vfs.Stat {
	t.Helper()
	st, err := p.Dentry.Inode().Stat()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestChangesReachTheHostTree(t *testing.T) {
	dir := t.TempDir()
	ok(t, os.WriteFile(filepath.Join(dir, "old"), []byte("old"), 0o644))
	root := served(t, dir)
	c := me()

	p, err := vfs.Create(c, target(t, root, "/new"), 0o640)
	ok(t, err)
	impl, err := p.Dentry.Inode().Open(unix.O_WRONLY)
	ok(t, err)
	f := vfs.NewFile(impl, p, unix.O_WRONLY)
	if n, err := f.Write(vfs.NewIOSeqBuffer([]byte("written"))); n != 7 || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	// While it is open for writing, stat sees the writes.
	if st := stat(t, p); st.Size != 7 || st.Mode != unix.S_IFREG|0o640 {
		t.Errorf("stat of the open file: size %d mode %o", st.Size, st.Mode)
	}
	f.DecRef()
	if got, _ := os.ReadFile(filepath.Join(dir, "new")); string(got) != "written" {
		t.Errorf("host file holds %q", got)
	}
	if st := stat(t, p); st.Size != 7 {
		t.Errorf("stat after close: size %d", st.Size)
	}

	ok(t, vfs.Mkdir(c, target(t, root, "/sub"), 0o755))
	if st := stat(t, root); st.Nlink != 3 {
		t.Errorf("root's link count after mkdir: %d, want 3", st.Nlink)
	}
	ok(t, vfs.Symlink(c, target(t, root, "/sub/ln"), "../new"))
	ok(t, vfs.Link(c, lookup(t, root, "/new"), target(t, root, "/sub/hard")))
	if st := stat(t, p); st.Nlink != 2 {
		t.Errorf("link count after link: %d", st.Nlink)
	}
	ok(t, vfs.Rename(c, target(t, root, "/old"), target(t, root, "/sub/renamed"), 0))
	ok(t, vfs.Chmod(c, lookup(t, root, "/sub/renamed"), 0o600))
	ok(t, vfs.Truncate(c, lookup(t, root, "/sub/renamed"), 1))
	ok(t, vfs.Unlink(c, target(t, root, "/new")))

	for name, want := range map[string]string{"sub/renamed": "o", "sub/hard": "written"} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v, want %q", name, got, err, want)
		}
	}
	if l, _ := os.Readlink(filepath.Join(dir, "sub", "ln")); l != "../new" {
		t.Errorf("symlink: %q", l)
	}
	if fi, err := os.Stat(filepath.Join(dir, "sub", "renamed")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("chmod: %v, %v", fi.Mode(), err)
	}
	for _, gone := range []string{"old", "new"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); !os.IsNotExist(err) {
			t.Errorf("%s still on the host: %v", gone, err)
		}
	}
	if st := stat(t, lookup(t, root, "/sub/renamed")); st.Size != 1 || st.Mode&0o777 != 0o600 {
		t.Errorf("attributes after chmod and truncate: size %d mode %o", st.Size, st.Mode)
	}
	// The moved file opens through its new name.
	impl, err = lookup(t, root, "/sub/renamed").Dentry.Inode().Open(unix.O_RDONLY)
	ok(t, err)
	impl.Release()
	ok(t, vfs.Unlink(c, target(t, root, "/sub/ln")))
	ok(t, vfs.Unlink(c, target(t, root, "/sub/hard")))
	ok(t, vfs.Unlink(c, target(t, root, "/sub/renamed")))
	ok(t, vfs.Rmdir(c, target(t, root, "/sub")))
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%d entries left on the host", len(ents))
	}
}

func TestStatFSIsTheHosts(t *testing.T) {
	dir := t.TempDir()
	root := served(t, dir)
	s, err := vfs.StatFS(root)
	ok(t, err)
	var want unix.Statfs_t
	ok(t, unix.Statfs(dir, &want))
	if s.Type != want.Type || s.Blocks != want.Blocks || s.Namelen != want.Namelen {
		t.Errorf("statfs %+v, host %+v", s, want)
	}
}

func TestExtendedAttributesAreTheHostFiles(t *testing.T) {
	dir := t.TempDir()
	ok(t, os.WriteFile(filepath.Join(dir, "f"), nil, 0o644))
	root := served(t, dir)
	c := me()
	x, err := vfs.XattrTargetOf(lookup(t, root, "/f"))
	ok(t, err)
	ok(t, vfs.SetXattr(c, x, "user.k", []byte("v"), 0))
	buf := make([]byte, 8)
	if n, err := unix.Getxattr(filepath.Join(dir, "f"), "user.k", buf); err != nil || string(buf[:n]) != "v" {
		t.Errorf("host getxattr: %q, %v", buf[:n], err)
	}
	if v, err := vfs.GetXattr(c, x, "user.k"); err != nil || string(v) != "v" {
		t.Errorf("getxattr through the gofer: %q, %v", v, err)
	}
	if names, err := vfs.ListXattr(c, x); err != nil || string(names) != "user.k\x00" {
		t.Errorf("listxattr: %q, %v", names, err)
	}
	ok(t, vfs.RemoveXattr(c, x, "user.k"))
	if _, err := unix.Getxattr(filepath.Join(dir, "f"), "user.k", buf); err != unix.ENODATA {
		t.Errorf("after removexattr the host has it: %v", err)
	}
}

// TestADirectoryWalkAnswersItsLookups: after a second miss in a
// directory, it is walked whole; its entries are found with their
// attributes, and a name the walk did not see is absent (on a read-only
// tree, for good; the host adds one behind it to show it).
func TestADirectoryWalkAnswersItsLookups(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		ok(t, os.WriteFile(filepath.Join(dir, n), []byte(n), 0o640))
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	ok(t, err)
	go func() { gofer.Serve(fds[1], dir, true); unix.Close(fds[1]) }()
	c := gofer.NewClient(fds[0])
	t.Cleanup(func() { c.Close() })
	rd, err := New(c, testMem(t), true)
	ok(t, err)
	root := rd.Inode()
	for _, n := range []string{"a", "b"} { // the second miss walks the directory
		if _, err := root.Lookup(n); err != nil {
			t.Fatalf("lookup %s: %v", n, err)
		}
	}
	ok(t, os.WriteFile(filepath.Join(dir, "late"), nil, 0o644))
	if _, err := root.Lookup("late"); err != unix.ENOENT {
		t.Errorf("a name added after the walk of a read-only tree: %v, want ENOENT", err)
	}
	ino, err := root.Lookup("c")
	ok(t, err)
	st, err := ino.Stat()
	ok(t, err)
	var host unix.Stat_t
	ok(t, unix.Lstat(filepath.Join(dir, "c"), &host))
	if st.Ino != host.Ino || st.Mode != host.Mode || st.Size != 1 {
		t.Errorf("c from the walk: %+v, host ino %d mode %o", st, host.Ino, host.Mode)
	}
	f, err := ino.Open(unix.O_RDONLY)
	ok(t, err)
	f.Release()
	// Looked up again (the overlay asks whether a name it removes is
	// below), a name the walk handed over is still there.
	if _, err := root.Lookup("c"); err != nil {
		t.Errorf("c looked up a second time: %v", err)
	}
}
