// Package platform is the seam between the sentry's kernel and the CPU: it
// runs guest code in an address space and reports, as an Event, why the guest
// stopped. Implementations (platform/systrap today) live in sub-packages; the
// kernel sees only these interfaces and never imports an implementation.
package platform

import (
	"time"

	"github.com/moat-sandbox/moat/sentry/arch"
)

// Prot is a page protection, with Linux's PROT_* bit values.
type Prot uint32

// Protection bits.
const (
	ProtRead  Prot = 1
	ProtWrite Prot = 2
	ProtExec  Prot = 4
)

// Platform creates address spaces for guest processes.
type Platform interface {
	// NewAddressSpace returns an empty address space.
	NewAddressSpace() (AddressSpace, error)
	// MaxUserAddress is the end of the range a guest may map.
	MaxUserAddress() uintptr
}

// CPULimiter is a platform whose waits adapt to how many CPUs the sandbox
// may use at once: the kernel tells it whenever its limits change (a
// cpuset, a CPU quota), so that its hand-offs never spin on more CPUs than
// the sandbox's share.
type CPULimiter interface {
	LimitCPUs(n int)
}

// HostFiles says which host file, if any, holds a range of the memory
// file's offsets (memfile.File.HostFileAt): fd is the sentry's descriptor of
// it (-1 if the range is in no host file) and fileOff the range's offset in
// it; ok is false for the memory file's own pages.
type HostFiles interface {
	HostFileAt(off, length uint64) (fd int, fileOff uint64, ok bool)
}

// HostFileMapper is a platform whose address spaces map host files'
// pages themselves, read-only, where MapFile is given an offset that
// HostFiles places in one. The kernel lets the memory file name host files
// only on such a platform.
type HostFileMapper interface {
	MapHostFiles(h HostFiles)
}

// AddressSpace is one guest address space. Changes are applied before any
// context of the address space next runs guest code.
type AddressSpace interface {
	// MapFile maps [off, off+length) of the memory file at addr.
	MapFile(addr uintptr, off uint64, length uintptr, prot Prot) error
	// Unmap removes the mappings in [addr, addr+length).
	Unmap(addr, length uintptr) error
	// Protect changes the protection of mappings in [addr, addr+length).
	Protect(addr, length uintptr, prot Prot) error
	// Sync applies the changes made so far before it returns, while
	// other contexts of the address space may be running guest code.
	Sync() error
	// NewContext returns a new thread of execution in this address space.
	NewContext() (Context, error)
	// Kill ends every thread of the address space at once: their Switch
	// fails. Release must still be called.
	Kill()
	// Release destroys the address space and every context in it.
	Release()
}

// Context runs one guest thread.
type Context interface {
	// Switch loads regs, runs guest code until the next event, and stores
	// the guest's registers back into regs.
	Switch(regs *arch.Registers) (Event, error)
	// Interrupt makes a running or next Switch return EventInterrupt soon.
	// It may be called from any goroutine.
	Interrupt()
	// FPState is the thread's floating-point and vector state, in the
	// layout of Linux's signal frame (FXSAVE area, its software-reserved
	// bytes describing the XSAVE state that follows, the XSAVE header and
	// components). Between Switches it may be read and written in place;
	// the thread resumes with what it holds.
	FPState() []byte
	// Park says the thread will not be resumed soon (its task blocks), so
	// whatever waits to resume it should sleep rather than spin; the next
	// Switch undoes it.
	Park()
	// Running is how long the thread has been running guest code, if it is
	// in a Switch now (else 0): the CPU time the next event will report,
	// surely so up to RunningVouched. It may be called from any goroutine.
	Running() time.Duration
	// Release ends the thread.
	Release()
}

// EventKind says why Switch returned.
type EventKind int

// Event kinds.
const (
	// EventSyscall: the guest made a system call; regs.OrigRax is its number.
	EventSyscall EventKind = iota
	// EventFault: a fault the kernel must handle or turn into a signal.
	EventFault
	// EventInterrupt: Interrupt was called.
	EventInterrupt
)

// Event describes why the guest stopped.
type Event struct {
	Kind EventKind
	// For EventFault: the host signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
	// SIGTRAP), its si_code and address, and for SIGSEGV the access that
	// faulted.
	Signo  int32
	Code   int32
	Addr   uintptr
	Access Prot
	// Trapno is the CPU exception vector (e.g. 14 for a page fault).
	Trapno uint64
	// ErrorCode is the CPU's error code for the exception.
	ErrorCode uint64

	// GuestTime is how long the thread ran guest code before the event,
	// and KernelTime how long the kernel worked on its previous event
	// (from that Switch's return to this Switch or the Park before it):
	// the thread's user and system CPU time. Both are measured as elapsed
	// time; GuestTime is bounded by the host's CPU time of the thread when
	// it ran longer than RunningVouched (a host that took the CPU away, a
	// CPU quota's throttling, does not count), KernelTime is not.
	GuestTime, KernelTime time.Duration
}

// RunningVouched is how long a run of guest code may be and still have its
// elapsed time counted as CPU time unchecked: the host's scheduler takes a
// CPU away for longer (a time slice, a quota's throttling), so a platform
// asks the host for the thread's CPU time after a longer run.
const RunningVouched = 200 * time.Microsecond
