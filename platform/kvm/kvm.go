// Package kvm runs guest code in user mode of a KVM virtual machine whose
// guest-physical memory is the sentry's memory file. It is the only package
// that opens /dev/kvm or talks to a vCPU.
//
// How it works, in one paragraph: a sandbox is one VM. Each address space is
// a set of 4-level page tables the sentry writes (pagetables.go), mapping
// guest pages to memory file offsets; each guest thread gets a vCPU, run by
// the thread of the task's goroutine. The vCPU enters the guest's code in
// user mode directly; a system call or an exception enters a tiny
// supervisor stub (stub/stub_amd64.S) whose only instruction is an OUT to a
// port naming the event, so every guest system call and fault is a VM exit
// that the task's thread turns into a platform.Event, and the sentry
// resumes the vCPU in user mode by setting its registers (through the
// kvm_run page, KVM_CAP_SYNC_REGS). The sentry itself never runs in the VM.
package kvm

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// Platform is the KVM platform of one sandbox: one VM.
type Platform struct {
	kvmFD, vmFD int
	runSize     int
	cpuid       *kvmCPUID2
	cr4         uint64
	fpSize      int
	fpFeatures  uint64

	slots  *slots
	mem    *guestMemory
	tables *region
	stub   *stubRegion

	// quarantine are page table pages out of every tree and no longer
	// walked by any vCPU, which KVM may still have shadows of: they are
	// reused once zapShadows dropped those.
	quarantineMu sync.Mutex
	quarantine   []uint64

	vcpuMu  sync.Mutex
	idle    []*vcpu
	nvcpus  int
	maxVCPU int
	initFP  []byte // a fresh vCPU's XSAVE area, for a reused one
}

var _ platform.Platform = (*Platform)(nil)

// Device is the KVM device New opens.
const Device = "/dev/kvm"

// fallback ends every error of New: the platform cannot run on this host,
// and systrap needs no KVM.
const fallback = "; use --platform=systrap, which needs no KVM"

// New starts the platform for guest memory held in the memory file memFD.
// Its error is one line that says what to use instead.
func New(memFD int) (*Platform, error) { return newOn(Device, memFD) }

// Unusable is err, a reason the platform cannot run on this host, made the
// one line New's errors are: it says what to use instead.
func Unusable(err error) error { return fmt.Errorf("%w%s", err, fallback) }

// newOn is New with the KVM device at path.
func newOn(path string, memFD int) (*Platform, error) {
	p, err := start(path, memFD)
	if err != nil {
		return nil, Unusable(err)
	}
	return p, nil
}

