package tmpfs

import (
	"io"
	"math"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// pageSize is the unit file data is kept and counted in.
const pageSize = 4096

// page is one page of a regular file's data.
type page [pageSize]byte

// file is an open regular file. Its I/O locks the inode inside the guest
// memory's WithSlices, never the other way round: mm holds its own lock
// while it reads a file into a new mapping (ReadAt).
type file struct {
	n *inode
}

// Read implements vfs.FileImpl.
func (f *file) Read(dst *vfs.IOSeq, off int64) (int, error) {
	if dst.Len() == 0 {
		return 0, nil
	}
	return dst.WithSlices(true, func(bufs [][]byte) (int, error) {
		n := f.n
		n.mu.Lock()
		defer n.mu.Unlock()
		done := 0
		for _, b := range bufs {
			k := n.readLocked(b, off+int64(done))
			done += k
			if k < len(b) {
				break
			}
		}
		n.touchAtimeLocked()
		return done, nil
	})
}

// ReadAt implements io.ReaderAt, for mmap and the program loader.
func (f *file) ReadAt(dst []byte, off int64) (int, error) {
	if off < 0 {
		return 0, unix.EINVAL
	}
	n := f.n
	n.mu.Lock()
	defer n.mu.Unlock()
	k := n.readLocked(dst, off)
	if k < len(dst) {
		return k, io.EOF
	}
	return k, nil
}

// touchAtimeLocked updates the access time as a relatime mount does: when
// it is older than the last change, or a day old.
func (n *inode) touchAtimeLocked() {
	t := now()
	if n.atime.Nano() <= n.mtime.Nano() || n.atime.Nano() <= n.ctime.Nano() ||
		t.Sec-n.atime.Sec >= 24*60*60 {
		n.atime = t
	}
}

// readLocked copies the file's bytes from off into b, up to the end of
// the file, and returns how many it copied.
func (n *inode) readLocked(b []byte, off int64) int {
	if off >= n.size {
		return 0
	}
	b = b[:min(int64(len(b)), n.size-off)]
	done := 0
	for done < len(b) {
		pos := off + int64(done)
		idx, in := pos/pageSize, int(pos%pageSize)
		k := min(len(b)-done, pageSize-in)
		if p := n.data[idx]; p != nil {
			copy(b[done:done+k], p[in:in+k])
		} else {
			clear(b[done : done+k])
		}
		done += k
	}
	return done
}

// Write implements vfs.FileImpl. Past the end of the file it leaves a hole
// that reads as zeros. When the file system is full it writes what fits,
// or fails with ENOSPC.
func (f *file) Write(src *vfs.IOSeq, off int64) (int, error) {
	total := src.Len()
	if total == 0 {
		return 0, nil
	}
	if off > math.MaxInt64-int64(total) {
		if off >= math.MaxInt64 {
			return 0, unix.EFBIG
		}
		total = int(math.MaxInt64 - off)
	}
	return src.WithSlices(false, func(bufs [][]byte) (int, error) {
		n := f.n
		n.mu.Lock()
		defer n.mu.Unlock()
		done := 0
		var err error
		for _, b := range bufs {
			b = b[:min(len(b), total-done)]
			k, werr := n.writeLocked(b, off+int64(done))
			done += k
			if werr != nil {
				err = werr
				break
			}
			if done == total {
				break
			}
		}
		if done > 0 {
			t := now()
			n.mtime, n.ctime = t, t
			return done, nil
		}
		return 0, err
	})
}

// writeLocked copies b into the file at off, allocating pages as needed.
func (n *inode) writeLocked(b []byte, off int64) (int, error) {
	done := 0
	for done < len(b) {
		pos := off + int64(done)
		idx, in := pos/pageSize, int(pos%pageSize)
		p, err := n.pageLocked(idx)
		if err != nil {
			return done, err
		}
		done += copy(p[in:], b[done:])
		if end := off + int64(done); end > n.size {
			n.size = end
		}
	}
	return done, nil
}

// pageLocked returns page idx of the file, allocating it (zeroed) if it is
// a hole, or ENOSPC when the file system is full.
func (n *inode) pageLocked(idx int64) (*page, error) {
	if p := n.data[idx]; p != nil {
		return p, nil
	}
	f := n.fs
	if used := f.pages.Add(1); used > f.maxPages {
		f.pages.Add(-1)
		return nil, unix.ENOSPC
	}
	p := new(page)
	n.data[idx] = p
	return p, nil
}

// truncateLocked sets the size, dropping the pages past it and zeroing
// the rest of the last page, so that growing again reads zeros.
func (n *inode) truncateLocked(size int64) {
	if size < n.size {
		keep := (size + pageSize - 1) / pageSize
		freed := int64(0)
		for idx := range n.data {
			if idx >= keep {
				delete(n.data, idx)
				freed++
			}
		}
		n.fs.pages.Add(-freed)
		if in := size % pageSize; in != 0 {
			if p := n.data[size/pageSize]; p != nil {
				clear(p[in:])
			}
		}
	}
	n.size = size
}

// Allocate implements vfs.Allocator: every page of the range is allocated
// (so that later writes there cannot fail with ENOSPC) and the size grows
// to cover it. On ENOSPC the pages it allocated are given back, and so they
// are when the task is interrupted (EINTR): a memfd has no size limit, and
// the range may be terabytes.
func (f *file) Allocate(c vfs.Context, off, length int64) error {
	n := f.n
	n.mu.Lock()
	defer n.mu.Unlock()
	var added []int64
	undo := func(err error) error {
		for _, a := range added {
			delete(n.data, a)
		}
		n.fs.pages.Add(-int64(len(added)))
		return err
	}
	for idx := off / pageSize; idx <= (off+length-1)/pageSize; idx++ {
		if n.data[idx] != nil {
			continue
		}
		if _, err := n.pageLocked(idx); err != nil {
			return undo(err)
		}
		added = append(added, idx)
		if len(added)%256 == 0 && c != nil && c.Interrupted() {
			return undo(unix.EINTR)
		}
	}
	t := now()
	if off+length > n.size {
		n.size = off + length
		n.mtime = t
	}
	n.ctime = t
	return nil
}

// Stat implements vfs.FileImpl.
func (f *file) Stat() (vfs.Stat, error) { return f.n.Stat() }

// Size implements vfs.Seeker.
func (f *file) Size() (int64, error) {
	f.n.mu.Lock()
	defer f.n.mu.Unlock()
	return f.n.size, nil
}

// Ioctl implements vfs.FileImpl.
func (f *file) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) { return 0, unix.ENOTTY }

// Release implements vfs.FileImpl: the last close of an unlinked file
// frees its data.
func (f *file) Release() {
	n := f.n
	n.mu.Lock()
	defer n.mu.Unlock()
	n.opens--
	n.releaseIfUnusedLocked()
}
