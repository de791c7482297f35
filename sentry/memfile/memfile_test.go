package memfile

import "testing"

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
	s := f.Slice(b, PageSize)
	s[0] = 7
	f.Free(b, PageSize)
	f.Free(a, 2*PageSize)
	f.reclaimBatch() // what the reclaiming goroutine does, done now
	// Coalesced: a three-page allocation fits where a and b were.
	d, _ := f.Allocate(3 * PageSize)
	if d != a {
		t.Fatalf("3-page allocation at %#x, want the coalesced hole at %#x", d, a)
	}
	if got := f.Slice(b, 1)[0]; got != 0 {
		t.Fatalf("reused page not zeroed: %d", got)
	}
	if _, err := f.Allocate(100); err == nil {
		t.Fatal("unaligned length accepted")
	}
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
