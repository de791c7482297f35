package kvm

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
)

const testLSTAR = stubCodeVA + 0x110

// frameBytes lays out an exception frame as the CPU pushes it.
func frameBytes(v int, f exceptionFrame) []byte {
	var words []uint64
	if hasErrorCode(v) {
		words = append(words, f.errorCode)
	}
	words = append(words, f.rip, f.cs, f.rflags, f.rsp, f.ss)
	b := make([]byte, 8*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(b[8*i:], w)
	}
	return b
}

func TestSyscallExitTakesRIPAndFlagsFromRCXAndR11(t *testing.T) {
	e := exit{port: syscallPort, regs: kvmRegs{Rax: 39, Rcx: 0x401007, R11: 0x246, Rsp: 0x7ffc0000, Rip: testLSTAR + 2, Rdi: 5}}
	var regs arch.Registers
	ev, err := decodeExit(&e, &regs, testLSTAR)
	if err != nil || ev.Kind != platform.EventSyscall {
		t.Fatalf("event %+v err %v, want a syscall", ev, err)
	}
	if regs.OrigRax != 39 || regs.Rip != 0x401007 || regs.Eflags != 0x246 || regs.Rsp != 0x7ffc0000 || regs.Rdi != 5 {
		t.Fatalf("registers %+v", regs)
	}
}

func TestFaultFrameGivesTheUserContext(t *testing.T) {
	f := exceptionFrame{errorCode: pfWrite | 4, rip: 0x401000, cs: userCS, rflags: 0x10246, rsp: 0x7ffc0000, ss: userDS}
	e := exit{port: vecPF, regs: kvmRegs{Rsp: vcpuAreaVA + pageSize - 48, Rcx: 7, R11: 8}, frame: frameBytes(vecPF, f), cr2: 0x700000}
	var regs arch.Registers
	ev, err := decodeExit(&e, &regs, testLSTAR)
	if err != nil {
		t.Fatal(err)
	}
	if ev.Kind != platform.EventFault || ev.Signo != int32(unix.SIGSEGV) || ev.Addr != 0x700000 || ev.Access != platform.ProtWrite || ev.Trapno != vecPF {
		t.Fatalf("event %+v, want a write fault at 0x700000", ev)
	}
	if regs.Rip != f.rip || regs.Rsp != f.rsp || regs.Eflags != f.rflags || regs.Rcx != 7 || regs.R11 != 8 {
		t.Fatalf("registers %+v, want the frame's rip, rsp and flags, the CPU's others", regs)
	}
}

func TestExceptionInSupervisorModeIsAnError(t *testing.T) {
	f := exceptionFrame{rip: stubCodeVA, cs: kernelCS}
	e := exit{port: vecUD, frame: frameBytes(vecUD, f)}
	var regs arch.Registers
	if _, err := decodeExit(&e, &regs, testLSTAR); err == nil {
		t.Fatal("a fault of the stub itself was reported as the guest's")
	}
}

func TestSyscallThatArrivesAsAFaultAtLSTAR(t *testing.T) {
	for _, c := range []struct {
		name          string
		rflags        uint64
		syscallBefore bool
		want          platform.EventKind
	}{
		{"syscall mask applied", 0x10002, false, platform.EventSyscall},
		{"mask not applied, a syscall before RCX", 0x10202, true, platform.EventSyscall},
		{"a jump to LSTAR", 0x10202, false, platform.EventFault},
	} {
		f := exceptionFrame{errorCode: 0x15, rip: testLSTAR, cs: userCS, rflags: c.rflags, rsp: 0x7ffc0000, ss: userDS}
		e := exit{port: vecPF, regs: kvmRegs{Rax: 1, Rcx: 0x401007, R11: 0x202}, frame: frameBytes(vecPF, f), cr2: testLSTAR,
			syscallBefore: func(addr uint64) bool { return c.syscallBefore && addr == 0x401007 }}
		var regs arch.Registers
		ev, err := decodeExit(&e, &regs, testLSTAR)
		if err != nil || ev.Kind != c.want {
			t.Errorf("%s: event %+v err %v, want kind %d", c.name, ev, err, c.want)
			continue
		}
		if c.want == platform.EventSyscall && (regs.Rip != 0x401007 || regs.Eflags != 0x202 || regs.Rsp != 0x7ffc0000 || regs.OrigRax != 1) {
			t.Errorf("%s: registers %+v, want the syscall's return context", c.name, regs)
		}
	}
}

func TestFaultSignalsAreLinuxs(t *testing.T) {
	for _, c := range []struct {
		v      int
		rflags uint64
		signo  unix.Signal
		code   int32
		atRIP  bool
	}{
		{vecDE, 0, unix.SIGFPE, fpeIntDiv, true},
		{vecDB, rflagsTF, unix.SIGTRAP, trapTrace, true},
		{vecDB, 0, unix.SIGTRAP, trapBrkpt, true},
		{vecBP, 0, unix.SIGTRAP, 0x80, false},
		{vecUD, 0, unix.SIGILL, illIllOpn, true},
		{13, 0, unix.SIGSEGV, 0x80, false},
		{vecNP, 0, unix.SIGBUS, 0x80, false},
		{vecSS, 0, unix.SIGBUS, 0x80, false},
		{vecAC, 0, unix.SIGBUS, busAdrAln, false},
	} {
		f := exceptionFrame{rip: 0x401000, cs: userCS, rflags: c.rflags}
		e := exit{port: c.v, frame: frameBytes(c.v, f)}
		var regs arch.Registers
		ev, err := decodeExit(&e, &regs, testLSTAR)
		if err != nil {
			t.Fatal(err)
		}
		addr := uintptr(0)
		if c.atRIP {
			addr = 0x401000
		}
		if ev.Signo != int32(c.signo) || ev.Code != c.code || ev.Addr != addr {
			t.Errorf("vector %d: signal %d code %d addr %#x, want %d, %d, %#x", c.v, ev.Signo, ev.Code, ev.Addr, c.signo, c.code, addr)
		}
	}
}

func TestFPCodeIsTheFirstUnmaskedException(t *testing.T) {
	fp := make([]byte, 512)
	mxcsr := func(v uint32) []byte { binary.LittleEndian.PutUint32(fp[24:], v); return fp }
	// MXCSR: flags in bits 0-5, masks in bits 7-12.
	if got := fpCode(vecXM, mxcsr(0x1f80&^(1<<9)|1<<2)); got != fpeFltDiv {
		t.Errorf("unmasked divide by zero: code %d, want FPE_FLTDIV", got)
	}
	if got := fpCode(vecXM, mxcsr(0x1f80&^(1<<7|1<<9)|1<<0|1<<2)); got != fpeFltInv {
		t.Errorf("invalid and divide by zero: code %d, want FPE_FLTINV first", got)
	}
	if got := fpCode(vecXM, mxcsr(0x1f80|1<<2)); got != 0 {
		t.Errorf("a masked exception: code %d, want none", got)
	}
	// x87: control word masks in bits 0-5, status word flags likewise.
	binary.LittleEndian.PutUint16(fp[0:], 0x37f&^(1<<3))
	binary.LittleEndian.PutUint16(fp[2:], 1<<3)
	if got := fpCode(vecMF, fp); got != fpeFltOvf {
		t.Errorf("x87 overflow: code %d, want FPE_FLTOVF", got)
	}
}
