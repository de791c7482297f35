package kvm

import "sync/atomic"

// stubRegion is the supervisor-only top of every address space: the stub's
// code, the IDT and a page per vCPU, mapped by tables that every address
// space's last PML4 entry shares. The sentry writes it once; the CPU only
// writes exception frames on the vCPUs' stacks.
type stubRegion struct {
	pdpt    uint64    // what PML4 entry 511 points to
	vcpuPTs [2]uint64 // the leaf tables of the vCPU pages
	entries stubEntries
}

// Supervisor page entries: never a user page.
const (
	pteKernelCode = ptePresent | pteAccessed | pteDirty
	pteKernelRO   = ptePresent | pteAccessed | pteDirty | pteNX
	pteKernelRW   = ptePresent | pteWrite | pteAccessed | pteDirty | pteNX
	// pteKernelTable links the region's tables; user mode cannot use it
	// because the leaves say supervisor.
	pteKernelTable = ptePresent | pteWrite | pteAccessed
)

func newStubRegion(r *region) (*stubRegion, error) {
	e, err := readStubEntries()
	if err != nil {
		return nil, err
	}
	s := &stubRegion{entries: e}
	alloc := func() uint64 {
		if err != nil {
			return 0
		}
		var gpa uint64
		gpa, err = r.allocTable()
		return gpa
	}
	code, idt := alloc(), alloc()
	s.pdpt = alloc()
	pd, pt0 := alloc(), alloc()
	s.vcpuPTs[0], s.vcpuPTs[1] = alloc(), alloc()
	if err != nil {
		return nil, err
	}
	copy(r.page(code), stubCode)
	writeIDT(r.page(idt), stubCodeVA+e.vectors)

	set := func(table uint64, i int, e uint64) { atomic.StoreUint64(&r.table(table)[i], e) }
	set(s.pdpt, index(stubBase, 2), pd|pteKernelTable)
	set(pd, index(stubCodeVA, 1), pt0|pteKernelTable)
	set(pd, index(vcpuAreaVA, 1), s.vcpuPTs[0]|pteKernelTable)
	set(pd, index(vcpuAreaVA+512*pageSize, 1), s.vcpuPTs[1]|pteKernelTable)
	set(pt0, index(stubCodeVA, 0), code|pteKernelCode)
	set(pt0, index(idtVA, 0), idt|pteKernelRO)
	return s, nil
}

// vcpuVA is the address of vCPU id's page.
func vcpuVA(id int) uint64 { return vcpuAreaVA + uint64(id)*pageSize }

// mapVCPU maps the page at gpa as vCPU id's.
func (s *stubRegion) mapVCPU(r *region, id int, gpa uint64) {
	atomic.StoreUint64(&r.table(s.vcpuPTs[id/512])[id%512], gpa|pteKernelRW)
}

// lstar is the syscall entry's address.
func (s *stubRegion) lstar() uint64 { return stubCodeVA + s.entries.syscall }
