package syscalls

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// saKnownFlags are the sa_flags bits x86-64 Linux keeps (UAPI_SA_FLAGS).
const saKnownFlags = linuxabi.SA_NOCLDSTOP | linuxabi.SA_NOCLDWAIT | linuxabi.SA_SIGINFO | linuxabi.SA_RESTORER |
	linuxabi.SA_ONSTACK | linuxabi.SA_RESTART | linuxabi.SA_NODEFER | linuxabi.SA_RESETHAND

// RtSigaction implements Linux syscall rt_sigaction(2).
func RtSigaction(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	sig, act, oldact := int(a.Int(0)), a.Ptr(1), a.Ptr(2)
	if a[3] != linuxabi.SizeofSigset || !kernel.ValidSignal(sig) {
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
	if a[3] != linuxabi.SizeofSigset {
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
		switch uint32(nu.Flags) &^ linuxabi.SS_AUTODISARM {
		case 0:
			if nu.Size < linuxabi.MINSIGSTKSZ {
				return 0, unix.ENOMEM
			}
		case linuxabi.SS_DISABLE:
			nu = kernel.AltStack{Flags: linuxabi.SS_DISABLE}
		default:
			return 0, unix.EINVAL
		}
		if t.OnAltStack() {
			return 0, unix.EPERM // no change while running on it
		}
		*cur = nu
	}
	if oss != 0 {
		if t.OnAltStack() {
			old.Flags = linuxabi.SS_ONSTACK
		}
		return 0, copyOutStruct(t, oss, &old)
	}
	return 0, nil
}

// RtSigreturn implements Linux syscall rt_sigreturn(2).
func RtSigreturn(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	return 0, t.SigReturn()
}

// RtSigpending implements Linux syscall rt_sigpending(2).
func RtSigpending(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a[1] > linuxabi.SizeofSigset {
		return 0, unix.EINVAL
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], t.Pending())
	_, err := t.CopyOut(a.Ptr(0), b[:a[1]])
	return 0, err
}

// RtSigsuspend implements Linux syscall rt_sigsuspend(2): it waits, with a
// temporary mask, until a signal runs a handler; the old mask comes back
// when the handler returns.
func RtSigsuspend(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a[1] != linuxabi.SizeofSigset {
		return 0, unix.EINVAL
	}
	var m uint64
	if err := copyInStruct(t, a.Ptr(0), &m); err != nil {
		return 0, err
	}
	t.SetTemporaryMask(m)
	t.Block(nil)
	return 0, kernel.ERESTARTNOHAND
}

// Pause implements Linux syscall pause(2).
func Pause(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	t.Block(nil)
	return 0, kernel.ERESTARTNOHAND
}

// RtSigtimedwait implements Linux syscall rt_sigtimedwait(2).
func RtSigtimedwait(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a[3] != linuxabi.SizeofSigset {
		return 0, unix.EINVAL
	}
	var set uint64
	if err := copyInStruct(t, a.Ptr(0), &set); err != nil {
		return 0, err
	}
	var deadline time.Time
	if a[2] != 0 {
		ts, err := copyInTimespec(t, a.Ptr(2))
		if err != nil {
			return 0, err
		}
		deadline = time.Now().Add(timespecDuration(ts))
	}
	info, err := t.WaitSignal(set, deadline)
	if err == unix.ETIMEDOUT {
		return 0, unix.EAGAIN
	}
	if err != nil {
		return 0, unix.EINTR
	}
	if a[1] != 0 {
		if err := copyOutStruct(t, a.Ptr(1), &info); err != nil {
			return 0, err
		}
	}
	return uintptr(info.Signo), nil
}

// Kill implements Linux syscall kill(2).
func Kill(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid, sig := a.Int(0), int(a.Int(1))
	if sig != 0 && !kernel.ValidSignal(sig) {
		return 0, unix.EINVAL
	}
	info := senderInfo(t, sig, linuxabi.SI_USER)
	var targets []*kernel.ThreadGroup
	switch {
	case pid > 0:
		tg := t.LookupProcess(pid)
		if tg == nil {
			return 0, unix.ESRCH
		}
		targets = []*kernel.ThreadGroup{tg}
	case pid == 0:
		targets = t.Kernel().ProcessGroup(t.RootPGID())
	case pid == -1:
		// Every process the caller sees but its namespace's init (pid 1
		// there) and itself.
		for _, tg := range t.Kernel().ThreadGroupsIn(t.PIDNamespace()) {
			if t.SeenID(tg.PID()) > 1 && tg != t.ThreadGroup() {
				targets = append(targets, tg)
			}
		}
	default:
		if pgid := t.RootID(-pid); pgid != 0 {
			targets = t.Kernel().ProcessGroup(pgid)
		}
	}
	if len(targets) == 0 {
		return 0, unix.ESRCH
	}
	sent := 0
	for _, tg := range targets {
		if !t.MaySignalProcess(tg) {
			continue
		}
		sent++
		if sig != 0 && !tg.UnkillableBy(t, sig) {
			setSenderPID(t, &info, tg)
			tg.SendSignal(info)
		}
	}
	if sent == 0 {
		return 0, unix.EPERM
	}
	return 0, nil
}

