package memfile

import (
	"slices"
	"testing"
)

func TestAllocateFreeReuse(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.Allocate(2 * PageSize)
	b, _ := f.Allocate(PageSize)
	c, _ := f.Allocate(PageSize)
	if a == b || b == c || a+2*PageSize != b {
		t.Fatalf("allocations overlap or are not sequential: %#x %#x %#x", a, b, c)
	}
	f.Free(b, PageSize)
	f.Free(a, 2*PageSize)
	f.reclaimBatch() // what the reclaiming goroutine does, done now
	// Coalesced: a three-page allocation fits where a and b were.
	d, _ := f.Allocate(3 * PageSize)
	if d != a {
		t.Fatalf("3-page allocation at %#x, want the coalesced hole at %#x", d, a)
	}
	if _, err := f.Allocate(100); err == nil {
		t.Fatal("unaligned length accepted")
	}
}

// TestFreedPagesStayWarm: pages that were in use come back zeroed and
// still in host memory, and the next allocation takes them first; a range
// too large for that is punched.
func TestFreedPagesStayWarm(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	resident := func(off, length uint64) bool {
		in := make([]byte, length/PageSize)
		if err := f.Residency(off, length, in); err != nil {
			t.Fatal(err)
		}
		return !slices.Contains(in, 0)
	}
	big := uint64(warmMaxRange + PageSize)
	cold, _ := f.Allocate(PageSize)
	used, _ := f.Allocate(2 * PageSize)
	large, _ := f.Allocate(big)
	f.Slice(used, 2*PageSize)[PageSize] = 7
	f.Slice(used, PageSize)[0] = 7
	for p := large; p < large+big; p += PageSize {
		f.Slice(p, 1)[0] = 7
	}
	f.Free(cold, PageSize)
	f.Free(used, 2*PageSize)
	f.Free(large, big)
	f.reclaimBatch()
	if resident(large, big) {
		t.Error("a range larger than warmMaxRange kept its memory")
	}
	got, _ := f.Allocate(2 * PageSize)
	if got != used {
		t.Fatalf("allocation at %#x, want the warm range at %#x", got, used)
	}
	if !resident(got, 2*PageSize) || f.Slice(got, 1)[0] != 0 || f.Slice(got+PageSize, 1)[0] != 0 {
		t.Fatal("the warm range is not zeroed and in memory")
	}
	if n := lockedWarmBytes(f); n != 0 {
		t.Fatalf("warmBytes %d after the warm range was taken", n)
	}
}

// lockedWarmBytes reads f.warmBytes under f.mu, as the reclaiming
// goroutine writes it: the one Free started may still be running (its
// last batch is empty, and still writes it) after the test's reclaimBatch.
func lockedWarmBytes(f *File) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.warmBytes
}

func TestRefCounts(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.Allocate(4 * PageSize)
	f.Slice(a, 4*PageSize)[3*PageSize] = 9
	if !f.Exclusive(a, 4*PageSize) {
		t.Fatal("fresh pages are not exclusive")
	}
	f.IncRef(a+PageSize, 2*PageSize) // pages 1 and 2 shared
	if f.Exclusive(a, 4*PageSize) || !f.Exclusive(a, PageSize) || !f.Exclusive(a+3*PageSize, PageSize) {
		t.Fatal("sharing the middle pages: wrong exclusivity")
	}
	f.IncRef(a, 4*PageSize) // page 0,3: 2 refs; 1,2: 3 refs
	f.DecRef(a, 4*PageSize) // back to 1,2 shared
	if f.Exclusive(a+PageSize, PageSize) || !f.Exclusive(a+3*PageSize, PageSize) {
		t.Fatal("after a balanced inc/dec: wrong exclusivity")
	}
	if f.Slice(a+3*PageSize, 1)[0] != 9 {
		t.Fatal("a page still referenced was freed")
	}
	f.DecRef(a+PageSize, 2*PageSize) // pages 1,2 back to one reference
	if !f.Exclusive(a, 4*PageSize) || len(f.shared) != 0 {
		t.Fatalf("segments left: %v", f.shared)
	}
	f.DecRef(a, 4*PageSize) // all freed
	f.reclaimBatch()
	b, _ := f.Allocate(4 * PageSize)
	if b != a || f.Slice(b+3*PageSize, 1)[0] != 0 {
		t.Fatalf("freed range not reused zeroed: %#x vs %#x", b, a)
	}
}

// Neighbouring ranges shared one after another, in either order, are one
// segment; counts that differ stay apart.
func TestRefSegmentsJoin(t *testing.T) {
	f, err := New()
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.Allocate(8 * PageSize)
	f.IncRef(a+2*PageSize, 2*PageSize)
	f.IncRef(a, 2*PageSize)            // joins on the right
	f.IncRef(a+6*PageSize, 2*PageSize) // apart
	f.IncRef(a+4*PageSize, 2*PageSize) // joins both sides
	if len(f.shared) != 1 || f.shared[0] != (refSeg{a, 8 * PageSize, 2}) {
		t.Fatalf("segments %v, want one of 8 pages", f.shared)
	}
	f.IncRef(a, PageSize)
	if len(f.shared) != 2 || f.shared[0].count != 3 || f.shared[1] != (refSeg{a + PageSize, 7 * PageSize, 2}) {
		t.Fatalf("segments %v, want a page of 3 references and 7 of 2", f.shared)
	}
	f.DecRef(a, PageSize)
	f.DecRef(a, 8*PageSize)
	if !f.Exclusive(a, 8*PageSize) || len(f.shared) != 0 {
		t.Fatalf("segments left: %v", f.shared)
	}
}
