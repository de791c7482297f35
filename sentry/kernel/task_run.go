package kernel

import (
	"errors"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
)

// ErrNoReturn is what a handler returns when it has set the guest's
// registers itself (execve, rt_sigreturn, exit): rax must not be touched.
var ErrNoReturn = errors.New("no syscall return value")

// run is a task's life: switch to the guest, serve what stopped it, repeat.
// The platform round trip is the hot path: nothing here allocates or locks.
func (t *Task) run() {
	for !t.exiting.Load() {
		ev, err := t.ctx.Switch(&t.regs)
		if err != nil {
			// The platform lost the thread (its stub died): the process
			// cannot go on.
			t.Log("platform: %v", err)
			t.killProcess(int(unix.SIGKILL))
			break
		}
		switch ev.Kind {
		case platform.EventSyscall:
			t.doSyscall()
		case platform.EventFault:
			t.handleFault(ev)
		case platform.EventInterrupt:
			// Nothing to deliver yet: resume.
		}
	}
	t.exit()
}

func (t *Task) doSyscall() {
	nr := uintptr(t.regs.OrigRax)
	t.args = t.regs.Args()
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
		t.regs.Rax = uint64(-int64(errno))
	}
}

// handleFault serves a fault the memory manager can resolve (a write to a
// copy-on-write page) and turns any other into its signal. With no signal
// delivery yet, the signal's default action applies: the process dies as
// Linux would kill it.
func (t *Task) handleFault(ev platform.Event) {
	if ev.Signo == int32(unix.SIGSEGV) && t.mm.HandleFault(ev.Addr, ev.Access) {
		return
	}
	t.Log("fault: signal %d code %d at %#x (rip %#x)", ev.Signo, ev.Code, ev.Addr, t.regs.Rip)
	t.killProcess(int(ev.Signo))
}
