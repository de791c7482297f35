package mm

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// MAP_POPULATE of a private writable mapping of a file copies its pages
// at once: a later write to the file does not show through, as it does
// through a private mapping not populated.
func TestPopulatePrivateBreaksCow(t *testing.T) {
	m, _ := newMM(t)
	p := newSizedPages(t, PageSize)
	if _, err := p.WriteAt([]byte("old!"), 0); err != nil {
		t.Fatal(err)
	}
	pop, err := m.MMap(MMapOpts{Length: PageSize, Prot: rw, Pages: p, Populate: true})
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := m.MMap(MMapOpts{Length: PageSize, Prot: rw, Pages: p})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt([]byte("new!"), 0); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := m.CopyIn(pop, got); err != nil || string(got) != "old!" {
		t.Fatalf("populated private mapping reads %q (%v), want its own copy", got, err)
	}
	if _, err := m.CopyIn(lazy, got); err != nil || string(got) != "new!" {
		t.Fatalf("unpopulated private mapping reads %q (%v), want the file's", got, err)
	}
}

// MADV_POPULATE_READ and _WRITE need the access allowed (EINVAL) and
// every page mapped (ENOMEM); they back a lazy mapping's pages.
func TestPopulateRules(t *testing.T) {
	m, _ := newFreshMM(t)
	r, _ := m.MMap(MMapOpts{Length: 4 * PageSize, Prot: platform.ProtRead})
	w, _ := m.MMap(MMapOpts{Length: 4 * PageSize, Prot: platform.ProtWrite})
	for _, c := range []struct {
		addr  uintptr
		write bool
		want  error
	}{{r, false, nil}, {r, true, unix.EINVAL}, {w, false, unix.EINVAL}, {w, true, nil}} {
		if err := m.Populate(c.addr, 4*PageSize, c.write); err != c.want {
			t.Errorf("populate %#x write=%v: %v, want %v", c.addr, c.write, err, c.want)
		}
	}
	if err := m.Munmap(r+PageSize, PageSize); err != nil {
		t.Fatal(err)
	}
	if err := m.Populate(r, 4*PageSize, false); err != unix.ENOMEM {
		t.Errorf("populate over a hole: %v, want ENOMEM", err)
	}
	const big = 2 * anonEagerMax
	a, err := m.MMap(MMapOpts{Length: big, Prot: rw, NoReserve: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Populate(a+big/2, 4*PageSize, true); err != nil {
		t.Fatal(err)
	}
	if n := m.ResidentSize(a+big/2, 4*PageSize); n != 4*PageSize {
		t.Fatalf("resident %d bytes after populating 4 pages of a lazy mapping", n)
	}
}

// maps shows neighbours Linux holds as one vma as one: a mapping grown in
// place, and one locked then unlocked in parts.
func TestMapsMergesNeighbours(t *testing.T) {
	m, _ := newMM(t)
	a, err := m.MMap(MMapOpts{Length: 3 * PageSize, Prot: rw})
	if err != nil {
		t.Fatal(err)
	}
	lines := func() int {
		n := 0
		for _, mi := range m.Maps() {
			if mi.Start < a+3*PageSize && mi.End > a {
				n++
			}
		}
		return n
	}
	if err := m.Munmap(a+PageSize, 2*PageSize); err != nil {
		t.Fatal(err)
	}
	if g, err := m.Mremap(a, PageSize, 3*PageSize, 0, 0); err != nil || g != a {
		t.Fatalf("mremap in place: %#x, %v", g, err)
	}
	if n := lines(); n != 1 {
		t.Fatalf("%d maps lines after growing in place, want 1", n)
	}
	if err := m.Mlock(a+PageSize, PageSize, true, false); err != nil {
		t.Fatal(err)
	}
	if n := lines(); n != 3 {
		t.Fatalf("%d maps lines with the middle page locked, want 3", n)
	}
	if err := m.Mlock(a, 3*PageSize, false, false); err != nil {
		t.Fatal(err)
	}
	if n := lines(); n != 1 {
		t.Fatalf("%d maps lines after unlocking, want 1", n)
	}
}
