package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/pidfd"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// pidfdNonblock is PIDFD_NONBLOCK, which linux/pidfd.h defines as
// O_NONBLOCK.
const pidfdNonblock = unix.O_NONBLOCK

// installPidfd gives t a pidfd of tg: read-write and close-on-exec
// always, as Linux makes every pidfd.
func installPidfd(t *kernel.Task, tg *kernel.ThreadGroup, flags int) (int32, error) {
	f := vfs.NewFile(pidfd.New(tg), vfs.Path{}, unix.O_RDWR|flags)
	defer f.DecRef()
	return t.FDs().Install(f, 0, true, nofile(t))
}

// pidfdProcess is the process of pidfd fd and the descriptor's flags; a
// descriptor that is no pidfd is EBADF, as Linux's pidfd_pid gives. The
// caller drops the reference.
func pidfdProcess(t *kernel.Task, fd int32) (*kernel.ThreadGroup, *vfs.File, error) {
	f, err := t.FDs().Get(fd)
	if err != nil {
		return nil, nil, err
	}
	p, ok := f.Impl().(*pidfd.File)
	if !ok {
		f.DecRef()
		return nil, nil, unix.EBADF
	}
	return p.Process(), f, nil
}

// signalTarget is pidfdProcess for pidfd_send_signal, which alone also
// takes a descriptor of a /proc/<pid> directory for its process, as Linux
// does (Python's signal.pidfd_send_signal is tested so).
func signalTarget(t *kernel.Task, fd int32) (*kernel.ThreadGroup, *vfs.File, error) {
	f, err := t.FDs().Get(fd)
	if err != nil {
		return nil, nil, err
	}
	if tg, ok := procfs.ProcessOf(f); ok {
		return tg, f, nil
	}
	f.DecRef()
	return pidfdProcess(t, fd)
}

// PidfdOpen implements Linux syscall pidfd_open(2).
func PidfdOpen(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	pid, flags := a.Int(0), a.Uint(1)
	if flags&^pidfdNonblock != 0 {
		return 0, unix.EINVAL
	}
	tg, err := t.PidfdTarget(pid)
	if err != nil {
		return 0, err
	}
	fd, err := installPidfd(t, tg, int(flags))
	return retErr(uintptr(fd), err)
}

// PidfdSendSignal implements Linux syscall pidfd_send_signal(2): kill(2)
// through a pidfd, or rt_sigqueueinfo(2) when a siginfo is given.
func PidfdSendSignal(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	sig, infoAddr := int(a.Int(1)), a.Ptr(2)
	if a.Uint(3) != 0 {
		return 0, unix.EINVAL
	}
	tg, f, err := signalTarget(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	var info kernel.SigInfo
	if infoAddr != 0 {
		if err := copyInStruct(t, infoAddr, &info); err != nil {
			return 0, err
		}
		if info.Signo != int32(sig) {
			return 0, unix.EINVAL
		}
		// Only the kernel may claim a kernel origin, and a task may
		// forge one only to itself (Linux compares the target's pid
		// with the calling thread's).
		if (info.Code >= 0 || info.Code == linuxabi.SI_TKILL) && t.RootTID() != tg.PID() {
			return 0, unix.EPERM
		}
	} else {
		info = senderInfo(t, sig, linuxabi.SI_USER)
		setSenderPID(t, &info, tg)
	}
	switch {
	case tg.Reaped():
		return 0, unix.ESRCH
	case sig != 0 && !kernel.ValidSignal(sig):
		return 0, unix.EINVAL
	case !t.MaySignalProcess(tg):
		return 0, unix.EPERM
	}
	if sig != 0 && !tg.UnkillableBy(t, sig) {
		tg.SendSignal(info)
	}
	return 0, nil
}

// PidfdGetfd implements Linux syscall pidfd_getfd(2): a copy of another
// process's descriptor, close-on-exec.
func PidfdGetfd(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a.Uint(2) != 0 {
		return 0, unix.EINVAL
	}
	tg, pf, err := pidfdProcess(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer pf.DecRef()
	f, err := t.GetFileOf(tg, a.Int(1))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	fd, err := t.FDs().Install(f, 0, true, nofile(t))
	return retErr(uintptr(fd), err)
}

// clonePidfd is CLONE_PIDFD's: a pidfd of the new process, its number
// written at addr (EFAULT undoes it, failing the clone).
func clonePidfd(t *kernel.Task, addr uintptr) func(*kernel.ThreadGroup) error {
	return func(tg *kernel.ThreadGroup) error {
		fd, err := installPidfd(t, tg, 0)
		if err != nil {
			return err
		}
		if err := copyOutU32(t, addr, uint32(fd)); err != nil {
			if f, rerr := t.FDs().Remove(fd); rerr == nil {
				f.DecRef()
			}
			return err
		}
		return nil
	}
}
