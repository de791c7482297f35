package gofer

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestNamesAreOneComponent(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)
	for _, name := range []string{
		"", ".", "..", "/", "/etc", "dir/nested", "dir/", "../root", "a\x00b", "file\x00", "..\x00",
	} {
		_, _, err := c.Walk(RootNode, name)
		wantErrno(t, fmt.Sprintf("walk %q", name), err, unix.EINVAL)
	}
	_, _, err := c.Walk(RootNode, strings.Repeat("x", maxName+1))
	wantErrno(t, "walk a 256-byte name", err, unix.ENAMETOOLONG)
	_, _, err = c.Walk(RootNode, strings.Repeat("x", maxName))
	wantErrno(t, "walk a 255-byte name", err, unix.ENOENT)

	// The client refuses long names itself; the server must too.
	s := newTestSession(t, root, false)
	s.greeted = true
	for name, want := range map[string]unix.Errno{
		strings.Repeat("x", maxName+1): unix.ENAMETOOLONG,
		strings.Repeat("/", 4000):      unix.ENAMETOOLONG,
		"..":                           unix.EINVAL,
	} {
		if errno, _, _ := exchange(s, walkRequest(RootNode, name)); errno != want {
			t.Errorf("server walk of a %d-byte name: %v, want %v", len(name), errno, want)
		}
	}
}

// TestSymlinksAreNeverFollowed walks links that point outside the tree and
// inside it: each is a node of its own, and nothing goes through it.
func TestSymlinksAreNeverFollowed(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)
	for name, through := range map[string]string{
		"link-abs": "passwd",
		"link-up":  "etc",
		"link-dir": "nested",
		"link-rel": "x",
	} {
		id, a, err := c.Walk(RootNode, name)
		must(t, err)
		if a.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Errorf("%s: walked to mode %o, want the link itself", name, a.Mode)
		}
		_, _, err = c.Walk(id, through)
		wantErrno(t, "walk through "+name, err, unix.ENOTDIR)
		_, err = c.ReadDir(id)
		wantErrno(t, "readdir "+name, err, unix.ENOTDIR)
		for _, flags := range []int{unix.O_RDONLY, unix.O_RDONLY | unix.O_DIRECTORY, unix.O_WRONLY} {
			_, err = c.Open(id, flags)
			wantErrno(t, fmt.Sprintf("open %s flags %#x", name, flags), err, unix.ELOOP)
		}
	}
}

// TestResolveConfinesWithoutNameChecks hands walkAt and reopen names that
// checkName would have refused, to show that openat2's RESOLVE flags hold
// the line on their own: nothing resolves outside the starting directory or
// through a link, whatever the name says.
func TestResolveConfinesWithoutNameChecks(t *testing.T) {
	root := tree(t)
	s := newTestSession(t, root, false)
	rootFD := s.nodes[RootNode].fd
	for _, name := range []string{
		"..", "../root", "dir/../..", "/etc", "/", "link-abs/passwd", "link-up/etc",
		"link-dir/nested", "link-rel", "dir/../link-abs/passwd",
		"/proc/self/root", "/proc/self/cwd/file",
	} {
		if fd, err := walkAt(rootFD, name); err == nil {
			var st unix.Stat_t
			unix.Fstat(fd, &st)
			unix.Close(fd)
			if st.Mode&unix.S_IFMT != unix.S_IFLNK {
				t.Errorf("walkAt %q resolved to mode %o", name, st.Mode)
			}
		}
		n := &node{parent: s.nodes[RootNode], name: name}
		if fd, err := reopen(n, unix.O_RDONLY); err == nil || err == unix.ESTALE {
			unix.Close(fd)
			t.Errorf("reopen %q: %v, want a resolution error", name, err)
		}
	}
}

// TestHostRefusesLinks bypasses checkOpen's own ELOOP to show that reopen,
// the one host-level way to open a node, refuses a link even if asked.
func TestHostRefusesLinks(t *testing.T) {
	root := tree(t)
	s := newTestSession(t, root, false)
	s.greeted = true
	for _, name := range []string{"link-abs", "link-dir", "link-up"} {
		errno, res, _ := exchange(s, walkRequest(RootNode, name))
		if errno != 0 {
			t.Fatalf("walk %s: %v", name, errno)
		}
		n := s.nodes[NodeID(le.Uint64(res))]
		for _, flags := range []int{unix.O_RDONLY, unix.O_RDONLY | unix.O_DIRECTORY} {
			if fd, err := reopen(n, flags); err != unix.ELOOP && err != unix.ENOTDIR {
				unix.Close(fd)
				t.Errorf("reopen %s flags %#x: %v, want ELOOP or ENOTDIR", name, flags, err)
			}
		}
	}
}

