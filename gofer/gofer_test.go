package gofer

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// checkAttr compares what the gofer says of a file with what os.Lstat says.
func checkAttr(t *testing.T, path string, a Attr) {
	t.Helper()
	fi, err := os.Lstat(path)
	must(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	got := []any{a.Ino, a.Dev, a.Rdev, a.Mode, a.Nlink, a.UID, a.GID, a.Size, a.Blocks, a.Blksize, a.Mtime.Nano(), a.Ctime.Nano()}
	want := []any{st.Ino, st.Dev, st.Rdev, st.Mode, st.Nlink, st.Uid, st.Gid, st.Size, st.Blocks, st.Blksize, st.Mtim.Nano(), st.Ctim.Nano()}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: gofer says %v, lstat says %v", path, got, want)
	}
}

func TestWalkAndStatMatchLstat(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)

	a, err := c.Stat(RootNode)
	must(t, err)
	checkAttr(t, root, a)

	ents, err := os.ReadDir(root)
	must(t, err)
	for _, e := range ents {
		id, walked, err := c.Walk(RootNode, e.Name())
		if err != nil {
			t.Fatalf("walk %q: %v", e.Name(), err)
		}
		checkAttr(t, filepath.Join(root, e.Name()), walked)
		stated, err := c.Stat(id)
		must(t, err)
		checkAttr(t, filepath.Join(root, e.Name()), stated)
		c.Release(id)
	}

	nested := walk(t, c, RootNode, "dir", "nested")
	a, err = c.Stat(nested)
	must(t, err)
	checkAttr(t, filepath.Join(root, "dir", "nested"), a)

	_, _, err = c.Walk(RootNode, "missing")
	wantErrno(t, "walk missing", err, unix.ENOENT)
	_, _, err = c.Walk(walk(t, c, RootNode, "file"), "x")
	wantErrno(t, "walk through a file", err, unix.ENOTDIR)
}

func TestReadDirMatchesOS(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)
	for _, dir := range [][]string{{}, {"dir"}, {"empty"}} {
		got, err := c.ReadDir(walk(t, c, RootNode, dir...))
		if err != nil {
			t.Fatalf("readdir %v: %v", dir, err)
		}
		checkEntries(t, filepath.Join(append([]string{root}, dir...)...), got)
	}
}

// checkEntries compares entries with os.ReadDir and os.Lstat of path.
func checkEntries(t *testing.T, path string, got []Dirent) {
	t.Helper()
	want, err := os.ReadDir(path)
	must(t, err)
	slices.SortFunc(got, func(a, b Dirent) int { return strings.Compare(a.Name, b.Name) })
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, os.ReadDir has %d", path, len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		fi, err := os.Lstat(filepath.Join(path, w.Name()))
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		// DT_* is the S_IFMT type shifted down, on Linux.
		if g.Name != w.Name() || g.Ino != st.Ino || uint32(g.Type) != st.Mode&unix.S_IFMT>>12 {
			t.Errorf("%s: entry %+v, want %q ino %d mode %o", path, g, w.Name(), st.Ino, st.Mode)
		}
	}
}

// TestReadDirPages reads a directory far larger than one message.
func TestReadDirPages(t *testing.T) {
	root := t.TempDir()
	const n, pad = 1200, maxName - 5 // names of NAME_MAX bytes
	if n*maxName < 4*maxMessage {
		t.Fatal("the directory would fit in too few pages to test paging")
	}
	// Hard links: creating an inode per entry would make this test slow.
	base := filepath.Join(root, "base")
	must(t, os.WriteFile(base, nil, 0o644))
	for i := range n {
		name := fmt.Sprintf("%04d-%s", i, strings.Repeat("x", pad))
		must(t, os.Link(base, filepath.Join(root, name)))
	}
	c := serveTree(t, root, false)
	got, err := c.ReadDir(RootNode)
	must(t, err)
	checkEntries(t, root, got)
}

func TestReadLinkMatchesOS(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)
	for _, name := range []string{"link-rel", "link-dir", "link-abs", "link-up"} {
		got, err := c.ReadLink(walk(t, c, RootNode, name))
		must(t, err)
		want, err := os.Readlink(filepath.Join(root, name))
		must(t, err)
		if got != want {
			t.Errorf("readlink %s: %q, want %q", name, got, want)
		}
	}
	_, err := c.ReadLink(walk(t, c, RootNode, "file"))
	wantErrno(t, "readlink of a file", err, unix.EINVAL)
}

