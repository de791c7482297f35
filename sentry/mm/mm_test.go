package mm

import (
	"bytes"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/memfile"
)

var sharedFile *memfile.File

// newAS returns a fake address space, which records what mm asks of it.
func newAS(t *testing.T) *fake.AddressSpace {
	t.Helper()
	as, err := fake.New(sharedFile).NewAddressSpace()
	if err != nil {
		t.Fatal(err)
	}
	return as.(*fake.AddressSpace)
}

func newMM(t *testing.T) (*MemoryManager, *fake.AddressSpace) {
	t.Helper()
	if sharedFile == nil {
		f, err := memfile.New()
		if err != nil {
			t.Fatal(err)
		}
		sharedFile = f
	}
	as := newAS(t)
	m := New(sharedFile, as, 0x7f0000000000)
	m.SetMmapBase(0x7e0000000000)
	return m, as
}

const rw = platform.ProtRead | platform.ProtWrite

func TestMMapAnonTopDownAndHint(t *testing.T) {
	m, as := newMM(t)
	a, err := m.MMap(MMapOpts{Length: 3 * PageSize, Prot: rw})
	if err != nil || a != 0x7e0000000000-3*PageSize {
		t.Fatalf("first mapping at %#x (%v), want just below the mmap base", a, err)
	}
	b, _ := m.MMap(MMapOpts{Length: 1, Prot: rw})
	if b != a-PageSize {
		t.Fatalf("second mapping at %#x, want %#x", b, a-PageSize)
	}
	h, _ := m.MMap(MMapOpts{Addr: 0x100000, Length: PageSize, Prot: rw})
	if h != 0x100000 {
		t.Fatalf("free hint not honoured: %#x", h)
	}
	h2, _ := m.MMap(MMapOpts{Addr: 0x100000, Length: PageSize, Prot: rw})
	if h2 == 0x100000 {
		t.Fatal("occupied hint reused")
	}
	if as.Calls().Maps != 4 {
		t.Fatalf("%d host maps, want 4", as.Calls().Maps)
	}
}

func TestMMapErrors(t *testing.T) {
	m, _ := newMM(t)
	cases := []struct {
		o    MMapOpts
		want error
	}{
		{MMapOpts{Length: 0}, unix.EINVAL},
		{MMapOpts{Length: PageSize, Offset: 100, File: bytes.NewReader(nil)}, unix.EINVAL},
		{MMapOpts{Addr: 0x100001, Length: PageSize, Fixed: true}, unix.EINVAL},
		{MMapOpts{Addr: 0x1000, Length: PageSize, Fixed: true}, unix.EPERM},
		{MMapOpts{Addr: 0x7f0000000000 - PageSize, Length: 2 * PageSize, Fixed: true}, unix.ENOMEM},
		{MMapOpts{Length: ^uintptr(0)}, unix.ENOMEM},
	}
	for _, c := range cases {
		if _, err := m.MMap(c.o); err != c.want {
			t.Errorf("MMap(%+v) = %v, want %v", c.o, err, c.want)
		}
	}
	m.MMap(MMapOpts{Addr: 0x200000, Length: PageSize, Fixed: true, Prot: rw})
	if _, err := m.MMap(MMapOpts{Addr: 0x200000, Length: PageSize, NoReplace: true}); err != unix.EEXIST {
		t.Errorf("MAP_FIXED_NOREPLACE over a mapping: %v, want EEXIST", err)
	}
}

func TestFixedReplacesAndFileContents(t *testing.T) {
	m, _ := newMM(t)
	m.MMap(MMapOpts{Addr: 0x200000, Length: 4 * PageSize, Fixed: true, Prot: rw})
	m.CopyOut(0x200000+PageSize, []byte("old"))
	data := bytes.Repeat([]byte("f"), PageSize+10)
	if _, err := m.MMap(MMapOpts{Addr: 0x200000 + PageSize, Length: 2 * PageSize, Fixed: true, Prot: platform.ProtRead,
		File: bytes.NewReader(data)}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 2*PageSize)
	m.CopyIn(0x200000+PageSize, buf)
	if !bytes.Equal(buf[:len(data)], data) || buf[len(data)] != 0 {
		t.Fatal("file mapping does not hold the file followed by zeros")
	}
	if len(m.vmas.s) != 3 {
		t.Fatalf("%d vmas after a fixed replacement in the middle, want 3", len(m.vmas.s))
	}
	if _, err := m.CopyOut(0x200000+PageSize, []byte("x")); err != unix.EFAULT {
		t.Fatalf("copy into a read-only mapping: %v, want EFAULT", err)
	}
}

