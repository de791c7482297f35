package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Nothing the sandbox writes outlives it (tmpfs is memory, the image is
// read-only), so there is nothing to flush: the sync calls only check
// their arguments.

// Sync implements Linux syscall sync(2).
func Sync(*kernel.Task, *arch.SyscallArgs) (uintptr, error) { return 0, nil }

// Syncfs implements Linux syscall syncfs(2).
func Syncfs(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := fileAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	f.DecRef()
	return 0, nil
}

// Fsync implements Linux syscall fsync(2).
func Fsync(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return fsync(t, a.Int(0))
}

// Fdatasync implements Linux syscall fdatasync(2).
func Fdatasync(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return fsync(t, a.Int(0))
}

// fsync succeeds on files and directories; other files (devices, pipes,
// terminals) cannot be synced: EINVAL, as Linux answers for /dev/null.
func fsync(t *kernel.Task, fd int32) (uintptr, error) {
	f, err := fileAt(t, fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return fsyncFile(f)
}

// fsyncFile is fsync's work on an open file.
func fsyncFile(f *vfs.File) (uintptr, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if st.Type() != unix.S_IFREG && st.Type() != unix.S_IFDIR {
		return 0, unix.EINVAL
	}
	if s, ok := f.Impl().(vfs.Syncer); ok {
		return 0, s.Sync()
	}
	return 0, nil
}

// Statfs implements Linux syscall statfs(2).
func Statfs(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	p, err := lookupAt(t, unix.AT_FDCWD, a.Ptr(0), true, 0)
	if err != nil {
		return 0, err
	}
	s, err := vfs.StatFS(p)
	if err != nil {
		return 0, err
	}
	return 0, copyOutStatfs(t, a.Ptr(1), &s)
}

// Fstatfs implements Linux syscall fstatfs(2); O_PATH descriptors do.
func Fstatfs(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := t.FDs().Get(a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	var s vfs.FSStat
	if f.Path().Dentry != nil {
		if s, err = vfs.StatFS(f.Path()); err != nil {
			return 0, err
		}
	} else {
		st, err := f.Stat()
		if err != nil {
			return 0, err
		}
		s = vfs.FSStat{Type: unix.PIPEFS_MAGIC, Bsize: 4096, Frsize: 4096, Namelen: vfs.NameMax, Flags: 0x20 /* ST_VALID */}
		if st.Type() == unix.S_IFCHR {
			s.Type = unix.DEVPTS_SUPER_MAGIC
		}
	}
	return 0, copyOutStatfs(t, a.Ptr(1), &s)
}

// copyOutStatfs writes a struct statfs (x86-64 layout, 120 bytes).
func copyOutStatfs(t *kernel.Task, addr uintptr, s *vfs.FSStat) error {
	var b [120]byte
	le := binary.LittleEndian
	for i, v := range []uint64{uint64(s.Type), uint64(s.Bsize), s.Blocks, s.Bfree, s.Bavail, s.Files, s.Ffree} {
		le.PutUint64(b[8*i:], v)
	}
	le.PutUint32(b[56:], uint32(s.Fsid[0]))
	le.PutUint32(b[60:], uint32(s.Fsid[1]))
	le.PutUint64(b[64:], uint64(s.Namelen))
	le.PutUint64(b[72:], uint64(s.Frsize))
	le.PutUint64(b[80:], uint64(s.Flags))
	_, err := t.CopyOut(addr, b[:])
	return err
}

// Ustat implements Linux syscall ustat(2): the free blocks and inodes of
// the mounted file system with device number dev (in the old 32-bit
// encoding), EINVAL if no mount has it. struct ustat (32 bytes): int
// f_tfree, padding, unsigned long f_tinode, and the two names, which
// Linux leaves empty.
func Ustat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	dev := a.Uint(0)
	major, minor := (dev&0xfff00)>>8, dev&0xff|(dev>>12)&0xfff00
	root, _ := t.FS().Get()
	p, ok := vfs.MountOfDevice(root, unix.Mkdev(major, minor))
	if !ok {
		return 0, unix.EINVAL
	}
	s, err := vfs.StatFS(p)
	if err != nil {
		return 0, err
	}
	var b [32]byte
	binary.LittleEndian.PutUint32(b[0:], uint32(s.Bfree))
	binary.LittleEndian.PutUint64(b[8:], s.Ffree)
	_, err = t.CopyOut(a.Ptr(1), b[:])
	return 0, err
}

// Sysfs implements Linux syscall sysfs(2) over the file system types of
// /proc/filesystems: option 1 is a type's index, 2 copies out the name at
// an index, 3 counts them; anything else, an unknown name or an index past
// the end is EINVAL.
func Sysfs(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	types := vfs.FilesystemTypes
	switch a.Int(0) {
	case 1:
		name, err := copyInPath(t, a.Ptr(1))
		if err != nil {
			return 0, err
		}
		if name == "" {
			return 0, unix.ENOENT // getname refuses an empty name
		}
		for i, fs := range types {
			if fs == name {
				return uintptr(i), nil
			}
		}
	case 2:
		if i := uint64(a.Uint(1)); i < uint64(len(types)) {
			_, err := t.CopyOut(a.Ptr(2), append([]byte(types[i]), 0))
			return 0, err
		}
	case 3:
		return uintptr(len(types)), nil
	}
	return 0, unix.EINVAL
}
