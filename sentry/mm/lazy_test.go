package mm

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/memfile"
)

// newSizedPages returns empty FilePages recording a file of size bytes.
func newSizedPages(t *testing.T, size int64) *FilePages {
	t.Helper()
	newMM(t) // makes sharedFile
	p := NewFilePages(sharedFile, nil)
	p.SetSize(size)
	t.Cleanup(p.Release)
	return p
}

// newFreshMM returns a memory manager on a memory file of its own, which
// hands out pages one after another and none of them resident yet, as a
// fresh sandbox's does (the shared one reuses what other tests freed).
func newFreshMM(t *testing.T) (*MemoryManager, *memfile.File) {
	t.Helper()
	mf, err := memfile.New()
	if err != nil {
		t.Fatal(err)
	}
	as, err := fake.New(mf).NewAddressSpace()
	if err != nil {
		t.Fatal(err)
	}
	return New(mf, as, 0x7f0000000000), mf
}

func chunkCount(p *FilePages) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.chunks)
}

// A terabyte of shared file maps at once, and what it costs is in the
// pages touched: a window backed per touch, the rest nothing.
func TestLazyHugeSharedMapping(t *testing.T) {
	const size = 1 << 40
	m, _ := newMM(t)
	p := newSizedPages(t, size)
	a, err := m.MMap(MMapOpts{Length: size, Prot: rw, Shared: true, Pages: p})
	if err != nil {
		t.Fatalf("mmap of 1 TiB: %v", err)
	}
	if n := chunkCount(p); n > eagerBacking/ChunkSize {
		t.Fatalf("%d chunks after mmap, want at most %d", n, eagerBacking/ChunkSize)
	}
	last := a + size - PageSize
	if f := m.HandleFault(last, platform.ProtWrite); f != FaultHandled {
		t.Fatalf("fault at the end: %v", f)
	}
	if _, err := m.CopyOut(last+100, []byte("tail")); err != nil {
		t.Fatal(err)
	}
	mid := a + size/2 + 12345
	if _, err := m.CopyOut(mid, []byte("middle")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 6)
	if err := p.ReadAt(got, size/2+12345); err != nil || string(got) != "middle" {
		t.Fatalf("file holds %q (%v) where the mapping wrote", got, err)
	}
	if err := p.ReadAt(got[:4], size-PageSize+100); err != nil || string(got[:4]) != "tail" {
		t.Fatalf("file holds %q (%v) at its end", got[:4], err)
	}
	// The eager part, a window for the fault at the end (the write there
	// found it backed) and one for the write in the middle.
	if n, want := chunkCount(p), (eagerBacking+2*faultWindow)/ChunkSize; n > want {
		t.Fatalf("%d chunks after three touches, want at most %d", n, want)
	}
	if n := len(m.pmas.s); n > 3 {
		t.Fatalf("%d pmas, want at most 3", n)
	}
	if err := m.Munmap(a, size); err != nil || len(m.pmas.s) != 0 || len(m.vmas.s) != 0 {
		t.Fatalf("munmap: %v, %d pmas and %d vmas left", err, len(m.pmas.s), len(m.vmas.s))
	}
}