func TestOpenDonatesRealFDs(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)

	fd, err := c.Open(walk(t, c, RootNode, "dir", "nested"), unix.O_RDONLY)
	must(t, err)
	if fdflags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || fdflags&unix.FD_CLOEXEC == 0 {
		t.Errorf("donated fd flags %#x, %v: want FD_CLOEXEC", fdflags, err)
	}
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("file status flags %#x, %v: O_NONBLOCK was not asked for", fl, err)
	}
	f := os.NewFile(uintptr(fd), "nested")
	got, err := io.ReadAll(f)
	f.Close()
	must(t, err)
	if string(got) != "nested\n" {
		t.Errorf("read %q through the donated fd", got)
	}

	fd, err = c.Open(walk(t, c, RootNode, "file"), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_APPEND)
	must(t, err)
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&(unix.O_NONBLOCK|unix.O_APPEND) != unix.O_NONBLOCK|unix.O_APPEND {
		t.Errorf("file status flags %#x, %v: want O_NONBLOCK|O_APPEND", fl, err)
	}
	unix.Close(fd)

	// The root and other directories re-open too, and list as os.ReadDir does.
	for _, dir := range []NodeID{RootNode, walk(t, c, RootNode, "dir")} {
		fd, err = c.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY)
		must(t, err)
		f := os.NewFile(uintptr(fd), "dir")
		names, err := f.Readdirnames(-1)
		f.Close()
		must(t, err)
		if len(names) == 0 {
			t.Errorf("node %d: empty listing through the donated fd", dir)
		}
	}
}

func TestOpenForWriting(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)
	file := walk(t, c, RootNode, "file")
	path := filepath.Join(root, "file")

	fd, err := c.Open(file, unix.O_WRONLY|unix.O_APPEND)
	must(t, err)
	_, err = unix.Write(fd, []byte("more\n"))
	unix.Close(fd)
	must(t, err)
	if got, _ := os.ReadFile(path); string(got) != "hello, gofer\nmore\n" {
		t.Errorf("after append: %q", got)
	}

	fd, err = c.Open(file, unix.O_RDWR|unix.O_TRUNC)
	must(t, err)
	unix.Close(fd)
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Errorf("O_RDWR|O_TRUNC left %d bytes", fi.Size())
	}

	// Like open(2), O_TRUNC truncates even with O_RDONLY.
	must(t, os.WriteFile(path, []byte("again"), 0o644))
	fd, err = c.Open(file, unix.O_RDONLY|unix.O_TRUNC)
	must(t, err)
	unix.Close(fd)
	if fi, _ := os.Stat(path); fi.Size() != 0 {
		t.Errorf("O_RDONLY|O_TRUNC left %d bytes", fi.Size())
	}

	dir := walk(t, c, RootNode, "dir")
	_, err = c.Open(dir, unix.O_WRONLY)
	wantErrno(t, "open a directory for writing", err, unix.EISDIR)
	_, err = c.Open(dir, unix.O_RDONLY|unix.O_TRUNC)
	wantErrno(t, "open a directory with O_TRUNC", err, unix.EISDIR)
	_, err = c.Open(file, unix.O_RDONLY|unix.O_DIRECTORY)
	wantErrno(t, "open a file with O_DIRECTORY", err, unix.ENOTDIR)
}

func TestReadonly(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, true)
	file := walk(t, c, RootNode, "file")
	for _, flags := range []int{
		unix.O_WRONLY, unix.O_RDWR, unix.O_RDONLY | unix.O_TRUNC,
		unix.O_WRONLY | unix.O_TRUNC, unix.O_RDWR | unix.O_APPEND,
	} {
		_, err := c.Open(file, flags)
		wantErrno(t, fmt.Sprintf("open flags %#x", flags), err, unix.EROFS)
	}
	_, err := c.Open(RootNode, unix.O_RDWR)
	wantErrno(t, "open the root for writing", err, unix.EROFS)

	fd, err := c.Open(file, unix.O_RDONLY)
	must(t, err)
	buf := make([]byte, 64)
	n, err := unix.Read(fd, buf)
	unix.Close(fd)
	must(t, err)
	if string(buf[:n]) != "hello, gofer\n" {
		t.Errorf("read %q", buf[:n])
	}
	if got, _ := os.ReadFile(filepath.Join(root, "file")); string(got) != "hello, gofer\n" {
		t.Errorf("file changed to %q", got)
	}
	if _, err := c.ReadDir(RootNode); err != nil {
		t.Errorf("readdir: %v", err)
	}
}