// TestFileMappingPastEOF: a mapping that starts past the end of its file
// (which Linux allows: touching it raises SIGBUS) is one range the platform
// can map, not an empty one before it, which it refuses.
func TestFileMappingPastEOF(t *testing.T) {
	m, as := newMM(t)
	data := []byte("short")
	a, err := m.MMap(MMapOpts{Length: 2 * PageSize, Prot: rw, Shared: true, File: bytes.NewReader(data), Offset: 1 << 40})
	if err != nil {
		t.Fatalf("mapping past the end of the file: %v", err)
	}
	if as.Calls().EmptyMaps != 0 {
		t.Fatalf("%d empty ranges given to the platform", as.Calls().EmptyMaps)
	}
	if _, err := m.CopyIn(a, make([]byte, 1)); err != unix.EFAULT {
		t.Fatalf("copy from past the end of the file: %v, want EFAULT", err)
	}
}

// TestResidencyEmpty: mincore of no bytes succeeds, inside a mapping or
// not (it used to index the first byte of an empty view).
func TestResidencyEmpty(t *testing.T) {
	m, _ := newMM(t)
	a, err := m.MMap(MMapOpts{Length: 2 * PageSize, Prot: rw})
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []uintptr{a, a + PageSize, 0x100000} {
		if res, err := m.Residency(addr, 0); err != nil || len(res) != 0 {
			t.Errorf("Residency(%#x, 0) = %v, %v; want nothing and no error", addr, res, err)
		}
	}
}

func TestMunmapSplitsAndCopyFaults(t *testing.T) {
	m, _ := newMM(t)
	m.MMap(MMapOpts{Addr: 0x300000, Length: 4 * PageSize, Fixed: true, Prot: rw})
	if err := m.Munmap(0x300000+PageSize, PageSize); err != nil {
		t.Fatal(err)
	}
	n, err := m.CopyOut(0x300000, make([]byte, 2*PageSize))
	if n != PageSize || err != unix.EFAULT {
		t.Fatalf("copy across a hole: %d, %v; want %d, EFAULT", n, err, PageSize)
	}
	if err := m.Munmap(0x300001, PageSize); err != unix.EINVAL {
		t.Fatalf("unaligned munmap: %v", err)
	}
	if err := m.Mprotect(0x300000, 3*PageSize, platform.ProtRead); err != unix.ENOMEM {
		t.Fatalf("mprotect over a hole: %v, want ENOMEM", err)
	}
}

func TestMprotectMaxProt(t *testing.T) {
	m, as := newMM(t)
	m.MMap(MMapOpts{Addr: 0x400000, Length: 2 * PageSize, Fixed: true, Prot: platform.ProtRead, MaxProt: platform.ProtRead | platform.ProtExec})
	if err := m.Mprotect(0x400000, PageSize, rw); err != unix.EACCES {
		t.Fatalf("mprotect beyond max: %v, want EACCES", err)
	}
	if err := m.Mprotect(0x400000, PageSize, platform.ProtRead|platform.ProtExec); err != nil || as.Calls().Protects != 1 {
		t.Fatalf("mprotect: %v, %d host protects", err, as.Calls().Protects)
	}
	if len(m.vmas.s) != 2 {
		t.Fatalf("%d vmas after protecting half, want 2", len(m.vmas.s))
	}
}

