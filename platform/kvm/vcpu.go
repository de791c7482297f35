package kvm

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// vcpu is one KVM vCPU and its page in the stub region. A vCPU runs one
// guest thread at a time; a thread that ends gives its vCPU back to the
// platform for the next (KVM cannot destroy a single vCPU).
type vcpu struct {
	id   int
	fd   int
	run  []byte
	page []byte // the sentry's view of its GDT, TSS and stack
	fp   xstate

	// The address space and CR3 it last ran with, and the address
	// space's generation then: a vCPU whose address space lost mappings
	// since, or that changes address spaces, flushes its TLB on entry.
	lastAS  *addressSpace
	lastCR3 uint64
	lastGen uint64
}

// regs and sregs are the registers KVM syncs through the kvm_run page.
func (v *vcpu) regs() *kvmRegs   { return (*kvmRegs)(unsafe.Pointer(&v.run[runSyncRegs])) }
func (v *vcpu) sregs() *kvmSregs { return (*kvmSregs)(unsafe.Pointer(&v.run[runSyncSregs])) }

func (v *vcpu) exitReason() uint32 { return *(*uint32)(unsafe.Pointer(&v.run[runExitReason])) }

// ioPort is the port of an I/O exit.
func (v *vcpu) ioPort() int {
	return int(*(*uint16)(unsafe.Pointer(&v.run[runExitData+ioPort])))
}

// setImmediateExit sets kvm_run.immediate_exit, which makes KVM_RUN return
// EINTR at once. It is the second byte of the first word, whose other
// bytes stay zero (request_interrupt_window and padding).
func (v *vcpu) setImmediateExit(on bool) {
	var w uint32
	if on {
		w = 1 << (8 * runImmediateExit)
	}
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&v.run[0])), w)
}

// markDirty tells KVM to load the synced registers at the next KVM_RUN.
func (v *vcpu) markDirty(bits uint64) {
	*(*uint64)(unsafe.Pointer(&v.run[runDirtyRegs])) |= bits
}

