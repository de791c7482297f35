package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// fsCreds returns the credentials file operations check for t.
func fsCreds(t *kernel.Task) *vfs.Creds {
	c := t.FSCreds()
	return &c
}

// targetAt resolves the path at pathAddr, relative to dirfd, up to its last
// component: the name a call creates or removes.
func targetAt(t *kernel.Task, dirfd int32, pathAddr uintptr) (vfs.Target, error) {
	name, err := copyInPath(t, pathAddr)
	if err != nil {
		return vfs.Target{}, err
	}
	if name == "" {
		return vfs.Target{}, unix.ENOENT
	}
	var start vfs.Path
	if name[0] != '/' {
		if start, err = dirPath(t, dirfd); err != nil {
			return vfs.Target{}, err
		}
	}
	return t.Resolver(start).LookupTarget(name)
}

// umasked applies the task's umask to a new file's mode.
func umasked(t *kernel.Task, mode uint32) uint32 {
	return mode &^ t.FS().Umask()
}

// Mkdir implements Linux syscall mkdir(2).
func Mkdir(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return mkdirAt(t, unix.AT_FDCWD, a.Ptr(0), a.Uint(1))
}

// Mkdirat implements Linux syscall mkdirat(2).
func Mkdirat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return mkdirAt(t, a.Int(0), a.Ptr(1), a.Uint(2))
}

func mkdirAt(t *kernel.Task, dirfd int32, pathAddr uintptr, mode uint32) (uintptr, error) {
	tg, err := targetAt(t, dirfd, pathAddr)
	if err != nil {
		return 0, err
	}
	return 0, vfs.Mkdir(fsCreds(t), tg, umasked(t, mode&(0o777|unix.S_ISVTX)))
}

// Mknod implements Linux syscall mknod(2).
func Mknod(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return mknodAt(t, unix.AT_FDCWD, a.Ptr(0), a.Uint(1), a.Uint(2))
}

// Mknodat implements Linux syscall mknodat(2).
func Mknodat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return mknodAt(t, a.Int(0), a.Ptr(1), a.Uint(2), a.Uint(3))
}

func mknodAt(t *kernel.Task, dirfd int32, pathAddr uintptr, mode, dev uint32) (uintptr, error) {
	// The type is checked before the path is looked at (may_mknod).
	switch mode & unix.S_IFMT {
	case 0, unix.S_IFREG, unix.S_IFCHR, unix.S_IFBLK, unix.S_IFIFO, unix.S_IFSOCK:
	case unix.S_IFDIR:
		return 0, unix.EPERM
	default:
		return 0, unix.EINVAL
	}
	tg, err := targetAt(t, dirfd, pathAddr)
	if err != nil {
		return 0, err
	}
	// dev is the old 32-bit encoding: major in bits 8-19, minor in 0-7 and 20-31.
	rdev := unix.Mkdev(dev>>8&0xfff, dev&0xff|dev>>12&0xfff00)
	return 0, vfs.Mknod(fsCreds(t), tg, mode&unix.S_IFMT|umasked(t, mode&0o7777), rdev)
}

// Symlink implements Linux syscall symlink(2).
func Symlink(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return symlinkAt(t, a.Ptr(0), unix.AT_FDCWD, a.Ptr(1))
}

// Symlinkat implements Linux syscall symlinkat(2).
func Symlinkat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return symlinkAt(t, a.Ptr(0), a.Int(1), a.Ptr(2))
}

func symlinkAt(t *kernel.Task, targetAddr uintptr, dirfd int32, pathAddr uintptr) (uintptr, error) {
	target, err := copyInPath(t, targetAddr)
	if err != nil {
		return 0, err
	}
	if target == "" {
		return 0, unix.ENOENT
	}
	tg, err := targetAt(t, dirfd, pathAddr)
	if err != nil {
		return 0, err
	}
	return 0, vfs.Symlink(fsCreds(t), tg, target)
}

// Link implements Linux syscall link(2).
func Link(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return linkAt(t, unix.AT_FDCWD, a.Ptr(0), unix.AT_FDCWD, a.Ptr(1), 0)
}

// Linkat implements Linux syscall linkat(2). AT_EMPTY_PATH, which links
// the file open at olddirfd, needs CAP_DAC_READ_SEARCH, as on Linux.
func Linkat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return linkAt(t, a.Int(0), a.Ptr(1), a.Int(2), a.Ptr(3), int(a.Int(4)))
}

func linkAt(t *kernel.Task, olddirfd int32, oldAddr uintptr, newdirfd int32, newAddr uintptr, flags int) (uintptr, error) {
	if flags&^(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return 0, unix.EINVAL
	}
	c := fsCreds(t)
	if flags&unix.AT_EMPTY_PATH != 0 && !c.Capable(unix.CAP_DAC_READ_SEARCH) {
		flags &^= unix.AT_EMPTY_PATH // "" is then ENOENT
	}
	old, err := lookupAt(t, olddirfd, oldAddr, flags&unix.AT_SYMLINK_FOLLOW != 0, flags)
	if err != nil {
		return 0, err
	}
	tg, err := targetAt(t, newdirfd, newAddr)
	if err != nil {
		return 0, err
	}
	return 0, vfs.Link(c, old, tg)
}

// Unlink implements Linux syscall unlink(2).
func Unlink(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return unlinkAt(t, unix.AT_FDCWD, a.Ptr(0), 0)
}

// Rmdir implements Linux syscall rmdir(2).
func Rmdir(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return unlinkAt(t, unix.AT_FDCWD, a.Ptr(0), unix.AT_REMOVEDIR)
}

// Unlinkat implements Linux syscall unlinkat(2).
func Unlinkat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return unlinkAt(t, a.Int(0), a.Ptr(1), int(a.Int(2)))
}

func unlinkAt(t *kernel.Task, dirfd int32, pathAddr uintptr, flags int) (uintptr, error) {
	if flags&^unix.AT_REMOVEDIR != 0 {
		return 0, unix.EINVAL
	}
	tg, err := targetAt(t, dirfd, pathAddr)
	if err != nil {
		return 0, err
	}
	if flags&unix.AT_REMOVEDIR != 0 {
		return 0, vfs.Rmdir(fsCreds(t), tg)
	}
	return 0, vfs.Unlink(fsCreds(t), tg)
}

// Rename implements Linux syscall rename(2).
func Rename(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return renameAt(t, unix.AT_FDCWD, a.Ptr(0), unix.AT_FDCWD, a.Ptr(1), 0)
}

// Renameat implements Linux syscall renameat(2).
func Renameat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return renameAt(t, a.Int(0), a.Ptr(1), a.Int(2), a.Ptr(3), 0)
}

// Renameat2 implements Linux syscall renameat2(2).
func Renameat2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return renameAt(t, a.Int(0), a.Ptr(1), a.Int(2), a.Ptr(3), a.Uint(4))
}

func renameAt(t *kernel.Task, olddirfd int32, oldAddr uintptr, newdirfd int32, newAddr uintptr, flags uint32) (uintptr, error) {
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE|unix.RENAME_WHITEOUT) != 0 ||
		flags&unix.RENAME_EXCHANGE != 0 && flags&(unix.RENAME_NOREPLACE|unix.RENAME_WHITEOUT) != 0 {
		return 0, unix.EINVAL
	}
	from, err := targetAt(t, olddirfd, oldAddr)
	if err != nil {
		return 0, err
	}
	to, err := targetAt(t, newdirfd, newAddr)
	if err != nil {
		return 0, err
	}
	return 0, vfs.Rename(fsCreds(t), from, to, flags)
}
