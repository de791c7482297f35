package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// lockMand is flock(2)'s LOCK_MAND, which Linux 5.15 and later ignore
// (the call succeeds and does nothing).
const lockMand = 32

// Flock implements Linux syscall flock(2).
func Flock(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	fd, op := a.Int(0), int(a.Uint(1))
	if op&lockMand != 0 {
		return 0, nil
	}
	switch op &^ unix.LOCK_NB {
	case unix.LOCK_SH, unix.LOCK_EX, unix.LOCK_UN:
	default:
		return 0, unix.EINVAL
	}
	f, err := t.FDs().Get(fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if f.Flags()&unix.O_PATH != 0 {
		return 0, unix.EBADF
	}
	return 0, vfs.Locks.Flock(t, f, op, t.ThreadGroup().PID())
}

// seenLockPID is a lock's pid, which the lock table keeps as the
// sandbox's pid namespace numbers it, as t sees it: 0 for a process
// outside t's namespace, -1 (an OFD lock's) as it is.
func seenLockPID(t *kernel.Task, pid int32) int32 {
	if pid <= 0 {
		return pid
	}
	return t.SeenID(pid)
}

// fcntlLock serves fcntl's F_GETLK, F_SETLK, F_SETLKW and their F_OFD_
// forms on f. A POSIX lock's owner is the process's fd table (as Linux's
// are owned by current->files), an OFD lock's the open file description.
func fcntlLock(t *kernel.Task, f *vfs.File, cmd int32, addr uintptr) (uintptr, error) {
	var fl unix.Flock_t
	if err := copyInStruct(t, addr, &fl); err != nil {
		return 0, err
	}
	ofd := cmd == unix.F_OFD_GETLK || cmd == unix.F_OFD_SETLK || cmd == unix.F_OFD_SETLKW
	var owner any = t.FDs()
	if ofd {
		owner = f
	}
	if cmd == unix.F_GETLK || cmd == unix.F_OFD_GETLK {
		if fl.Type != unix.F_RDLCK && fl.Type != unix.F_WRLCK {
			return 0, unix.EINVAL
		}
		start, end, err := vfs.LockRange(f, fl.Whence, fl.Start, fl.Len)
		if err != nil {
			return 0, err
		}
		if ofd && fl.Pid != 0 {
			return 0, unix.EINVAL
		}
		got := vfs.Locks.TestRecordLock(f, owner, vfs.RecordLock{Type: fl.Type, Start: start, End: end})
		fl.Type = got.Type
		if got.Type != unix.F_UNLCK {
			fl.Whence, fl.Start, fl.Pid = unix.SEEK_SET, got.Start, seenLockPID(t, got.PID)
			fl.Len = 0
			if got.End != vfs.OffsetMax {
				fl.Len = got.End - got.Start + 1
			}
		}
		return 0, copyOutStruct(t, addr, &fl)
	}
	start, end, err := vfs.LockRange(f, fl.Whence, fl.Start, fl.Len)
	if err != nil {
		return 0, err
	}
	switch fl.Type {
	case unix.F_RDLCK:
		if !f.Readable() {
			return 0, unix.EBADF
		}
	case unix.F_WRLCK:
		if !f.Writable() {
			return 0, unix.EBADF
		}
	case unix.F_UNLCK:
	default:
		return 0, unix.EINVAL
	}
	if ofd && fl.Pid != 0 {
		return 0, unix.EINVAL
	}
	wait := cmd == unix.F_SETLKW || cmd == unix.F_OFD_SETLKW
	r := vfs.RecordLock{Type: fl.Type, Start: start, End: end}
	return 0, vfs.Locks.SetRecordLock(t, f, owner, ofd, r, t.ThreadGroup().PID(), wait)
}
