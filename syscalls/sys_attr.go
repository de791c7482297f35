package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// fileAt returns the open file at fd for the calls that change it: an
// O_PATH descriptor does not do (EBADF), as Linux's fdget.
func fileAt(t *kernel.Task, fd int32) (*vfs.File, error) {
	f, err := t.FDs().Get(fd)
	if err != nil {
		return nil, err
	}
	if f.Flags()&unix.O_PATH != 0 {
		f.DecRef()
		return nil, unix.EBADF
	}
	return f, nil
}

// Chmod implements Linux syscall chmod(2).
func Chmod(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return chmodAt(t, unix.AT_FDCWD, a.Ptr(0), a.Uint(1))
}

// Fchmodat implements Linux syscall fchmodat(2), which has no flags
// argument (the C library handles AT_SYMLINK_NOFOLLOW itself).
func Fchmodat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return chmodAt(t, a.Int(0), a.Ptr(1), a.Uint(2))
}

// Fchmodat2 implements Linux syscall fchmodat2(2): fchmodat with flags.
// AT_SYMLINK_NOFOLLOW on a symlink answers EOPNOTSUPP, as Linux's
// notify_change does: a symlink's mode means nothing.
func Fchmodat2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := int(a.Int(3))
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return 0, unix.EINVAL
	}
	name, err := copyInPath(t, a.Ptr(1))
	if err != nil {
		return 0, err
	}
	dirfd, mode := a.Int(0), a.Uint(2)
	if name == "" && flags&unix.AT_EMPTY_PATH != 0 && dirfd != unix.AT_FDCWD {
		// dirfd's own file, which may have no path (a pipe): an O_PATH
		// descriptor too, as the path walk of an empty name finds it.
		f, err := t.FDs().Get(dirfd)
		if err != nil {
			return 0, err
		}
		defer f.DecRef()
		return 0, vfs.Fchmod(fsCreds(t), f, mode)
	}
	p, err := lookupNameAt(t, dirfd, name, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags)
	if err != nil {
		return 0, err
	}
	return 0, vfs.Chmod(fsCreds(t), p, mode)
}

func chmodAt(t *kernel.Task, dirfd int32, pathAddr uintptr, mode uint32) (uintptr, error) {
	p, err := lookupAt(t, dirfd, pathAddr, true, 0)
	if err != nil {
		return 0, err
	}
	return 0, vfs.Chmod(fsCreds(t), p, mode)
}

// Fchmod implements Linux syscall fchmod(2).
func Fchmod(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := fileAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return 0, vfs.Fchmod(fsCreds(t), f, a.Uint(1))
}

// idArg converts a uid or gid argument: -1 (as a 32-bit value) leaves the
// id unchanged.
func idArg(v uint32) int64 {
	if v == ^uint32(0) {
		return -1
	}
	return int64(v)
}

// Chown implements Linux syscall chown(2).
func Chown(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return chownAt(t, unix.AT_FDCWD, a.Ptr(0), a.Uint(1), a.Uint(2), 0)
}

// Lchown implements Linux syscall lchown(2).
func Lchown(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return chownAt(t, unix.AT_FDCWD, a.Ptr(0), a.Uint(1), a.Uint(2), unix.AT_SYMLINK_NOFOLLOW)
}

// Fchownat implements Linux syscall fchownat(2).
func Fchownat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return chownAt(t, a.Int(0), a.Ptr(1), a.Uint(2), a.Uint(3), int(a.Int(4)))
}

func chownAt(t *kernel.Task, dirfd int32, pathAddr uintptr, uid, gid uint32, flags int) (uintptr, error) {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return 0, unix.EINVAL
	}
	name, err := copyInPath(t, pathAddr)
	if err != nil {
		return 0, err
	}
	if name == "" && flags&unix.AT_EMPTY_PATH != 0 && dirfd != unix.AT_FDCWD {
		// dirfd's own file, which may have no path (a pipe, a socket):
		// as fchown, an O_PATH descriptor too.
		f, err := t.FDs().Get(dirfd)
		if err != nil {
			return 0, err
		}
		defer f.DecRef()
		return 0, vfs.Fchown(fsCreds(t), f, idArg(uid), idArg(gid))
	}
	p, err := lookupNameAt(t, dirfd, name, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags)
	if err != nil {
		return 0, err
	}
	return 0, vfs.Chown(fsCreds(t), p, idArg(uid), idArg(gid))
}

// Fchown implements Linux syscall fchown(2).
func Fchown(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := fileAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return 0, vfs.Fchown(fsCreds(t), f, idArg(a.Uint(1)), idArg(a.Uint(2)))
}

