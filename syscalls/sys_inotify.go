package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/inotify"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// inotifyBits are the bits inotify_add_watch's mask may have (Linux's
// ALL_INOTIFY_BITS): the events, those only the kernel reports, and the
// flags.
const inotifyBits = unix.IN_ALL_EVENTS | unix.IN_UNMOUNT | unix.IN_Q_OVERFLOW | unix.IN_IGNORED |
	unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW | unix.IN_EXCL_UNLINK | unix.IN_MASK_ADD | unix.IN_MASK_CREATE |
	unix.IN_ISDIR | unix.IN_ONESHOT

// InotifyInit implements Linux syscall inotify_init(2).
func InotifyInit(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return installAnon(t, inotify.New(inotify.MaxQueuedEvents), unix.O_RDONLY, false)
}

// InotifyInit1 implements Linux syscall inotify_init1(2).
func InotifyInit1(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := int(a.Int(0))
	if flags&^(unix.IN_CLOEXEC|unix.IN_NONBLOCK) != 0 {
		return 0, unix.EINVAL
	}
	return installAnon(t, inotify.New(inotify.MaxQueuedEvents), unix.O_RDONLY|flags&unix.IN_NONBLOCK, flags&unix.IN_CLOEXEC != 0)
}

// inotifyFile returns the instance open at fd: EBADF for no file, EINVAL
// for another kind.
func inotifyFile(t *kernel.Task, fd int32) (*inotify.Instance, *vfs.File, error) {
	f, err := t.FDs().Get(fd)
	if err != nil {
		return nil, nil, err
	}
	in, ok := f.Impl().(*inotify.Instance)
	if !ok {
		f.DecRef()
		return nil, nil, unix.EINVAL
	}
	return in, f, nil
}

// InotifyAddWatch implements Linux syscall inotify_add_watch(2).
func InotifyAddWatch(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	fd, mask := a.Int(0), a.Uint(2)
	if mask&^inotifyBits != 0 || mask == 0 {
		return 0, unix.EINVAL
	}
	in, f, err := inotifyFile(t, fd)
	if err != nil {
		if err == unix.EINVAL && mask&unix.IN_MASK_ADD != 0 && mask&unix.IN_MASK_CREATE != 0 {
			return 0, unix.EINVAL
		}
		return 0, err
	}
	defer f.DecRef()
	if mask&unix.IN_MASK_ADD != 0 && mask&unix.IN_MASK_CREATE != 0 {
		return 0, unix.EINVAL
	}
	name, err := copyInPath(t, a.Ptr(1))
	if err != nil {
		return 0, err
	}
	if name == "" {
		return 0, unix.ENOENT
	}
	var start vfs.Path
	if name[0] != '/' {
		if start, err = dirPath(t, unix.AT_FDCWD); err != nil {
			return 0, err
		}
	}
	p, err := t.Resolver(start).Lookup(name, mask&unix.IN_DONT_FOLLOW == 0)
	if err != nil {
		return 0, err
	}
	if mask&unix.IN_ONLYDIR != 0 && !p.Dentry.IsDir() {
		return 0, unix.ENOTDIR
	}
	st, err := p.Dentry.Inode().Stat()
	if err != nil {
		return 0, err
	}
	if err := fsCreds(t).Permission(&st, vfs.MayRead); err != nil {
		return 0, err
	}
	id, err := vfs.WatchID(p)
	if err != nil {
		return 0, err
	}
	wd, err := vfs.AddWatch(in, id, mask)
	return retErr(uintptr(wd), err)
}

// InotifyRmWatch implements Linux syscall inotify_rm_watch(2).
func InotifyRmWatch(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	in, f, err := inotifyFile(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return 0, vfs.RemoveWatch(in, a.Int(1))
}
