package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Getdents64 implements Linux syscall getdents64(2).
func Getdents64(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return getdents(t, a, packDirent64)
}

// Getdents implements Linux syscall getdents(2), the old call whose
// struct linux_dirent has d_type in its last byte.
func Getdents(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return getdents(t, a, packDirent)
}

// getdents fills the caller's buffer with the directory's next entries,
// each packed by pack: as many as fit, EINVAL if not even the first does.
// Each record is copied out before the directory moves past it, so that a
// buffer that faults consumes nothing it did not hold: EFAULT if the first
// record faults, else the bytes written before, as Linux's filldir.
func getdents(t *kernel.Task, a *arch.SyscallArgs, pack func(d vfs.Dirent, next int64) []byte) (uintptr, error) {
	f, err := t.FDs().Get(a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	addr, size := a.Ptr(1), int(min(a[2], 1<<20))
	root, _ := t.FS().Get()
	written := 0
	var copyErr error
	tooSmall := false
	err = f.IterDirents(root, func(d vfs.Dirent, next int64) bool {
		rec := pack(d, next)
		if written+len(rec) > size {
			tooSmall = written == 0
			return false
		}
		if _, err := t.CopyOut(addr+uintptr(written), rec); err != nil {
			copyErr = err
			return false
		}
		written += len(rec)
		return true
	})
	switch {
	case err != nil:
		return 0, err
	case written > 0:
		return uintptr(written), nil
	case copyErr != nil:
		return 0, copyErr
	case tooSmall:
		return 0, unix.EINVAL
	}
	return 0, nil
}

// packDirent64 is a struct linux_dirent64: ino, off, reclen, type, name,
// NUL, padded to 8.
func packDirent64(d vfs.Dirent, next int64) []byte {
	reclen := (19 + len(d.Name) + 1 + 7) &^ 7
	rec := make([]byte, reclen)
	binary.LittleEndian.PutUint64(rec[0:], d.Ino)
	binary.LittleEndian.PutUint64(rec[8:], uint64(next))
	binary.LittleEndian.PutUint16(rec[16:], uint16(reclen))
	rec[18] = d.Type
	copy(rec[19:], d.Name)
	return rec
}

// packDirent is a struct linux_dirent: ino, off, reclen, name, NUL,
// padding to 8, and the type in the record's last byte (Linux's filldir
// makes room for the NUL and the type byte before it aligns).
func packDirent(d vfs.Dirent, next int64) []byte {
	reclen := (18 + len(d.Name) + 2 + 7) &^ 7
	rec := make([]byte, reclen)
	binary.LittleEndian.PutUint64(rec[0:], d.Ino)
	binary.LittleEndian.PutUint64(rec[8:], uint64(next))
	binary.LittleEndian.PutUint16(rec[16:], uint16(reclen))
	copy(rec[18:], d.Name)
	rec[reclen-1] = d.Type
	return rec
}

// Getcwd implements Linux syscall getcwd(2): ENOENT once the directory is
// removed.
func Getcwd(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	root, cwd := t.FS().Get()
	if cwd.Dentry.Deleted() {
		return 0, unix.ENOENT
	}
	name := vfs.PathName(cwd, root) + "\x00"
	if uint64(len(name)) > a[1] {
		return 0, unix.ERANGE
	}
	if _, err := t.CopyOut(a.Ptr(0), []byte(name)); err != nil {
		return 0, err
	}
	return uintptr(len(name)), nil
}

// Chdir implements Linux syscall chdir(2).
func Chdir(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	p, err := lookupAt(t, unix.AT_FDCWD, a.Ptr(0), true, 0)
	if err != nil {
		return 0, err
	}
	return 0, setCwd(t, p)
}

// Fchdir implements Linux syscall fchdir(2).
func Fchdir(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := t.FDs().Get(a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return 0, setCwd(t, f.Path())
}

func setCwd(t *kernel.Task, p vfs.Path) error {
	if !p.Dentry.IsDir() {
		return unix.ENOTDIR
	}
	st, err := vfs.AccessStat(p.Dentry.Inode())
	if err != nil {
		return err
	}
	c := t.FSCreds()
	if err := c.Permission(&st, vfs.MayExec); err != nil {
		return err
	}
	t.FS().SetCwd(p)
	return nil
}

// Readlink implements Linux syscall readlink(2).
func Readlink(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return readlinkAt(t, unix.AT_FDCWD, a.Ptr(0), a.Ptr(1), int64(a[2]))
}

// Readlinkat implements Linux syscall readlinkat(2).
func Readlinkat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return readlinkAt(t, a.Int(0), a.Ptr(1), a.Ptr(2), int64(a.Int(3)))
}

func readlinkAt(t *kernel.Task, dirfd int32, pathAddr, buf uintptr, size int64) (uintptr, error) {
	if size <= 0 {
		return 0, unix.EINVAL
	}
	name, err := copyInPath(t, pathAddr)
	if err != nil {
		return 0, err
	}
	p, err := lookupNameAt(t, dirfd, name, false, unix.AT_EMPTY_PATH)
	if err != nil {
		return 0, err
	}
	// An empty path reads the link open at dirfd (O_PATH|O_NOFOLLOW);
	// Linux answers ENOENT for any other file there, one outside the tree
	// (a pipe) included.
	if p.Dentry == nil {
		return 0, unix.ENOENT
	}
	target, err := vfs.Readlink(p.Dentry.Inode(), t)
	if err == unix.EINVAL && name == "" {
		return 0, unix.ENOENT
	}
	if err != nil {
		return 0, err
	}
	b := []byte(target)
	if int64(len(b)) > size {
		b = b[:size]
	}
	n, err := t.CopyOut(buf, b)
	return retErr(uintptr(n), err)
}

// Access implements Linux syscall access(2).
func Access(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return faccessat(t, unix.AT_FDCWD, a.Ptr(0), a.Uint(1), 0)
}

// Faccessat implements Linux syscall faccessat(2).
func Faccessat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return faccessat(t, a.Int(0), a.Ptr(1), a.Uint(2), 0)
}

