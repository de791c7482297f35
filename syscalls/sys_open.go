package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/devfs"
	"github.com/moat-sandbox/moat/sentry/fs/pipe"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// openFlags are the flags open(2) accepts; others are ignored, as Linux
// ignores unknown open flags.
const fileStatusFlags = unix.O_APPEND | unix.O_NONBLOCK | unix.O_DIRECT | unix.O_NOATIME |
	unix.O_SYNC | unix.O_DSYNC | unix.O_ASYNC

// Open implements Linux syscall open(2).
func Open(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return openAt(t, unix.AT_FDCWD, a.Ptr(0), int(a.Int(1)), a.Uint(2))
}

// Openat implements Linux syscall openat(2).
func Openat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return openAt(t, a.Int(0), a.Ptr(1), int(a.Int(2)), a.Uint(3))
}

// Creat implements Linux syscall creat(2).
func Creat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return openAt(t, unix.AT_FDCWD, a.Ptr(0), unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, a.Uint(1))
}

func openAt(t *kernel.Task, dirfd int32, pathAddr uintptr, flags int, mode uint32) (uintptr, error) {
	name, err := copyInPath(t, pathAddr)
	if err != nil {
		return 0, err
	}
	if name == "" {
		return 0, unix.ENOENT
	}
	var start vfs.Path
	if name[0] != '/' {
		if start, err = dirPath(t, dirfd); err != nil {
			return 0, err
		}
	}
	res := t.Resolver(start)
	var p vfs.Path
	created := false
	switch {
	case flags&oTmpfileBit != 0:
		p, err = tmpfileAt(t, res, name, flags, mode)
		created = err == nil
		flags &^= unix.O_TMPFILE // what is open is the new file, not a directory
	case flags&unix.O_CREAT == 0:
		p, err = res.Lookup(name, flags&unix.O_NOFOLLOW == 0)
	default:
		p, created, err = createAt(t, res, name, flags, mode)
	}
	if err != nil {
		return 0, err
	}
	f, err := openPath(t, &res.Creds, p, flags, created)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	fd, err := t.FDs().Install(f, 0, flags&unix.O_CLOEXEC != 0, nofile(t))
	return retErr(uintptr(fd), err)
}

// oTmpfileBit is __O_TMPFILE, which O_TMPFILE adds to O_DIRECTORY.
const oTmpfileBit = unix.O_TMPFILE &^ unix.O_DIRECTORY

// tmpfileAt makes an unnamed file in directory name, for open(O_TMPFILE):
// which must ask for writing, with O_DIRECTORY and without O_CREAT, as
// Linux's build_open_flags checks; with O_EXCL no link may name it later.
func tmpfileAt(t *kernel.Task, res vfs.Resolver, name string, flags int, mode uint32) (vfs.Path, error) {
	acc := flags & unix.O_ACCMODE
	if acc != unix.O_WRONLY && acc != unix.O_RDWR || flags&(unix.O_TMPFILE|unix.O_CREAT) != unix.O_TMPFILE {
		return vfs.Path{}, unix.EINVAL
	}
	dir, err := res.Lookup(name, true)
	if err != nil {
		return vfs.Path{}, err
	}
	return vfs.Tmpfile(fsCreds(t), dir, umasked(t, mode&0o7777), flags&unix.O_EXCL == 0)
}

// createAt resolves name for open(O_CREAT) and makes a regular file there
// if there is none: mode with the task's umask taken out, owned by the
// task's fsuid and fsgid (or the group of a setgid directory). created
// reports a new file, which open neither checks permissions on nor
// truncates, as on Linux.
func createAt(t *kernel.Task, res vfs.Resolver, name string, flags int, mode uint32) (p vfs.Path, created bool, err error) {
	if flags&unix.O_DIRECTORY != 0 {
		return vfs.Path{}, false, unix.EINVAL // refused since Linux 6.4
	}
	tg, err := res.LookupTarget(name)
	if err != nil {
		return vfs.Path{}, false, err
	}
	if tg.Slash {
		return vfs.Path{}, false, unix.EISDIR
	}
	excl := flags&unix.O_EXCL != 0
	for {
		// With O_EXCL a final symlink is not followed: it exists.
		p, tg, err := res.LookupCreate(name, !excl && flags&unix.O_NOFOLLOW == 0)
		if err != nil {
			return vfs.Path{}, false, err
		}
		if p.Dentry != nil {
			if excl {
				return vfs.Path{}, false, unix.EEXIST
			}
			return p, false, nil
		}
		if tg.Slash {
			// A dangling symlink to "name/".
			return vfs.Path{}, false, unix.EISDIR
		}
		p, err = vfs.Create(fsCreds(t), tg, umasked(t, mode&0o7777))
		if err == unix.EEXIST && !excl {
			continue // made meanwhile: open it
		}
		return p, err == nil, err
	}
}

