package kvm

import (
	"fmt"
	"testing"

	"github.com/moat-sandbox/moat/platform"
)

// fakeTables is table memory in a Go map.
type fakeTables struct {
	pages map[uint64]*[512]uint64
	next  uint64
}

func newFakeTables() *fakeTables {
	return &fakeTables{pages: make(map[uint64]*[512]uint64), next: tablesGPA}
}

func (f *fakeTables) allocTable() (uint64, error) {
	gpa := f.next
	f.next += pageSize
	f.pages[gpa] = new([512]uint64)
	return gpa, nil
}

func (f *fakeTables) table(gpa uint64) *[512]uint64 {
	t := f.pages[gpa]
	if t == nil {
		panic(fmt.Sprintf("walk reached %#x, which is not a table", gpa))
	}
	return t
}

func newTestTables(t *testing.T) (*pageTables, *fakeTables) {
	t.Helper()
	mem := newFakeTables()
	pt, err := newPageTables(mem)
	if err != nil {
		t.Fatal(err)
	}
	return pt, mem
}

// tree returns the tables reachable from root, as the MMU would find them.
func tree(mem *fakeTables, root uint64) map[uint64]bool {
	seen := map[uint64]bool{}
	var visit func(gpa uint64, level int)
	visit = func(gpa uint64, level int) {
		seen[gpa] = true
		if level == 0 {
			return
		}
		for _, e := range mem.table(gpa) {
			if e&ptePresent != 0 {
				visit(e&pteAddr, level-1)
			}
		}
	}
	visit(root, 3)
	return seen
}

// translateFrom walks from root, as a vCPU that loaded it would.
func translateFrom(mem *fakeTables, root, va uint64) uint64 {
	gpa := root
	for level := 3; level > 0; level-- {
		e := mem.table(gpa)[index(va, level)]
		if e&ptePresent == 0 {
			return 0
		}
		gpa = e & pteAddr
	}
	return mem.table(gpa)[index(va, 0)]
}

func mustMap(t *testing.T, pt *pageTables, va, gpa, length uint64, prot platform.Prot) {
	t.Helper()
	if _, err := pt.mapRange(va, gpa, length, prot); err != nil {
		t.Fatal(err)
	}
}

func TestMappedPageTranslatesToItsFileOffset(t *testing.T) {
	pt, _ := newTestTables(t)
	// Three pages straddling a leaf table boundary (2 MiB) and a PD
	// boundary (1 GiB) at once.
	va := uint64(1<<30 - pageSize)
	mustMap(t, pt, va, 0x5000, 3*pageSize, platform.ProtRead|platform.ProtWrite)
	for i := uint64(0); i < 3; i++ {
		e := pt.translate(va + i*pageSize)
		if e&pteAddr != 0x5000+i*pageSize {
			t.Errorf("page %d maps %#x, want %#x", i, e&pteAddr, 0x5000+i*pageSize)
		}
		if e&(ptePresent|pteUser|pteWrite) != ptePresent|pteUser|pteWrite || e&pteNX == 0 {
			t.Errorf("page %d has flags %#x, want a present, user, writable, non-executable page", i, e&^pteAddr)
		}
	}
	if e := pt.translate(va + 3*pageSize); e != 0 {
		t.Errorf("the page after the range maps %#x", e)
	}
}

func TestLeafFlagsFollowProt(t *testing.T) {
	for _, c := range []struct {
		prot           platform.Prot
		present, write bool
		exec           bool
	}{
		{platform.ProtRead, true, false, false},
		{platform.ProtRead | platform.ProtExec, true, false, true},
		{platform.ProtExec, true, false, true},
		{platform.ProtWrite, true, true, false},
		{platform.ProtRead | platform.ProtWrite | platform.ProtExec, true, true, true},
		{0, false, false, false},
	} {
		f := leafFlags(c.prot)
		if got := f&ptePresent != 0; got != c.present {
			t.Errorf("prot %d: present %v, want %v", c.prot, got, c.present)
		}
		if got := f&pteWrite != 0; got != c.write {
			t.Errorf("prot %d: writable %v, want %v", c.prot, got, c.write)
		}
		if got := f&ptePresent != 0 && f&pteNX == 0; got != c.exec {
			t.Errorf("prot %d: executable %v, want %v", c.prot, got, c.exec)
		}
		if c.prot == 0 && f&pteNoAccess == 0 {
			t.Errorf("PROT_NONE entry %#x does not remember the mapping", f)
		}
	}
}