func start(path string, memFD int) (*Platform, error) {
	if runtime.GOARCH != "amd64" {
		return nil, fmt.Errorf("kvm: unsupported architecture %s", runtime.GOARCH)
	}
	kvmFD, err := openDevice(path)
	if err != nil {
		return nil, fmt.Errorf("kvm: open %s: %v", path, err)
	}
	p := &Platform{kvmFD: kvmFD, vmFD: -1}
	if err := p.init(path, memFD); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

func (p *Platform) init(path string, memFD int) error {
	check := func(c uintptr) int {
		n, err := ioctl(p.kvmFD, kvmCheckExtension, c)
		if err != nil {
			return 0
		}
		return int(n)
	}
	if v, err := ioctl(p.kvmFD, kvmGetAPIVersion, 0); err != nil {
		return fmt.Errorf("kvm: %s is not a KVM device (KVM_GET_API_VERSION: %v)", path, err)
	} else if v != kvmAPIVersion {
		return fmt.Errorf("kvm: %s speaks KVM API version %d, not %d", path, v, kvmAPIVersion)
	}
	for _, c := range []struct {
		cap  uintptr
		need int
		name string
	}{
		{kvmCapSyncRegs, kvmSyncX86Regs | kvmSyncX86Sregs, "KVM_CAP_SYNC_REGS"},
		{kvmCapImmediateExit, 1, "KVM_CAP_IMMEDIATE_EXIT"},
		{kvmCapXsave, 1, "KVM_CAP_XSAVE"},
	} {
		if check(c.cap)&c.need != c.need {
			return fmt.Errorf("kvm: this KVM lacks %s", c.name)
		}
	}
	vm, err := ioctl(p.kvmFD, kvmCreateVM, 0)
	if err != nil {
		return fmt.Errorf("kvm: create a VM: %v", err)
	}
	p.vmFD = int(vm)
	unix.CloseOnExec(p.vmFD)
	size, err := ioctl(p.kvmFD, kvmGetVCPUMmapSize, 0)
	if err != nil {
		return fmt.Errorf("kvm: size of the kvm_run page: %w", err)
	}
	p.runSize = int(size)
	p.maxVCPU = min(maxVCPUs, max(check(kvmCapMaxVCPUs), 1))
	p.slots = &slots{vmFD: p.vmFD, max: uint32(max(check(kvmCapNrMemslots), 2)) - 1}
	if err := p.readCPUID(); err != nil {
		return err
	}
	if p.mem, err = newGuestMemory(p.slots, memFD); err != nil {
		return err
	}
	if p.tables, err = newRegion(p.slots); err != nil {
		return err
	}
	if p.stub, err = newStubRegion(p.tables); err != nil {
		return err
	}
	// The first vCPU settles which CR4 features this KVM accepts, and
	// holds the FP state every reused vCPU starts a thread with.
	v, err := p.firstVCPU()
	if err != nil {
		return err
	}
	p.initFP = append([]byte(nil), v.fetchFP()...)
	v.fp.dirty = false
	p.idle = append(p.idle, v)
	return nil
}

// readCPUID takes the CPUID KVM supports, which every vCPU gets, and the
// XSAVE features and size in it.
func (p *Platform) readCPUID() error {
	p.cpuid = &kvmCPUID2{Nent: maxCPUIDEntries}
	if err := ioctlPtr(p.kvmFD, kvmGetSupportedCPUID, unsafe.Pointer(p.cpuid)); err != nil {
		return fmt.Errorf("kvm: supported CPUID: %w", err)
	}
	p.fpFeatures, p.fpSize = 3, 512+64 // x87 and SSE: the FXSAVE area and the XSAVE header
	for _, e := range p.cpuid.Entries[:p.cpuid.Nent] {
		if e.Function == 0xd && e.Index == 0 && e.Ebx >= 512+64 {
			p.fpFeatures = uint64(e.Eax) | uint64(e.Edx)<<32
			p.fpSize = int(e.Ebx)
		}
	}
	if p.fpSize > xsaveAreaSize {
		return fmt.Errorf("kvm: the XSAVE state (%d bytes) is larger than KVM_GET_XSAVE's", p.fpSize)
	}
	return nil
}

// firstVCPU creates vCPU 0, which settles the CR4 every vCPU runs with.
func (p *Platform) firstVCPU() (*vcpu, error) {
	v, err := p.newVCPU(0)
	if err != nil {
		return nil, err
	}
	p.nvcpus = 1
	return v, nil
}

func (p *Platform) close() {
	if p.vmFD >= 0 {
		unix.Close(p.vmFD)
	}
	unix.Close(p.kvmFD)
}

// MaxUserAddress implements platform.Platform.
func (p *Platform) MaxUserAddress() uintptr { return MaxUserAddress }

// NewAddressSpace implements platform.Platform.
func (p *Platform) NewAddressSpace() (platform.AddressSpace, error) {
	pt, err := newPageTables(p.tables)
	if err != nil {
		return nil, err
	}
	pt.setRootEntry(511, p.stub.pdpt|pteKernelTable)
	return &addressSpace{p: p, pt: pt, contexts: make(map[*context]struct{})}, nil
}

// quarantineMax is how many retired page table pages wait for a zap of
// KVM's shadows before they are reused: a zap makes every vCPU fault its
// pages in again, so it must be rare.
const quarantineMax = 4096

// retire takes page table pages no vCPU walks any more.
func (p *Platform) retire(pages []uint64) {
	if len(pages) == 0 {
		return
	}
	p.quarantineMu.Lock()
	defer p.quarantineMu.Unlock()
	p.quarantine = append(p.quarantine, pages...)
	if len(p.quarantine) < quarantineMax {
		return
	}
	if err := p.slots.zapShadows(); err != nil {
		return // they stay in quarantine; the next retire tries again
	}
	p.tables.release(p.quarantine)
	p.quarantine = p.quarantine[:0]
}

// getVCPU returns an idle vCPU, with the FP state a new thread starts
// with, or a new one.
func (p *Platform) getVCPU() (*vcpu, error) {
	p.vcpuMu.Lock()
	defer p.vcpuMu.Unlock()
	if n := len(p.idle); n > 0 {
		v := p.idle[n-1]
		p.idle = p.idle[:n-1]
		copy(v.fp.area[:], p.initFP)
		v.fp.fresh, v.fp.dirty = true, true
		v.setImmediateExit(false)
		return v, nil
	}
	if p.nvcpus >= p.maxVCPU {
		return nil, unix.EAGAIN
	}
	v, err := p.newVCPU(p.nvcpus)
	if err != nil {
		return nil, err
	}
	p.nvcpus++
	return v, nil
}

// putVCPU makes v idle.
func (p *Platform) putVCPU(v *vcpu) {
	v.lastAS = nil
	p.vcpuMu.Lock()
	p.idle = append(p.idle, v)
	p.vcpuMu.Unlock()
}
