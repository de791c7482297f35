// Package host provides open files backed by host file descriptors that the
// sentry was given: files the gofer opened and donated, and the container's
// stdio. The sentry only ever reads, writes, stats and (for terminals)
// forwards a few ioctls on such descriptors; it never opens host paths.
package host

import (
	"fmt"
	"io"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// bufferedChunk bounds one read or write through a sentry buffer: a guest
// asking to read a gigabyte from a pipe gets what the pipe has, at most this.
const bufferedChunk = 64 << 10

// File is an open host descriptor.
type File struct {
	fd       int
	regular  bool // seekable, never blocks: I/O goes straight to guest memory
	isTTY    bool
	statHook func(*vfs.Stat) // rewrites host attributes the guest must not see
}

// Regular is an open host regular file: seekable, and readable at any
// offset into sentry buffers (ReadAt), which mappings and the loader need.
type Regular struct{ *File }

// SharedRegular is a host regular file whose file offset is the host
// description's, shared with whoever else holds it: the container's stdio
// redirected to a file, where the guest's writes and those of the shell that
// started the container must not overwrite each other.
type SharedRegular struct{ *Regular }

// NewStdio wraps fd, one of the container's stdio descriptors, which the
// file now owns: like New, but a regular file keeps the host's offset.
func NewStdio(fd int) (vfs.FileImpl, error) {
	impl, err := New(fd, nil)
	if r, ok := impl.(*Regular); ok {
		return &SharedRegular{r}, nil
	}
	return impl, err
}

// New wraps fd, which the file now owns: a *Regular for a regular file, a
// *File (not seekable) for anything else. statHook, if set, adjusts what
// Stat reports (a file system's device number and inode identity).
func New(fd int, statHook func(*vfs.Stat)) (vfs.FileImpl, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	f := &File{fd: fd, regular: st.Mode&unix.S_IFMT == unix.S_IFREG, statHook: statHook}
	if f.regular {
		return &Regular{f}, nil
	}
	if st.Mode&unix.S_IFMT == unix.S_IFCHR {
		_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		f.isTTY = err == nil
	}
	return f, nil
}

// FD is the host descriptor.
func (f *File) FD() int { return f.fd }

// Read implements vfs.FileImpl.
func (f *File) Read(dst *vfs.IOSeq, off int64) (int, error) {
	if f.regular {
		return dst.WithSlices(true, func(bufs [][]byte) (int, error) {
			return ignoreEINTR(func() (int, error) {
				if off == vfs.CurrentOffset {
					return unix.Readv(f.fd, bufs)
				}
				return unix.Preadv(f.fd, bufs, off)
			})
		})
	}
	buf := make([]byte, min(dst.Len(), bufferedChunk))
	n, err := ignoreEINTR(func() (int, error) { return unix.Read(f.fd, buf) })
	if n <= 0 {
		return 0, err
	}
	return dst.CopyOut(buf[:n])
}

// Write implements vfs.FileImpl.
func (f *File) Write(src *vfs.IOSeq, off int64) (int, error) {
	if f.regular {
		return src.WithSlices(false, func(bufs [][]byte) (int, error) {
			return ignoreEINTR(func() (int, error) {
				if off == vfs.CurrentOffset {
					return unix.Writev(f.fd, bufs)
				}
				return unix.Pwritev(f.fd, bufs, off)
			})
		})
	}
	total := src.Len()
	buf := make([]byte, min(total, bufferedChunk))
	done := 0
	for done < total {
		// The guest buffer is read once per chunk, in order.
		n, err := src.CopyIn(buf[:min(len(buf), total-done)])
		if err != nil || n == 0 {
			if done == 0 {
				return 0, err
			}
			return done, nil
		}
		w, err := writeAll(f.fd, buf[:n])
		done += w
		if err != nil {
			if done == 0 {
				return 0, err
			}
			return done, nil
		}
		src = src.Skip(n)
	}
	return done, nil
}

func writeAll(fd int, b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := unix.Write(fd, b[done:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, err
		}
		done += n
	}
	return done, nil
}

func ignoreEINTR(fn func() (int, error)) (int, error) {
	for {
		n, err := fn()
		if err != unix.EINTR {
			if n < 0 {
				n = 0
			}
			return n, err
		}
	}
}

// Stat implements vfs.FileImpl.
func (f *File) Stat() (vfs.Stat, error) {
	var st unix.Stat_t
	if err := unix.Fstat(f.fd, &st); err != nil {
		return vfs.Stat{}, err
	}
	s := FromUnix(&st)
	if f.statHook != nil {
		f.statHook(&s)
	}
	return s, nil
}

// Sync implements vfs.Syncer: fsync(2) of the host file.
func (f *Regular) Sync() error {
	for {
		if err := unix.Fsync(f.fd); err != unix.EINTR {
			return err
		}
	}
}

// Size implements vfs.Seeker.
func (f *Regular) Size() (int64, error) {
	st, err := f.Stat()
	return st.Size, err
}

// Seek implements vfs.OffsetKeeper: it moves the host description's offset.
func (f *SharedRegular) Seek(off int64, whence int) (int64, error) {
	return unix.Seek(f.fd, off, whence)
}

// Release implements vfs.FileImpl.
func (f *File) Release() { unix.Close(f.fd) }

// FromUnix converts a host stat.
func FromUnix(st *unix.Stat_t) vfs.Stat {
	return vfs.Stat{
		Dev: st.Dev, Ino: st.Ino, Rdev: st.Rdev, Mode: st.Mode, Nlink: st.Nlink,
		UID: st.Uid, GID: st.Gid, Size: st.Size, Blksize: st.Blksize, Blocks: st.Blocks,
		Atime: st.Atim, Mtime: st.Mtim, Ctime: st.Ctim,
	}
}

// ReadAt reads into a sentry buffer at off (for the program loader and file
// mappings, which copy file contents into the memory file).
func (f *Regular) ReadAt(p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := unix.Pread(f.fd, p[done:], off+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return done, err
		}
		if n == 0 {
			return done, io.EOF
		}
		done += n
	}
	return done, nil
}