// Past the file's end nothing is backed and a touch is SIGBUS (EFAULT to
// the sentry), until the file grows.
func TestLazyPastEOF(t *testing.T) {
	m, _ := newMM(t)
	p := newSizedPages(t, PageSize+1)
	length := uintptr(eagerBacking + 4*faultWindow)
	a, err := m.MMap(MMapOpts{Length: length, Prot: rw, Shared: true, Pages: p})
	if err != nil {
		t.Fatal(err)
	}
	far := a + length - PageSize
	if f := m.HandleFault(a+2*PageSize, platform.ProtRead); f != FaultBus {
		t.Fatalf("fault past the end: %v, want SIGBUS", f)
	}
	if _, err := m.CopyIn(far, make([]byte, 8)); err != unix.EFAULT {
		t.Fatalf("copy in past the end: %v, want EFAULT", err)
	}
	if f := m.HandleFault(a+PageSize, platform.ProtWrite); f != FaultHandled {
		t.Fatalf("fault in the file's last page: %v", f)
	}
	p.SetSize(int64(length))
	if f := m.HandleFault(far, platform.ProtRead); f != FaultHandled {
		t.Fatalf("fault after the file grew: %v", f)
	}
	if _, err := m.CopyOut(far, []byte("grown")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if err := p.ReadAt(got, int64(length-PageSize)); err != nil || string(got) != "grown" {
		t.Fatalf("file holds %q (%v)", got, err)
	}
}

// A private lazy mapping reads the file where it has not written, keeps
// its writes to itself, shares them with a child copy-on-write, and
// MADV_DONTNEED gives it the file's contents back.
func TestLazyPrivateForkAndDontNeed(t *testing.T) {
	const size = 64 << 20
	m, _ := newMM(t)
	p := newSizedPages(t, size)
	if _, err := p.WriteAt([]byte("file"), size-100); err != nil {
		t.Fatal(err)
	}
	a, err := m.MMap(MMapOpts{Length: size, Prot: rw, Pages: p})
	if err != nil {
		t.Fatal(err)
	}
	at := a + size - 100
	got := make([]byte, 4)
	if _, err := m.CopyIn(at, got); err != nil || string(got) != "file" {
		t.Fatalf("private mapping reads %q (%v), want the file's", got, err)
	}
	if _, err := m.CopyOut(at, []byte("mine")); err != nil {
		t.Fatal(err)
	}
	if err := p.ReadAt(got, size-100); err != nil || string(got) != "file" {
		t.Fatalf("a private write reached the file: %q (%v)", got, err)
	}
	c := m.Fork(newAS(t), 0)
	defer c.Release()
	if _, err := c.CopyIn(at, got); err != nil || string(got) != "mine" {
		t.Fatalf("child reads %q (%v), want the parent's copy", got, err)
	}
	// A page neither touched before the fork is the file's in the child.
	if _, err := p.WriteAt([]byte("late"), size/2); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CopyIn(a+size/2, got); err != nil || string(got) != "late" {
		t.Fatalf("child reads %q (%v) where it never touched, want the file's", got, err)
	}
	if err := m.DontNeed(a, size); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CopyIn(at, got); err != nil || string(got) != "file" {
		t.Fatalf("after MADV_DONTNEED reads %q (%v), want the file's", got, err)
	}
	if _, err := c.CopyIn(at, got); err != nil || string(got) != "mine" {
		t.Fatalf("parent's MADV_DONTNEED changed the child: %q (%v)", got, err)
	}
}

// mincore on a lazy mapping's unbacked pages tells the file's residency;
// the mapping's resident size counts only what it maps.
func TestLazyResidency(t *testing.T) {
	const size = 16 << 20
	m, mf := newFreshMM(t)
	p := NewFilePages(mf, nil)
	p.SetSize(size)
	a, err := m.MMap(MMapOpts{Length: size, Prot: rw | platform.ProtExec, Shared: true, Pages: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt(bytes.Repeat([]byte{1}, PageSize), size-PageSize); err != nil {
		t.Fatal(err)
	}
	res, err := m.Residency(a+size-2*PageSize, 2*PageSize)
	if err != nil || !bytes.Equal(res, []byte{0, 1}) {
		t.Fatalf("residency %v (%v), want [0 1]", res, err)
	}
	if n := m.ResidentSize(a, size); n != 0 {
		t.Fatalf("resident size %d before any touch through the mapping", n)
	}
	if _, err := m.CopyOut(a, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n := m.ResidentSize(a, size); n != PageSize {
		t.Fatalf("resident size %d after one page written, want %d", n, PageSize)
	}
}

// A fixed mapping over an old one leaves none of the old pages mapped on
// the host where the new one has none yet.
func TestLazyFixedReplaceUnmapsHost(t *testing.T) {
	const size = 8 << 20
	m, as := newMM(t)
	a, err := m.MMap(MMapOpts{Length: size, Prot: rw})
	if err != nil {
		t.Fatal(err)
	}
	p := newSizedPages(t, size)
	if _, err := m.MMap(MMapOpts{Addr: a, Length: size, Prot: rw, Shared: true, Pages: p, Fixed: true}); err != nil {
		t.Fatal(err)
	}
	far := a + size - PageSize
	if _, _, ok := as.Mapping(far); ok {
		t.Fatal("the old mapping's pages stayed mapped on the host past the new one's backed part")
	}
	if _, err := m.CopyOut(far, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := as.Mapping(far); !ok {
		t.Fatal("a page backed by a copy is not mapped on the host")
	}
}

// mremap grows a lazy mapping on into its file, in place or moved.
func TestLazyMremapGrowsIntoTheFile(t *testing.T) {
	const size = 4 << 20
	m, _ := newMM(t)
	p := newSizedPages(t, size)
	if _, err := p.WriteAt([]byte("deep"), size-PageSize); err != nil {
		t.Fatal(err)
	}
	a, err := m.MMap(MMapOpts{Length: PageSize, Prot: rw, Shared: true, Pages: p})
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Mremap(a, PageSize, size, mremapMaymove, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := m.CopyIn(g+size-PageSize, got); err != nil || string(got) != "deep" {
		t.Fatalf("grown mapping reads %q (%v), want the file's", got, err)
	}
	if f := m.HandleFault(g+size/2, platform.ProtWrite); f != FaultHandled {
		t.Fatalf("fault in the grown part: %v", f)
	}
}

// A lazy mapping touched window after window in order stays one pma, and
// its file's release frees the chunks as one run.
func TestLazyTouchedInOrderStaysOnePma(t *testing.T) {
	const size = 64 << 20
	m, mf := newFreshMM(t)
	p := NewFilePages(mf, nil)
	p.SetSize(size)
	a, err := m.MMap(MMapOpts{Length: size, Prot: rw, Shared: true, Pages: p})
	if err != nil {
		t.Fatal(err)
	}
	for off := uintptr(0); off < size; off += faultWindow {
		if f := m.HandleFault(a+off, platform.ProtWrite); f != FaultHandled {
			t.Fatalf("fault at +%#x: %v", off, f)
		}
	}
	if n := len(m.pmas.s); n != 1 {
		t.Fatalf("%d pmas after touching in order, want 1", n)
	}
	if err := m.Munmap(a, size); err != nil {
		t.Fatal(err)
	}
	p.Release()
	if n := chunkCount(p); n != 0 {
		t.Fatalf("%d chunks after release", n)
	}
}
