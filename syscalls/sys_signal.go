package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// sigsetSize is the only sigset size x86-64 Linux accepts.
const sigsetSize = 8

// saKnownFlags are the sa_flags bits x86-64 Linux keeps (UAPI_SA_FLAGS):
// SA_NOCLDSTOP, SA_NOCLDWAIT, SA_SIGINFO, SA_RESTORER, SA_ONSTACK,
// SA_RESTART, SA_NODEFER and SA_RESETHAND.
const saKnownFlags = 0x1 | 0x2 | 0x4 | 0x04000000 | 0x08000000 | 0x10000000 | 0x40000000 | 0x80000000

// RtSigaction implements Linux syscall rt_sigaction(2). Actions are
// recorded and reported; delivering signals to handlers comes with the
// process model.
func RtSigaction(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	sig, act, oldact := int(a.Int(0)), a.Ptr(1), a.Ptr(2)
	if a[3] != sigsetSize || !kernel.ValidSignal(sig) {
		return 0, unix.EINVAL
	}
	tg := t.ThreadGroup()
	old := tg.Action(sig)
	if act != 0 {
		var nu kernel.SigAction
		if err := copyInStruct(t, act, &nu); err != nil {
			return 0, err
		}
		// Unknown flags are cleared, so that a program can tell which
		// flags the kernel supports (Linux >= 5.11).
		nu.Flags &= saKnownFlags
		var err error
		if old, err = tg.SetAction(sig, nu); err != nil {
			return 0, err
		}
	}
	if oldact != 0 {
		return 0, copyOutStruct(t, oldact, &old)
	}
	return 0, nil
}

// RtSigprocmask implements Linux syscall rt_sigprocmask(2).
func RtSigprocmask(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	how, set, oldset := a.Int(0), a.Ptr(1), a.Ptr(2)
	if a[3] != sigsetSize {
		return 0, unix.EINVAL
	}
	old := t.SigMask()
	if set != 0 {
		var m uint64
		if err := copyInStruct(t, set, &m); err != nil {
			return 0, err
		}
		switch how {
		case unix.SIG_BLOCK:
			t.SetSigMask(old | m)
		case unix.SIG_UNBLOCK:
			t.SetSigMask(old &^ m)
		case unix.SIG_SETMASK:
			t.SetSigMask(m)
		default:
			return 0, unix.EINVAL
		}
	}
	if oldset != 0 {
		return 0, copyOutU64(t, oldset, old)
	}
	return 0, nil
}

// sigaltstack flags and limits.
const (
	ssOnstack     = 1
	ssDisable     = 2
	ssAutodisarm  = 1 << 31
	minSigStkSize = 2048
)

// Sigaltstack implements Linux syscall sigaltstack(2).
func Sigaltstack(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	ss, oss := a.Ptr(0), a.Ptr(1)
	cur := t.AltStack()
	old := *cur
	if ss != 0 {
		var nu kernel.AltStack
		if err := copyInStruct(t, ss, &nu); err != nil {
			return 0, err
		}
		switch uint32(nu.Flags) &^ ssAutodisarm {
		case 0:
			if nu.Size < minSigStkSize {
				return 0, unix.ENOMEM
			}
		case ssDisable:
			nu = kernel.AltStack{Flags: ssDisable}
		default:
			return 0, unix.EINVAL
		}
		*cur = nu
	}
	if oss != 0 {
		return 0, copyOutStruct(t, oss, &old)
	}
	return 0, nil
}
