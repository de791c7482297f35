package syscalls

import (
	"math"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/epoll"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Exit implements Linux syscall exit(2).
func Exit(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	t.Exit(int(a.Int(0)))
	return 0, kernel.ErrNoReturn
}

// ExitGroup implements Linux syscall exit_group(2).
func ExitGroup(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	t.ExitGroup(int(a.Int(0)))
	return 0, kernel.ErrNoReturn
}

// ArchPrctl implements Linux syscall arch_prctl(2).
func ArchPrctl(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	regs := t.Regs()
	code, addr := a.Int(0), a[1]
	switch code {
	case linuxabi.ARCH_SET_FS, linuxabi.ARCH_SET_GS:
		if addr >= uint64(t.MM().MaxAddr()) {
			return 0, unix.EPERM
		}
		if code == linuxabi.ARCH_SET_FS {
			regs.FSBase = addr
		} else {
			regs.GSBase = addr
		}
		return 0, nil
	case linuxabi.ARCH_GET_FS:
		return 0, copyOutU64(t, uintptr(addr), regs.FSBase)
	case linuxabi.ARCH_GET_GS:
		return 0, copyOutU64(t, uintptr(addr), regs.GSBase)
	case linuxabi.ARCH_GET_CPUID:
		return 1, nil // cpuid is not faulting
	case linuxabi.ARCH_SET_CPUID:
		return 0, unix.ENODEV // no CPUID faulting for guests
	}
	return 0, unix.EINVAL
}

// SetTidAddress implements Linux syscall set_tid_address(2).
func SetTidAddress(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	t.SetClearChildTID(a.Ptr(0))
	return uintptr(t.TID()), nil
}

// SetRobustList implements Linux syscall set_robust_list(2).
func SetRobustList(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a[1] != linuxabi.SizeofRobustListHead {
		return 0, unix.EINVAL
	}
	t.SetRobustList(a.Ptr(0))
	return 0, nil
}

// GetRobustList implements Linux syscall get_robust_list(2).
func GetRobustList(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	target := t
	if tid := a.Int(0); tid != 0 && tid != t.TID() {
		if target = t.LookupTask(tid); target == nil {
			return 0, unix.ESRCH
		}
		if !t.CanSignal(target.ThreadGroup()) {
			return 0, unix.EPERM
		}
	}
	if err := copyOutU64(t, a.Ptr(1), uint64(target.RobustList())); err != nil {
		return 0, err
	}
	return 0, copyOutU64(t, a.Ptr(2), linuxabi.SizeofRobustListHead)
}

// Prctl implements Linux syscall prctl(2) for the options programs use to
// name themselves and to set process flags.
func Prctl(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	// A copy, written back below: only the task itself changes its flags.
	p := t.Prctl()
	switch a.Int(0) {
	case unix.PR_SET_PDEATHSIG:
		if sig := int(a[1]); sig != 0 && !kernel.ValidSignal(sig) {
			return 0, unix.EINVAL
		}
		p.PdeathSig = int(a[1])
	case unix.PR_GET_PDEATHSIG:
		return 0, copyOutU32(t, a.Ptr(1), uint32(p.PdeathSig))
	case unix.PR_GET_DUMPABLE:
		return uintptr(p.Dumpable), nil
	case unix.PR_SET_DUMPABLE:
		if a[1] > 1 {
			return 0, unix.EINVAL
		}
		p.Dumpable = int(a[1])
	case unix.PR_GET_KEEPCAPS:
		if p.KeepCaps {
			return 1, nil
		}
	case unix.PR_SET_KEEPCAPS:
		if a[1] > 1 {
			return 0, unix.EINVAL
		}
		p.KeepCaps = a[1] == 1
		t.Creds().SetKeepCaps(p.KeepCaps)
	case unix.PR_SET_NAME:
		name, err := t.CopyInString(a.Ptr(1), linuxabi.TASK_COMM_LEN)
		if err == unix.ENAMETOOLONG {
			// A longer name is cut, not refused.
			var b [linuxabi.TASK_COMM_LEN - 1]byte
			if _, err := t.CopyIn(a.Ptr(1), b[:]); err != nil {
				return 0, err
			}
			name, err = string(b[:]), nil
		}
		if err != nil {
			return 0, err
		}
		t.SetComm(name)
	case unix.PR_GET_NAME:
		var b [linuxabi.TASK_COMM_LEN]byte
		copy(b[:], t.Comm())
		_, err := t.CopyOut(a.Ptr(1), b[:])
		return 0, err
	case unix.PR_GET_SECCOMP:
		return uintptr(t.SeccompMode()), nil
	case unix.PR_SET_SECCOMP:
		return prctlSetSeccomp(t, uint64(a[1]), a.Ptr(2))
	case unix.PR_CAPBSET_READ:
		if a[1] > unix.CAP_LAST_CAP {
			return 0, unix.EINVAL
		}
		c := t.Creds()
		c.Lock()
		held := c.CapBounding>>a[1]&1 != 0
		c.Unlock()
		if held {
			return 1, nil
		}
		return 0, nil
	case unix.PR_CAP_AMBIENT:
		if a[3] != 0 || a[4] != 0 {
			return 0, unix.EINVAL
		}
		return t.Creds().AmbientCap(uint64(a[1]), uint64(a[2]))
	case unix.PR_SET_TIMERSLACK:
		p.TimerSlack = a[1]
		if p.TimerSlack == 0 {
			p.TimerSlack = p.DefaultTimerSlack
		}
	case unix.PR_GET_TIMERSLACK:
		return uintptr(p.TimerSlack), nil
	case unix.PR_SET_CHILD_SUBREAPER:
		t.ThreadGroup().SetChildSubreaper(a[1] != 0)
	case unix.PR_GET_CHILD_SUBREAPER:
		var v uint32
		if t.ThreadGroup().ChildSubreaper() {
			v = 1
		}
		return 0, copyOutU32(t, a.Ptr(1), v)
	case unix.PR_SET_NO_NEW_PRIVS:
		if a[1] != 1 || a[2] != 0 || a[3] != 0 || a[4] != 0 {
			return 0, unix.EINVAL
		}
		p.NoNewPrivs = true
	case unix.PR_GET_NO_NEW_PRIVS:
		if a[1] != 0 || a[2] != 0 || a[3] != 0 || a[4] != 0 {
			return 0, unix.EINVAL
		}
		if p.NoNewPrivs {
			return 1, nil
		}
	case unix.PR_SET_PTRACER:
		// The kernel compares the whole word and its low 32 bits.
		return 0, t.SetPtracer(a.Int(1), a[1] == unix.PR_SET_PTRACER_ANY || a.Int(1) == -1)
	case unix.PR_SET_THP_DISABLE:
		p.THPDisable = a[1] != 0
	case unix.PR_GET_THP_DISABLE:
		if p.THPDisable {
			return 1, nil
		}
	case unix.PR_SET_SYSCALL_USER_DISPATCH:
		return 0, setSyscallUserDispatch(t, a)
	default:
		return 0, unix.EINVAL
	}
	t.SetPrctl(p)
	return 0, nil
}

// setSyscallUserDispatch is prctl(PR_SET_SYSCALL_USER_DISPATCH, mode,
// offset, length, selector): off takes no other argument; on takes a range
// of code whose calls always run, which may be empty only at offset 0 and
// must not wrap, and a selector byte's address (0 for none).
func setSyscallUserDispatch(t *kernel.Task, a *arch.SyscallArgs) error {
	offset, length, sel := a[2], a[3], a.Ptr(4)
	switch a[1] {
	case unix.PR_SYS_DISPATCH_OFF:
		if offset != 0 || length != 0 || sel != 0 {
			return unix.EINVAL
		}
		t.SetSyscallUserDispatch(false, 0, 0, 0)
	case unix.PR_SYS_DISPATCH_ON:
		if offset != 0 && offset+length <= offset {
			return unix.EINVAL
		}
		if sel != 0 && sel >= t.Kernel().Platform.MaxUserAddress() {
			return unix.EFAULT
		}
		t.SetSyscallUserDispatch(true, offset, length, sel)
	default:
		return unix.EINVAL
	}
	return nil
}

// Umask implements Linux syscall umask(2).
func Umask(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return uintptr(t.FS().SwapUmask(a.Uint(0))), nil
}

// SchedYield implements Linux syscall sched_yield(2).
func SchedYield(*kernel.Task, *arch.SyscallArgs) (uintptr, error) {
	runtime.Gosched()
	return 0, nil
}

// Getcpu implements Linux syscall getcpu(2): the task's CPU
// (kernel.Task.CPU, one its affinity allows) on node 0, the sandbox's only
// NUMA node.
func Getcpu(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	vals := [2]uint32{uint32(t.CPU()), 0}
	for i := 0; i < 2; i++ {
		if a[i] != 0 {
			if err := copyOutU32(t, a.Ptr(i), vals[i]); err != nil {
				return 0, err
			}
		}
	}
	return 0, nil
}

// Kcmp implements Linux syscall kcmp(2): whether two tasks share a
// resource, with a stable order among resources of a kind that hides
// their addresses (kernel.Kernel.KcmpOrder).
func Kcmp(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid1, pid2, typ, idx1, idx2 := a.Int(0), a.Int(1), int(a.Int(2)), a[3], a[4]
	t1, t2, err := t.KcmpTasks(pid1, pid2)
	if err != nil {
		return 0, err
	}
	k := t.Kernel()
	switch typ {
	case kernel.KcmpFile:
		f1, f2 := kcmpFile(t1, idx1), kcmpFile(t2, idx2)
		if f1 == 0 || f2 == 0 {
			return 0, unix.EBADF
		}
		return k.KcmpOrder(typ, f1, f2), nil
	case kernel.KcmpVM, kernel.KcmpFiles, kernel.KcmpFS, kernel.KcmpSighand, kernel.KcmpIO, kernel.KcmpSysvsem:
		return k.KcmpOrder(typ, t1.KcmpResource(typ), t2.KcmpResource(typ)), nil
	case kernel.KcmpEpollTFD:
		f1 := kcmpFile(t1, idx1)
		if f1 == 0 {
			return 0, unix.EBADF
		}
		var slot struct{ Efd, Tfd, Toff uint32 }
		if err := copyInStruct(t, uintptr(idx2), &slot); err != nil {
			return 0, err
		}
		ef, err := t2.FDs().Get(int32(slot.Efd))
		if err != nil {
			return 0, unix.EBADF
		}
		defer ef.DecRef()
		ep, ok := ef.Impl().(*epoll.File)
		if !ok {
			return 0, unix.EINVAL
		}
		target := ep.Target(int32(slot.Tfd), uint64(slot.Toff))
		if target == nil {
			return 0, unix.ENOENT
		}
		return k.KcmpOrder(kernel.KcmpFile, f1, uintptr(unsafe.Pointer(target))), nil
	}
	return 0, unix.EINVAL
}

// kcmpFile is the identity of task's open file at fd, 0 if none.
func kcmpFile(task *kernel.Task, fd uint64) uintptr {
	if fd > math.MaxInt32 {
		return 0
	}
	f, err := task.FDs().Get(int32(fd))
	if err != nil {
		return 0
	}
	defer f.DecRef()
	return uintptr(unsafe.Pointer(f))
}
