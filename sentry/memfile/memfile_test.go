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
