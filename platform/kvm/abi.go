package kvm

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The KVM ioctls and structures this package uses, from <linux/kvm.h> and
// <asm/kvm.h> (golang.org/x/sys/unix has none of them). abi_test.go checks
// every number and layout here against the C headers.
const (
	kvmGetAPIVersion       = 0xae00
	kvmCreateVM            = 0xae01
	kvmCheckExtension      = 0xae03
	kvmGetVCPUMmapSize     = 0xae04
	kvmGetSupportedCPUID   = 0xc008ae05
	kvmSetUserMemoryRegion = 0x4020ae46
	kvmCreateVCPU          = 0xae41
	kvmRun                 = 0xae80
	kvmGetRegs             = 0x8090ae81
	kvmSetRegs             = 0x4090ae82
	kvmGetSregs            = 0x8138ae83
	kvmSetSregs            = 0x4138ae84
	kvmSetCPUID2           = 0x4008ae90
	kvmGetXsave            = 0x9000aea4
	kvmSetXsave            = 0x5000aea5
	kvmSetXCRS             = 0x4188aea7
	kvmSetMSRS             = 0x4008ae89
	kvmSetDeviceAttr       = 0x4018aee1

	kvmAPIVersion = 12

	kvmCapSyncRegs      = 74
	kvmCapImmediateExit = 136
	kvmCapNrMemslots    = 10
	kvmCapMaxVCPUs      = 66
	kvmCapXsave         = 55
	kvmCapXCRS          = 56

	kvmSyncX86Regs  = 1 << 0
	kvmSyncX86Sregs = 1 << 1

	// KVM_VCPU_TSC_CTRL's KVM_VCPU_TSC_OFFSET attribute.
	kvmVCPUTSCCtrl   = 0
	kvmVCPUTSCOffset = 0
)

// Exit reasons (kvm_run.exit_reason).
const (
	exitUnknown       = 0
	exitException     = 1
	exitIO            = 2
	exitHLT           = 5
	exitMMIO          = 6
	exitShutdown      = 8
	exitFailEntry     = 9
	exitIntr          = 10
	exitInternalError = 17
)

// kvmRegs is struct kvm_regs.
type kvmRegs struct {
	Rax, Rbx, Rcx, Rdx, Rsi, Rdi, Rsp, Rbp uint64
	R8, R9, R10, R11, R12, R13, R14, R15   uint64
	Rip, Rflags                            uint64
}

// kvmSegment is struct kvm_segment.
type kvmSegment struct {
	Base                           uint64
	Limit                          uint32
	Selector                       uint16
	Type                           uint8
	Present, DPL, DB, S, L, G, AVL uint8
	Unusable                       uint8
	_                              uint8
}

// kvmDtable is struct kvm_dtable.
type kvmDtable struct {
	Base  uint64
	Limit uint16
	_     [3]uint16
}

// kvmSregs is struct kvm_sregs.
type kvmSregs struct {
	CS, DS, ES, FS, GS, SS kvmSegment
	TR, LDT                kvmSegment
	GDT, IDT               kvmDtable
	CR0, CR2, CR3, CR4     uint64
	CR8, EFER, APICBase    uint64
	InterruptBitmap        [4]uint64
}

// kvmUserspaceMemoryRegion is struct kvm_userspace_memory_region.
type kvmUserspaceMemoryRegion struct {
	Slot, Flags   uint32
	GuestPhysAddr uint64
	MemorySize    uint64
	UserspaceAddr uint64
}

// kvmCPUIDEntry2 is struct kvm_cpuid_entry2.
type kvmCPUIDEntry2 struct {
	Function, Index, Flags uint32
	Eax, Ebx, Ecx, Edx     uint32
	_                      [3]uint32
}

// kvmCPUID2 is struct kvm_cpuid2 with room for maxCPUIDEntries entries.
type kvmCPUID2 struct {
	Nent    uint32
	_       uint32
	Entries [maxCPUIDEntries]kvmCPUIDEntry2
}

const maxCPUIDEntries = 256

// kvmXcrs is struct kvm_xcrs.
type kvmXcrs struct {
	NrXcrs uint32
	Flags  uint32
	Xcrs   [16]struct {
		Xcr   uint32
		_     uint32
		Value uint64
	}
	_ [16]uint64
}

// kvmMSRs is struct kvm_msrs with its entries.
type kvmMSRs struct {
	Nmsrs   uint32
	_       uint32
	Entries [4]struct {
		Index uint32
		_     uint32
		Data  uint64
	}
}

// kvmDeviceAttr is struct kvm_device_attr.
type kvmDeviceAttr struct {
	Flags uint32
	Group uint32
	Attr  uint64
	Addr  uint64
}

// xsaveAreaSize is sizeof(struct kvm_xsave).
const xsaveAreaSize = 4096

// The kvm_run page shared with each vCPU: the offsets of the fields read
// and written here.
const (
	runImmediateExit = 1
	runExitReason    = 8
	runExitData      = 32 // the union of exit descriptions (io, mmio, internal, ...)
	runValidRegs     = 288
	runDirtyRegs     = 296
	runSyncRegs      = 304 // struct kvm_sync_regs: kvm_regs, then kvm_sregs
	runSyncSregs     = runSyncRegs + 144
)

// Offsets in kvm_run's io exit description.
const (
	ioDirection = 0
	ioSize      = 1
	ioPort      = 2
)

// ioctl issues a KVM ioctl. KVM_RUN goes through here too: unix.Syscall
// tells the Go scheduler the thread may block, so it hands the thread's P
// to other goroutines while the guest runs.
func ioctl(fd int, req uintptr, arg uintptr) (uintptr, error) {
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, arg)
	if errno != 0 {
		return 0, errno
	}
	return r, nil
}

// ioctlPtr issues an ioctl whose argument is a pointer.
func ioctlPtr(fd int, req uintptr, arg unsafe.Pointer) error {
	_, err := ioctl(fd, req, uintptr(arg))
	return err
}
