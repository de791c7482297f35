package gofer

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// needRoot skips tests that give files away to other owners.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the gofer gives new files the owner the sentry names")
	}
}

func lstat(t *testing.T, path string) unix.Stat_t {
	t.Helper()
	var st unix.Stat_t
	must(t, unix.Lstat(path, &st))
	return st
}

func TestCreateGivesExactOwnerAndMode(t *testing.T) {
	needRoot(t)
	root := tree(t)
	c := serveTree(t, root, false)
	old := unix.Umask(0o077) // the gofer's umask must not matter
	defer unix.Umask(old)

	id, a, fd, _, err := c.Create(RootNode, "new", 0o4755, 1234, 5678)
	must(t, err)
	if _, err := unix.Write(fd, []byte("data")); err != nil {
		t.Errorf("write to the created file's fd: %v", err)
	}
	if fl, _ := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); fl&unix.O_ACCMODE != unix.O_RDWR || fl&unix.O_NONBLOCK != 0 {
		t.Errorf("created fd flags %#x, want O_RDWR and blocking", fl)
	}
	unix.Close(fd)
	st := lstat(t, filepath.Join(root, "new"))
	if st.Mode != unix.S_IFREG|0o4755 || st.Uid != 1234 || st.Gid != 5678 || st.Size != 4 {
		t.Errorf("host file: mode %o uid %d gid %d size %d", st.Mode, st.Uid, st.Gid, st.Size)
	}
	if a.Mode != unix.S_IFREG|0o4755 || a.UID != 1234 || a.Ino != st.Ino {
		t.Errorf("answered attr %+v", a)
	}
	if got, err := c.Stat(id); err != nil || got.Ino != st.Ino {
		t.Errorf("stat of the new node: %+v, %v", got, err)
	}

	_, _, _, _, err = c.Create(RootNode, "new", 0o644, 0, 0)
	wantErrno(t, "create over a file", err, unix.EEXIST)
	must(t, os.Symlink("/nonexistent-outside", filepath.Join(root, "dangling")))
	_, _, _, _, err = c.Create(RootNode, "dangling", 0o644, 0, 0)
	wantErrno(t, "create over a dangling symlink", err, unix.EEXIST)
	if _, err := os.Lstat("/nonexistent-outside"); err == nil {
		t.Error("create followed a dangling symlink out of the tree")
	}
}

func TestMkdirMknodSymlinkLink(t *testing.T) {
	needRoot(t)
	root := tree(t)
	c := serveTree(t, root, false)

	d, a, _, err := c.Mkdir(RootNode, "sub", 0o2750, 7, 8)
	must(t, err)
	if a.Mode != unix.S_IFDIR|0o2750 || a.UID != 7 || a.GID != 8 {
		t.Errorf("mkdir attr %+v", a)
	}
	if _, _, _, err := c.Mkdir(d, "inner", 0o755, 0, 0); err != nil {
		t.Errorf("mkdir in the new directory: %v", err)
	}
	if st := lstat(t, filepath.Join(root, "sub", "inner")); st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Errorf("inner: mode %o", st.Mode)
	}

	for name, mode := range map[string]uint32{"fifo": unix.S_IFIFO | 0o640, "sock": unix.S_IFSOCK | 0o600, "emptyfile": unix.S_IFREG | 0o644} {
		_, a, _, err := c.Mknod(RootNode, name, mode, 3, 4)
		must(t, err)
		if st := lstat(t, filepath.Join(root, name)); st.Mode != mode || st.Uid != 3 || a.Mode != mode {
			t.Errorf("mknod %s: host mode %o uid %d, answered %o", name, st.Mode, st.Uid, a.Mode)
		}
	}
	for _, mode := range []uint32{unix.S_IFCHR | 0o666, unix.S_IFBLK | 0o666} {
		_, _, _, err := c.Mknod(RootNode, "dev", mode, 0, 0)
		wantErrno(t, "mknod of a device", err, unix.EPERM)
	}
	if _, err := os.Lstat(filepath.Join(root, "dev")); err == nil {
		t.Error("a device node was made")
	}

	_, a, _, err = c.Symlink(RootNode, "ln", "../../etc/passwd", 9, 9)
	must(t, err)
	if got, _ := os.Readlink(filepath.Join(root, "ln")); got != "../../etc/passwd" || a.Mode&unix.S_IFMT != unix.S_IFLNK {
		t.Errorf("symlink: target %q, mode %o", got, a.Mode)
	}
	if st := lstat(t, filepath.Join(root, "ln")); st.Uid != 9 {
		t.Errorf("symlink owner %d, want 9", st.Uid)
	}

	file := walk(t, c, RootNode, "file")
	_, a, _, err = c.Link(d, file, "hard")
	must(t, err)
	if st := lstat(t, filepath.Join(root, "file")); st.Nlink != 2 || a.Ino != st.Ino {
		t.Errorf("link: nlink %d, ino %d vs %d", st.Nlink, a.Ino, st.Ino)
	}
	_, _, _, err = c.Link(RootNode, d, "dirlink")
	wantErrno(t, "link of a directory", err, unix.EPERM)
}

