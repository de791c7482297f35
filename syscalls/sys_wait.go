package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Wait4 implements Linux syscall wait4(2).
func Wait4(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid, statusAddr, options, rusage := a.Int(0), a.Ptr(1), a.Uint(2), a.Ptr(3)
	if options&^(unix.WNOHANG|unix.WUNTRACED|unix.WCONTINUED|unix.WNOTHREAD|unix.WALL|unix.WCLONE) != 0 {
		return 0, unix.EINVAL
	}
	o := kernel.WaitOptions{Exited: true, Stopped: options&unix.WUNTRACED != 0, Continued: options&unix.WCONTINUED != 0,
		NoHang: options&unix.WNOHANG != 0, Clone: options&unix.WCLONE != 0, All: options&unix.WALL != 0}
	switch {
	case pid < -1:
		o.PGID = -pid
	case pid == 0:
		o.PGID = t.PGID()
	case pid > 0:
		o.Pid = pid
	}
	res, err := t.Wait(o)
	if err != nil {
		return 0, err
	}
	if res.Pid != 0 {
		if statusAddr != 0 {
			if err := copyOutU32(t, statusAddr, uint32(res.Status)); err != nil {
				return 0, err
			}
		}
		if rusage != 0 {
			if err := copyOutUsage(t, rusage, res.Usage); err != nil {
				return 0, err
			}
		}
	}
	return uintptr(res.Pid), nil
}

// Waitid implements Linux syscall waitid(2).
func Waitid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	idtype, id, infop, options, rusage := a.Int(0), a.Int(1), a.Ptr(2), a.Uint(3), a.Ptr(4)
	if options&^(unix.WNOHANG|unix.WUNTRACED|unix.WEXITED|unix.WCONTINUED|unix.WNOWAIT|unix.WNOTHREAD|unix.WALL|unix.WCLONE) != 0 ||
		options&(unix.WEXITED|unix.WUNTRACED|unix.WCONTINUED) == 0 {
		return 0, unix.EINVAL
	}
	o := kernel.WaitOptions{Exited: options&unix.WEXITED != 0, Stopped: options&unix.WUNTRACED != 0,
		Continued: options&unix.WCONTINUED != 0, NoHang: options&unix.WNOHANG != 0, NoWait: options&unix.WNOWAIT != 0,
		Clone: options&unix.WCLONE != 0, All: options&unix.WALL != 0}
	switch idtype {
	case unix.P_ALL:
	case unix.P_PID:
		if id <= 0 {
			return 0, unix.EINVAL
		}
		o.Pid = id
	case unix.P_PGID:
		if id < 0 {
			return 0, unix.EINVAL
		}
		o.PGID = id
		if id == 0 {
			o.PGID = t.PGID()
		}
	case unix.P_PIDFD:
		if id < 0 {
			return 0, unix.EINVAL
		}
		tg, f, err := pidfdProcess(t, id)
		if err != nil {
			return 0, err
		}
		o.Process = tg
		// Through a PIDFD_NONBLOCK pidfd a child still running is
		// EAGAIN, unless WNOHANG asked for an empty answer.
		nonblock := f.Flags()&pidfdNonblock != 0 && !o.NoHang
		f.DecRef()
		o.NoHang = o.NoHang || nonblock
		res, err := t.Wait(o)
		if err == nil && res.Pid == 0 && nonblock {
			err = unix.EAGAIN
		}
		if err != nil {
			return 0, err
		}
		return 0, waitidOut(t, infop, rusage, res)
	default:
		return 0, unix.EINVAL
	}
	res, err := t.Wait(o)
	if err != nil {
		return 0, err
	}
	return 0, waitidOut(t, infop, rusage, res)
}

// waitidOut writes what waitid found: the siginfo (zero when nothing had
// changed) and the child's usage.
func waitidOut(t *kernel.Task, infop, rusage uintptr, res kernel.WaitResult) error {
	if infop != 0 {
		var info kernel.SigInfo
		if res.Pid != 0 {
			info = kernel.SigInfo{Signo: int32(unix.SIGCHLD), Code: res.Code}
			info.SetChild(res.Pid, res.UID, res.Info)
		}
		if err := copyOutStruct(t, infop, &info); err != nil {
			return err
		}
	}
	if rusage != 0 {
		return copyOutUsage(t, rusage, res.Usage)
	}
	return nil
}
