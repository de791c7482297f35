package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Fstat implements Linux syscall fstat(2).
func Fstat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := t.FDs().Get(a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return 0, copyOutStat(t, a.Ptr(1), &st)
}

// Stat implements Linux syscall stat(2).
func Stat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return fstatat(t, unix.AT_FDCWD, a.Ptr(0), a.Ptr(1), 0)
}

// Lstat implements Linux syscall lstat(2).
func Lstat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return fstatat(t, unix.AT_FDCWD, a.Ptr(0), a.Ptr(1), unix.AT_SYMLINK_NOFOLLOW)
}

// Newfstatat implements Linux syscall newfstatat(2).
func Newfstatat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return fstatat(t, a.Int(0), a.Ptr(1), a.Ptr(2), int(a.Int(3)))
}

func fstatat(t *kernel.Task, dirfd int32, pathAddr, statAddr uintptr, flags int) (uintptr, error) {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH|unix.AT_NO_AUTOMOUNT) != 0 {
		return 0, unix.EINVAL
	}
	st, err := statAt(t, dirfd, pathAddr, flags)
	if err != nil {
		return 0, err
	}
	return 0, copyOutStat(t, statAddr, &st)
}

// statAt stats a path, or with AT_EMPTY_PATH and "" the open file at dirfd.
// The path is read once: another thread may change it meanwhile, and a
// second read that found "" would look up a file outside the tree (a pipe),
// which has no dentry.
func statAt(t *kernel.Task, dirfd int32, pathAddr uintptr, flags int) (vfs.Stat, error) {
	name, err := copyInPath(t, pathAddr)
	if err != nil {
		return vfs.Stat{}, err
	}
	if name == "" && flags&unix.AT_EMPTY_PATH != 0 && dirfd != unix.AT_FDCWD {
		f, err := t.FDs().Get(dirfd)
		if err != nil {
			return vfs.Stat{}, err
		}
		defer f.DecRef()
		return f.Stat()
	}
	p, err := lookupNameAt(t, dirfd, name, flags&unix.AT_SYMLINK_NOFOLLOW == 0, flags)
	if err != nil {
		return vfs.Stat{}, err
	}
	return p.Dentry.Inode().Stat()
}

// copyOutStat writes a struct stat (x86-64 layout, 144 bytes).
func copyOutStat(t *kernel.Task, addr uintptr, st *vfs.Stat) error {
	var b [144]byte
	le := binary.LittleEndian
	le.PutUint64(b[0:], st.Dev)
	le.PutUint64(b[8:], st.Ino)
	le.PutUint64(b[16:], st.Nlink)
	le.PutUint32(b[24:], st.Mode)
	c := t.Creds() // the owner as the caller's user namespace shows it
	le.PutUint32(b[28:], c.UIDOf(st.UID))
	le.PutUint32(b[32:], c.GIDOf(st.GID))
	le.PutUint64(b[40:], st.Rdev)
	le.PutUint64(b[48:], uint64(st.Size))
	le.PutUint64(b[56:], uint64(st.Blksize))
	le.PutUint64(b[64:], uint64(st.Blocks))
	for i, ts := range []unix.Timespec{st.Atime, st.Mtime, st.Ctime} {
		le.PutUint64(b[72+16*i:], uint64(ts.Sec))
		le.PutUint64(b[80+16*i:], uint64(ts.Nsec))
	}
	_, err := t.CopyOut(addr, b[:])
	return err
}

// atStatxSyncType is AT_STATX_SYNC_TYPE, the two bits of statx's sync mode.
const atStatxSyncType = unix.AT_STATX_FORCE_SYNC | unix.AT_STATX_DONT_SYNC

// Statx implements Linux syscall statx(2). Every basic field is filled,
// whatever the mask asks, as Linux may do; birth time is not reported.
func Statx(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	dirfd, pathAddr, flags, mask, addr := a.Int(0), a.Ptr(1), int(a.Int(2)), a.Uint(3), a.Ptr(4)
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH|unix.AT_NO_AUTOMOUNT|atStatxSyncType) != 0 ||
		flags&atStatxSyncType == atStatxSyncType || mask&unix.STATX__RESERVED != 0 {
		return 0, unix.EINVAL
	}
	st, err := statAt(t, dirfd, pathAddr, flags)
	if err != nil {
		return 0, err
	}
	var b [256]byte
	le := binary.LittleEndian
	le.PutUint32(b[0:], unix.STATX_BASIC_STATS)
	le.PutUint32(b[4:], uint32(st.Blksize))
	le.PutUint32(b[16:], uint32(st.Nlink))
	le.PutUint32(b[20:], t.Creds().UIDOf(st.UID))
	le.PutUint32(b[24:], t.Creds().GIDOf(st.GID))
	le.PutUint16(b[28:], uint16(st.Mode))
	le.PutUint64(b[32:], st.Ino)
	le.PutUint64(b[40:], uint64(st.Size))
	le.PutUint64(b[48:], uint64(st.Blocks))
	for off, ts := range map[int]unix.Timespec{64: st.Atime, 96: st.Ctime, 112: st.Mtime} {
		le.PutUint64(b[off:], uint64(ts.Sec))
		le.PutUint32(b[off+8:], uint32(ts.Nsec))
	}
	le.PutUint32(b[128:], unix.Major(st.Rdev))
	le.PutUint32(b[132:], unix.Minor(st.Rdev))
	le.PutUint32(b[136:], unix.Major(st.Dev))
	le.PutUint32(b[140:], unix.Minor(st.Dev))
	_, err = t.CopyOut(addr, b[:])
	return 0, err
}
