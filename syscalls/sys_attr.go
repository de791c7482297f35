package syscalls

import (
	"encoding/binary"

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
		u, g, err := chownIDs(t, uid, gid)
		if err != nil {
			return 0, err
		}
		return 0, vfs.Fchown(fsCreds(t), f, u, g)
	}
	p, err := lookupNameAt(t, dirfd, name, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags)
	if err != nil {
		return 0, err
	}
	u, g, err := chownIDs(t, uid, gid)
	if err != nil {
		return 0, err
	}
	return 0, vfs.Chown(fsCreds(t), p, u, g)
}

// chownIDs are chown's owner and group as kernel ids (-1: unchanged):
// EINVAL for an id the caller's user namespace does not map.
func chownIDs(t *kernel.Task, uid, gid uint32) (int64, int64, error) {
	c := t.Creds()
	u, err := c.KernelUIDArg(uid)
	if err != nil {
		return 0, 0, err
	}
	g, err := c.KernelGIDArg(gid)
	if err != nil {
		return 0, 0, err
	}
	return idArg(u), idArg(g), nil
}

// Fchown implements Linux syscall fchown(2).
func Fchown(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := fileAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	u, g, err := chownIDs(t, a.Uint(1), a.Uint(2))
	if err != nil {
		return 0, err
	}
	return 0, vfs.Fchown(fsCreds(t), f, u, g)
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

// fileAttrSize is the first version's size of struct file_attr: u64
// fa_xflags, then u32 fa_extsize, fa_nextents, fa_projid, fa_cowextsize,
// the fields of FS_IOC_FSGETXATTR's struct fsxattr.
const fileAttrSize = 24

// FS_XFLAG_* bits file_setattr looks at (Linux's FS_XFLAGS_MASK).
const (
	xflagImmutable    = 0x8
	xflagAppend       = 0x10
	xflagExtSize      = 0x800
	xflagExtSzInherit = 0x1000
	xflagCowExtSize   = 0x10000
	xflagHasAttr      = 0x80000000 // read-only: ignored when set
	xflagsMask        = 0x1fffb | xflagHasAttr
)

// fileAttrAt resolves the file of file_getattr or file_setattr as the
// *xattrat calls do; its Dentry is nil for a file open at dirfd outside
// the tree (a pipe).
func fileAttrAt(t *kernel.Task, dirfd int32, pathAddr uintptr, flags uint32) (vfs.Path, error) {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return vfs.Path{}, unix.EINVAL
	}
	name := ""
	if pathAddr != 0 || flags&unix.AT_EMPTY_PATH == 0 {
		var err error
		if name, err = copyInPath(t, pathAddr); err != nil {
			return vfs.Path{}, err
		}
	}
	if name == "" && flags&unix.AT_EMPTY_PATH != 0 && dirfd >= 0 {
		f, err := fileAt(t, dirfd)
		if err != nil {
			return vfs.Path{}, err
		}
		defer f.DecRef()
		return f.Path(), nil
	}
	return lookupNameAt(t, dirfd, name, flags&unix.AT_SYMLINK_NOFOLLOW == 0, int(flags))
}

// fileAttrStat is the attributes of a file that keeps file attributes:
// as on Linux, only regular files and directories, and not those of the
// pseudo file systems (EOPNOTSUPP).
func fileAttrStat(p vfs.Path) (vfs.Stat, error) {
	if p.Dentry == nil {
		return vfs.Stat{}, unix.EOPNOTSUPP
	}
	switch p.Mount.Type {
	case "proc", "sysfs", "cgroup2", "mqueue", "devpts":
		return vfs.Stat{}, unix.EOPNOTSUPP
	}
	st, err := p.Dentry.Inode().Stat()
	if err != nil {
		return st, err
	}
	if st.Type() != unix.S_IFREG && st.Type() != unix.S_IFDIR {
		return st, unix.EOPNOTSUPP
	}
	return st, nil
}

// fileAttrUsize checks the size argument of file_getattr and
// file_setattr.
func fileAttrUsize(usize uint64) error {
	switch {
	case usize > 4096:
		return unix.E2BIG
	case usize < fileAttrSize:
		return unix.EINVAL
	}
	return nil
}

// FileGetattr implements Linux syscall file_getattr(2) (Linux 6.17): the
// sandbox keeps no file flags, extent size hints or project ids, so every
// file that has attributes answers none, as a tmpfs file that was never
// given any; the bytes past the known ones are zeroed.
func FileGetattr(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a.Uint(4)&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return 0, unix.EINVAL
	}
	if err := fileAttrUsize(a[3]); err != nil {
		return 0, err
	}
	p, err := fileAttrAt(t, a.Int(0), a.Ptr(1), a.Uint(4))
	if err != nil {
		return 0, err
	}
	if _, err := fileAttrStat(p); err != nil {
		return 0, err
	}
	_, err = t.CopyOut(a.Ptr(2), make([]byte, a[3]))
	return 0, err
}

// FileSetattr implements Linux syscall file_setattr(2) with Linux's
// checks in order: unknown xflags EINVAL, a file without attributes
// EOPNOTSUPP, a read-only mount EROFS, a caller that is not the owner (or
// CAP_FOWNER) EPERM, FS_XFLAG_IMMUTABLE or FS_XFLAG_APPEND without
// CAP_LINUX_IMMUTABLE EPERM, an extent size flag on the wrong file type
// EINVAL. Having none to keep, it takes only what changes nothing (no
// flags, no hints, project 0) and answers EOPNOTSUPP to the rest, as
// tmpfs does to hints and project ids.
func FileSetattr(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := a.Uint(4)
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return 0, unix.EINVAL
	}
	if err := fileAttrUsize(a[3]); err != nil {
		return 0, err
	}
	b, err := copyInExtensible(t, a.Ptr(2), a[3], fileAttrSize)
	if err != nil {
		return 0, err
	}
	le := binary.LittleEndian
	xflags := le.Uint64(b)
	extSize, projID, cowExtSize := le.Uint32(b[8:]), le.Uint32(b[16:]), le.Uint32(b[20:])
	if xflags&^xflagsMask != 0 {
		return 0, unix.EINVAL
	}
	p, err := fileAttrAt(t, a.Int(0), a.Ptr(1), flags)
	if err != nil {
		return 0, err
	}
	st, err := fileAttrStat(p)
	if err != nil {
		return 0, err
	}
	if p.Mount.Flags&unix.MS_RDONLY != 0 {
		return 0, unix.EROFS
	}
	c := t.FSCreds()
	if st.UID != c.FSUID && !c.CapableOver(&st, unix.CAP_FOWNER) {
		return 0, unix.EPERM
	}
	if xflags&(xflagImmutable|xflagAppend) != 0 && !c.Capable(unix.CAP_LINUX_IMMUTABLE) {
		return 0, unix.EPERM
	}
	if xflags&xflagExtSzInherit != 0 && st.Type() != unix.S_IFDIR ||
		xflags&xflagExtSize != 0 && st.Type() != unix.S_IFREG {
		return 0, unix.EINVAL
	}
	// Hints of zero turn their flags off; the read-only flag is ignored.
	if extSize == 0 {
		xflags &^= xflagExtSize | xflagExtSzInherit
	}
	if cowExtSize == 0 {
		xflags &^= xflagCowExtSize
	}
	xflags &^= xflagHasAttr
	if xflags != 0 || extSize != 0 || projID != 0 || cowExtSize != 0 {
		return 0, unix.EOPNOTSUPP
	}
	return 0, nil
}