// Faccessat2 implements Linux syscall faccessat2(2).
func Faccessat2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return faccessat(t, a.Int(0), a.Ptr(1), a.Uint(2), int(a.Int(3)))
}

func faccessat(t *kernel.Task, dirfd int32, pathAddr uintptr, mode uint32, flags int) (uintptr, error) {
	if mode&^(unix.R_OK|unix.W_OK|unix.X_OK) != 0 || flags&^(unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return 0, unix.EINVAL
	}
	// The real ids ask, unless AT_EACCESS: the path walk as well as the
	// final check.
	creds := t.AccessCreds()
	if flags&unix.AT_EACCESS != 0 {
		creds = t.FSCreds()
	}
	name, err := copyInPath(t, pathAddr)
	if err != nil {
		return 0, err
	}
	p, err := lookupNameAs(t, &creds, dirfd, name, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags)
	if err != nil {
		return 0, err
	}
	if p.Dentry == nil {
		// AT_EMPTY_PATH on a file outside the tree (a pipe): its own mode
		// answers, and no mount makes it read-only.
		st, err := statAt(t, dirfd, pathAddr, flags)
		if err != nil {
			return 0, err
		}
		return 0, creds.Permission(&st, mode)
	}
	st, err := p.Dentry.Inode().Stat()
	if err != nil {
		return 0, err
	}
	// As Linux's do_faccessat: writing is refused on a read-only mount
	// for the types it stores (a device or a FIFO writes elsewhere).
	switch st.Type() {
	case unix.S_IFREG, unix.S_IFDIR, unix.S_IFLNK:
		if mode&unix.W_OK != 0 && p.Mount.Flags&unix.MS_RDONLY != 0 {
			return 0, unix.EROFS
		}
	}
	return 0, creds.Permission(&st, mode)
}