func TestOpenFlagsAndTypes(t *testing.T) {
	root := tree(t)
	must(t, unix.Mkfifo(filepath.Join(root, "fifo"), 0o666))
	sock, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(sock)
	must(t, unix.Bind(sock, &unix.SockaddrUnix{Name: filepath.Join(root, "sock")}))
	c := serveTree(t, root, false)
	file := walk(t, c, RootNode, "file")

	for _, flags := range []int{
		unix.O_RDONLY | unix.O_CREAT, unix.O_RDONLY | unix.O_EXCL, unix.O_PATH,
		unix.O_RDWR | unix.O_TMPFILE, unix.O_RDONLY | unix.O_NOFOLLOW,
		unix.O_RDONLY | unix.O_DIRECT, unix.O_ACCMODE, -1, 1 << 40,
	} {
		_, err := c.Open(file, flags)
		wantErrno(t, fmt.Sprintf("open flags %#x", flags), err, unix.EINVAL)
	}
	// A FIFO must be refused, not block the gofer waiting for a writer.
	for _, name := range []string{"fifo", "sock"} {
		_, err := c.Open(walk(t, c, RootNode, name), unix.O_RDONLY)
		wantErrno(t, "open "+name, err, unix.EACCES)
	}
	_, err = c.Open(walk(t, c, RootNode, "link-rel"), unix.O_RDONLY)
	wantErrno(t, "open a symlink", err, unix.ELOOP)
	_, err = c.Open(1<<40, unix.O_RDONLY)
	wantErrno(t, "open an unknown node", err, unix.EBADF)
}

func TestDeviceNodesNeverOpen(t *testing.T) {
	root := tree(t)
	err := unix.Mknod(filepath.Join(root, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3)))
	if err != nil {
		t.Skipf("mknod needs CAP_MKNOD: %v", err)
	}
	c := serveTree(t, root, false)
	id, a, err := c.Walk(RootNode, "null")
	must(t, err)
	if a.Mode&unix.S_IFMT != unix.S_IFCHR || a.Rdev != unix.Mkdev(1, 3) {
		t.Errorf("walked mode %o rdev %#x", a.Mode, a.Rdev)
	}
	_, err = c.Open(id, unix.O_RDWR)
	wantErrno(t, "open a device node", err, unix.EACCES)
}

func TestHostPermissionsApply(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root bypasses file permissions, so there is no EACCES to see")
	}
	root := tree(t)
	must(t, os.Chmod(filepath.Join(root, "file"), 0))
	c := serveTree(t, root, false)
	_, err := c.Open(walk(t, c, RootNode, "file"), unix.O_RDONLY)
	wantErrno(t, "open a mode 0 file", err, unix.EACCES)
}

func TestReleasedNodesAreGone(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)
	dir := walk(t, c, RootNode, "dir")
	nested := walk(t, c, dir, "nested")

	// A released parent stays open underneath its child: the child still
	// re-opens through it.
	c.Release(dir)
	_, err := c.Stat(dir)
	wantErrno(t, "stat a released node", err, unix.EBADF)
	fd, err := c.Open(nested, unix.O_RDONLY)
	must(t, err)
	unix.Close(fd)

	c.Release(nested, RootNode, 12345)
	_, err = c.Stat(nested)
	wantErrno(t, "stat a released node", err, unix.EBADF)
	if _, err := c.Stat(RootNode); err != nil {
		t.Errorf("the root must survive Release: %v", err)
	}
	_, _, err = c.Walk(0, "file")
	wantErrno(t, "walk from node 0", err, unix.EBADF)
}

// TestReleaseBatches releases more nodes than one message holds, and
// checks the gofer closed every one.
func TestReleaseBatches(t *testing.T) {
	root := tree(t)
	s := newTestSession(t, root, false)
	c, stop := start(t, s.serve)
	ids := make([]NodeID, maxRelease+100)
	for i := range ids {
		ids[i] = walk(t, c, RootNode, "file")
	}
	c.Release(ids...)
	if _, err := c.Stat(ids[len(ids)-1]); !isErrno(err) {
		t.Fatalf("stat after release: %v", err)
	}
	must(t, stop())
	if s.held != 1 || len(s.nodes) != 1 {
		t.Errorf("after releasing everything: %d fds held, %d nodes; want just the root", s.held, len(s.nodes))
	}
}

func TestNodeLimit(t *testing.T) {
	root := tree(t)
	s := newTestSession(t, root, false)
	s.limit = 3
	s.greeted = true
	var ids []NodeID
	for range 2 {
		errno, res, _ := exchange(s, walkRequest(RootNode, "file"))
		if errno != 0 {
			t.Fatalf("walk: %v", errno)
		}
		ids = append(ids, NodeID(le.Uint64(res)))
	}
	if errno, _, _ := exchange(s, walkRequest(RootNode, "file")); errno != unix.ENFILE {
		t.Fatalf("walk past the limit: %v, want ENFILE", errno)
	}
	exchange(s, le.AppendUint64([]byte{opRelease}, uint64(ids[0])))
	if errno, _, _ := exchange(s, walkRequest(RootNode, "file")); errno != 0 {
		t.Fatalf("walk after a release: %v", errno)
	}
}
