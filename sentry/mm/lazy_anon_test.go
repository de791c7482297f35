package mm

import (
	"bytes"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// backedBytes is how much of [lo, hi) has pages in the memory file.
func backedBytes(m *MemoryManager, lo, hi uintptr) uintptr {
	var n uintptr
	pi, pj := m.pmas.span(lo, hi)
	for _, p := range m.pmas.s[pi:pj] {
		n += min(p.end, hi) - max(p.start, lo)
	}
	return n
}

// 64 TiB of private anonymous memory maps at once, as ASan's shadow and
// Go's and the JVM's reservations need, more than the memory file could
// back: nothing is backed until touched, a touch backs one window, the
// memory reads zeros where untouched, and the charge is what was written.
func TestLazyAnonymousHugeMapping(t *testing.T) {
	const size = 64 << 40
	m, mf := newFreshMM(t)
	before := mf.Charged()
	a, err := m.MMap(MMapOpts{Length: size, Prot: rw, NoReserve: true})
	if err != nil {
		t.Fatalf("mmap of 64 TiB: %v", err)
	}
	if n := backedBytes(m, a, a+size); n != 0 {
		t.Fatalf("%d bytes backed at mmap, want none", n)
	}
	last := a + size - PageSize
	if f := m.HandleFault(last, platform.ProtWrite); f != FaultHandled {
		t.Fatalf("write fault at the end: %v", f)
	}
	if _, err := m.CopyOut(last+8, []byte("tail")); err != nil {
		t.Fatal(err)
	}
	mid := a + size/2 + 12345
	if _, err := m.CopyOut(mid, []byte("middle")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 6)
	if _, err := m.CopyIn(mid, got); err != nil || string(got) != "middle" {
		t.Fatalf("reads %q (%v) where it wrote", got, err)
	}
	zero := make([]byte, 64)
	if _, err := m.CopyIn(a+size/4, zero); err != nil || !bytes.Equal(zero, make([]byte, 64)) {
		t.Fatalf("an untouched page reads %v (%v), want zeros", zero, err)
	}
	if n := backedBytes(m, a, a+size); n != 3*anonFaultWindow {
		t.Fatalf("%d bytes backed after three touches, want %d", n, 3*anonFaultWindow)
	}
	if c := mf.Charged() - before; c > 3*anonFaultWindow {
		t.Fatalf("charged %d bytes after three touches", c)
	}
	if res, err := m.Residency(a+size/2, 2*PageSize); err != nil || !bytes.Equal(res, []byte{0, 0}) {
		t.Fatalf("residency %v (%v) of a page only read, want [0 0]", res, err)
	}
	if err := m.Munmap(a, size); err != nil || len(m.pmas.s) != 0 || len(m.vmas.s) != 0 {
		t.Fatalf("munmap: %v, %d pmas and %d vmas left", err, len(m.pmas.s), len(m.vmas.s))
	}
}

// A mapping up to anonEagerMax is backed whole when made, so its first
// touches take no trap into the sentry; one longer is backed as touched.
func TestLazyAnonymousThreshold(t *testing.T) {
	m, _ := newFreshMM(t)
	a, err := m.MMap(MMapOpts{Length: anonEagerMax, Prot: rw})
	if err != nil {
		t.Fatal(err)
	}
	if n := backedBytes(m, a, a+anonEagerMax); n != anonEagerMax {
		t.Fatalf("%d bytes of a %d-byte mapping backed, want all", n, anonEagerMax)
	}
	b, err := m.MMap(MMapOpts{Length: anonEagerMax + PageSize, Prot: rw})
	if err != nil {
		t.Fatal(err)
	}
	if n := backedBytes(m, b, b+anonEagerMax+PageSize); n != 0 {
		t.Fatalf("%d bytes of a lazy mapping backed at mmap", n)
	}
	// Shared anonymous memory is shared with children as it is, so it is
	// backed whole, whatever its length.
	s, err := m.MMap(MMapOpts{Length: 2 * anonEagerMax, Prot: rw, Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := backedBytes(m, s, s+2*anonEagerMax); n != 2*anonEagerMax {
		t.Fatalf("%d bytes of a shared anonymous mapping backed, want all", n)
	}
}

// A fork shares what a lazy anonymous mapping had backed copy-on-write,
// each side backs its own untouched pages, MADV_DONTNEED gives zeros back,
// and mremap grows it without backing.
func TestLazyAnonymousForkDontNeedMremap(t *testing.T) {
	const size = 4 << 30
	m, _ := newFreshMM(t)
	a, err := m.MMap(MMapOpts{Length: size, Prot: rw, NoReserve: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.CopyOut(a+PageSize, []byte("before")); err != nil {
		t.Fatal(err)
	}
	c := m.Fork(newAS(t), 0)
	defer c.Release()
	got := make([]byte, 6)
	if _, err := c.CopyIn(a+PageSize, got); err != nil || string(got) != "before" {
		t.Fatalf("child reads %q (%v), want the parent's write", got, err)
	}
	if _, err := c.CopyOut(a+size-PageSize, []byte("childs")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CopyOut(a+PageSize, []byte("child!")); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CopyIn(a+size-PageSize, got); err != nil || !bytes.Equal(got, make([]byte, 6)) {
		t.Fatalf("parent reads %q (%v) where only the child wrote", got, err)
	}
	if _, err := m.CopyIn(a+PageSize, got); err != nil || string(got) != "before" {
		t.Fatalf("parent reads %q (%v), the child's copy-on-write reached it", got, err)
	}
	if err := m.DontNeed(a, size); err != nil {
		t.Fatal(err)
	}
	if _, err := m.CopyIn(a+PageSize, got); err != nil || !bytes.Equal(got, make([]byte, 6)) {
		t.Fatalf("after MADV_DONTNEED reads %q (%v), want zeros", got, err)
	}
	if _, err := c.CopyIn(a+PageSize, got); err != nil || string(got) != "child!" {
		t.Fatalf("parent's MADV_DONTNEED changed the child: %q (%v)", got, err)
	}
	g, err := m.Mremap(a, size, 4*size, mremapMaymove, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := backedBytes(m, g+size, g+4*size); n != 0 {
		t.Fatalf("mremap backed %d bytes of the growth", n)
	}
	if f := m.HandleFault(g+4*size-PageSize, platform.ProtWrite); f != FaultHandled {
		t.Fatalf("fault in the grown part: %v", f)
	}
}

// The overcommit heuristic refuses a private writable mapping longer than
// the host's RAM and swap, unless MAP_NORESERVE; a mapping without write
// permission, or a shared one, is not held to it.
func TestOvercommitHeuristic(t *testing.T) {
	const size = 64 << 40 // more than any host this runs on
	m, _ := newFreshMM(t)
	if _, err := m.MMap(MMapOpts{Length: size, Prot: rw}); err != unix.ENOMEM {
		t.Fatalf("64 TiB writable without MAP_NORESERVE: %v, want ENOMEM", err)
	}
	for _, o := range []MMapOpts{{Length: size, Prot: rw, NoReserve: true}, {Length: size, Prot: platform.ProtRead}, {Length: size}} {
		a, err := m.MMap(o)
		if err != nil {
			t.Fatalf("64 TiB with %+v: %v", o, err)
		}
		if err := m.Munmap(a, size); err != nil {
			t.Fatal(err)
		}
	}
}
