package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// The extended attribute calls, each in three forms: by path following a
// final symlink, by path not following it (l*), and by descriptor (f*).

// xattrPath is the file of a path-form call.
func xattrPath(t *kernel.Task, pathAddr uintptr, follow bool) (vfs.XattrTarget, error) {
	p, err := lookupAt(t, unix.AT_FDCWD, pathAddr, follow, 0)
	if err != nil {
		return vfs.XattrTarget{}, err
	}
	return vfs.XattrTargetOf(p)
}

// xattrFile is the file of a descriptor-form call; one with no name in the
// tree (a pipe, the sandbox's stdio) keeps no attributes.
func xattrFile(t *kernel.Task, fd int32) (vfs.XattrTarget, error) {
	f, err := fileAt(t, fd)
	if err != nil {
		return vfs.XattrTarget{}, err
	}
	defer f.DecRef()
	if f.Path().Dentry != nil {
		return vfs.XattrTargetOf(f.Path())
	}
	st, err := f.Stat()
	return vfs.XattrTarget{Stat: st}, err
}

// xattrName copies an attribute name in: ERANGE past XATTR_NAME_MAX.
func xattrName(t *kernel.Task, addr uintptr) (string, error) {
	name, err := t.CopyInString(addr, linuxabi.XATTR_NAME_MAX+1)
	if err == unix.ENAMETOOLONG {
		return "", unix.ERANGE
	}
	return name, err
}

func setxattr(t *kernel.Task, p vfs.XattrTarget, nameAddr, valueAddr uintptr, size uint64, flags int) (uintptr, error) {
	name, err := xattrName(t, nameAddr)
	if err != nil {
		return 0, err
	}
	if size > linuxabi.XATTR_SIZE_MAX {
		return 0, unix.E2BIG
	}
	value := make([]byte, size)
	if _, err := t.CopyIn(valueAddr, value); err != nil {
		return 0, err
	}
	return 0, vfs.SetXattr(fsCreds(t), p, name, value, flags)
}

func getxattr(t *kernel.Task, p vfs.XattrTarget, nameAddr, buf uintptr, size uint64) (uintptr, error) {
	name, err := xattrName(t, nameAddr)
	if err != nil {
		return 0, err
	}
	v, err := vfs.GetXattr(fsCreds(t), p, name)
	if err != nil {
		return 0, err
	}
	return copyOutSized(t, buf, size, v)
}

// copyOutSized answers a get or list call: with size 0 the length the
// answer needs, ERANGE if it does not fit size, else the answer.
func copyOutSized(t *kernel.Task, addr uintptr, size uint64, v []byte) (uintptr, error) {
	switch {
	case size == 0:
		return uintptr(len(v)), nil
	case uint64(len(v)) > size:
		return 0, unix.ERANGE
	}
	if _, err := t.CopyOut(addr, v); err != nil {
		return 0, err
	}
	return uintptr(len(v)), nil
}

func listxattr(t *kernel.Task, p vfs.XattrTarget, buf uintptr, size uint64) (uintptr, error) {
	v, err := vfs.ListXattr(fsCreds(t), p)
	if err != nil {
		return 0, err
	}
	return copyOutSized(t, buf, size, v)
}

func removexattr(t *kernel.Task, p vfs.XattrTarget, nameAddr uintptr) (uintptr, error) {
	name, err := xattrName(t, nameAddr)
	if err != nil {
		return 0, err
	}
	return 0, vfs.RemoveXattr(fsCreds(t), p, name)
}

// xattrOp is one of the four operations with its file resolved: the
// arguments after the file's are those of the path and fd forms.
type xattrOp func(t *kernel.Task, p vfs.XattrTarget, a *arch.SyscallArgs) (uintptr, error)

var (
	setxattrOp xattrOp = func(t *kernel.Task, p vfs.XattrTarget, a *arch.SyscallArgs) (uintptr, error) {
		return setxattr(t, p, a.Ptr(1), a.Ptr(2), a[3], int(a.Int(4)))
	}
	getxattrOp xattrOp = func(t *kernel.Task, p vfs.XattrTarget, a *arch.SyscallArgs) (uintptr, error) {
		return getxattr(t, p, a.Ptr(1), a.Ptr(2), a[3])
	}
	listxattrOp xattrOp = func(t *kernel.Task, p vfs.XattrTarget, a *arch.SyscallArgs) (uintptr, error) {
		return listxattr(t, p, a.Ptr(1), a[2])
	}
	removexattrOp xattrOp = func(t *kernel.Task, p vfs.XattrTarget, a *arch.SyscallArgs) (uintptr, error) {
		return removexattr(t, p, a.Ptr(1))
	}
)

// byPath and byFD make the three forms of an attribute call.
func byPath(follow bool, fn xattrOp) Handler {
	return func(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
		p, err := xattrPath(t, a.Ptr(0), follow)
		if err != nil {
			return 0, err
		}
		return fn(t, p, a)
	}
}