// TestMagicLinksAreNotFollowed serves /proc/<pid>, whose root, cwd, exe and
// fd/N are magic links that jump anywhere without resolving a path.
func TestMagicLinksAreNotFollowed(t *testing.T) {
	self := filepath.Join("/proc", strconv.Itoa(os.Getpid()))
	c := serveTree(t, self, true)
	for _, name := range []string{"root", "cwd", "exe"} {
		id, a, err := c.Walk(RootNode, name)
		must(t, err)
		if a.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Errorf("%s: walked to mode %o, want the link itself", name, a.Mode)
		}
		_, _, err = c.Walk(id, "etc")
		wantErrno(t, "walk through "+name, err, unix.ENOTDIR)
		_, err = c.Open(id, unix.O_RDONLY)
		wantErrno(t, "open "+name, err, unix.ELOOP)
	}
	if target, err := c.ReadLink(walk(t, c, RootNode, "root")); err != nil || target != "/" {
		t.Errorf("readlink root: %q, %v", target, err)
	}

	fds := walk(t, c, RootNode, "fd")
	ents, err := c.ReadDir(fds)
	must(t, err)
	if len(ents) == 0 {
		t.Fatal("no entries in fd/")
	}
	for _, e := range ents {
		id, a, err := c.Walk(fds, e.Name)
		if err == unix.ENOENT {
			continue // an fd closed since the listing
		}
		must(t, err)
		if a.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Errorf("fd/%s: walked to mode %o, want the link itself", e.Name, a.Mode)
		}
		_, err = c.Open(id, unix.O_RDONLY)
		wantErrno(t, "open fd/"+e.Name, err, unix.ELOOP)
		c.Release(id)
	}
}

// TestMountsInsideTheTree bind-mounts a directory from outside the tree,
// and /proc, into it, in a mount namespace private to one thread.
//
// A mount inside the served tree is crossed: it is one of the sandbox's
// own mounts, there because its OCI config asked. What matters is that
// nothing climbs out of it: there is no ".." to walk, and its links, magic
// or not, stay nodes.
func TestMountsInsideTheTree(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root + "/mnt", root + "/proc", outside + "/sub"} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("outside"), 0o644))
	must(t, os.Symlink("/", filepath.Join(outside, "sub", "to-root")))
	must(t, os.Symlink("../..", filepath.Join(outside, "sub", "up")))

	ready := make(chan error, 1)
	c, _ := start(t, func(sock int) error {
		// Never unlocked: the thread exits with the goroutine, and its
		// mount namespace, with the bind mounts, goes with it.
		runtime.LockOSThread()
		err := unix.Unshare(unix.CLONE_NEWNS)
		if err == nil {
			err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, "")
		}
		if err == nil {
			err = unix.Mount(outside, root+"/mnt", "", unix.MS_BIND, "")
		}
		if err == nil {
			err = unix.Mount("/proc", root+"/proc", "", unix.MS_BIND, "")
		}
		ready <- err
		if err != nil {
			return nil
		}
		return Serve(sock, root, false)
	})
	if err := <-ready; err != nil {
		t.Skipf("needs CAP_SYS_ADMIN for a private mount namespace: %v", err)
	}

	mnt := walk(t, c, RootNode, "mnt")
	sub := walk(t, c, mnt, "sub")
	fd, err := c.Open(walk(t, c, mnt, "secret"), unix.O_RDONLY)
	must(t, err)
	unix.Close(fd)
	for _, link := range []string{"to-root", "up"} {
		id, a, err := c.Walk(sub, link)
		must(t, err)
		if a.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Errorf("%s: mode %o, want the link itself", link, a.Mode)
		}
		_, _, err = c.Walk(id, "etc")
		wantErrno(t, "walk through "+link, err, unix.ENOTDIR)
	}
	_, _, err = c.Walk(sub, "..")
	wantErrno(t, "walk .. in a mount", err, unix.EINVAL)

	proc := walk(t, c, RootNode, "proc")
	self, a, err := c.Walk(proc, "self")
	must(t, err)
	if a.Mode&unix.S_IFMT != unix.S_IFLNK {
		t.Errorf("proc/self: mode %o, want the link itself", a.Mode)
	}
	_, _, err = c.Walk(self, "root")
	wantErrno(t, "walk through proc/self", err, unix.ENOTDIR)
	pid := walk(t, c, proc, strconv.Itoa(os.Getpid()))
	for _, name := range []string{"root", "cwd", "exe"} {
		id := walk(t, c, pid, name)
		_, _, err = c.Walk(id, "etc")
		wantErrno(t, "walk through proc/<pid>/"+name, err, unix.ENOTDIR)
		_, err = c.Open(id, unix.O_RDONLY)
		wantErrno(t, "open proc/<pid>/"+name, err, unix.ELOOP)
	}
}

