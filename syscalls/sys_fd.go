package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/nsfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Dup implements Linux syscall dup(2).
func Dup(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := t.FDs().Get(a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	fd, err := t.FDs().Install(f, 0, false, nofile(t))
	return retErr(uintptr(fd), err)
}

// Dup2 implements Linux syscall dup2(2).
func Dup2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	oldfd, newfd := a.Int(0), a.Int(1)
	f, err := t.FDs().Get(oldfd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if oldfd == newfd {
		return uintptr(newfd), nil
	}
	return retErr(uintptr(newfd), t.FDs().InstallAt(newfd, f, false, nofile(t)))
}

// Dup3 implements Linux syscall dup3(2).
func Dup3(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	oldfd, newfd, flags := a.Int(0), a.Int(1), int(a.Int(2))
	if flags&^unix.O_CLOEXEC != 0 || oldfd == newfd {
		return 0, unix.EINVAL
	}
	f, err := t.FDs().Get(oldfd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return retErr(uintptr(newfd), t.FDs().InstallAt(newfd, f, flags&unix.O_CLOEXEC != 0, nofile(t)))
}

// Fcntl implements Linux syscall fcntl(2) for descriptor and status flags,
// duplication, record locks and pipe sizes.
func Fcntl(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	fd, cmd := a.Int(0), a.Int(1)
	f, err := t.FDs().Get(fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if f.Flags()&unix.O_PATH != 0 {
		// An O_PATH descriptor names a file without opening it: only
		// these, as Linux's check_fcntl_cmd.
		switch cmd {
		case unix.F_DUPFD, unix.F_DUPFD_CLOEXEC, unix.F_GETFD, unix.F_SETFD, unix.F_GETFL:
		default:
			return 0, unix.EBADF
		}
	}
	switch cmd {
	case unix.F_GETLK, unix.F_SETLK, unix.F_SETLKW, unix.F_OFD_GETLK, unix.F_OFD_SETLK, unix.F_OFD_SETLKW:
		return fcntlLock(t, f, cmd, a.Ptr(2))
	case unix.F_DUPFD, unix.F_DUPFD_CLOEXEC:
		min := a.Int(2)
		if min < 0 || uint64(min) >= nofile(t) {
			return 0, unix.EINVAL
		}
		nfd, err := t.FDs().Install(f, min, cmd == unix.F_DUPFD_CLOEXEC, nofile(t))
		return retErr(uintptr(nfd), err)
	case unix.F_GETFD:
		on, err := t.FDs().CloseOnExec(fd)
		if on {
			return unix.FD_CLOEXEC, err
		}
		return 0, err
	case unix.F_SETFD:
		return 0, t.FDs().SetCloseOnExec(fd, a.Int(2)&unix.FD_CLOEXEC != 0)
	case unix.F_GETFL:
		return uintptr(f.Flags()), nil
	case unix.F_SETFL:
		f.SetStatusFlags(int(a.Int(2)))
		return 0, nil
	case unix.F_NOTIFY:
		return 0, t.DirNotify(f, uint32(a.Uint(2)))
	case unix.F_ADD_SEALS, unix.F_GET_SEALS:
		return fcntlSeals(t, f, cmd, a.Uint(2))
	case unix.F_GETPIPE_SZ, unix.F_SETPIPE_SZ:
		p, ok := f.Impl().(pipeSizer)
		if !ok {
			return 0, unix.EBADF
		}
		if cmd == unix.F_GETPIPE_SZ {
			return uintptr(p.Size()), nil
		}
		size := a.Uint(2)
		if size > 1<<31-1 {
			return 0, unix.EINVAL
		}
		n, err := p.SetSize(int(size))
		return retErr(uintptr(n), err)
	}
	return 0, unix.EINVAL
}

// Ioctl implements Linux syscall ioctl(2): the generic requests here, a
// terminal's job-control requests in sys_tty.go, the rest by the file
// (terminals answer theirs; others ENOTTY).
func Ioctl(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	fd, cmd, arg := a.Int(0), a.Uint(1), a.Ptr(2)
	f, err := t.FDs().Get(fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if err := f.LandlockIoctl(cmd); err != nil {
		return 0, err
	}
	switch cmd {
	case linuxabi.FIOCLEX:
		return 0, t.FDs().SetCloseOnExec(fd, true)
	case linuxabi.FIONCLEX:
		return 0, t.FDs().SetCloseOnExec(fd, false)
	case linuxabi.FIONBIO:
		var on int32
		if err := copyInStruct(t, arg, &on); err != nil {
			return 0, err
		}
		flags := f.Flags() &^ unix.O_NONBLOCK
		if on != 0 {
			flags |= unix.O_NONBLOCK
		}
		f.SetStatusFlags(flags)
		return 0, nil
	case linuxabi.FIONREAD:
		if st, err := f.Stat(); err == nil && st.Type() == unix.S_IFREG {
			return 0, copyOutU32(t, arg, uint32(max(0, min(st.Size-f.Offset(), 1<<31-1))))
		}
	}
	if term, ok := f.Impl().(kernel.Terminal); ok {
		if handled, ret, err := terminalIoctl(t, f, term, cmd, arg); handled {
			return ret, err
		}
	}
	if ns, ok := f.Impl().(*nsfs.File); ok {
		return nsIoctl(t, ns, cmd, arg)
	}
	return f.Impl().Ioctl(cmd, arg, t)
}
