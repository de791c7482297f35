package mm

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// TestMsealRefusesChanges seals the middle page of three and checks that
// every change that would move, drop or reprotect it answers EPERM while
// its neighbours stay free to change, in the address space and in a fork.
func TestMsealRefusesChanges(t *testing.T) {
	m, _ := newMM(t)
	a, err := m.MMap(MMapOpts{Length: 3 * PageSize, Prot: platform.ProtRead})
	if err != nil {
		t.Fatal(err)
	}
	mid := a + PageSize
	if err := m.Mseal(mid+1, PageSize); err != unix.EINVAL {
		t.Fatalf("unaligned mseal: %v, want EINVAL", err)
	}
	if err := m.Mseal(mid, 1); err != nil {
		t.Fatalf("mseal: %v", err)
	}
	check := func(m *MemoryManager, what string) {
		t.Helper()
		for name, err := range map[string]error{
			"munmap":   m.Munmap(mid, PageSize),
			"mprotect": m.Mprotect(a, 3*PageSize, rw),
			"dontneed": m.DontNeed(mid, PageSize),
		} {
			if err != unix.EPERM {
				t.Errorf("%s: %s of a sealed page: %v, want EPERM", what, name, err)
			}
		}
		if _, err := m.Mremap(mid, PageSize, 2*PageSize, mremapMaymove, 0); err != unix.EPERM {
			t.Errorf("%s: mremap of a sealed page: %v, want EPERM", what, err)
		}
		if _, err := m.MMap(MMapOpts{Addr: mid, Length: PageSize, Prot: rw, Fixed: true}); err != unix.EPERM {
			t.Errorf("%s: MAP_FIXED over a sealed page: %v, want EPERM", what, err)
		}
		if !m.IsMappedRange(mid, PageSize) {
			t.Errorf("%s: the sealed page went", what)
		}
	}
	check(m, "parent")
	check(m.Fork(newAS(t), 0), "child")
	if err := m.Munmap(a, PageSize); err != nil {
		t.Errorf("munmap of the page below: %v", err)
	}
	if err := m.Mprotect(mid+PageSize, PageSize, rw); err != nil {
		t.Errorf("mprotect of the page above: %v", err)
	}
	if err := m.Mseal(a, 3*PageSize); err != unix.ENOMEM {
		t.Errorf("mseal over a hole: %v, want ENOMEM", err)
	}
}
