package kvm

import (
	"sync/atomic"

	"github.com/moat-sandbox/moat/platform"
)

// x86-64 page table entry bits.
const (
	ptePresent  = 1 << 0
	pteWrite    = 1 << 1
	pteUser     = 1 << 2
	pteAccessed = 1 << 5
	pteDirty    = 1 << 6
	// pteNoAccess is a software bit (ignored by the CPU when the entry is
	// not present): the page is mapped with PROT_NONE, and the entry keeps
	// its address for a later Protect.
	pteNoAccess = 1 << 9
	pteNX       = 1 << 63
	pteAddr     = 0x000f_ffff_ffff_f000

	// Non-leaf entries allow everything; the leaf decides. Accessed is
	// set ahead, so the MMU never has to write it.
	pteTable = ptePresent | pteWrite | pteUser | pteAccessed
)

// tableMemory holds page table pages, each named by its guest-physical
// address.
type tableMemory interface {
	// allocTable returns a zeroed page.
	allocTable() (uint64, error)
	table(gpa uint64) *[512]uint64
}

// pageTables is one address space's 4-level page tables.
//
// A table a vCPU may have seen is never changed in a way that takes access
// away: the change goes into a copy, and so do the tables above it up to a
// new root. KVM may shadow the guest's page tables (on hosts without
// nested paging, and with PVM) and then only learns of entries the guest
// itself writes; what it learns of a new root is read afresh. Changes that
// give access (a new entry, more permissions) are made in place: the MMU
// walks the guest's tables again when the old entry faults. Tables made
// since the root was last loaded by a vCPU (fresh) can be changed in place
// whatever the change.
//
// Entries are written with atomic stores: a vCPU may be walking them.
type pageTables struct {
	mem  tableMemory
	root uint64
	// used counts the non-zero entries of each table in the tree.
	used map[uint64]int
	// fresh are the tables no vCPU has been given yet.
	fresh map[uint64]bool
	// retired are the tables taken out of the tree: vCPUs that have not
	// left the guest since may still walk them.
	retired []uint64
}

func newPageTables(mem tableMemory) (*pageTables, error) {
	root, err := mem.allocTable()
	if err != nil {
		return nil, err
	}
	return &pageTables{mem: mem, root: root, used: map[uint64]int{root: 0}, fresh: map[uint64]bool{root: true}}, nil
}

// leafFlags returns the leaf entry bits for prot: a user page, writable
// and executable as prot says (x86 cannot refuse reads of a present page),
// or a not-present entry that remembers it is mapped.
func leafFlags(prot platform.Prot) uint64 {
	if prot&(platform.ProtRead|platform.ProtWrite|platform.ProtExec) == 0 {
		return pteNoAccess
	}
	f := uint64(ptePresent | pteUser | pteAccessed | pteDirty)
	if prot&platform.ProtWrite != 0 {
		f |= pteWrite
	}
	if prot&platform.ProtExec == 0 {
		f |= pteNX
	}
	return f
}

// mapped reports whether a leaf entry maps a page (with or without access).
func mapped(pte uint64) bool { return pte&(ptePresent|pteNoAccess) != 0 }

// reduces reports whether replacing leaf entry old by new takes away an
// access the old one allowed, or the page itself.
func reduces(old, new uint64) bool {
	if old&ptePresent == 0 {
		return false
	}
	if new&ptePresent == 0 || new&pteAddr != old&pteAddr {
		return true
	}
	return old&pteWrite != 0 && new&pteWrite == 0 || old&pteNX == 0 && new&pteNX != 0
}

func index(va uint64, level int) int { return int(va>>(pageShift+9*uint(level))) & 511 }

// span is the size of the range one entry of a level's table covers.
func span(level int) uint64 { return 1 << (pageShift + 9*uint(level)) }

// copyTable replaces the table at gpa by a fresh copy, and retires it.
func (pt *pageTables) copyTable(gpa uint64) (uint64, error) {
	n, err := pt.mem.allocTable()
	if err != nil {
		return 0, err
	}
	src, dst := pt.mem.table(gpa), pt.mem.table(n)
	for i := range src {
		dst[i] = atomic.LoadUint64(&src[i])
	}
	pt.used[n] = pt.used[gpa]
	delete(pt.used, gpa)
	delete(pt.fresh, gpa)
	pt.fresh[n] = true
	pt.retired = append(pt.retired, gpa)
	return n, nil
}

