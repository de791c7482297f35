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
	_, err := t.ThreadGroup().SetLimit(r, l, hasCapSysResource(t))
	return 0, err
}

// Prlimit64 implements Linux syscall prlimit64(2).
func Prlimit64(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid, r, newAddr, oldAddr := a.Int(0), int(a.Int(1)), a.Ptr(2), a.Ptr(3)
	if r < 0 || r >= kernel.NumLimits {
		return 0, unix.EINVAL
	}
	tg, err := processArg(t, pid)
	if err != nil {
		return 0, err
	}
	if !t.CanSignal(tg) {
		return 0, unix.EPERM
	}
	old := tg.Limits().Get(r)
	if newAddr != 0 {
		var l kernel.Limit
		if err := copyInStruct(t, newAddr, &l); err != nil {
			return 0, err
		}
		var err error
		if old, err = tg.SetLimit(r, l, hasCapSysResource(t)); err != nil {
			return 0, err
		}
	}
	if oldAddr != 0 {
		return 0, copyOutStruct(t, oldAddr, &old)
	}
	return 0, nil
}

func hasCapSysResource(t *kernel.Task) bool { return t.Capable(unix.CAP_SYS_RESOURCE) }

// Getrusage implements Linux syscall getrusage(2). The resident set is the
// current one; the children's figures are those of the children reaped.
func Getrusage(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	switch who := a.Int(0); who {
	case unix.RUSAGE_SELF, unix.RUSAGE_THREAD:
		user, sys := t.ThreadGroup().CPUTime()
		if who == unix.RUSAGE_THREAD {
			user, sys = t.CPUTime()
		}
		rss := t.MM().ResidentBytes()
		return 0, copyOutUsage(t, a.Ptr(1), kernel.Usage{MaxRSS: rss, MinFlt: rss / 4096, User: user, Sys: sys})
	case unix.RUSAGE_CHILDREN:
		return 0, copyOutUsage(t, a.Ptr(1), t.ThreadGroup().ChildUsage())
	}
	return 0, unix.EINVAL
}