func byFD(fn xattrOp) Handler {
	return func(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
		p, err := xattrFile(t, a.Int(0))
		if err != nil {
			return 0, err
		}
		return fn(t, p, a)
	}
}

// The *xattrat calls (Linux 6.13) name the file as the *at calls do:
// dirfd, a path and AT_SYMLINK_NOFOLLOW or AT_EMPTY_PATH; an empty (or
// NULL) path with AT_EMPTY_PATH is dirfd's file, as the f* forms take it
// (an O_PATH descriptor is EBADF), or the working directory for
// AT_FDCWD.

// xattrAtFlags checks the at_flags argument of the *xattrat calls.
func xattrAtFlags(flags uint32) error {
	if flags&^(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		return unix.EINVAL
	}
	return nil
}

// xattrAt resolves the file of an *xattrat call.
func xattrAt(t *kernel.Task, dirfd int32, pathAddr uintptr, flags uint32) (vfs.XattrTarget, error) {
	name := ""
	if pathAddr != 0 || flags&unix.AT_EMPTY_PATH == 0 {
		var err error
		if name, err = copyInPath(t, pathAddr); err != nil {
			return vfs.XattrTarget{}, err
		}
	}
	if name == "" && flags&unix.AT_EMPTY_PATH != 0 && dirfd >= 0 {
		return xattrFile(t, dirfd)
	}
	p, err := lookupNameAt(t, dirfd, name, flags&unix.AT_SYMLINK_NOFOLLOW == 0, int(flags))
	if err != nil {
		return vfs.XattrTarget{}, err
	}
	return vfs.XattrTargetOf(p)
}

// xattrArgs is struct xattr_args: the value's address, its size and the
// call's flags (XATTR_CREATE, XATTR_REPLACE; 0 for getxattrat).
type xattrArgs struct {
	Value       uint64
	Size, Flags uint32
}

// copyInXattrArgs reads a struct xattr_args of usize bytes.
func copyInXattrArgs(t *kernel.Task, addr uintptr, usize uint64) (xattrArgs, error) {
	b, err := copyInExtensible(t, addr, usize, 16)
	if err != nil {
		return xattrArgs{}, err
	}
	le := binary.LittleEndian
	return xattrArgs{Value: le.Uint64(b), Size: le.Uint32(b[8:]), Flags: le.Uint32(b[12:])}, nil
}

// Setxattrat implements Linux syscall setxattrat(2).
func Setxattrat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if err := xattrAtFlags(a.Uint(2)); err != nil {
		return 0, err
	}
	args, err := copyInXattrArgs(t, a.Ptr(4), a[5])
	if err != nil {
		return 0, err
	}
	p, err := xattrAt(t, a.Int(0), a.Ptr(1), a.Uint(2))
	if err != nil {
		return 0, err
	}
	return setxattr(t, p, a.Ptr(3), uintptr(args.Value), uint64(args.Size), int(args.Flags))
}

// Getxattrat implements Linux syscall getxattrat(2): the flags of its
// struct xattr_args must be 0.
func Getxattrat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if err := xattrAtFlags(a.Uint(2)); err != nil {
		return 0, err
	}
	args, err := copyInXattrArgs(t, a.Ptr(4), a[5])
	if err != nil {
		return 0, err
	}
	if args.Flags != 0 {
		return 0, unix.EINVAL
	}
	p, err := xattrAt(t, a.Int(0), a.Ptr(1), a.Uint(2))
	if err != nil {
		return 0, err
	}
	return getxattr(t, p, a.Ptr(3), uintptr(args.Value), uint64(args.Size))
}

// Listxattrat implements Linux syscall listxattrat(2).
func Listxattrat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if err := xattrAtFlags(a.Uint(2)); err != nil {
		return 0, err
	}
	p, err := xattrAt(t, a.Int(0), a.Ptr(1), a.Uint(2))
	if err != nil {
		return 0, err
	}
	return listxattr(t, p, a.Ptr(3), a[4])
}

// Removexattrat implements Linux syscall removexattrat(2).
func Removexattrat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if err := xattrAtFlags(a.Uint(2)); err != nil {
		return 0, err
	}
	p, err := xattrAt(t, a.Int(0), a.Ptr(1), a.Uint(2))
	if err != nil {
		return 0, err
	}
	return removexattr(t, p, a.Ptr(3))
}

// The handlers, for the table.
var (
	Setxattr     = byPath(true, setxattrOp)
	Lsetxattr    = byPath(false, setxattrOp)
	Fsetxattr    = byFD(setxattrOp)
	Getxattr     = byPath(true, getxattrOp)
	Lgetxattr    = byPath(false, getxattrOp)
	Fgetxattr    = byFD(getxattrOp)
	Listxattr    = byPath(true, listxattrOp)
	Llistxattr   = byPath(false, listxattrOp)
	Flistxattr   = byFD(listxattrOp)
	Removexattr  = byPath(true, removexattrOp)
	Lremovexattr = byPath(false, removexattrOp)
	Fremovexattr = byFD(removexattrOp)
)