func TestProtectNoneKeepsTheMappingForALaterProtect(t *testing.T) {
	pt, _ := newTestTables(t)
	mustMap(t, pt, 0x400000, 0x9000, pageSize, platform.ProtRead)
	if reduced, _ := pt.protectRange(0x400000, pageSize, 0); !reduced {
		t.Error("PROT_NONE over a readable page was not reported as taking access away")
	}
	if e := pt.translate(0x400000); e&ptePresent != 0 {
		t.Fatalf("PROT_NONE page is present: %#x", e)
	}
	if reduced, _ := pt.protectRange(0x400000, pageSize, platform.ProtRead|platform.ProtWrite); reduced {
		t.Error("making a PROT_NONE page writable was reported as taking access away")
	}
	if e := pt.translate(0x400000); e&pteAddr != 0x9000 || e&pteWrite == 0 {
		t.Fatalf("after PROT_NONE and back, the entry is %#x, want page 0x9000 writable", e)
	}
}

func TestProtectSkipsHoles(t *testing.T) {
	pt, _ := newTestTables(t)
	mustMap(t, pt, 0x400000, 0x9000, pageSize, platform.ProtRead)
	if _, err := pt.protectRange(0x3ff000, 3*pageSize, platform.ProtRead|platform.ProtWrite); err != nil {
		t.Fatal(err)
	}
	for _, va := range []uint64{0x3ff000, 0x401000} {
		if e := pt.translate(va); e != 0 {
			t.Errorf("protect made a mapping at the hole %#x: %#x", va, e)
		}
	}
}

func TestReductionsAreReportedAndUpgradesAreNot(t *testing.T) {
	rw := platform.ProtRead | platform.ProtWrite
	rx := platform.ProtRead | platform.ProtExec
	for _, c := range []struct {
		name     string
		from, to platform.Prot
		want     bool
	}{
		{"write taken away", rw, platform.ProtRead, true},
		{"exec taken away", rx, platform.ProtRead, true},
		{"write added", platform.ProtRead, rw, false},
		{"exec added", platform.ProtRead, rx, false},
		{"unchanged", rw, rw, false},
	} {
		pt, _ := newTestTables(t)
		mustMap(t, pt, 0x400000, 0x9000, pageSize, c.from)
		pt.publish()
		if got, _ := pt.protectRange(0x400000, pageSize, c.to); got != c.want {
			t.Errorf("%s: reported %v, want %v", c.name, got, c.want)
		}
	}
	pt, _ := newTestTables(t)
	mustMap(t, pt, 0x400000, 0x9000, pageSize, platform.ProtRead)
	if reduced, _ := pt.mapRange(0x400000, 0xa000, pageSize, platform.ProtRead); !reduced {
		t.Error("mapping another page over a present one was not reported")
	}
	if reduced, _ := pt.unmapRange(0x400000, pageSize); !reduced {
		t.Error("unmapping a present page was not reported")
	}
	if reduced, _ := pt.unmapRange(0x500000, pageSize); reduced {
		t.Error("unmapping a hole was reported as taking access away")
	}
}

// TestSeenTablesNeverLoseAccessInPlace pins the rule that makes host-side
// page table changes safe under shadow paging: once a vCPU was given the
// tables, taking access away leaves them as they were and builds a new
// tree, whose root the vCPUs then load.
func TestSeenTablesNeverLoseAccessInPlace(t *testing.T) {
	pt, mem := newTestTables(t)
	mustMap(t, pt, 0x400000, 0x9000, 2*pageSize, platform.ProtRead|platform.ProtWrite)
	mustMap(t, pt, 0x40000000, 0xa000, pageSize, platform.ProtRead) // another subtree
	pt.publish()
	old := pt.root
	before := map[uint64][512]uint64{}
	for gpa := range tree(mem, old) {
		before[gpa] = *mem.table(gpa)
	}
	if _, err := pt.protectRange(0x400000, pageSize, platform.ProtRead); err != nil {
		t.Fatal(err)
	}
	for gpa, content := range before {
		if *mem.table(gpa) != content {
			t.Fatalf("table %#x, which a vCPU may have seen, changed in place", gpa)
		}
	}
	if pt.root == old {
		t.Fatal("the root is the same: vCPUs would not see the change")
	}
	if e := translateFrom(mem, old, 0x400000); e&pteWrite == 0 {
		t.Errorf("the old tree lost write access: %#x", e)
	}
	if e := pt.translate(0x400000); e&pteWrite != 0 || e&pteAddr != 0x9000 {
		t.Errorf("the new tree maps %#x, want page 0x9000 read-only", e)
	}
	if e := pt.translate(0x401000); e&pteWrite == 0 {
		t.Errorf("the page next to it lost write access in the new tree: %#x", e)
	}
	// Only the path to the changed leaf was copied: the other subtree is
	// shared, and the replaced tables are retired.
	newTree := tree(mem, pt.root)
	shared := 0
	for gpa := range newTree {
		if _, ok := before[gpa]; ok {
			shared++
		}
	}
	if shared != 2 { // the other subtree's PD and leaf table (its PDPT is the copied one's)
		t.Errorf("%d tables shared between the trees, want the other subtree's 2", shared)
	}
	retired := pt.takeRetired()
	if len(retired) != 4 {
		t.Errorf("%d tables retired, want the 4 on the changed path", len(retired))
	}
	for _, gpa := range retired {
		if newTree[gpa] {
			t.Errorf("retired table %#x is still in the tree", gpa)
		}
	}
}

