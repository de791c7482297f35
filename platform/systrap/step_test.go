package systrap

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
)

// Single-stepping needs nothing of the stub: the trap flag the sentry puts
// in the guest's eflags reaches the CPU through rt_sigreturn, which traps
// after one guest instruction, and the host's SIGTRAP comes back as a
// fault event like any other.

const (
	trapFlag  = 0x100
	trapTrace = 2 // TRAP_TRACE
)

func TestTheTrapFlagTrapsAfterEachGuestInstruction(t *testing.T) {
	m := newTestMemory(t)
	p := getPlatform(t, m)
	// nop; nop; mov $39,%eax; syscall; nop; mov $60,%eax; syscall
	code := []byte{0x90, 0x90, 0xb8, 39, 0, 0, 0, 0x0f, 0x05, 0x90, 0xb8, 60, 0, 0, 0, 0x0f, 0x05}
	_, ctx := newGuest(t, p, m, code)
	regs := arch.Registers{Rip: codeAddr, Rsp: dataAddr + 4096, Eflags: arch.InitialEflags | trapFlag}
	step := func(wantRip uint64) {
		t.Helper()
		ev, err := ctx.Switch(&regs)
		if err != nil || ev.Kind != platform.EventFault || ev.Signo != int32(unix.SIGTRAP) || ev.Code != trapTrace {
			t.Fatalf("event %+v, err %v; want a single-step SIGTRAP", ev, err)
		}
		if regs.Rip != wantRip || uint64(ev.Addr) != wantRip {
			t.Errorf("trap at rip %#x (si_addr %#x), want %#x", regs.Rip, ev.Addr, wantRip)
		}
		if regs.Eflags&trapFlag == 0 {
			t.Errorf("eflags %#x after the trap: the trap flag is gone", regs.Eflags)
		}
	}
	step(codeAddr + 1) // the first nop
	step(codeAddr + 2) // the second
	step(codeAddr + 7) // the mov
	// The syscall instruction traps to the sentry as ever, the trap flag
	// in the registers it reports.
	ev, err := ctx.Switch(&regs)
	if err != nil || ev.Kind != platform.EventSyscall || regs.OrigRax != 39 || regs.Eflags&trapFlag == 0 {
		t.Fatalf("event %+v, nr %d, eflags %#x, err %v; want getpid with the trap flag", ev, regs.OrigRax, regs.Eflags, err)
	}
	step(codeAddr + 10) // the nop after it
	regs.Eflags &^= trapFlag
	ev, err = ctx.Switch(&regs)
	if err != nil || ev.Kind != platform.EventSyscall || regs.OrigRax != 60 {
		t.Fatalf("event %+v, nr %d, err %v; want exit, untrapped", ev, regs.OrigRax, err)
	}
}
