package syscalls

import (
	"encoding/binary"

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
	return openAtResolve(t, dirfd, pathAddr, flags, mode, 0)
}

// openAtResolve is openAt with openat2's RESOLVE_* flags: with
// RESOLVE_IN_ROOT dirfd's directory is the walk's root, even for an
// absolute path; with RESOLVE_BENEATH the walk may not leave it.
func openAtResolve(t *kernel.Task, dirfd int32, pathAddr uintptr, flags int, mode uint32, resolve uint64) (uintptr, error) {
	name, err := copyInPath(t, pathAddr)
	if err != nil {
		return 0, err
	}
	if name == "" {
		return 0, unix.ENOENT
	}
	var start vfs.Path
	if name[0] != '/' || resolve&unix.RESOLVE_IN_ROOT != 0 {
		if start, err = dirPath(t, dirfd); err != nil {
			return 0, err
		}
	}
	res := t.Resolver(start)
	res.Restrict = resolve
	if resolve&unix.RESOLVE_BENEATH != 0 {
		res.Beneath = start
	}
	if resolve&unix.RESOLVE_IN_ROOT != 0 {
		res.Root = start
	}
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

// Openat2 implements Linux syscall openat2(2): openat with a struct
// open_how, whose every field is checked, and RESOLVE_* flags that
// restrict the path walk. RESOLVE_CACHED lookups are never refused for
// want of a cached entry (Linux answers EAGAIN when it has none, and
// callers then retry without it).
func Openat2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	b, err := copyInExtensible(t, a.Ptr(2), a[3], openHowSize)
	if err != nil {
		return 0, err
	}
	le := binary.LittleEndian
	how := openHow{Flags: le.Uint64(b), Mode: le.Uint64(b[8:]), Resolve: le.Uint64(b[16:])}
	if err := how.check(); err != nil {
		return 0, err
	}
	return openAtResolve(t, a.Int(0), a.Ptr(1), int(how.Flags), uint32(how.Mode), how.Resolve)
}

// openHow is struct open_how (24 bytes in its first version).
type openHow struct{ Flags, Mode, Resolve uint64 }

const openHowSize = 24

// resolveCached is RESOLVE_CACHED (Linux 5.12), which unix lacks.
const resolveCached = 0x20

// validOpenFlags are the flags openat2 takes (Linux's VALID_OPEN_FLAGS);
// others are EINVAL, where open and openat ignore them.
const validOpenFlags = unix.O_ACCMODE | unix.O_CREAT | unix.O_EXCL | unix.O_NOCTTY | unix.O_TRUNC |
	unix.O_APPEND | unix.O_NONBLOCK | unix.O_SYNC | unix.O_DSYNC | unix.O_ASYNC | unix.O_DIRECT |
	linuxabi.O_LARGEFILE | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NOATIME | unix.O_CLOEXEC |
	unix.O_PATH | unix.O_TMPFILE

// check is Linux's build_open_flags for openat2, in its order: unknown
// flags or resolve flags, both scopes, a mode without O_CREAT or
// O_TMPFILE (or one past 07777 with them), O_DIRECTORY with O_CREAT,
// O_TMPFILE without O_DIRECTORY or write access, O_PATH with flags other
// than O_DIRECTORY, O_NOFOLLOW and O_CLOEXEC: EINVAL; RESOLVE_CACHED with
// O_CREAT, O_TRUNC or O_TMPFILE: EAGAIN.
func (h openHow) check() error {
	const validResolve = unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_SYMLINKS |
		unix.RESOLVE_BENEATH | unix.RESOLVE_IN_ROOT | resolveCached
	const pathFlags = unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_PATH | unix.O_CLOEXEC
	flags := h.Flags
	willCreate := flags&(unix.O_CREAT|oTmpfileBit) != 0
	acc := flags & unix.O_ACCMODE
	switch {
	case flags&^validOpenFlags != 0, h.Resolve&^validResolve != 0:
		return unix.EINVAL
	case h.Resolve&unix.RESOLVE_BENEATH != 0 && h.Resolve&unix.RESOLVE_IN_ROOT != 0:
		return unix.EINVAL
	case willCreate && h.Mode&^0o7777 != 0, !willCreate && h.Mode != 0:
		return unix.EINVAL
	case flags&(unix.O_DIRECTORY|unix.O_CREAT) == unix.O_DIRECTORY|unix.O_CREAT:
		return unix.EINVAL
	case flags&oTmpfileBit != 0 && (flags&unix.O_DIRECTORY == 0 || acc == unix.O_RDONLY):
		return unix.EINVAL
	case flags&unix.O_PATH != 0 && flags&^pathFlags != 0:
		return unix.EINVAL
	case h.Resolve&resolveCached != 0 && flags&(unix.O_TRUNC|unix.O_CREAT|oTmpfileBit) != 0:
		return unix.EAGAIN
	}
	return nil
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
	st, err := vfs.AccessStat(ino) // only the type and the permission bits are read
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
	llDenied, err := creds.Landlock.LandlockOpen(p, landlockOpenRights(st.Type(), acc), isDevice)
	if err != nil {
		return nil, err
	}
	if flags&unix.O_TRUNC != 0 && st.Type() == unix.S_IFREG && llDenied&unix.LANDLOCK_ACCESS_FS_TRUNCATE != 0 {
		return nil, unix.EACCES
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
	f.SetLandlockDenied(llDenied)
	if flags&unix.O_TRUNC != 0 && st.Type() == unix.S_IFREG {
		f.NotifyTruncated()
	}
	return f, nil
}

// landlockOpenRights are the Landlock rights opening a file of type typ
// with access mode acc needs: reading a directory, or reading and writing
// a file as the mode asks (O_ACCMODE itself asks for neither).
func landlockOpenRights(typ uint32, acc int) uint64 {
	switch {
	case acc == unix.O_ACCMODE:
		return 0
	case typ == unix.S_IFDIR:
		return unix.LANDLOCK_ACCESS_FS_READ_DIR
	case acc == unix.O_RDONLY:
		return unix.LANDLOCK_ACCESS_FS_READ_FILE
	case acc == unix.O_WRONLY:
		return unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	}
	return unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE
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

// CloseRange implements Linux syscall close_range(2). With
// CLOSE_RANGE_UNSHARE the task first takes a table of its own, as
// unshare(CLONE_FILES) gives, so the range is closed (or made
// close-on-exec) there alone and the tasks it shared the table with keep
// their descriptors as they were.
func CloseRange(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	first, last, flags := a.Uint(0), a.Uint(1), a.Uint(2)
	if flags&^(unix.CLOSE_RANGE_UNSHARE|unix.CLOSE_RANGE_CLOEXEC) != 0 || first > last {
		return 0, unix.EINVAL
	}
	if flags&unix.CLOSE_RANGE_UNSHARE != 0 {
		if err := t.Unshare(unix.CLONE_FILES); err != nil {
			return 0, err
		}
	}
	t.FDs().CloseRange(first, last, flags&unix.CLOSE_RANGE_CLOEXEC != 0)
	return 0, nil
}