// walk returns the table of the given level (0 for the leaf, 3 for the
// root) covering va, creating the missing ones on the way if create (0 if
// one is missing and not create). With own, every table on the way is made
// fresh first, so that the one returned may be changed in any way.
func (pt *pageTables) walk(va uint64, level int, create, own bool) (uint64, error) {
	if own && !pt.fresh[pt.root] {
		n, err := pt.copyTable(pt.root)
		if err != nil {
			return 0, err
		}
		pt.root = n
	}
	gpa := pt.root
	for l := 3; l > level; l-- {
		t := pt.mem.table(gpa)
		i := index(va, l)
		e := atomic.LoadUint64(&t[i])
		var child uint64
		switch {
		case e&ptePresent == 0:
			if !create {
				return 0, nil
			}
			n, err := pt.mem.allocTable()
			if err != nil {
				return 0, err
			}
			pt.used[n] = 0
			if pt.fresh[gpa] {
				pt.fresh[n] = true
			}
			pt.used[gpa]++
			atomic.StoreUint64(&t[i], n|pteTable)
			child = n
		case own && !pt.fresh[e&pteAddr]:
			n, err := pt.copyTable(e & pteAddr)
			if err != nil {
				return 0, err
			}
			atomic.StoreUint64(&t[i], n|pteTable)
			child = n
		default:
			child = e & pteAddr
		}
		gpa = child
	}
	return gpa, nil
}

// leafUpdate computes the leaf entries of one leaf table's part of a
// range: fn returns the new entry for each old one, and whether to write
// it.
type leafUpdate func(old uint64, off uint64) (uint64, bool)

// update applies fn to every leaf entry of [va, va+length) (creating the
// tables if create, else skipping the absent ones), and reports whether
// it took access away.
func (pt *pageTables) update(va, length uint64, create bool, fn leafUpdate) (bool, error) {
	reduced := false
	end := va + length
	for cur := va; cur < end; {
		next := min(end, (cur|(span(1)-1))+1)
		leaf, err := pt.walk(cur, 0, create, false)
		if err != nil {
			return reduced, err
		}
		if leaf == 0 {
			cur = pt.nextTable(cur, end)
			continue
		}
		first, last := index(cur, 0), index(next-pageSize, 0)
		t := pt.mem.table(leaf)
		own := false
		for i := first; i <= last; i++ {
			old := atomic.LoadUint64(&t[i])
			if new, ok := fn(old, cur-va+uint64(i-first)*pageSize); ok && reduces(old, new) {
				own = true
				break
			}
		}
		if own {
			reduced = true
			if !pt.pathFresh(cur) {
				if leaf, err = pt.walk(cur, 0, create, true); err != nil {
					return reduced, err
				}
				t = pt.mem.table(leaf)
			}
		}
		for i := first; i <= last; i++ {
			old := atomic.LoadUint64(&t[i])
			new, ok := fn(old, cur-va+uint64(i-first)*pageSize)
			if !ok || new == old {
				continue
			}
			switch {
			case old == 0:
				pt.used[leaf]++
			case new == 0:
				pt.used[leaf]--
			}
			atomic.StoreUint64(&t[i], new)
		}
		cur = next
	}
	return reduced, nil
}

// pathFresh reports whether every table from the root to va's leaf is
// fresh.
func (pt *pageTables) pathFresh(va uint64) bool {
	gpa := pt.root
	for l := 3; l >= 0; l-- {
		if !pt.fresh[gpa] {
			return false
		}
		if l == 0 {
			break
		}
		e := atomic.LoadUint64(&pt.mem.table(gpa)[index(va, l)])
		if e&ptePresent == 0 {
			return false
		}
		gpa = e & pteAddr
	}
	return true
}

// nextTable returns the first address after cur (and at most end) at
// which a leaf table may exist, skipping the upper-level entries that are
// absent.
func (pt *pageTables) nextTable(cur, end uint64) uint64 {
	gpa := pt.root
	for l := 3; l > 0; l-- {
		e := atomic.LoadUint64(&pt.mem.table(gpa)[index(cur, l)])
		if e&ptePresent == 0 {
			return min(end, (cur|(span(l)-1))+1)
		}
		gpa = e & pteAddr
	}
	return min(end, (cur|(span(1)-1))+1)
}

// mapRange maps [va, va+length) to guest-physical [gpa, gpa+length) with
// prot, and reports whether it replaced an access a vCPU may have cached.
func (pt *pageTables) mapRange(va, gpa, length uint64, prot platform.Prot) (bool, error) {
	flags := leafFlags(prot)
	return pt.update(va, length, true, func(_ uint64, off uint64) (uint64, bool) {
		return (gpa+off)&pteAddr | flags, true
	})
}