// Name is what /proc/<pid>/fd shows for a host descriptor the guest has no
// path for (its stdio): Linux's names for pipes and sockets, a generic one
// for others.
func (f *File) Name() string {
	var st unix.Stat_t
	if unix.Fstat(f.fd, &st) != nil {
		return "anon_inode:[moat-host]"
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return fmt.Sprintf("pipe:[%d]", st.Ino)
	case unix.S_IFSOCK:
		return fmt.Sprintf("socket:[%d]", st.Ino)
	}
	if f.isTTY {
		return "/dev/console"
	}
	return "anon_inode:[moat-host]"
}

// Reopen implements vfs.Reopener: the sandbox's stdio (a pipe, a file, a
// terminal of the host) opened again through /proc/<pid>/fd/N, as
// `cat /dev/stdin` does.
func (f *File) Reopen() (vfs.Inode, error) { return &hostInode{f}, nil }

// hostInode is a host descriptor's file, for reopening it.
type hostInode struct{ f *File }

func (i *hostInode) Stat() (vfs.Stat, error)          { return i.f.Stat() }
func (i *hostInode) Lookup(string) (vfs.Inode, error) { return nil, unix.ENOTDIR }
func (i *hostInode) ReadDir() ([]vfs.Dirent, error)   { return nil, unix.ENOTDIR }
func (i *hostInode) Readlink() (string, error)        { return "", unix.EINVAL }
func (i *hostInode) Open(int) (vfs.FileImpl, error)   { return nil, unix.ENXIO }

// OpenContext implements vfs.ContextOpener: a new descriptor of the same
// host file, which it may be read or written through as far as the
// original allows. A regular file gets an offset of its own, as a new open
// would.
func (i *hostInode) OpenContext(_ vfs.Context, flags int) (vfs.FileImpl, error) {
	fd, err := unix.FcntlInt(uintptr(i.f.fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	impl, err := New(fd, i.f.statHook)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return impl, nil
}
