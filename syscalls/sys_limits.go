package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Getrlimit implements Linux syscall getrlimit(2).
func Getrlimit(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	r := int(a.Int(0))
	if r < 0 || r >= kernel.NumLimits {
		return 0, unix.EINVAL
	}
	l := t.Limits().Get(r)
	return 0, copyOutStruct(t, a.Ptr(1), &l)
}

// Setrlimit implements Linux syscall setrlimit(2).
func Setrlimit(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	r := int(a.Int(0))
	if r < 0 || r >= kernel.NumLimits {
		return 0, unix.EINVAL
	}
	var l kernel.Limit
	if err := copyInStruct(t, a.Ptr(1), &l); err != nil {
		return 0, err
	}
	_, err := t.Limits().Set(r, l, hasCapSysResource(t))
	return 0, err
}

// Prlimit64 implements Linux syscall prlimit64(2) for the caller's process.
func Prlimit64(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid, r, newAddr, oldAddr := a.Int(0), int(a.Int(1)), a.Ptr(2), a.Ptr(3)
	if r < 0 || r >= kernel.NumLimits {
		return 0, unix.EINVAL
	}
	if pid != 0 && pid != t.PID() {
		return 0, unix.ESRCH
	}
	old := t.Limits().Get(r)
	if newAddr != 0 {
		var l kernel.Limit
		if err := copyInStruct(t, newAddr, &l); err != nil {
			return 0, err
		}
		var err error
		if old, err = t.Limits().Set(r, l, hasCapSysResource(t)); err != nil {
			return 0, err
		}
	}
	if oldAddr != 0 {
		return 0, copyOutStruct(t, oldAddr, &old)
	}
	return 0, nil
}

func hasCapSysResource(t *kernel.Task) bool {
	c := t.Creds()
	c.Lock()
	defer c.Unlock()
	return c.CapEffective&(1<<unix.CAP_SYS_RESOURCE) != 0
}

// Getrusage implements Linux syscall getrusage(2). CPU time is the task's
// approximation, the maximum resident set the current one; the other
// fields are zero.
func Getrusage(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	switch a.Int(0) {
	case unix.RUSAGE_SELF, unix.RUSAGE_THREAD, unix.RUSAGE_CHILDREN:
	default:
		return 0, unix.EINVAL
	}
	var ru unix.Rusage
	if a.Int(0) != unix.RUSAGE_CHILDREN {
		ts, _ := t.Kernel().ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, t)
		ru.Utime = unix.NsecToTimeval(ts.Nano())
		ru.Maxrss = int64(t.MM().ResidentBytes() / 1024)
	}
	return 0, copyOutStruct(t, a.Ptr(1), &ru)
}