func TestUnlinkLeavesNodesUsableButNotReopenable(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)
	file := walk(t, c, RootNode, "file")
	fd, err := c.Open(file, unix.O_RDONLY)
	must(t, err)
	defer unix.Close(fd)
	must(t, errOf(c.Unlink(RootNode, "file", 0)))
	if _, err := os.Lstat(filepath.Join(root, "file")); !os.IsNotExist(err) {
		t.Errorf("file still there: %v", err)
	}
	buf := make([]byte, 5)
	if n, err := unix.Pread(fd, buf, 0); n != 5 || err != nil || string(buf) != "hello" {
		t.Errorf("read of the removed file through its fd: %q, %v", buf[:n], err)
	}
	if _, err := c.Stat(file); err != nil {
		t.Errorf("stat of a removed node: %v", err)
	}
	_, err = c.Open(file, unix.O_RDONLY)
	wantErrno(t, "open of a removed node", err, unix.ESTALE)

	err = errOf(c.Unlink(RootNode, "dir", 0))
	wantErrno(t, "unlink of a directory", err, unix.EISDIR)
	err = errOf(c.Unlink(RootNode, "dir", unix.AT_REMOVEDIR))
	wantErrno(t, "rmdir of a full directory", err, unix.ENOTEMPTY)
	must(t, errOf(c.Unlink(RootNode, "empty", unix.AT_REMOVEDIR)))
	err = errOf(c.Unlink(RootNode, "link-abs", unix.AT_REMOVEDIR|unix.AT_SYMLINK_NOFOLLOW))
	wantErrno(t, "unlink with unknown flags", err, unix.EINVAL)
	must(t, errOf(c.Unlink(RootNode, "link-abs", 0)))
	if _, err := os.Stat("/etc"); err != nil {
		t.Errorf("removing a link to /etc touched /etc: %v", err)
	}
}

func TestRenamedNodesFollowTheirFiles(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)
	dir := walk(t, c, RootNode, "dir")
	nested := walk(t, c, dir, "nested")
	empty := walk(t, c, RootNode, "empty")

	must(t, errOf2(c.Rename(RootNode, "dir", empty, "moved", 0)))
	fd, err := c.Open(nested, unix.O_RDONLY)
	must(t, err)
	unix.Close(fd)
	fd, err = c.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY)
	must(t, err)
	unix.Close(fd)

	// Exchange: each node follows its own file.
	file := walk(t, c, RootNode, "file")
	must(t, errOf2(c.Rename(RootNode, "file", empty, "moved", unix.RENAME_EXCHANGE)))
	if st := lstat(t, filepath.Join(root, "file")); st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Fatalf("after exchange, file is mode %o", st.Mode)
	}
	fd, err = c.Open(file, unix.O_RDONLY)
	must(t, err)
	buf := make([]byte, 5)
	unix.Pread(fd, buf, 0)
	unix.Close(fd)
	if string(buf) != "hello" {
		t.Errorf("the exchanged file's node opens %q", buf)
	}
	fd, err = c.Open(nested, unix.O_RDONLY)
	must(t, err)
	unix.Close(fd)

	// A replaced file's node is removed with it.
	must(t, os.WriteFile(filepath.Join(root, "victim"), []byte("v"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "winner"), []byte("w"), 0o644))
	victim := walk(t, c, RootNode, "victim")
	must(t, errOf2(c.Rename(RootNode, "winner", RootNode, "victim", 0)))
	_, err = c.Open(victim, unix.O_RDONLY)
	wantErrno(t, "open of a replaced node", err, unix.ESTALE)
	err = errOf2(c.Rename(RootNode, "victim", RootNode, "link-rel", unix.RENAME_NOREPLACE))
	wantErrno(t, "RENAME_NOREPLACE over a name", err, unix.EEXIST)
	err = errOf2(c.Rename(RootNode, "victim", RootNode, "x", 1<<7))
	wantErrno(t, "rename with an unknown flag", err, unix.EINVAL)
}