func TestBrk(t *testing.T) {
	m, _ := newMM(t)
	m.SetBrkBase(0x600123)
	if got := m.Brk(0); got != 0x600123 {
		t.Fatalf("brk(0) = %#x", got)
	}
	if got := m.Brk(0x600123 + 3*PageSize); got != 0x600123+3*PageSize {
		t.Fatalf("brk grow = %#x", got)
	}
	if _, err := m.CopyOut(0x600123+2*PageSize, []byte("heap")); err != nil {
		t.Fatalf("heap not writable: %v", err)
	}
	m.Brk(0x600123 + PageSize)
	if _, err := m.CopyOut(0x600123+2*PageSize, []byte("x")); err != unix.EFAULT {
		t.Fatalf("shrunk heap still mapped: %v", err)
	}
	m.MMap(MMapOpts{Addr: 0x700000, Length: PageSize, Fixed: true, Prot: rw})
	if got := m.Brk(0x800000); got != 0x600123+PageSize {
		t.Fatalf("brk into a mapping = %#x, want unchanged", got)
	}
}

func TestMremap(t *testing.T) {
	m, _ := newMM(t)
	m.MMap(MMapOpts{Addr: 0x900000, Length: PageSize, Fixed: true, Prot: rw})
	m.CopyOut(0x900000, []byte("keep"))
	a, err := m.Mremap(0x900000, PageSize, 2*PageSize, 0, 0)
	if err != nil || a != 0x900000 {
		t.Fatalf("grow in place: %#x %v", a, err)
	}
	m.MMap(MMapOpts{Addr: 0x900000 + 2*PageSize, Length: PageSize, Fixed: true, Prot: rw})
	if _, err := m.Mremap(0x900000, 2*PageSize, 4*PageSize, 0, 0); err != unix.ENOMEM {
		t.Fatalf("blocked grow without MAYMOVE: %v", err)
	}
	b, err := m.Mremap(0x900000, 2*PageSize, 4*PageSize, mremapMaymove, 0)
	if err != nil || b == 0x900000 {
		t.Fatalf("moving grow: %#x %v", b, err)
	}
	buf := make([]byte, 4)
	m.CopyIn(b, buf)
	if string(buf) != "keep" {
		t.Fatalf("contents did not move: %q", buf)
	}
	if m.IsMapped(0x900000) {
		t.Fatal("old range still mapped after a move")
	}
	if _, err := m.Mremap(0x900000, PageSize, PageSize, mremapMaymove, 0); err != unix.EFAULT {
		t.Fatalf("mremap of unmapped memory: %v", err)
	}
}

func TestCopyInString(t *testing.T) {
	m, _ := newMM(t)
	m.MMap(MMapOpts{Addr: 0xa00000, Length: 2 * PageSize, Fixed: true, Prot: rw})
	m.CopyOut(0xa00000+PageSize-3, []byte("abcdef\x00"))
	s, err := m.CopyInString(0xa00000+PageSize-3, 100)
	if err != nil || s != "abcdef" {
		t.Fatalf("string across pages: %q %v", s, err)
	}
	if _, err := m.CopyInString(0xa00000+PageSize-3, 4); err != unix.ENAMETOOLONG {
		t.Fatalf("too long: %v", err)
	}
	if _, err := m.CopyInString(0xb00000, 4); err != unix.EFAULT {
		t.Fatalf("unmapped: %v", err)
	}
}

// fakeFile is a file for mapping tests.
type fakeFile []byte