// newVCPU creates vCPU id and sets it up to run user code: descriptor
// tables, control registers and syscall MSRs, CPUID and XCR0 as the
// platform decided, the host's TSC.
func (p *Platform) newVCPU(id int) (*vcpu, error) {
	fdr, err := ioctl(p.vmFD, kvmCreateVCPU, uintptr(id))
	if err != nil {
		return nil, fmt.Errorf("kvm: create vCPU %d: %w", id, err)
	}
	v := &vcpu{id: id, fd: int(fdr)}
	unix.CloseOnExec(v.fd)
	fail := func(err error) (*vcpu, error) {
		if v.run != nil {
			unix.Munmap(v.run)
		}
		unix.Close(v.fd)
		return nil, err
	}
	if v.run, err = unix.Mmap(v.fd, 0, p.runSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err != nil {
		return fail(fmt.Errorf("kvm: map vCPU %d's run page: %w", id, err))
	}
	if err := ioctlPtr(v.fd, kvmSetCPUID2, unsafe.Pointer(p.cpuid)); err != nil {
		return fail(fmt.Errorf("kvm: set vCPU %d's CPUID: %w", id, err))
	}
	gpa, err := p.tables.allocTable()
	if err != nil {
		return fail(err)
	}
	v.page = p.tables.page(gpa)
	va := vcpuVA(id)
	writeGDT(v.page[vcpuGDTOff:], va+vcpuTSSOff)
	writeTSS(v.page[vcpuTSSOff:], va+pageSize)
	p.stub.mapVCPU(p.tables, id, gpa)

	var s kvmSregs
	if err := ioctlPtr(v.fd, kvmGetSregs, unsafe.Pointer(&s)); err != nil {
		return fail(fmt.Errorf("kvm: read vCPU %d's registers: %w", id, err))
	}
	if err := p.setInitialSregs(v, &s, va); err != nil {
		return fail(err)
	}
	msrs := kvmMSRs{Nmsrs: 4}
	for i, m := range [4][2]uint64{
		{msrSTAR, user32CS<<48 | kernelCS<<32},
		{msrLSTAR, p.stub.lstar()},
		{msrCSTAR, p.stub.lstar()},
		{msrFMASK, syscallMask},
	} {
		msrs.Entries[i].Index, msrs.Entries[i].Data = uint32(m[0]), m[1]
	}
	if n, err := ioctl(v.fd, kvmSetMSRS, uintptr(unsafe.Pointer(&msrs))); err != nil || n != 4 {
		return fail(fmt.Errorf("kvm: set vCPU %d's syscall MSRs: %d of 4 set (%v)", id, n, err))
	}
	if p.cr4&cr4OSXSAVE != 0 {
		x := kvmXcrs{NrXcrs: 1}
		x.Xcrs[0].Value = p.fpFeatures
		// Some hypervisors keep the host's XCR0 for user mode and refuse
		// this; the FP state KVM saves is the same either way.
		ioctlPtr(v.fd, kvmSetXCRS, unsafe.Pointer(&x))
	}
	// The guest reads the host's TSC (the vDSO's clocks are computed from
	// it): no offset. Hypervisors that run user mode on the host's TSC do
	// not offer the attribute, and need none.
	var zero uint64
	attr := kvmDeviceAttr{Group: kvmVCPUTSCCtrl, Attr: kvmVCPUTSCOffset, Addr: uint64(uintptr(unsafe.Pointer(&zero)))}
	ioctlPtr(v.fd, kvmSetDeviceAttr, unsafe.Pointer(&attr))

	*(*uint64)(unsafe.Pointer(&v.run[runValidRegs])) = kvmSyncX86Regs | kvmSyncX86Sregs
	*v.sregs() = s
	v.fp.size, v.fp.features = p.fpSize, p.fpFeatures
	return v, nil
}

// cr4Choices are the CR4 values tried on the first vCPU, best first: KVM
// refuses features its own CPUID does not list, which some hypervisors
// leave out although user mode can use them (PVM runs user mode on the
// host's CR4).
var cr4Choices = []uint64{
	cr4PAE | cr4OSFXSR | cr4OSXMMEXCPT | cr4OSXSAVE | cr4FSGSBASE,
	cr4PAE | cr4OSFXSR | cr4OSXMMEXCPT | cr4OSXSAVE,
	cr4PAE | cr4OSFXSR | cr4OSXMMEXCPT,
}

// setInitialSregs loads the initial special registers, settling the
// platform's CR4 on the first vCPU.
func (p *Platform) setInitialSregs(v *vcpu, s *kvmSregs, va uint64) error {
	choices := cr4Choices
	if p.cr4 != 0 {
		choices = []uint64{p.cr4}
	}
	var err error
	for _, cr4 := range choices {
		p.cr4 = cr4
		p.initialSregs(s, va)
		if err = ioctlPtr(v.fd, kvmSetSregs, unsafe.Pointer(s)); err == nil {
			return nil
		}
	}
	return fmt.Errorf("kvm: set vCPU %d's control registers (CR4 %#x): %w", v.id, p.cr4, err)
}

// initialSregs sets the control registers, descriptor tables and user-mode
// segments of the vCPU whose page is at va. CS and SS say user mode: the
// vCPU enters the guest's code directly, never the stub.
func (p *Platform) initialSregs(s *kvmSregs, va uint64) {
	s.CR0 = cr0PE | cr0MP | cr0ET | cr0NE | cr0WP | cr0AM | cr0PG
	s.CR4 = p.cr4
	s.EFER = eferSCE | eferLME | eferLMA | eferNXE
	s.CS, s.SS = segment(userCS, true), segment(userDS, false)
	null := segment(0, false)
	s.DS, s.ES, s.FS, s.GS = null, null, null, null
	s.GDT = kvmDtable{Base: va + vcpuGDTOff, Limit: gdtLimit}
	s.IDT = kvmDtable{Base: idtVA, Limit: 16*numVectors - 1}
	s.TR = kvmSegment{Base: va + vcpuTSSOff, Limit: tssSize - 1, Selector: tssSel, Type: 11, Present: 1}
	s.LDT = kvmSegment{Unusable: 1}
	s.InterruptBitmap = [4]uint64{}
}

// loadFP gives the vCPU the FP state the sentry handed out and may have
// changed.
func (v *vcpu) loadFP() error {
	if !v.fp.dirty {
		return nil
	}
	if err := ioctlPtr(v.fd, kvmSetXsave, unsafe.Pointer(&v.fp.area)); err != nil {
		return fmt.Errorf("kvm: load vCPU %d's FP state: %w", v.id, err)
	}
	v.fp.dirty = false
	return nil
}

// fetchFP returns the vCPU's FP state for the sentry to read or change.
func (v *vcpu) fetchFP() []byte {
	if !v.fp.fresh {
		if err := ioctlPtr(v.fd, kvmGetXsave, unsafe.Pointer(&v.fp.area)); err != nil {
			return nil
		}
		v.fp.fresh = true
	}
	v.fp.dirty = true
	return v.fp.present()
}