func TestSetAttr(t *testing.T) {
	needRoot(t)
	root := tree(t)
	c := serveTree(t, root, false)
	file := walk(t, c, RootNode, "file")
	path := filepath.Join(root, "file")

	a, err := c.SetAttr(file, SetAttr{Mask: SetOwner | SetMode, UID: 11, GID: 12, Mode: 0o6711})
	must(t, err)
	st := lstat(t, path)
	if st.Uid != 11 || st.Gid != 12 || st.Mode != unix.S_IFREG|0o6711 || a.Mode != st.Mode {
		t.Errorf("owner and mode: uid %d gid %d mode %o, answered %o", st.Uid, st.Gid, st.Mode, a.Mode)
	}
	a, err = c.SetAttr(file, SetAttr{Mask: SetOwner, UID: ^uint32(0), GID: 13})
	must(t, err)
	if a.UID != 11 || a.GID != 13 {
		t.Errorf("owner -1 left alone: uid %d gid %d", a.UID, a.GID)
	}
	a, err = c.SetAttr(file, SetAttr{Mask: SetSize, Size: 3})
	must(t, err)
	if got, _ := os.ReadFile(path); string(got) != "hel" || a.Size != 3 {
		t.Errorf("truncate: %q, size %d", got, a.Size)
	}
	a, err = c.SetAttr(file, SetAttr{Mask: SetAtime | SetMtime, Atime: unix.Timespec{Sec: 100, Nsec: 5}, Mtime: unix.Timespec{Sec: 200}})
	must(t, err)
	st = lstat(t, path)
	if st.Atim.Sec != 100 || st.Atim.Nsec != 5 || st.Mtim.Sec != 200 || a.Mtime.Sec != 200 {
		t.Errorf("times: atime %v mtime %v", st.Atim, st.Mtim)
	}
	a, err = c.SetAttr(file, SetAttr{Mask: SetMtime, Mtime: unix.Timespec{Nsec: unix.UTIME_NOW}})
	must(t, err)
	if st = lstat(t, path); st.Atim.Sec != 100 || time.Since(time.Unix(st.Mtim.Unix())) > time.Minute {
		t.Errorf("UTIME_NOW: atime %v (should stay), mtime %v", st.Atim, st.Mtim)
	}

	link := walk(t, c, RootNode, "link-abs")
	_, err = c.SetAttr(link, SetAttr{Mask: SetOwner, UID: 21, GID: 22})
	must(t, err)
	if st := lstat(t, filepath.Join(root, "link-abs")); st.Uid != 21 {
		t.Errorf("lchown: uid %d", st.Uid)
	}
	var etc unix.Stat_t
	must(t, unix.Stat("/etc", &etc))
	if etc.Uid == 21 {
		t.Error("lchown through a link changed its target")
	}
	_, err = c.SetAttr(walk(t, c, RootNode, "dir"), SetAttr{Mask: SetSize})
	wantErrno(t, "truncate of a directory", err, unix.EISDIR)
	_, err = c.SetAttr(file, SetAttr{Mask: SetSize, Size: -1})
	wantErrno(t, "negative size", err, unix.EINVAL)

	fs, err := c.StatFS(RootNode)
	must(t, err)
	var want unix.Statfs_t
	must(t, unix.Statfs(root, &want))
	if fs.Type != want.Type || fs.Bsize != want.Bsize || fs.Blocks != want.Blocks {
		t.Errorf("statfs %+v, host %+v", fs, want)
	}
}

func TestTmpfileThenLink(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)
	id, _, fd, err := c.Tmpfile(RootNode, 0o600, uint32(os.Geteuid()), uint32(os.Getegid()))
	must(t, err)
	unix.Write(fd, []byte("anon"))
	unix.Close(fd)
	ents, _ := os.ReadDir(root)
	before := len(ents)
	_, err = c.Open(id, unix.O_RDONLY)
	wantErrno(t, "reopen of an unnamed file", err, unix.ESTALE)
	_, _, _, err = c.Link(RootNode, id, "named")
	must(t, err)
	if got, _ := os.ReadFile(filepath.Join(root, "named")); string(got) != "anon" {
		t.Errorf("linked tmpfile holds %q", got)
	}
	if ents, _ := os.ReadDir(root); len(ents) != before+1 {
		t.Errorf("%d entries after linking, want %d", len(ents), before+1)
	}
}