// senderInfo is the siginfo of a signal sent by t.
func senderInfo(t *kernel.Task, sig int, code int32) kernel.SigInfo {
	info := kernel.SigInfo{Signo: int32(sig), Code: code}
	c := t.Creds()
	c.Lock()
	uid := c.UID
	c.Unlock()
	info.SetSender(t.PID(), uid)
	return info
}

// setSenderPID makes info's sender pid the one a task of tg sees of t: 0
// where t is outside tg's pid namespace.
func setSenderPID(t *kernel.Task, info *kernel.SigInfo, tg *kernel.ThreadGroup) {
	info.SetSender(t.PIDSeenBy(tg), info.UID())
}

// Tkill implements Linux syscall tkill(2).
func Tkill(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, threadKill(t, 0, a.Int(0), int(a.Int(1)))
}

// Tgkill implements Linux syscall tgkill(2).
func Tgkill(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a.Int(0) <= 0 {
		return 0, unix.EINVAL
	}
	return 0, threadKill(t, a.Int(0), a.Int(1), int(a.Int(2)))
}

func threadKill(t *kernel.Task, tgid, tid int32, sig int) error {
	if tid <= 0 || (sig != 0 && !kernel.ValidSignal(sig)) {
		return unix.EINVAL
	}
	target := t.LookupTask(tid)
	if target == nil || (tgid != 0 && t.SeenID(target.ThreadGroup().PID()) != tgid) {
		return unix.ESRCH
	}
	if !t.MaySignal(target) {
		return unix.EPERM
	}
	if sig != 0 && !target.ThreadGroup().UnkillableBy(t, sig) {
		info := senderInfo(t, sig, linuxabi.SI_TKILL)
		setSenderPID(t, &info, target.ThreadGroup())
		target.SendSignal(info)
	}
	return nil
}

// RtSigqueueinfo implements Linux syscall rt_sigqueueinfo(2).
func RtSigqueueinfo(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, sigqueue(t, a.Int(0), 0, int(a.Int(1)), a.Ptr(2))
}

// RtTgsigqueueinfo implements Linux syscall rt_tgsigqueueinfo(2).
func RtTgsigqueueinfo(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a.Int(0) <= 0 || a.Int(1) <= 0 {
		return 0, unix.EINVAL
	}
	return 0, sigqueue(t, a.Int(0), a.Int(1), int(a.Int(2)), a.Ptr(3))
}

func sigqueue(t *kernel.Task, tgid, tid int32, sig int, infoAddr uintptr) error {
	if !kernel.ValidSignal(sig) {
		return unix.EINVAL
	}
	var info kernel.SigInfo
	if err := copyInStruct(t, infoAddr, &info); err != nil {
		return err
	}
	// Only the kernel may claim a kernel origin; a task may do so only to
	// itself (Linux compares the target with the caller's thread id).
	target := tgid
	if tid != 0 {
		target = tid
	}
	if (info.Code >= 0 || info.Code == linuxabi.SI_TKILL) && target != t.TID() {
		return unix.EPERM
	}
	tg := t.LookupProcess(tgid)
	if tg == nil {
		return unix.ESRCH
	}
	info.Signo = int32(sig)
	if !t.CanSignal(tg) {
		return unix.EPERM
	}
	if tid != 0 {
		target := t.LookupTask(tid)
		if target == nil || target.ThreadGroup() != tg {
			return unix.ESRCH
		}
		if !t.MaySignal(target) {
			return unix.EPERM
		}
		if !tg.UnkillableBy(t, sig) {
			target.SendSignal(info)
		}
		return nil
	}
	if !t.MaySignalProcess(tg) {
		return unix.EPERM
	}
	if !tg.UnkillableBy(t, sig) {
		tg.SendSignal(info)
	}
	return nil
}
