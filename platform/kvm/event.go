package kvm

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
)

// si_code values of the CPU faults, from include/uapi/asm-generic/siginfo.h
// (neither golang.org/x/sys/unix nor internal/linuxabi has them; abi_test.go
// checks them against the header).
const (
	fpeIntDiv = 1 // FPE_INTDIV
	fpeFltDiv = 3 // FPE_FLTDIV
	fpeFltOvf = 4 // FPE_FLTOVF
	fpeFltUnd = 5 // FPE_FLTUND
	fpeFltRes = 6 // FPE_FLTRES
	fpeFltInv = 7 // FPE_FLTINV
	illIllOpn = 2 // ILL_ILLOPN
	busAdrAln = 1 // BUS_ADRALN
	trapBrkpt = 1 // TRAP_BRKPT
	trapTrace = 2 // TRAP_TRACE
)

// CPU exception vectors.
const (
	vecDE = 0  // divide error
	vecDB = 1  // debug
	vecBP = 3  // breakpoint (INT3)
	vecUD = 6  // invalid opcode
	vecNP = 11 // segment not present
	vecSS = 12 // stack fault
	vecPF = 14 // page fault
	vecMF = 16 // x87 floating-point error
	vecAC = 17 // alignment check
	vecXM = 19 // SIMD floating-point error
)

// hasErrorCode reports whether the CPU pushes an error code for vector v.
func hasErrorCode(v int) bool {
	switch v {
	case 8, 10, 11, 12, 13, 14, 17, 21, 29, 30:
		return true
	}
	return false
}

// Page fault error code bits.
const (
	pfWrite = 1 << 1
	pfFetch = 1 << 4
)

const rflagsTF = 1 << 8

// exceptionFrame is what the CPU pushed on the vCPU's stack when an
// exception took it from user mode to the stub: the error code (0 if the
// vector has none) and the interrupted context.
type exceptionFrame struct {
	errorCode                uint64
	rip, cs, rflags, rsp, ss uint64
}

// readFrame decodes the frame of vector v at the top of stack b.
func readFrame(b []byte, v int) exceptionFrame {
	le := binary.LittleEndian
	var f exceptionFrame
	if hasErrorCode(v) {
		f.errorCode = le.Uint64(b)
		b = b[8:]
	}
	f.rip, f.cs, f.rflags, f.rsp, f.ss = le.Uint64(b), le.Uint64(b[8:]), le.Uint64(b[16:]), le.Uint64(b[24:]), le.Uint64(b[32:])
	return f
}

// frameSize is the size of vector v's frame.
func frameSize(v int) uint64 {
	if hasErrorCode(v) {
		return 48
	}
	return 40
}

// fromKVMRegs copies the general registers the CPU holds into regs.
func fromKVMRegs(regs *arch.Registers, k *kvmRegs) {
	regs.Rax, regs.Rbx, regs.Rcx, regs.Rdx = k.Rax, k.Rbx, k.Rcx, k.Rdx
	regs.Rsi, regs.Rdi, regs.Rsp, regs.Rbp = k.Rsi, k.Rdi, k.Rsp, k.Rbp
	regs.R8, regs.R9, regs.R10, regs.R11 = k.R8, k.R9, k.R10, k.R11
	regs.R12, regs.R13, regs.R14, regs.R15 = k.R12, k.R13, k.R14, k.R15
	regs.Rip, regs.Eflags = k.Rip, k.Rflags
}

// toKVMRegs loads regs into the CPU's general registers, user mode's
// interrupt flag forced on.
func toKVMRegs(k *kvmRegs, regs *arch.Registers) {
	k.Rax, k.Rbx, k.Rcx, k.Rdx = regs.Rax, regs.Rbx, regs.Rcx, regs.Rdx
	k.Rsi, k.Rdi, k.Rsp, k.Rbp = regs.Rsi, regs.Rdi, regs.Rsp, regs.Rbp
	k.R8, k.R9, k.R10, k.R11 = regs.R8, regs.R9, regs.R10, regs.R11
	k.R12, k.R13, k.R14, k.R15 = regs.R12, regs.R13, regs.R14, regs.R15
	k.Rip, k.Rflags = regs.Rip, regs.Eflags|rflagsIF|2
}

// exit is what a vCPU's exit from the stub says about the guest thread,
// read off the vCPU.
type exit struct {
	port  int           // the stub's OUT port: a vector, or syscallPort
	regs  kvmRegs       // the registers at the OUT
	frame []byte        // the top of the vCPU's stack, for an exception
	cr2   uint64        // for a page fault
	fp    func() []byte // the FP state (for #MF and #XM), fetched on demand
	// syscallBefore reports whether a syscall instruction ends at the
	// guest address (see isSyscallFault).
	syscallBefore func(addr uint64) bool
}