func TestReadonlyRefusesEveryChange(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, true)
	file := walk(t, c, RootNode, "file")
	_, _, _, _, err := c.Create(RootNode, "x", 0o644, 0, 0)
	wantErrno(t, "create", err, unix.EROFS)
	_, _, _, err = c.Tmpfile(RootNode, 0o644, 0, 0)
	wantErrno(t, "tmpfile", err, unix.EROFS)
	_, _, _, err = c.Mkdir(RootNode, "x", 0o755, 0, 0)
	wantErrno(t, "mkdir", err, unix.EROFS)
	_, _, _, err = c.Mknod(RootNode, "x", unix.S_IFIFO|0o644, 0, 0)
	wantErrno(t, "mknod", err, unix.EROFS)
	_, _, _, err = c.Symlink(RootNode, "x", "y", 0, 0)
	wantErrno(t, "symlink", err, unix.EROFS)
	_, _, _, err = c.Link(RootNode, file, "x")
	wantErrno(t, "link", err, unix.EROFS)
	wantErrno(t, "unlink", errOf(c.Unlink(RootNode, "file", 0)), unix.EROFS)
	wantErrno(t, "rename", errOf2(c.Rename(RootNode, "file", RootNode, "x", 0)), unix.EROFS)
	_, err = c.SetAttr(file, SetAttr{Mask: SetMode, Mode: 0o777})
	wantErrno(t, "setattr", err, unix.EROFS)
	if _, err := c.StatFS(RootNode); err != nil {
		t.Errorf("statfs of a read-only tree: %v", err)
	}
}

// TestChangesStayInsideWhileNamesAreSwapped creates, links and removes
// files in a directory while another process swaps it, over and over, for
// a symlink to a directory outside the tree: nothing may appear in, or go
// from, the outside directory.
func TestChangesStayInsideWhileNamesAreSwapped(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	must(t, os.MkdirAll(filepath.Join(root, "work"), 0o755))
	must(t, os.Mkdir(outside, 0o755))
	must(t, os.WriteFile(filepath.Join(outside, "keep"), []byte("k"), 0o644))
	c := serveTree(t, root, false)

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the swapper: work <-> a symlink to outside
		defer wg.Done()
		work, aside, link := filepath.Join(root, "work"), filepath.Join(root, "aside"), filepath.Join(root, "link")
		for !stop.Load() {
			os.Symlink(outside, link)
			os.Rename(work, aside)
			os.Rename(link, work)
			os.Rename(work, link)
			os.Rename(aside, work)
			os.Remove(link)
		}
	}()
	uid, gid := uint32(os.Geteuid()), uint32(os.Getegid())
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; time.Now().Before(deadline) && i < 20000; i++ {
		dir, _, err := c.Walk(RootNode, "work")
		if err != nil {
			continue
		}
		name := "f" + strconv.Itoa(i%50)
		// Each node made is released, as the sentry does: a node holds
		// host descriptors, and 20,000 rounds of them ran the test out.
		if n, _, fd, _, err := c.Create(dir, name, 0o644, uid, gid); err == nil {
			unix.Close(fd)
			c.Release(n)
		}
		if n, _, _, err := c.Mkdir(dir, name+"d", 0o755, uid, gid); err == nil {
			c.Release(n)
		}
		if n, _, _, err := c.Symlink(dir, name+"l", "x", uid, gid); err == nil {
			c.Release(n)
		}
		errOf(c.Unlink(dir, "keep", 0))
		errOf(c.Unlink(dir, name, 0))
		errOf(c.Unlink(dir, name+"d", unix.AT_REMOVEDIR))
		errOf(c.Unlink(dir, name+"l", 0))
		errOf2(c.Rename(dir, "keep", dir, "gone", 0))
		c.Release(dir)
	}
	stop.Store(true)
	wg.Wait()
	ents, err := os.ReadDir(outside)
	must(t, err)
	if len(ents) != 1 || ents[0].Name() != "keep" {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Fatalf("the outside directory changed: %v", names)
	}
}

func TestAFileCanBeTheRoot(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hosts")
	must(t, os.WriteFile(file, []byte("127.0.0.1 localhost\n"), 0o644))
	must(t, os.Symlink("hosts", filepath.Join(dir, "via-link")))
	c := serveTree(t, filepath.Join(dir, "via-link"), false)
	a, err := c.Stat(RootNode)
	must(t, err)
	if a.Mode&unix.S_IFMT != unix.S_IFREG {
		t.Fatalf("root mode %o, want a regular file", a.Mode)
	}
	fd, err := c.Open(RootNode, unix.O_RDWR|unix.O_TRUNC)
	must(t, err)
	unix.Write(fd, []byte("::1 localhost\n"))
	unix.Close(fd)
	if got, _ := os.ReadFile(file); string(got) != "::1 localhost\n" {
		t.Errorf("file root after a write: %q", got)
	}
	_, _, err = c.Walk(RootNode, "x")
	wantErrno(t, "walk in a file root", err, unix.ENOTDIR)
	_, _, _, _, err = c.Create(RootNode, "x", 0o644, 0, 0)
	wantErrno(t, "create in a file root", err, unix.ENOTDIR)

	// A file swapped in for it by the host is not reopened.
	must(t, os.Rename(file, file+".old"))
	must(t, os.WriteFile(file, []byte("other"), 0o644))
	_, err = c.Open(RootNode, unix.O_RDONLY)
	wantErrno(t, "open of a replaced file root", err, unix.ESTALE)
}