// TestDirectoryRenamedOut moves a walked directory out of the tree, as only
// a host actor could. The node keeps its fd, so it still names the moved
// directory, but RESOLVE_BENEATH on that fd confines every later walk to
// the directory itself: what moved with it is reachable, its new parent
// and siblings are not. Re-opened (listed), it is the directory the node
// holds, "." beneath itself: what moved with it, never what the host put
// under its old name since.
func TestDirectoryRenamedOut(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	must(t, os.MkdirAll(filepath.Join(root, "movable"), 0o755))
	must(t, os.MkdirAll(outside, 0o755))
	must(t, os.WriteFile(filepath.Join(root, "movable", "inner"), []byte("inner"), 0o644))
	must(t, os.Symlink("../secret", filepath.Join(root, "movable", "up")))
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("outside"), 0o644))

	c := serveTree(t, root, false)
	movable := walk(t, c, RootNode, "movable")
	must(t, os.Rename(filepath.Join(root, "movable"), filepath.Join(outside, "movable")))

	inner := walk(t, c, movable, "inner")
	fd, err := c.Open(inner, unix.O_RDONLY)
	must(t, err)
	unix.Close(fd)

	up := walk(t, c, movable, "up")
	_, err = c.Open(up, unix.O_RDONLY)
	wantErrno(t, "open the moved link", err, unix.ELOOP)
	_, _, err = c.Walk(up, "x")
	wantErrno(t, "walk through the moved link", err, unix.ENOTDIR)
	for _, name := range []string{"..", "../secret", "secret"} {
		_, _, err = c.Walk(movable, name)
		if err == nil {
			t.Errorf("walk %q from the moved directory reached outside it", name)
		}
	}
	listed := func(what string) {
		t.Helper()
		ents, err := c.ReadDir(movable)
		must(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"inner", "up"}) {
			t.Errorf("%s lists %q, want the moved directory's own [inner up]", what, names)
		}
	}
	listed("the moved directory")

	// Something else now under the old name is not the node's directory.
	must(t, os.Mkdir(filepath.Join(root, "movable"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "movable", "new"), nil, 0o644))
	listed("the moved directory, its old name taken")
}

func TestReplacedFileIsStale(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)
	file := walk(t, c, RootNode, "file")
	must(t, os.WriteFile(filepath.Join(root, "new"), []byte("new"), 0o644))
	must(t, os.Rename(filepath.Join(root, "new"), filepath.Join(root, "file")))

	_, err := c.Open(file, unix.O_RDWR|unix.O_TRUNC)
	wantErrno(t, "open a replaced file", err, unix.ESTALE)
	if got, _ := os.ReadFile(filepath.Join(root, "file")); string(got) != "new" {
		t.Errorf("the replacement was changed to %q", got)
	}
	// The node itself still describes the file it was walked to.
	a, err := c.Stat(file)
	must(t, err)
	if a.Nlink != 0 {
		t.Errorf("stat of the replaced node: nlink %d, want 0", a.Nlink)
	}

	// Swapped for a FIFO, the name must give ESTALE, not hang the gofer
	// waiting for a writer.
	must(t, unix.Mkfifo(filepath.Join(root, "fifo"), 0o666))
	must(t, os.Rename(filepath.Join(root, "fifo"), filepath.Join(root, "file")))
	_, err = c.Open(file, unix.O_RDONLY)
	wantErrno(t, "open a file replaced by a FIFO", err, unix.ESTALE)
}