// protectRange changes the access to the pages mapped in [va, va+length),
// and reports whether it took any away.
func (pt *pageTables) protectRange(va, length uint64, prot platform.Prot) (bool, error) {
	flags := leafFlags(prot)
	return pt.update(va, length, false, func(old uint64, _ uint64) (uint64, bool) {
		return old&pteAddr | flags, mapped(old)
	})
}

// unmapRange removes the mappings in [va, va+length), and the tables it
// leaves empty, and reports whether any page was present.
func (pt *pageTables) unmapRange(va, length uint64) (bool, error) {
	reduced, err := pt.update(va, length, false, func(old uint64, _ uint64) (uint64, bool) {
		return 0, old != 0
	})
	if err != nil {
		return reduced, err
	}
	// Empty tables go, bottom up. Taking a table out of its parent takes
	// access away too, so the parent is owned first.
	for level := 0; level < 3; level++ {
		for _, cur := range pt.tablesAt(level, va, va+length) {
			parent, err := pt.walk(cur, level+1, false, true)
			if err != nil {
				return reduced, err
			}
			p := pt.mem.table(parent)
			i := index(cur, level+1)
			e := atomic.LoadUint64(&p[i])
			if e&ptePresent == 0 || pt.used[e&pteAddr] != 0 {
				continue
			}
			atomic.StoreUint64(&p[i], 0)
			pt.used[parent]--
			delete(pt.used, e&pteAddr)
			delete(pt.fresh, e&pteAddr)
			pt.retired = append(pt.retired, e&pteAddr)
			reduced = true
		}
	}
	return reduced, nil
}

// tablesAt returns the start of the range of every empty table of the
// given level that covers part of [start, end).
func (pt *pageTables) tablesAt(level int, start, end uint64) []uint64 {
	var out []uint64
	var visit func(gpa uint64, l int, base uint64)
	visit = func(gpa uint64, l int, base uint64) {
		t := pt.mem.table(gpa)
		for i := 0; i < 512; i++ {
			lo := base + uint64(i)*span(l)
			if lo+span(l) <= start || lo >= end {
				continue
			}
			e := atomic.LoadUint64(&t[i])
			if e&ptePresent == 0 {
				continue
			}
			child := e & pteAddr
			if _, ours := pt.used[child]; !ours {
				continue // the shared stub region's tables
			}
			if l-1 == level {
				if pt.used[child] == 0 {
					out = append(out, lo)
				}
				continue
			}
			visit(child, l-1, lo)
		}
	}
	visit(pt.root, 3, 0)
	return out
}

// setRootEntry writes entry i of the root table: the shared stub region's
// tables, which are not the address space's.
func (pt *pageTables) setRootEntry(i int, e uint64) {
	atomic.StoreUint64(&pt.mem.table(pt.root)[i], e)
}

// publish says the current tables are handed to a vCPU: none is fresh any
// more.
func (pt *pageTables) publish() {
	if len(pt.fresh) > 0 {
		clear(pt.fresh)
	}
}

// takeRetired returns the retired tables and forgets them.
func (pt *pageTables) takeRetired() []uint64 {
	r := pt.retired
	pt.retired = nil
	return r
}

// release retires every table of the tree, but for root entry keep's
// (the shared stub region).
func (pt *pageTables) release(keep int) {
	t := pt.mem.table(pt.root)
	for i := 0; i < 512; i++ {
		if i == keep {
			continue
		}
		if e := atomic.LoadUint64(&t[i]); e&ptePresent != 0 {
			pt.releaseIn(e&pteAddr, 2)
		}
	}
	pt.retired = append(pt.retired, pt.root)
	pt.used, pt.fresh = nil, nil
}

func (pt *pageTables) releaseIn(gpa uint64, level int) {
	if level > 0 {
		t := pt.mem.table(gpa)
		for i := 0; i < 512; i++ {
			if e := atomic.LoadUint64(&t[i]); e&ptePresent != 0 {
				pt.releaseIn(e&pteAddr, level-1)
			}
		}
	}
	pt.retired = append(pt.retired, gpa)
}

// translate walks the tables for va as the MMU would and returns the leaf
// entry (0 if there is none).
func (pt *pageTables) translate(va uint64) uint64 {
	leaf, _ := pt.walk(va, 0, false, false)
	if leaf == 0 {
		return 0
	}
	return atomic.LoadUint64(&pt.mem.table(leaf)[index(va, 0)])
}