// openPath opens an already resolved file with open(2)'s flags, checking
// access with the credentials it was resolved with; a file the call has
// just created is opened without permission checks.
func openPath(t *kernel.Task, creds *vfs.Creds, p vfs.Path, flags int, created bool) (*vfs.File, error) {
	ino := p.Dentry.Inode()
	st, err := ino.Stat()
	if err != nil {
		return nil, err
	}
	if flags&unix.O_PATH != 0 {
		return vfs.NewFile(pathFile{ino}, p, unix.O_PATH|flags&unix.O_NOFOLLOW), nil
	}
	if st.Type() == unix.S_IFLNK {
		return nil, unix.ELOOP
	}
	if flags&unix.O_DIRECTORY != 0 && st.Type() != unix.S_IFDIR {
		return nil, unix.ENOTDIR
	}
	acc := flags & unix.O_ACCMODE
	if st.Type() == unix.S_IFDIR && (acc != unix.O_RDONLY || flags&unix.O_CREAT != 0) {
		return nil, unix.EISDIR
	}
	if (acc != unix.O_RDONLY || flags&unix.O_TRUNC != 0) && p.Mount.Flags&unix.MS_RDONLY != 0 &&
		(st.Type() == unix.S_IFREG || st.Type() == unix.S_IFDIR) {
		return nil, unix.EROFS
	}
	isDevice := st.Type() == unix.S_IFCHR || st.Type() == unix.S_IFBLK
	if isDevice && p.Mount.Flags&unix.MS_NODEV != 0 {
		return nil, unix.EACCES // a nodev mount's device nodes do not open (may_open_dev)
	}
	if created {
		flags &^= unix.O_TRUNC
	}
	var want uint32
	if acc != unix.O_WRONLY {
		want |= vfs.MayRead
	}
	if acc != unix.O_RDONLY || flags&unix.O_TRUNC != 0 {
		want |= vfs.MayWrite
	}
	if !created {
		if err := creds.Permission(&st, want); err != nil {
			return nil, err
		}
	}
	var impl vfs.FileImpl
	if o, ok := ino.(vfs.ContextOpener); ok {
		impl, err = o.OpenContext(t, flags) // a pipe or host file reopened through /proc/<pid>/fd
	} else if st.Type() == unix.S_IFIFO {
		impl, err = pipe.OpenNamed(ino, t, flags) // the sentry's pipe, on any file system
	} else if st.Type() == unix.S_IFSOCK {
		err = unix.ENXIO // a socket is reached by connect, never by open (sock_no_open)
	} else if o, ok := ino.(kernel.TTYOpener); ok {
		impl, err = o.OpenTask(t, flags) // /dev/tty, a pty: the opener matters
	} else if isDevice {
		impl, err = devfs.OpenDevice(t, ino, flags) // a node mknod made, on any file system
	} else {
		impl, err = ino.Open(flags)
	}
	if err != nil {
		return nil, err
	}
	f := vfs.NewFile(impl, p, acc|flags&fileStatusFlags|linuxabi.O_LARGEFILE)
	if flags&unix.O_TRUNC != 0 && st.Type() == unix.S_IFREG {
		f.NotifyTruncated()
	}
	return f, nil
}

// pathFile is an O_PATH descriptor: it names a file without opening it.
type pathFile struct{ ino vfs.Inode }

func (pathFile) Read(*vfs.IOSeq, int64) (int, error)  { return 0, unix.EBADF }
func (pathFile) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EBADF }
func (f pathFile) Stat() (vfs.Stat, error)            { return f.ino.Stat() }
func (pathFile) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.EBADF
}
func (pathFile) Release() {}

// Close implements Linux syscall close(2).
func Close(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := t.FDs().Remove(a.Int(0))
	if err != nil {
		return 0, err
	}
	f.DecRef()
	return 0, nil
}

// CloseRange implements Linux syscall close_range(2).
func CloseRange(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	first, last, flags := a.Uint(0), a.Uint(1), a.Uint(2)
	if flags&^(unix.CLOSE_RANGE_UNSHARE|unix.CLOSE_RANGE_CLOEXEC) != 0 || first > last {
		return 0, unix.EINVAL
	}
	t.FDs().CloseRange(first, last, flags&unix.CLOSE_RANGE_CLOEXEC != 0)
	return 0, nil
}
