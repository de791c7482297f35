package tmpfs

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

var (
	memOnce sync.Once
	mem     *memfile.File
)

// testMem is the memory file every test's tmpfs keeps its data in.
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

func newRoot(t *testing.T, size int64) *inode {
	t.Helper()
	opts := DefaultOptions()
	opts.Size = size
	return New(testMem(t), opts).Inode().(*inode)
}

func stat(t *testing.T, ino vfs.Inode) vfs.Stat {
	t.Helper()
	st, err := ino.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func openFile(t *testing.T, ino vfs.Inode, flags int) *file {
	t.Helper()
	impl, err := ino.Open(flags)
	if err != nil {
		t.Fatal(err)
	}
	return impl.(*file)
}

func write(f *file, b []byte, off int64) (int, error) {
	return f.Write(vfs.NewIOSeqBuffer(b), off)
}

func read(f *file, n int, off int64) ([]byte, error) {
	b := make([]byte, n)
	k, err := f.Read(vfs.NewIOSeqBuffer(b), off)
	return b[:k], err
}

func TestRootDefaults(t *testing.T) {
	root := New(testMem(t), Options{Mode: 0o1777, UID: 5, GID: 6})
	st := stat(t, root.Inode())
	if st.Mode != unix.S_IFDIR|0o1777 || st.UID != 5 || st.GID != 6 || st.Nlink != 2 || st.Size != 40 {
		t.Errorf("root = %+v", st)
	}
	fs, err := root.Inode().(vfs.FSStater).StatFS()
	if err != nil || fs.Type != Magic || fs.Bsize != 4096 || fs.Namelen != 255 || fs.Blocks == 0 {
		t.Errorf("statfs = %+v, %v", fs, err)
	}
}

func TestCreateLookupList(t *testing.T) {
	root := newRoot(t, 0)
	names := []string{"zeta", "alpha", "mid"}
	for _, n := range names {
		if _, err := root.Create(n, 0o644, 1, 2); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := root.Create("alpha", 0o644, 1, 2); err != unix.EEXIST {
		t.Errorf("create twice: %v, want EEXIST", err)
	}
	d, err := root.Mkdir("dir", 0o755, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if st := stat(t, root); st.Nlink != 3 || st.Size != 40+4*20 {
		t.Errorf("root after mkdir: nlink %d size %d", st.Nlink, st.Size)
	}
	if st := stat(t, d); st.Nlink != 2 || st.Mode != unix.S_IFDIR|0o755 || st.UID != 1 || st.GID != 2 {
		t.Errorf("dir = %+v", st)
	}
	ents, err := root.ReadDir()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name)
	}
	if want := []string{"zeta", "alpha", "mid", "dir"}; !equal(got, want) {
		t.Errorf("ReadDir = %v, want creation order %v", got, want)
	}
	if ents[3].Type != unix.DT_DIR || ents[0].Type != unix.DT_REG {
		t.Errorf("types = %v", ents)
	}
	if _, err := root.Lookup("nope"); err != unix.ENOENT {
		t.Errorf("lookup missing: %v", err)
	}
	f, _ := root.Lookup("alpha")
	if _, err := f.Lookup("x"); err != unix.ENOTDIR {
		t.Errorf("lookup in a file: %v", err)
	}
	inos := map[uint64]bool{}
	for _, e := range ents {
		if inos[e.Ino] {
			t.Errorf("inode number %d used twice", e.Ino)
		}
		inos[e.Ino] = true
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFileData(t *testing.T) {
	root := newRoot(t, 0)
	ino, _ := root.Create("f", 0o644, 0, 0)
	f := openFile(t, ino, unix.O_RDWR)
	defer f.Release()

	// A write past the end leaves a hole of zeros, and only the written
	// page is allocated.
	if n, err := write(f, []byte("xyz"), 10000); n != 3 || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	st := stat(t, ino)
	if st.Size != 10003 || st.Blocks != 8 {
		t.Errorf("size %d blocks %d, want 10003 and 8", st.Size, st.Blocks)
	}
	b, _ := read(f, 20000, 0)
	if len(b) != 10003 || !bytes.Equal(b[:10000], make([]byte, 10000)) || string(b[10000:]) != "xyz" {
		t.Errorf("read %d bytes, tail %q", len(b), b[10000:])
	}
	// io.ReaderAt: a short read ends with io.EOF.
	buf := make([]byte, 10)
	if n, err := f.ReadAt(buf, 9998); n != 5 || err != io.EOF || string(buf[2:5]) != "xyz" {
		t.Errorf("ReadAt = %d, %v, %q", n, err, buf)
	}
	if n, err := f.ReadAt(buf, 0); n != 10 || err != nil {
		t.Errorf("ReadAt inside = %d, %v", n, err)
	}

	// A write across a page boundary.
	data := bytes.Repeat([]byte("ab"), 3000)
	if n, err := write(f, data, 4000); n != len(data) || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	b, _ = read(f, len(data), 4000)
	if !bytes.Equal(b, data) {
		t.Error("data across pages differs")
	}

	// Shrinking cuts, growing again reads zeros where it cut.
	if err := ino.(*inode).SetAttr(&vfs.Attr{Mask: vfs.SetSize, Size: 4001}); err != nil {
		t.Fatal(err)
	}
	if err := ino.(*inode).SetAttr(&vfs.Attr{Mask: vfs.SetSize, Size: 9000}); err != nil {
		t.Fatal(err)
	}
	b, _ = read(f, 10, 4000)
	if !bytes.Equal(b, []byte("a\x00\x00\x00\x00\x00\x00\x00\x00\x00")) {
		t.Errorf("after shrink and grow: %q", b)
	}
	if st := stat(t, ino); st.Size != 9000 || st.Blocks != 8 { // the grown part is a hole
		t.Errorf("size %d blocks %d, want 9000 and 8", st.Size, st.Blocks)
	}
	if sz, _ := f.Size(); sz != 9000 {
		t.Errorf("Size = %d", sz)
	}

	// O_TRUNC at open empties the file.
	g := openFile(t, ino, unix.O_WRONLY|unix.O_TRUNC)
	g.Release()
	if st := stat(t, ino); st.Size != 0 || st.Blocks != 0 {
		t.Errorf("after O_TRUNC: %+v", st)
	}
	if n, err := write(f, nil, 0); n != 0 || err != nil {
		t.Errorf("empty write = %d, %v", n, err)
	}
	if _, err := write(f, []byte("x"), 1<<63-1); err != unix.EFBIG {
		t.Errorf("write at the largest offset: %v, want EFBIG", err)
	}
}

func TestTimes(t *testing.T) {
	root := newRoot(t, 0)
	ino, _ := root.Create("f", 0o644, 0, 0)
	n := ino.(*inode)
	old := unix.Timespec{Sec: 1}
	n.atime, n.mtime, n.ctime = old, old, old
	root.mtime, root.ctime = old, old
	f := openFile(t, ino, unix.O_RDWR)
	defer f.Release()
	write(f, []byte("data"), 0)
	st := stat(t, ino)
	if st.Mtime == old || st.Ctime == old || st.Atime != old {
		t.Errorf("after write: %+v", st)
	}
	// relatime: a read after a change updates atime.
	read(f, 4, 0)
	if st2 := stat(t, ino); st2.Atime == old {
		t.Error("read did not update atime")
	}
	if err := n.SetAttr(&vfs.Attr{Mask: vfs.SetAtime | vfs.SetMtime, Atime: unix.Timespec{Sec: 7, Nsec: 8},
		Mtime: unix.Timespec{Sec: 9}}); err != nil {
		t.Fatal(err)
	}
	st = stat(t, ino)
	if st.Atime != (unix.Timespec{Sec: 7, Nsec: 8}) || st.Mtime != (unix.Timespec{Sec: 9}) || st.Ctime.Sec < 2 {
		t.Errorf("after SetAttr: %+v", st)
	}
	// Creating and removing names changes the directory's times.
	if _, err := root.Create("g", 0o644, 0, 0); err != nil {
		t.Fatal(err)
	}
	if rst := stat(t, root); rst.Mtime == old || rst.Ctime == old {
		t.Errorf("directory times after create: %+v", rst)
	}
}

func TestSizeLimit(t *testing.T) {
	root := newRoot(t, 3*pageSize)
	ino, _ := root.Create("f", 0o644, 0, 0)
	f := openFile(t, ino, unix.O_RDWR)
	defer f.Release()
	// A write that does not fit writes what fits.
	if n, err := write(f, make([]byte, 4*pageSize), 0); n != 3*pageSize || err != nil {
		t.Errorf("write = %d, %v; want %d", n, err, 3*pageSize)
	}
	if n, err := write(f, []byte("x"), 3*pageSize); n != 0 || err != unix.ENOSPC {
		t.Errorf("write when full = %d, %v; want ENOSPC", n, err)
	}
	// Rewriting allocated pages needs no space.
	if n, err := write(f, []byte("x"), 10); n != 1 || err != nil {
		t.Errorf("rewrite = %d, %v", n, err)
	}
	fs, _ := root.StatFS()
	if fs.Blocks != 3 || fs.Bfree != 0 {
		t.Errorf("statfs = %+v", fs)
	}
	// Truncating gives space back; a failed fallocate keeps none.
	n := ino.(*inode)
	n.SetAttr(&vfs.Attr{Mask: vfs.SetSize, Size: pageSize})
	if err := f.Allocate(nil, 0, 4*pageSize); err != unix.ENOSPC {
		t.Errorf("Allocate too much: %v", err)
	}
	if fs, _ := root.StatFS(); fs.Bfree != 2 {
		t.Errorf("after failed Allocate: %d free, want 2", fs.Bfree)
	}
	if err := f.Allocate(nil, pageSize, 2*pageSize); err != nil {
		t.Errorf("Allocate: %v", err)
	}
	if st := stat(t, ino); st.Size != 3*pageSize || st.Blocks != 24 {
		t.Errorf("after Allocate: size %d blocks %d", st.Size, st.Blocks)
	}
}

// interruptedTask is a task with a signal waiting.
type interruptedTask struct{}

func (interruptedTask) Block(<-chan struct{}) error { return unix.EINTR }
func (interruptedTask) Signal(int)                  {}
func (interruptedTask) FileSizeLimit() uint64       { return 1<<63 - 1 }
func (interruptedTask) Interrupted() bool           { return true }

// TestAllocateInterrupted: a memfd has no size limit, so fallocate over a
// range of terabytes stops when the task is interrupted, with EINTR and
// nothing kept, as Linux's tmpfs does, rather than run the host out of
// memory while a kill waits.
func TestAllocateInterrupted(t *testing.T) {
	f := NewMemFD(testMem(t), "big", 0, 0, false, false).(*memFile).file
	before := memfds(testMem(t)).pages.Load()
	if err := f.Allocate(interruptedTask{}, 0, 1<<40); err != unix.EINTR {
		t.Fatalf("Allocate of 1 TiB, interrupted: %v, want EINTR", err)
	}
	if st := stat(t, f.n); st.Size != 0 || st.Blocks != 0 || memfds(testMem(t)).pages.Load() != before {
		t.Fatalf("after an interrupted Allocate: size %d, blocks %d, %d pages in use (%d before)",
			st.Size, st.Blocks, memfds(testMem(t)).pages.Load(), before)
	}
}

// TestAllocateUpToTheLargestOffsetEnds: fallocate of a few bytes just
// below 2^63 allocates them and sets the size, as Linux's tmpfs does; its
// loop once stepped past the end and wrapped to negative offsets, where
// one step spans most of the int64 range: the call never returned. The
// bound is only there to fail rather than hang.
func TestAllocateUpToTheLargestOffsetEnds(t *testing.T) {
	f := NewMemFD(testMem(t), "top", 0, 0, false, false).(*memFile).file
	const off, length = 1<<63 - 4096, 100
	done := make(chan error, 1)
	go func() { done <- f.Allocate(nil, off, length) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Allocate(%#x, %d): %v, want success", off, length, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("Allocate(%#x, %d) of one page still runs after a minute", off, length)
	}
	if st := stat(t, f.n); st.Size != off+length || st.Blocks != pageSize/512 {
		t.Errorf("after Allocate(%#x, %d): size %#x, blocks %d; want size %#x, %d blocks",
			off, length, st.Size, st.Blocks, off+length, pageSize/512)
	}
}

// TestAllocateOfExabytesStopsAtTheFirstSignal: fallocate of 2^62 bytes
// by an interrupted task ends with EINTR and keeps nothing, promptly: the
// holes to give back were once found over the whole range first, 2^46
// chunks, before any signal was looked for. The bound is only there to
// fail rather than hang.
func TestAllocateOfExabytesStopsAtTheFirstSignal(t *testing.T) {
	f := NewMemFD(testMem(t), "huge", 0, 0, false, false).(*memFile).file
	const off, length = 10, 1 << 62
	done := make(chan error, 1)
	go func() { done <- f.Allocate(interruptedTask{}, off, length) }()
	select {
	case err := <-done:
		if err != unix.EINTR {
			t.Fatalf("Allocate(%d, %#x), interrupted: %v, want EINTR", off, length, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("Allocate(%d, %#x), interrupted, still runs after a minute", off, length)
	}
	if st := stat(t, f.n); st.Size != 0 || st.Blocks != 0 {
		t.Errorf("after an interrupted Allocate: size %d, blocks %d; want nothing kept", st.Size, st.Blocks)
	}
}

func TestUnlinkKeepsOpenData(t *testing.T) {
	root := newRoot(t, 0)
	ino, _ := root.Create("f", 0o644, 0, 0)
	f := openFile(t, ino, unix.O_RDWR)
	write(f, make([]byte, 2*pageSize), 0)
	if err := root.Unlink("f"); err != nil {
		t.Fatal(err)
	}
	if st := stat(t, ino); st.Nlink != 0 {
		t.Errorf("nlink %d after unlink", st.Nlink)
	}
	if n, err := write(f, []byte("more"), 0); n != 4 || err != nil {
		t.Errorf("write after unlink = %d, %v", n, err)
	}
	if got := root.fs.pages.Load(); got != 2 {
		t.Errorf("%d pages held while open, want 2", got)
	}
	f.Release()
	if got := root.fs.pages.Load(); got != 0 {
		t.Errorf("%d pages held after the last close, want 0", got)
	}
}

func TestRemoveAndRename(t *testing.T) {
	root := newRoot(t, 0)
	a, _ := root.Mkdir("a", 0o755, 0, 0)
	b, _ := root.Mkdir("b", 0o755, 0, 0)
	ad := a.(*inode)
	ad.Create("file", 0o644, 0, 0)
	sub, _ := ad.Mkdir("sub", 0o755, 0, 0)

	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"rmdir non-empty", root.Rmdir("a"), unix.ENOTEMPTY},
		{"rmdir a file", ad.Rmdir("file"), unix.ENOTDIR},
		{"unlink a directory", root.Unlink("a"), unix.EISDIR},
		{"unlink missing", root.Unlink("nope"), unix.ENOENT},
		{"rename missing", root.Rename("nope", root, "x", 0), unix.ENOENT},
		{"rename file over dir", ad.Rename("file", ad, "sub", 0), unix.EISDIR},
		{"rename dir over file", ad.Rename("sub", ad, "file", 0), unix.ENOTDIR},
		{"rename over non-empty dir", root.Rename("b", root, "a", 0), unix.ENOTEMPTY},
		{"noreplace", ad.Rename("file", ad, "sub", unix.RENAME_NOREPLACE), unix.EEXIST},
		{"exchange with missing", ad.Rename("file", ad, "nope", unix.RENAME_EXCHANGE), unix.ENOENT},
		{"link a directory", root.Link("l", a), unix.EPERM},
		{"link from another tmpfs", root.Link("l", New(testMem(t), DefaultOptions()).Inode()), unix.EXDEV},
		{"symlink too long", errOf(root.Symlink("s", string(make([]byte, pageSize)), 0, 0)), unix.ENAMETOOLONG},
	} {
		if c.err != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}

	// Moving a directory to another parent moves a link count.
	if err := ad.Rename("sub", b, "moved", 0); err != nil {
		t.Fatal(err)
	}
	if stat(t, a).Nlink != 2 || stat(t, b).Nlink != 3 {
		t.Errorf("nlink a %d b %d, want 2 and 3", stat(t, a).Nlink, stat(t, b).Nlink)
	}
	if got, _ := b.Lookup("moved"); got != sub {
		t.Error("moved directory not found at its new name")
	}
	// Replacing an empty directory drops it.
	root.Mkdir("empty", 0o755, 0, 0)
	emp, _ := root.Lookup("empty")
	if err := root.Rename("b", root, "empty", 0); err != nil {
		t.Fatal(err)
	}
	if st := stat(t, emp); st.Nlink != 0 {
		t.Errorf("replaced directory nlink %d", st.Nlink)
	}
	if _, err := emp.(*inode).Create("x", 0o644, 0, 0); err != unix.ENOENT {
		t.Errorf("create in a removed directory: %v", err)
	}
	if _, err := emp.ReadDir(); err != unix.ENOENT {
		t.Errorf("list a removed directory: %v", err)
	}
	if st := stat(t, root); st.Nlink != 4 { // ".", "..", a, empty
		t.Errorf("root nlink %d, want 4", st.Nlink)
	}
	// Exchange a file and a directory in different parents.
	f, _ := ad.Lookup("file")
	mv, _ := root.Lookup("empty")
	if err := ad.Rename("file", root, "empty", unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	if got, _ := ad.Lookup("file"); got != mv {
		t.Error("exchange: a/file is not the directory")
	}
	if got, _ := root.Lookup("empty"); got != f {
		t.Error("exchange: empty is not the file")
	}
	if stat(t, a).Nlink != 3 || stat(t, root).Nlink != 3 {
		t.Errorf("nlink after exchange: a %d root %d", stat(t, a).Nlink, stat(t, root).Nlink)
	}
	// Hard links count.
	if err := root.Link("again", f); err != nil {
		t.Fatal(err)
	}
	if stat(t, f).Nlink != 2 {
		t.Errorf("nlink %d after link", stat(t, f).Nlink)
	}
	if err := root.Rename("again", root, "empty", 0); err != nil || stat(t, f).Nlink != 2 {
		t.Errorf("rename onto another link of the same file: %v, nlink %d", err, stat(t, f).Nlink)
	}
}

func errOf(_ vfs.Inode, err error) error { return err }

func TestParseOptions(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want Options
		rest []string
		bad  bool
	}{
		{nil, Options{Mode: 0o1777}, nil, false},
		{[]string{"mode=755", "size=65536k", "uid=1", "gid=2", "nr_inodes=9"}, Options{Mode: 0o755, UID: 1, GID: 2, Size: 64 << 20}, nil, false},
		{[]string{"size=1g", "nosuid"}, Options{Mode: 0o1777, Size: 1 << 30}, []string{"nosuid"}, false},
		{[]string{"size=4096"}, Options{Mode: 0o1777, Size: 4096}, nil, false},
		{[]string{"nr_blocks=2"}, Options{Mode: 0o1777, Size: 8192}, nil, false},
		{[]string{"size=12x"}, Options{}, nil, true},
		{[]string{"mode=99"}, Options{}, nil, true},
		{[]string{"mode=17777"}, Options{}, nil, true},
		{[]string{"uid"}, Options{}, nil, true},
		{[]string{"size=99999999999e"}, Options{}, nil, true},
	} {
		got, rest, err := ParseOptions(c.in)
		if (err != nil) != c.bad {
			t.Errorf("%q: error %v", c.in, err)
			continue
		}
		if !c.bad && (got != c.want || !equal(rest, c.rest)) {
			t.Errorf("%q = %+v %q, want %+v %q", c.in, got, rest, c.want, c.rest)
		}
	}
	got, _, err := ParseOptions([]string{"size=50%"})
	if err != nil || got.Size <= 0 {
		t.Errorf("size=50%%: %+v, %v", got, err)
	}
}

// TestConcurrent runs I/O, truncation and renames at once (for -race).
func TestConcurrent(t *testing.T) {
	root := newRoot(t, 0)
	ino, _ := root.Create("f", 0o644, 0, 0)
	root.Mkdir("d", 0o755, 0, 0)
	done := make(chan struct{})
	for g := 0; g < 4; g++ {
		go func(g int) {
			defer func() { done <- struct{}{} }()
			f := openFile(t, ino, unix.O_RDWR)
			defer f.Release()
			for i := 0; i < 200; i++ {
				switch g {
				case 0:
					write(f, make([]byte, 5000), int64(i*100))
				case 1:
					read(f, 8000, int64(i))
					f.ReadAt(make([]byte, 100), int64(i))
				case 2:
					ino.(*inode).SetAttr(&vfs.Attr{Mask: vfs.SetSize, Size: int64(i * 10)})
				case 3:
					root.Rename("f", root, "g", 0)
					root.Rename("g", root, "f", 0)
					root.ReadDir()
					root.Lookup("d")
				}
			}
		}(g)
	}
	for g := 0; g < 4; g++ {
		<-done
	}
}

func TestADeviceNodeKeepsItsTypeAndNumber(t *testing.T) {
	root := newRoot(t, 0)
	for _, typ := range []uint32{unix.S_IFCHR, unix.S_IFBLK} {
		ino, err := root.Mknod(fmt.Sprint("dev", typ), typ|0o640, unix.Mkdev(10, 229), 3, 4)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := ino.Stat()
		if st.Mode != typ|0o640 || st.Rdev != unix.Mkdev(10, 229) || st.UID != 3 || st.GID != 4 {
			t.Errorf("node of type %o: mode %o rdev %#x owner %d:%d, want %o 10:229 3:4", typ, st.Mode, st.Rdev, st.UID, st.GID, typ|0o640)
		}
	}
}
