package syscalls

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// openFlags are the flags open(2) accepts; others are ignored, as Linux
// ignores unknown open flags.
const fileStatusFlags = unix.O_APPEND | unix.O_NONBLOCK | unix.O_DIRECT | unix.O_NOATIME |
	unix.O_SYNC | unix.O_DSYNC | unix.O_ASYNC

// oLargefile is O_LARGEFILE as the kernel reports it in F_GETFL on x86-64.
const oLargefile = 0o100000

// Open implements Linux syscall open(2).
func Open(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return openAt(t, atFDCWD, a.Ptr(0), int(a.Int(1)), a.Uint(2))
}

// Openat implements Linux syscall openat(2).
func Openat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return openAt(t, a.Int(0), a.Ptr(1), int(a.Int(2)), a.Uint(3))
}

// Creat implements Linux syscall creat(2).
func Creat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return openAt(t, atFDCWD, a.Ptr(0), unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, a.Uint(1))
}

func openAt(t *kernel.Task, dirfd int32, pathAddr uintptr, flags int, mode uint32) (uintptr, error) {
	name, err := copyInPath(t, pathAddr)
	if err != nil {
		return 0, err
	}
	if name == "" {
		return 0, unix.ENOENT
	}
	if flags&unix.O_TMPFILE == unix.O_TMPFILE {
		return 0, unix.EOPNOTSUPP
	}
	var start vfs.Path
	if name[0] != '/' {
		if start, err = dirPath(t, dirfd); err != nil {
			return 0, err
		}
	}
	res := t.Resolver(start)
	follow := flags&unix.O_NOFOLLOW == 0
	if flags&unix.O_CREAT != 0 {
		follow = follow && flags&unix.O_EXCL == 0
	}
	p, err := res.Lookup(name, follow)
	if err == unix.ENOENT && flags&unix.O_CREAT != 0 {
		return 0, createError(res, name)
	}
	if err != nil {
		return 0, err
	}
	if flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
		return 0, unix.EEXIST
	}
	f, err := openPath(t, p, flags)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	fd, err := t.FDs().Install(f, 0, flags&unix.O_CLOEXEC != 0, nofile(t))
	return retErr(uintptr(fd), err)
}

// createError says why name cannot be created: no file system is writable
// yet, so EROFS if its directory exists, else what looking that up says.
func createError(res vfs.Resolver, name string) error {
	trimmed := strings.TrimRight(name, "/")
	if trimmed != name {
		return unix.EISDIR
	}
	dir := "."
	if i := strings.LastIndexByte(trimmed, '/'); i >= 0 {
		dir = trimmed[:i+1]
	}
	if _, err := res.Lookup(dir, true); err != nil {
		return err
	}
	return unix.EROFS
}

// openPath opens an already resolved file with open(2)'s flags.
func openPath(t *kernel.Task, p vfs.Path, flags int) (*vfs.File, error) {
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
	var want uint32
	if acc != unix.O_WRONLY {
		want |= vfs.MayRead
	}
	if acc != unix.O_RDONLY || flags&unix.O_TRUNC != 0 {
		want |= vfs.MayWrite
	}
	c := t.Creds()
	c.Lock()
	err = vfs.MayAccess(&st, c.FSUID, append([]uint32{c.FSGID}, c.Groups...), want)
	c.Unlock()
	if err != nil {
		return nil, err
	}
	impl, err := ino.Open(flags)
	if err != nil {
		return nil, err
	}
	return vfs.NewFile(impl, p, acc|flags&fileStatusFlags|oLargefile), nil
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
	const unshare, cloexec = 1 << 1, 1 << 2
	first, last, flags := a.Uint(0), a.Uint(1), a.Uint(2)
	if flags&^(unshare|cloexec) != 0 || first > last {
		return 0, unix.EINVAL
	}
	t.FDs().CloseRange(first, last, flags&cloexec != 0)
	return 0, nil
}
