package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// wait options.
const (
	wNoHang    = 0x1
	wUntraced  = 0x2 // WSTOPPED for waitid
	wExited    = 0x4
	wContinued = 0x8
	wNoWait    = 0x01000000
	wNoThread  = 0x20000000
	wAll       = 0x40000000
	wClone     = 0x80000000
	pAll       = 0
	pPID       = 1
	pPGID      = 2
)

// Wait4 implements Linux syscall wait4(2).
func Wait4(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid, statusAddr, options, rusage := a.Int(0), a.Ptr(1), a.Uint(2), a.Ptr(3)
	if options&^(wNoHang|wUntraced|wContinued|wNoThread|wAll|wClone) != 0 {
		return 0, unix.EINVAL
	}
	o := kernel.WaitOptions{Exited: true, Stopped: options&wUntraced != 0, Continued: options&wContinued != 0,
		NoHang: options&wNoHang != 0, Clone: options&wClone != 0, All: options&wAll != 0}
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
	if options&^(wNoHang|wUntraced|wExited|wContinued|wNoWait|wNoThread|wAll|wClone) != 0 ||
		options&(wExited|wUntraced|wContinued) == 0 {
		return 0, unix.EINVAL
	}
	o := kernel.WaitOptions{Exited: options&wExited != 0, Stopped: options&wUntraced != 0,
		Continued: options&wContinued != 0, NoHang: options&wNoHang != 0, NoWait: options&wNoWait != 0,
		Clone: options&wClone != 0, All: options&wAll != 0}
	switch idtype {
	case pAll:
	case pPID:
		if id <= 0 {
			return 0, unix.EINVAL
		}
		o.Pid = id
	case pPGID:
		if id < 0 {
			return 0, unix.EINVAL
		}
		o.PGID = id
		if id == 0 {
			o.PGID = t.PGID()
		}
	default:
		return 0, unix.EINVAL
	}
	res, err := t.Wait(o)
	if err != nil {
		return 0, err
	}
	if infop != 0 {
		var info kernel.SigInfo
		if res.Pid != 0 {
			info = kernel.SigInfo{Signo: int32(unix.SIGCHLD), Code: res.Code}
			info.SetChild(res.Pid, res.UID, res.Info)
		}
		if err := copyOutStruct(t, infop, &info); err != nil {
			return 0, err
		}
	}
	if rusage != 0 {
		if err := copyOutUsage(t, rusage, res.Usage); err != nil {
			return 0, err
		}
	}
	return 0, nil
}
