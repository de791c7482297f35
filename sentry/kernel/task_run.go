package kernel

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// ErrNoReturn is what a handler returns when it has set the guest's
// registers itself (execve, rt_sigreturn, exit): rax must not be touched.
var ErrNoReturn = errors.New("no syscall return value")

// run is a task's life: switch to the guest, serve what stopped it, repeat.
// The platform round trip is the hot path: nothing on it allocates or
// locks, and one atomic flag says whether signals need a look.
func (t *Task) run() {
	for {
		if t.check.Load() || t.k.freezer.frozen.Load() {
			t.handleSignals()
			if t.k.freezer.frozen.Load() { // `moat pause` (pause.go)
				t.waitThawed()
				continue
			}
		}
		if t.exiting.Load() {
			break
		}
		ev, err := t.ctx.Switch(&t.regs)
		t.addCPUTime(ev.GuestTime, ev.KernelTime)
		if err != nil {
			// The platform lost the thread (its stub died, or was killed
			// because the process is exiting): the process cannot go on.
			if !t.exiting.Load() {
				t.Log("platform: %v", err)
			}
			t.tg.mu.Lock()
			t.tg.groupExitLocked(ExitStatus{Signo: int(unix.SIGKILL)})
			t.tg.mu.Unlock()
			break
		}
		switch ev.Kind {
		case platform.EventSyscall:
			t.doSyscall()
		case platform.EventFault:
			t.handleFault(ev)
		case platform.EventInterrupt:
			// Whoever interrupted set the check flag.
		}
	}
	t.exit()
}

func (t *Task) doSyscall() {
	if t.sud.on && t.userDispatched() {
		return // neither traced nor filtered: the program runs it itself
	}
	if t.pt.flags.Load() != 0 {
		t.doSyscallTraced() // ptrace_stop.go
		return
	}
	t.callSyscall(syscallNr(t.regs.OrigRax))
}

// syscallNr is the call a number in orig_rax names: its low 32 bits, as
// Linux's entry code takes them (an int: the high half of rax is ignored,
// and a tracer that sets it changes nothing); orig_rax keeps all 64.
// Numbers past the table, the x32 bit's among them, answer ENOSYS.
func syscallNr(orig uint64) uintptr { return uintptr(uint32(orig)) }

// callSyscall runs system call nr with the arguments in the registers and
// puts its result in rax, noting a restart code for signal delivery. The
// task's seccomp filters judge the call first (after a tracer's entry
// stop, as Linux's do, so that they see what the tracer changed).
func (t *Task) callSyscall(nr uintptr) {
	t.args = t.regs.Args()
	if t.sc.mode.Load() != unix.SECCOMP_MODE_DISABLED && !t.seccompAllows(nr) {
		return
	}
	ret, err := t.k.Syscalls.Call(t, nr, &t.args)
	switch {
	case err == nil:
		t.regs.Rax = uint64(ret)
	case err == ErrNoReturn:
	default:
		var errno unix.Errno
		if !errors.As(err, &errno) {
			t.Log("syscall %d: %v", nr, err)
			errno = unix.EIO
		}
		if isRestart(errno) {
			t.restart = int(errno)
			t.check.Store(true)
		}
		t.regs.Rax = errnoReturn(errno)
	}
}

// handleFault serves a fault the memory manager resolves (a write to a
// copy-on-write page, a stack to grow) and turns any other into its signal.
func (t *Task) handleFault(ev platform.Event) {
	info := SigInfo{Signo: ev.Signo, Code: ev.Code}
	if ev.Signo == int32(unix.SIGSEGV) {
		switch t.mm.HandleFault(ev.Addr, ev.Access) {
		case mm.FaultHandled:
			return
		case mm.FaultBus:
			info = SigInfo{Signo: int32(unix.SIGBUS), Code: 2} // BUS_ADRERR
		default:
			info.Code = 1 // SEGV_MAPERR
			if t.mm.IsMapped(ev.Addr) {
				info.Code = 2 // SEGV_ACCERR
			}
		}
	}
	// What the CPU reported goes into the signal frames from now on, the
	// address (cr2) only for a page fault's; a fault the memory manager
	// resolved above is not the guest's to see.
	t.lastFault.trapno, t.lastFault.err = ev.Trapno, ev.ErrorCode
	if ev.Trapno == 14 { // #PF
		t.lastFault.addr = uint64(ev.Addr)
	}
	info.SetAddr(uint64(ev.Addr))
	t.forceSignal(info)
}