func (f fakeFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(f)) {
		return 0, io.EOF
	}
	n := copy(p, f[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func TestForkCopyOnWrite(t *testing.T) {
	m, as := newMM(t)
	m.MMap(MMapOpts{Addr: 0xc00000, Length: 2 * PageSize, Fixed: true, Prot: rw})
	m.CopyOut(0xc00000, []byte("parent"))
	m.MMap(MMapOpts{Addr: 0xd00000, Length: PageSize, Fixed: true, Prot: rw, Shared: true})
	m.CopyOut(0xd00000, []byte("shared"))

	cas := newAS(t)
	c := m.Fork(cas, 0)
	if as.Calls().Protects == 0 {
		t.Fatal("the parent's writable private pages were not write-protected")
	}
	if cas.Calls().Maps != len(c.pmas.s) {
		t.Fatalf("child mapped %d ranges, want %d", cas.Calls().Maps, len(c.pmas.s))
	}
	// The sentry writing into the child copies its page first.
	if _, err := c.CopyOut(0xc00000, []byte("child!")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 6)
	m.CopyIn(0xc00000, buf)
	if string(buf) != "parent" {
		t.Fatalf("the child's write reached the parent: %q", buf)
	}
	// A guest write fault in the parent: its page is now its own, made
	// writable without a copy.
	if m.HandleFault(0xc00000, platform.ProtWrite) != FaultHandled {
		t.Fatal("write fault on a copy-on-write page not handled")
	}
	p, _ := m.pmas.lookup(0xc00000)
	if p.cow {
		t.Fatal("page still copy-on-write after the fault")
	}
	// Shared mappings stay shared.
	c.CopyOut(0xd00000, []byte("SHARED"))
	m.CopyIn(0xd00000, buf)
	if string(buf) != "SHARED" {
		t.Fatalf("a MAP_SHARED page was copied at fork: %q", buf)
	}
	// Faults that break the rules are refused.
	if m.HandleFault(0xe00000, platform.ProtRead) == FaultHandled {
		t.Fatal("fault on unmapped memory accepted")
	}
	c.DecUsers()
	m.DecUsers()
	if !cas.Released() || !as.Released() {
		t.Fatal("address spaces not released with their last user")
	}
}

// TestForkCopiesStack: the pages around the forking thread's stack pointer
// are the child's own from the start; the rest of the mapping is shared
// copy-on-write.
func TestForkCopiesStack(t *testing.T) {
	m, _ := newMM(t)
	const stack, size = 0x1000000, 64 * PageSize
	m.MMap(MMapOpts{Addr: stack, Length: size, Fixed: true, Prot: rw})
	m.CopyOut(stack, []byte("far"))
	sp := uintptr(stack + 32*PageSize + 100)
	m.CopyOut(sp, []byte("near"))

	c := m.Fork(newAS(t), sp)
	near, _ := c.pmas.lookup(sp)
	far, _ := c.pmas.lookup(stack)
	if near.cow || near.start != pageRoundDown(sp)-forkCopyBelowSP || near.end != pageRoundDown(sp)+forkCopyAboveSP {
		t.Fatalf("the child's pages near sp: %+v", *near)
	}
	if !far.cow {
		t.Fatal("the child's pages far from sp are not copy-on-write")
	}
	if p, _ := m.pmas.lookup(sp); p.cow {
		t.Fatal("the parent's pages near sp became copy-on-write")
	}
	buf := make([]byte, 4)
	c.CopyIn(sp, buf)
	if string(buf) != "near" {
		t.Fatalf("the child's copy holds %q", buf)
	}
	m.CopyOut(sp, []byte("NEAR"))
	c.CopyIn(sp, buf)
	if string(buf) != "near" {
		t.Fatalf("the parent's write reached the child: %q", buf)
	}
	c.DecUsers()
	m.DecUsers()
}

// TestUnmapBeforeFreeWithThreads: while other threads may run guest code,
// an unmap (or a mapping over others) reaches the host before the pages
// are freed; a lone thread's changes wait for its next Switch.
func TestUnmapBeforeFreeWithThreads(t *testing.T) {
	m, as := newMM(t)
	a, _ := m.MMap(MMapOpts{Length: 4 * PageSize, Prot: rw})
	m.Munmap(a, PageSize)
	if as.Calls().Syncs != 0 {
		t.Fatalf("%d syncs for a lone thread's munmap, want none", as.Calls().Syncs)
	}
	m.IncUsers()
	unmaps := as.Calls().Unmaps
	m.Munmap(a+PageSize, PageSize)
	m.MMap(MMapOpts{Addr: a + 2*PageSize, Length: PageSize, Fixed: true, Prot: rw})
	if as.Calls().Syncs != 2 || as.Calls().Unmaps != unmaps+2 {
		t.Fatalf("with two threads: %d syncs and %d unmaps, want 2 of each", as.Calls().Syncs, as.Calls().Unmaps-unmaps)
	}
	m.DecUsers()
	m.DecUsers()
}

// TestForkCopiesWhatChildrenWrote: pages the last children wrote
// copy-on-write are copied by the next fork, and a child that wrote
// nothing (its fork copied what it needed) does not make the parent forget.
func TestForkCopiesWhatChildrenWrote(t *testing.T) {
	m, _ := newMM(t)
	const data, size = 0x2000000, 64 * PageSize
	m.MMap(MMapOpts{Addr: data, Length: size, Fixed: true, Prot: rw})
	written := uintptr(data + 40*PageSize + 8)
	sp := uintptr(data + 4*PageSize)
	isCow := func(c *MemoryManager) bool {
		p, _ := c.pmas.lookup(written)
		return p.cow
	}

	c1 := m.Fork(newAS(t), sp)
	if !isCow(c1) {
		t.Fatal("a first child does not share the page copy-on-write")
	}
	if c1.HandleFault(written, platform.ProtWrite) != FaultHandled {
		t.Fatal("copy-on-write fault refused")
	}
	c1.DecUsers()
	for i := 0; i < 2; i++ {
		c := m.Fork(newAS(t), sp)
		if isCow(c) {
			t.Fatalf("child %d: the page the last child wrote is shared, not copied", i+2)
		}
		c.CopyOut(written, []byte("x"))
		c.DecUsers()
	}
	buf := make([]byte, 1)
	m.CopyIn(written, buf)
	if buf[0] != 0 {
		t.Fatal("a child's write reached the parent")
	}
	m.DecUsers()
}

func TestFileCacheSharedCopyOnWrite(t *testing.T) {
	m, _ := newMM(t)
	const filePages = 20
	data := fakeFile(bytes.Repeat([]byte("L"), filePages*PageSize+100))
	cache := NewFileCache(sharedFile, data, int64(len(data)))
	ro, _ := m.MMap(MMapOpts{Length: 3 * PageSize, Prot: platform.ProtRead, File: data, Cache: cache})
	big, err := m.MMap(MMapOpts{Length: (filePages + 4) * PageSize, Prot: rw, File: data, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	small, _ := m.MMap(MMapOpts{Length: 3 * PageSize, Prot: rw, File: data, Cache: cache})
	pro, _ := m.pmas.lookup(ro)
	pbig, _ := m.pmas.lookup(big)
	psmall, _ := m.pmas.lookup(small)
	if pro.off != pbig.off || !pro.cow || !pbig.cow {
		t.Fatal("two mappings of a cached file do not share its pages copy-on-write")
	}
	if psmall.off == pro.off || psmall.cow {
		t.Fatal("a small private writable mapping was not copied when made")
	}
	m.CopyOut(big, []byte("w"))
	m.CopyOut(small, []byte("w"))
	buf := make([]byte, 2)
	m.CopyIn(ro, buf)
	if string(buf) != "LL" {
		t.Fatalf("a private write reached the cache: %q", buf)
	}
	m.CopyIn(small+1, buf)
	if string(buf) != "LL" {
		t.Fatalf("the copy holds %q, not the file", buf)
	}
	m.CopyIn(big+filePages*PageSize+99, buf)
	if buf[0] != 'L' || buf[1] != 0 {
		t.Fatalf("the end of the file is not followed by zeros: %q", buf)
	}
	// Past the end of the file: the next page is not there (a guest
	// touching it gets SIGBUS).
	past := big + (filePages+1)*PageSize
	if _, err := m.CopyOut(past, []byte("z")); err != unix.EFAULT {
		t.Fatalf("page past the end of the file: %v, want EFAULT", err)
	}
	if m.HandleFault(past, platform.ProtRead) != FaultBus {
		t.Fatal("a fault past the end of the file is not a bus error")
	}
}

// hostSource is an image file read through a host descriptor.
type hostSource struct{ fd int }

func (h hostSource) ReadAt(dst []byte, off int64) (int, error) { return unix.Pread(h.fd, dst, off) }
func (h hostSource) FD() int                                   { return h.fd }

// TestFileCacheOfAHostFile: where the memory file maps host files, a cached
// host file's pages are the host's, shared copy-on-write; a private write
// lands in a copy in the memory file and never reaches the file.
func TestFileCacheOfAHostFile(t *testing.T) {
	m, _ := newMM(t)
	sharedFile.EnableHostFiles()
	data := bytes.Repeat([]byte("H"), 20*PageSize+100)
	path := t.TempDir() + "/lib"
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) == nil && st.Flags&unix.ST_NOEXEC != 0 {
		t.Skip("the temporary directory is on a noexec mount")
	}
	src := hostSource{fd}
	cache := NewFileCache(sharedFile, src, int64(len(data)))
	a, err := m.MMap(MMapOpts{Length: 24 * PageSize, Prot: rw, File: src, Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := m.pmas.lookup(a)
	if _, _, host := sharedFile.HostFileAt(p.off, PageSize); !host || !p.cow {
		t.Fatalf("the mapping's pages are at %#x (cow %v): not the host file's, copy-on-write", p.off, p.cow)
	}
	buf := make([]byte, 2)
	if _, err := m.CopyIn(a+20*PageSize+99, buf); err != nil || buf[0] != 'H' || buf[1] != 0 {
		t.Fatalf("the end of the file reads %q (%v), want H and a zero", buf, err)
	}
	if _, err := m.CopyOut(a+PageSize, []byte("w")); err != nil {
		t.Fatal(err)
	}
	p, _ = m.pmas.lookup(a + PageSize)
	if _, _, host := sharedFile.HostFileAt(p.off, PageSize); host || p.cow {
		t.Fatal("a written page is still the host file's")
	}
	if m.CopyIn(a+PageSize, buf); string(buf) != "wH" {
		t.Fatalf("the written page reads %q, want wH", buf)
	}
	if b, _ := os.ReadFile(path); !bytes.Equal(b, data) {
		t.Fatal("a private write reached the host file")
	}
}

// MAP_32BIT mappings go bottom-up into the second GiB, around what is
// there already, honour a hint that ends below 2 GiB, and fail when the
// range is full.
func TestMMapLow2G(t *testing.T) {
	m, _ := newMM(t)
	a, err := m.MMap(MMapOpts{Length: 2 * PageSize, Prot: rw, Low2G: true})
	if err != nil || a != Low2GStart {
		t.Fatalf("first MAP_32BIT mapping at %#x (%v), want %#x", a, err, Low2GStart)
	}
	if _, err := m.MMap(MMapOpts{Addr: Low2GStart + 3*PageSize, Length: PageSize, Prot: rw, Fixed: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := m.MMap(MMapOpts{Length: 2 * PageSize, Prot: rw, Low2G: true})
	if b != Low2GStart+4*PageSize {
		t.Fatalf("MAP_32BIT mapping at %#x, want past the fixed one at %#x", b, Low2GStart+4*PageSize)
	}
	c, _ := m.MMap(MMapOpts{Length: PageSize, Prot: rw, Low2G: true})
	if c != Low2GStart+2*PageSize {
		t.Fatalf("one page at %#x, want the gap at %#x", c, Low2GStart+2*PageSize)
	}
	h, _ := m.MMap(MMapOpts{Addr: 0x200000, Length: PageSize, Prot: rw, Low2G: true})
	if h != 0x200000 {
		t.Fatalf("free hint below 2 GiB not honoured: %#x", h)
	}
	if h, _ := m.MMap(MMapOpts{Addr: 0x100000000, Length: PageSize, Prot: rw, Low2G: true}); h >= Low2GEnd {
		t.Fatalf("hint above 2 GiB taken: %#x", h)
	}
	if _, err := m.MMap(MMapOpts{Length: Low2GEnd - Low2GStart, Prot: rw, Low2G: true}); err != unix.ENOMEM {
		t.Fatalf("a GiB in a part-used range: %v, want ENOMEM", err)
	}
}
