package syscalls

import (
	"encoding/binary"
	"math"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// copyInExtensible reads a struct that grows by versions (open_how,
// xattr_args) of usize bytes, as Linux's copy_struct_from_user and its
// callers: smaller than the first version (known bytes) EINVAL, larger
// than a page E2BIG, bytes past the known ones that are not zero E2BIG.
// It returns the known bytes, zero-filled past a shorter usize.
func copyInExtensible(t *kernel.Task, addr uintptr, usize uint64, known int) ([]byte, error) {
	return copyInExtensibleMin(t, addr, usize, known, known)
}

// copyInExtensibleMin is copyInExtensible for a struct whose first
// minimum bytes are all a caller must pass (EINVAL for fewer): a shorter
// struct than the known one is read with zeros after it.
func copyInExtensibleMin(t *kernel.Task, addr uintptr, usize uint64, minimum, known int) ([]byte, error) {
	switch {
	case usize < uint64(minimum):
		return nil, unix.EINVAL
	case usize > 4096:
		return nil, unix.E2BIG
	}
	b := make([]byte, max(usize, uint64(known)))
	if _, err := t.CopyIn(addr, b[:usize]); err != nil {
		return nil, err
	}
	for _, c := range b[known:] {
		if c != 0 {
			return nil, unix.E2BIG
		}
	}
	return b[:known], nil
}

// copyInPath reads a path argument.
func copyInPath(t *kernel.Task, addr uintptr) (string, error) {
	return t.CopyInString(addr, vfs.PathMax)
}

// dirPath returns where a path relative to dirfd starts: the working
// directory for AT_FDCWD, else the directory open at dirfd.
func dirPath(t *kernel.Task, dirfd int32) (vfs.Path, error) {
	if dirfd == unix.AT_FDCWD {
		_, cwd := t.FS().Get()
		return cwd, nil
	}
	f, err := t.FDs().Get(dirfd)
	if err != nil {
		return vfs.Path{}, err
	}
	defer f.DecRef()
	if !f.Path().Dentry.IsDir() {
		return vfs.Path{}, unix.ENOTDIR
	}
	return f.Path(), nil
}

// lookupAt resolves the path at pathAddr relative to dirfd. With
// AT_EMPTY_PATH in flags, an empty path names dirfd's own file, which may
// be one outside the tree (a pipe, an eventfd, the sandbox's stdio): its
// Path has no Dentry, and the caller must answer for it.
func lookupAt(t *kernel.Task, dirfd int32, pathAddr uintptr, follow bool, flags int) (vfs.Path, error) {
	name, err := copyInPath(t, pathAddr)
	if err != nil {
		return vfs.Path{}, err
	}
	return lookupNameAt(t, dirfd, name, follow, flags)
}

// lookupNameAt is lookupAt for a path already copied in.
func lookupNameAt(t *kernel.Task, dirfd int32, name string, follow bool, flags int) (vfs.Path, error) {
	return lookupNameAs(t, nil, dirfd, name, follow, flags)
}

// lookupNameAs is lookupNameAt with credentials other than the task's own
// file-system ones searching the directories (access(2)'s real ids); nil
// means the task's.
func lookupNameAs(t *kernel.Task, creds *vfs.Creds, dirfd int32, name string, follow bool, flags int) (vfs.Path, error) {
	var err error
	if name == "" && flags&unix.AT_EMPTY_PATH != 0 {
		if dirfd == unix.AT_FDCWD {
			_, cwd := t.FS().Get()
			return cwd, nil
		}
		f, err := t.FDs().Get(dirfd)
		if err != nil {
			return vfs.Path{}, err
		}
		defer f.DecRef()
		return f.Path(), nil
	}
	if name == "" {
		return vfs.Path{}, unix.ENOENT
	}
	var start vfs.Path
	if name[0] != '/' {
		if start, err = dirPath(t, dirfd); err != nil {
			return vfs.Path{}, err
		}
	}
	res := t.Resolver(start)
	if creds != nil {
		res.Creds = *creds
	}
	return res.Lookup(name, follow)
}

// copyOutStruct writes the bytes of *p to guest memory.
func copyOutStruct[T any](t *kernel.Task, addr uintptr, p *T) error {
	_, err := t.CopyOut(addr, unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p)))
	return err
}

// copyInStruct reads *p from guest memory.
func copyInStruct[T any](t *kernel.Task, addr uintptr, p *T) error {
	_, err := t.CopyIn(addr, unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p)))
	return err
}

// copyOutU32 and copyOutU64 write one integer.
func copyOutU32(t *kernel.Task, addr uintptr, v uint32) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	_, err := t.CopyOut(addr, b[:])
	return err
}

func copyOutU64(t *kernel.Task, addr uintptr, v uint64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	_, err := t.CopyOut(addr, b[:])
	return err
}

// copyInTimespec reads a struct timespec and checks it.
func copyInTimespec(t *kernel.Task, addr uintptr) (unix.Timespec, error) {
	var ts unix.Timespec
	if err := copyInStruct(t, addr, &ts); err != nil {
		return ts, err
	}
	if ts.Sec < 0 || ts.Nsec < 0 || ts.Nsec >= 1e9 {
		return ts, unix.EINVAL
	}
	return ts, nil
}

// timespecDuration is ts as a duration, saturating as Linux's
// timespec64_to_ktime does: a time past what 64 bits of nanoseconds hold
// is KTIME_MAX, in effect for ever, not a product that wraps negative.
func timespecDuration(ts unix.Timespec) time.Duration {
	if ts.Sec >= math.MaxInt64/int64(time.Second) {
		return math.MaxInt64
	}
	if ts.Sec <= math.MinInt64/int64(time.Second) {
		return math.MinInt64
	}
	return time.Duration(ts.Sec)*time.Second + time.Duration(ts.Nsec)
}

// nofile is the task's RLIMIT_NOFILE, the bound on new fds.
func nofile(t *kernel.Task) uint64 { return t.Limits().Get(unix.RLIMIT_NOFILE).Cur }

// retErr returns (0, err) for an error, or (v, nil).
func retErr(v uintptr, err error) (uintptr, error) {
	if err != nil {
		return 0, err
	}
	return v, nil
}
