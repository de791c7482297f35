package overlay

import (
	"io"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Open implements vfs.Inode. An open that may change the file (for
// writing, or O_TRUNC) copies it up first; other opens read whichever
// layer holds it now.
func (i *inode) Open(flags int) (vfs.FileImpl, error) {
	if i.typ == unix.S_IFDIR {
		return dirFile{i}, nil
	}
	if i.typ == unix.S_IFREG && (flags&unix.O_ACCMODE != unix.O_RDONLY || flags&unix.O_TRUNC != 0) {
		if err := i.copyUp(); err != nil {
			return nil, err
		}
	}
	lower, upper := i.layers()
	if upper != nil {
		impl, err := upper.Open(flags)
		if err != nil {
			return nil, err
		}
		f := &file{i: i}
		f.upper.Store(&opened{impl})
		return f, nil
	}
	impl, err := lower.Open(flags)
	if err != nil {
		return nil, err
	}
	return &file{i: i, lower: impl}, nil
}

// file is an open regular file of the overlay. One opened while the file
// was only in the lower layer reads there until the file is copied up, and
// from the upper copy after: a write through another open is seen, as on
// Linux's overlayfs.
type file struct {
	i     *inode
	lower vfs.FileImpl // the lower layer's open, if it began there
	// upper is the upper layer's open, once there is one; it is set once
	// (mu), and both stay open until Release, so that a call still using
	// the lower one is never cut short.
	mu    sync.Mutex
	upper atomic.Pointer[opened]
}

type opened struct{ impl vfs.FileImpl }

// current is the file to do I/O on now.
func (f *file) current() vfs.FileImpl {
	if u := f.upper.Load(); u != nil {
		return u.impl
	}
	if !f.i.copied.Load() {
		return f.lower
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if u := f.upper.Load(); u != nil {
		return u.impl
	}
	_, upper := f.i.layers()
	impl, err := upper.Open(unix.O_RDONLY)
	if err != nil {
		return f.lower
	}
	f.upper.Store(&opened{impl})
	return impl
}

// Read implements vfs.FileImpl.
func (f *file) Read(dst *vfs.IOSeq, off int64) (int, error) { return f.current().Read(dst, off) }

// Write implements vfs.FileImpl.
func (f *file) Write(src *vfs.IOSeq, off int64) (int, error) { return f.current().Write(src, off) }

// Stat implements vfs.FileImpl: the overlay's attributes, not a layer's.
func (f *file) Stat() (vfs.Stat, error) { return f.i.Stat() }

// Ioctl implements vfs.FileImpl.
func (f *file) Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	return f.current().Ioctl(cmd, arg, io)
}

// Release implements vfs.FileImpl.
func (f *file) Release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lower != nil {
		f.lower.Release()
	}
	if u := f.upper.Load(); u != nil {
		u.impl.Release()
	}
}

// Size implements vfs.Seeker.
func (f *file) Size() (int64, error) {
	st, err := f.i.Stat()
	return st.Size, err
}

// ReadAt implements io.ReaderAt, for mappings and the program loader.
func (f *file) ReadAt(p []byte, off int64) (int, error) {
	r, ok := f.current().(io.ReaderAt)
	if !ok {
		return 0, unix.EINVAL
	}
	return r.ReadAt(p, off)
}

// FileCache implements mm.Cacheable: a file read from the image shares the
// image's page cache (libc is read once per sandbox, whatever layer is on
// top); a copied-up one has none.
func (f *file) FileCache() *mm.FileCache {
	if c, ok := f.current().(mm.Cacheable); ok {
		return c.FileCache()
	}
	return nil
}

// FilePages implements mm.PagesFile for a file whose layer keeps its data
// in the memory file (an upper tmpfs file): its mappings are its pages.
func (f *file) FilePages() *mm.FilePages {
	if pf, ok := f.current().(mm.PagesFile); ok {
		return pf.FilePages()
	}
	return nil
}

// Allocate implements vfs.Allocator.
func (f *file) Allocate(c vfs.Context, off, length int64) error {
	a, ok := f.current().(vfs.Allocator)
	if !ok {
		return unix.EOPNOTSUPP
	}
	return a.Allocate(c, off, length)
}

// dirFile is an open directory: vfs lists it through the inode.
type dirFile struct{ i *inode }

func (dirFile) Read(*vfs.IOSeq, int64) (int, error)  { return 0, unix.EISDIR }
func (dirFile) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EISDIR }
func (d dirFile) Stat() (vfs.Stat, error)            { return d.i.Stat() }
func (dirFile) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (dirFile) Release() {}

// Directories are seekable: lseek(fd, 0, SEEK_SET) rewinds a listing.
func (dirFile) Size() (int64, error) { return 0, nil }
