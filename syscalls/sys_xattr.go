package syscalls

import (
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

func setxattr(t *kernel.Task, p vfs.XattrTarget, a *arch.SyscallArgs) (uintptr, error) {
	name, err := xattrName(t, a.Ptr(1))
	if err != nil {
		return 0, err
	}
	size := a[3]
	if size > linuxabi.XATTR_SIZE_MAX {
		return 0, unix.E2BIG
	}
	value := make([]byte, size)
	if _, err := t.CopyIn(a.Ptr(2), value); err != nil {
		return 0, err
	}
	return 0, vfs.SetXattr(fsCreds(t), p, name, value, int(a.Int(4)))
}

func getxattr(t *kernel.Task, p vfs.XattrTarget, a *arch.SyscallArgs) (uintptr, error) {
	name, err := xattrName(t, a.Ptr(1))
	if err != nil {
		return 0, err
	}
	v, err := vfs.GetXattr(fsCreds(t), p, name)
	if err != nil {
		return 0, err
	}
	return copyOutSized(t, a.Ptr(2), a[3], v)
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

func listxattr(t *kernel.Task, p vfs.XattrTarget, a *arch.SyscallArgs) (uintptr, error) {
	v, err := vfs.ListXattr(fsCreds(t), p)
	if err != nil {
		return 0, err
	}
	return copyOutSized(t, a.Ptr(1), a[2], v)
}

func removexattr(t *kernel.Task, p vfs.XattrTarget, a *arch.SyscallArgs) (uintptr, error) {
	name, err := xattrName(t, a.Ptr(1))
	if err != nil {
		return 0, err
	}
	return 0, vfs.RemoveXattr(fsCreds(t), p, name)
}

// byPath and byFD make the three forms of an attribute call.
func byPath(follow bool, fn func(*kernel.Task, vfs.XattrTarget, *arch.SyscallArgs) (uintptr, error)) Handler {
	return func(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
		p, err := xattrPath(t, a.Ptr(0), follow)
		if err != nil {
			return 0, err
		}
		return fn(t, p, a)
	}
}

func byFD(fn func(*kernel.Task, vfs.XattrTarget, *arch.SyscallArgs) (uintptr, error)) Handler {
	return func(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
		p, err := xattrFile(t, a.Int(0))
		if err != nil {
			return 0, err
		}
		return fn(t, p, a)
	}
}

// The handlers, for the table.
var (
	Setxattr     = byPath(true, setxattr)
	Lsetxattr    = byPath(false, setxattr)
	Fsetxattr    = byFD(setxattr)
	Getxattr     = byPath(true, getxattr)
	Lgetxattr    = byPath(false, getxattr)
	Fgetxattr    = byFD(getxattr)
	Listxattr    = byPath(true, listxattr)
	Llistxattr   = byPath(false, listxattr)
	Flistxattr   = byFD(listxattr)
	Removexattr  = byPath(true, removexattr)
	Lremovexattr = byPath(false, removexattr)
	Fremovexattr = byFD(removexattr)
)