func TestFreshTablesChangeInPlace(t *testing.T) {
	pt, _ := newTestTables(t)
	root := pt.root
	mustMap(t, pt, 0x400000, 0x9000, pageSize, platform.ProtRead|platform.ProtWrite)
	if _, err := pt.protectRange(0x400000, pageSize, platform.ProtRead); err != nil {
		t.Fatal(err)
	}
	if pt.root != root || len(pt.takeRetired()) != 0 {
		t.Error("tables no vCPU was given were copied")
	}
	pt.publish()
	// Giving access is in place even once they were given.
	mustMap(t, pt, 0x600000, 0xa000, pageSize, platform.ProtRead)
	if _, err := pt.protectRange(0x400000, pageSize, platform.ProtRead|platform.ProtWrite); err != nil {
		t.Fatal(err)
	}
	if pt.root != root || len(pt.takeRetired()) != 0 {
		t.Error("giving access copied tables")
	}
}

func TestUnmapRetiresEmptiedTablesOnly(t *testing.T) {
	pt, mem := newTestTables(t)
	// Two leaf tables under one PD: one page in each.
	mustMap(t, pt, 0x400000, 0x1000, pageSize, platform.ProtRead)
	mustMap(t, pt, 0x600000, 0x2000, pageSize, platform.ProtRead)
	if n := len(tree(mem, pt.root)); n != 5 {
		t.Fatalf("%d tables for two pages in neighbouring 2 MiB ranges, want 5", n)
	}
	pt.publish()
	if _, err := pt.unmapRange(0x400000, pageSize); err != nil {
		t.Fatal(err)
	}
	if n := len(tree(mem, pt.root)); n != 4 {
		t.Fatalf("%d tables after emptying one leaf table, want 4", n)
	}
	if e := pt.translate(0x600000); e&pteAddr != 0x2000 {
		t.Fatalf("the other page's mapping is gone: %#x", e)
	}
	if _, err := pt.unmapRange(0, MaxUserAddress); err != nil {
		t.Fatal(err)
	}
	if n := len(tree(mem, pt.root)); n != 1 {
		t.Fatalf("%d tables after unmapping everything, want only the root", n)
	}
	if len(pt.used) != 1 {
		t.Errorf("%d tables still counted, want only the root", len(pt.used))
	}
}

func TestReleaseRetiresAllButTheSharedStubTables(t *testing.T) {
	pt, mem := newTestTables(t)
	shared, _ := mem.allocTable()
	pt.setRootEntry(511, shared|pteTable)
	mustMap(t, pt, 0x400000, 0x1000, 4*pageSize, platform.ProtRead)
	if _, err := pt.unmapRange(0, MaxUserAddress); err != nil {
		t.Fatal(err)
	}
	if e := mem.table(pt.root)[511]; e&pteAddr != shared {
		t.Fatal("unmapping the user range took the stub region out of the tree")
	}
	mustMap(t, pt, 0x400000, 0x1000, 4*pageSize, platform.ProtRead)
	inTree := tree(mem, pt.root)
	pt.takeRetired()
	pt.release(511)
	retired := pt.takeRetired()
	if len(retired) != len(inTree)-1 {
		t.Fatalf("release retired %d tables, want the %d of the tree but the shared one", len(retired), len(inTree)-1)
	}
	for _, gpa := range retired {
		if gpa == shared {
			t.Fatal("release retired the shared stub table")
		}
	}
}