// Truncate implements Linux syscall truncate(2).
func Truncate(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	size := a.Int64(1)
	if size < 0 {
		return 0, unix.EINVAL
	}
	if err := checkFileSize(t, size); err != nil {
		return 0, err
	}
	p, err := lookupAt(t, unix.AT_FDCWD, a.Ptr(0), true, 0)
	if err != nil {
		return 0, err
	}
	return 0, vfs.Truncate(fsCreds(t), p, size)
}

// Ftruncate implements Linux syscall ftruncate(2).
func Ftruncate(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	size := a.Int64(1)
	if size < 0 {
		return 0, unix.EINVAL
	}
	f, err := fileAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if err := checkFileSize(t, size); err != nil {
		return 0, err
	}
	return 0, vfs.Ftruncate(fsCreds(t), f, size)
}

// checkFileSize applies RLIMIT_FSIZE to a new file size: past it, SIGXFSZ
// and EFBIG.
func checkFileSize(t *kernel.Task, size int64) error {
	if uint64(size) > t.FileSizeLimit() {
		t.Signal(int(unix.SIGXFSZ))
		return unix.EFBIG
	}
	return nil
}

// Fallocate implements Linux syscall fallocate(2): mode 0 only.
func Fallocate(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := fileAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return 0, vfs.Fallocate(t, f, a.Uint(1), a.Int64(2), a.Int64(3))
}

// Utime implements Linux syscall utime(2): struct utimbuf holds two
// seconds values; NULL means now.
func Utime(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	var times *[2]unix.Timespec
	if a[1] != 0 {
		var buf [2]int64
		if err := copyInStruct(t, a.Ptr(1), &buf); err != nil {
			return 0, err
		}
		times = &[2]unix.Timespec{{Sec: buf[0]}, {Sec: buf[1]}}
	}
	return utimesAt(t, unix.AT_FDCWD, a.Ptr(0), times, 0)
}

// Utimes implements Linux syscall utimes(2).
func Utimes(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	times, err := copyInTimevals(t, a.Ptr(1))
	if err != nil {
		return 0, err
	}
	return utimesAt(t, unix.AT_FDCWD, a.Ptr(0), times, 0)
}

// Futimesat implements Linux syscall futimesat(2).
func Futimesat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	times, err := copyInTimevals(t, a.Ptr(2))
	if err != nil {
		return 0, err
	}
	return utimesAt(t, a.Int(0), a.Ptr(1), times, 0)
}

// copyInTimevals reads utimes's two struct timevals (NULL: now).
func copyInTimevals(t *kernel.Task, addr uintptr) (*[2]unix.Timespec, error) {
	if addr == 0 {
		return nil, nil
	}
	var tv [2]unix.Timeval
	if err := copyInStruct(t, addr, &tv); err != nil {
		return nil, err
	}
	var times [2]unix.Timespec
	for i, v := range tv {
		if v.Usec < 0 || v.Usec >= 1e6 {
			return nil, unix.EINVAL
		}
		times[i] = unix.Timespec{Sec: v.Sec, Nsec: v.Usec * 1000}
	}
	return &times, nil
}

// Utimensat implements Linux syscall utimensat(2). A NULL path changes the
// file open at dirfd.
func Utimensat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	dirfd, pathAddr, flags := a.Int(0), a.Ptr(1), int(a.Int(3))
	var times *[2]unix.Timespec
	if a[2] != 0 {
		times = new([2]unix.Timespec)
		if err := copyInStruct(t, a.Ptr(2), times); err != nil {
			return 0, err
		}
		// Both omitted: nothing to do, and the path is not even looked at.
		if times[0].Nsec == unix.UTIME_OMIT && times[1].Nsec == unix.UTIME_OMIT {
			return 0, nil
		}
	}
	if pathAddr == 0 && dirfd != unix.AT_FDCWD {
		if flags != 0 {
			return 0, unix.EINVAL
		}
		f, err := fileAt(t, dirfd)
		if err != nil {
			return 0, err
		}
		defer f.DecRef()
		return 0, vfs.Utimes(fsCreds(t), f.Path(), times)
	}
	if pathAddr == 0 {
		return 0, unix.EFAULT
	}
	return utimesAt(t, dirfd, pathAddr, times, flags)
}

func utimesAt(t *kernel.Task, dirfd int32, pathAddr uintptr, times *[2]unix.Timespec, flags int) (uintptr, error) {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return 0, unix.EINVAL
	}
	if pathAddr == 0 && dirfd != unix.AT_FDCWD {
		// futimesat with a NULL path: the file open at dirfd.
		f, err := fileAt(t, dirfd)
		if err != nil {
			return 0, err
		}
		defer f.DecRef()
		return 0, vfs.Utimes(fsCreds(t), f.Path(), times)
	}
	p, err := lookupAt(t, dirfd, pathAddr, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags)
	if err != nil {
		return 0, err
	}
	return 0, vfs.Utimes(fsCreds(t), p, times)
}