// decodeExit turns an exit through the stub into the guest thread's
// registers and the event to report. lstar is the syscall entry's address:
// where a syscall lands whose CPU did not switch to supervisor mode (see
// isSyscallFault).
func decodeExit(e *exit, regs *arch.Registers, lstar uint64) (platform.Event, error) {
	fromKVMRegs(regs, &e.regs)
	if e.port == syscallPort {
		// The syscall instruction kept the stack and saved the user's RIP
		// and RFLAGS in RCX and R11, where Linux's return leaves them too.
		regs.Rip, regs.Eflags = e.regs.Rcx, e.regs.R11
		regs.OrigRax = e.regs.Rax
		return platform.Event{Kind: platform.EventSyscall}, nil
	}
	v := e.port
	if v < 0 || v >= numVectors || uint64(len(e.frame)) < frameSize(v) {
		return platform.Event{}, fmt.Errorf("kvm: the stub left through port %#x", e.port)
	}
	f := readFrame(e.frame, v)
	if f.cs != userCS {
		return platform.Event{}, fmt.Errorf("kvm: exception %d in supervisor mode at %#x (error %#x)", v, f.rip, f.errorCode)
	}
	regs.Rsp, regs.Eflags = f.rsp, f.rflags
	if isSyscallFault(v, &f, lstar, e) {
		regs.Rip, regs.Eflags = e.regs.Rcx, e.regs.R11
		regs.OrigRax = e.regs.Rax
		return platform.Event{Kind: platform.EventSyscall}, nil
	}
	regs.Rip = f.rip
	ev := platform.Event{Kind: platform.EventFault, Trapno: uint64(v), ErrorCode: f.errorCode}
	faultSignal(&ev, v, &f, e)
	return ev, nil
}

// isSyscallFault recognises a syscall that arrived as a page fault. Some
// hypervisors (PVM's emulation of user mode, on hosts without hardware
// virtualisation) run the syscall instruction without the switch to
// supervisor mode: the CPU jumps to LSTAR still in user mode (with RCX and
// R11 saved as a syscall saves them), and fetching the stub's
// supervisor-only page faults there. It was a syscall if the fault is that
// fetch and the flags show MSR_SYSCALL_MASK applied (IF clear, which user
// mode cannot do itself), or, as the same hypervisor does not always apply
// the mask, if a syscall instruction ends where RCX says the guest returns.
// A guest that jumps to LSTAR otherwise gets its SIGSEGV; one that forges
// RCX to pass makes a system call, which it may do anyway.
func isSyscallFault(v int, f *exceptionFrame, lstar uint64, e *exit) bool {
	if v != vecPF || f.rip != lstar || f.errorCode&pfFetch == 0 {
		return false
	}
	return f.rflags&rflagsIF == 0 || e.syscallBefore != nil && e.syscallBefore(e.regs.Rcx)
}

// faultSignal fills in the signal Linux's trap handlers
// (arch/x86/kernel/traps.c) send for vector v from user mode.
func faultSignal(ev *platform.Event, v int, f *exceptionFrame, e *exit) {
	sig := func(signo unix.Signal, code int32, addr uint64) {
		ev.Signo, ev.Code, ev.Addr = int32(signo), code, uintptr(addr)
	}
	switch v {
	case vecPF:
		sig(unix.SIGSEGV, 0, e.cr2)
		switch {
		case f.errorCode&pfFetch != 0:
			ev.Access = platform.ProtExec
		case f.errorCode&pfWrite != 0:
			ev.Access = platform.ProtWrite
		default:
			ev.Access = platform.ProtRead
		}
	case vecDE:
		sig(unix.SIGFPE, fpeIntDiv, f.rip)
	case vecDB:
		code := int32(trapBrkpt)
		if f.rflags&rflagsTF != 0 {
			code = trapTrace
		}
		sig(unix.SIGTRAP, code, f.rip)
	case vecBP:
		sig(unix.SIGTRAP, linuxabi.SI_KERNEL, 0)
	case vecUD:
		sig(unix.SIGILL, illIllOpn, f.rip)
	case vecNP, vecSS:
		sig(unix.SIGBUS, linuxabi.SI_KERNEL, 0)
	case vecAC:
		sig(unix.SIGBUS, busAdrAln, 0)
	case vecMF, vecXM:
		sig(unix.SIGFPE, fpCode(v, e.fp()), f.rip)
	default: // #GP, #TS, #OF, #BR and the rest
		sig(unix.SIGSEGV, linuxabi.SI_KERNEL, 0)
	}
}

// fpCode is the si_code of a floating-point exception, from the state
// that raised it, as Linux's fpu__exception_code computes it: the first
// unmasked exception flagged, in this order.
func fpCode(v int, fp []byte) int32 {
	if len(fp) < 32 {
		return 0
	}
	le := binary.LittleEndian
	var err uint32
	if v == vecMF {
		cwd, swd := uint32(le.Uint16(fp[0:])), uint32(le.Uint16(fp[2:]))
		err = swd &^ cwd
	} else {
		mxcsr := le.Uint32(fp[24:])
		err = ^(mxcsr >> 7) & mxcsr
	}
	switch {
	case err&0x001 != 0:
		return fpeFltInv
	case err&0x004 != 0:
		return fpeFltDiv
	case err&0x008 != 0:
		return fpeFltOvf
	case err&0x012 != 0:
		return fpeFltUnd
	case err&0x020 != 0:
		return fpeFltRes
	}
	return 0
}