func TestWalkDirWalksEveryEntry(t *testing.T) {
	root := tree(t)
	c := serveTree(t, root, false)
	entries, complete, err := c.WalkDir(RootNode)
	must(t, err)
	if !complete {
		t.Error("a small directory's walk is incomplete")
	}
	want, _ := os.ReadDir(root)
	if len(entries) != len(want) {
		t.Fatalf("%d entries, want %d", len(entries), len(want))
	}
	for _, e := range entries {
		var st unix.Stat_t
		must(t, unix.Lstat(filepath.Join(root, e.Name), &st))
		if e.Attr.Ino != st.Ino || e.Attr.Mode != st.Mode {
			t.Errorf("%s: attr %+v, host ino %d mode %o", e.Name, e.Attr, st.Ino, st.Mode)
		}
		if e.Attr.Mode&unix.S_IFMT == unix.S_IFREG {
			fd, err := c.Open(e.Node, unix.O_RDONLY)
			must(t, err)
			unix.Close(fd)
		}
	}
	// A symlink's node is the link's, never its target's.
	for _, e := range entries {
		if e.Name == "link-abs" && e.Attr.Mode&unix.S_IFMT != unix.S_IFLNK {
			t.Errorf("link-abs walked to mode %o", e.Attr.Mode)
		}
	}
	big := t.TempDir()
	for i := 0; i < maxWalkDir+1; i++ {
		must(t, os.WriteFile(filepath.Join(big, strconv.Itoa(i)), nil, 0o644))
	}
	cb := serveTree(t, big, true)
	entries, complete, err = cb.WalkDir(RootNode)
	must(t, err)
	if complete || len(entries) != 0 {
		t.Errorf("a directory of %d entries: %d entries, complete %v; want none, incomplete", maxWalkDir+1, len(entries), complete)
	}
}

// A change of a name answers with the directory's change time before it
// and its attributes after: a change the host made in between shows as a
// change time other than the one the last answer left.
func TestAChangeOfANameTellsWhatItDidToTheDirectory(t *testing.T) {
	root := t.TempDir()
	c := serveTree(t, root, false)
	before := lstat(t, root)
	d, _, ch, err := c.Mkdir(RootNode, "sub", 0o755, uint32(os.Getuid()), uint32(os.Getgid()))
	must(t, err)
	after := lstat(t, root)
	if ch.Before != before.Ctim || ch.After.Ctime != after.Ctim || ch.After.Ino != after.Ino || ch.After.Nlink != uint64(after.Nlink) {
		t.Errorf("mkdir's DirChange %+v, want change time %v before and %+v after", ch, before.Ctim, after)
	}
	_, _, _, ch2, err := c.Create(d, "f", 0o644, uint32(os.Getuid()), uint32(os.Getgid()))
	must(t, err)
	if sub := lstat(t, filepath.Join(root, "sub")); ch2.After.Ctime != sub.Ctim || ch2.After.Ino != sub.Ino {
		t.Errorf("create's DirChange after %+v, want the subdirectory's %+v", ch2.After, sub)
	}
	must(t, os.WriteFile(filepath.Join(root, "host"), nil, 0o644)) // behind the client
	from, to, err := c.Rename(RootNode, "host", d, "moved", 0)
	must(t, err)
	if from.Before == ch.After.Ctime {
		t.Errorf("rename's DirChange of the root: change time before %v, the same as mkdir left, though the host changed it", from.Before)
	}
	if to.Before != ch2.After.Ctime {
		t.Errorf("rename's DirChange of sub: change time before %v, want %v, the one create left", to.Before, ch2.After.Ctime)
	}
	un, err := c.Unlink(d, "moved", 0)
	must(t, err)
	if un.Before != to.After.Ctime || un.After.Ctime != lstat(t, filepath.Join(root, "sub")).Ctim {
		t.Errorf("unlink's DirChange %+v", un)
	}
}
