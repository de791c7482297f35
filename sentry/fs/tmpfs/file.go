package tmpfs

import (
	"io"
	"math"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// pageSize is the unit file data is counted in.
const pageSize = 4096

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
			k, err := n.readLocked(b, off+int64(done))
			done += k
			if err != nil {
				if done > 0 {
					break
				}
				return 0, err
			}
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
	k, err := n.readLocked(dst, off)
	if err != nil {
		return 0, err
	}
	if k < len(dst) {
		return k, io.EOF
	}
	return k, nil
}

// touchAtimeLocked updates the access time as a relatime mount does: when
// it is older than the last change, or a day old.
func (n *inode) touchAtimeLocked() {
	t := vfs.RealtimeNow()
	if n.atime.Nano() <= n.mtime.Nano() || n.atime.Nano() <= n.ctime.Nano() ||
		t.Sec-n.atime.Sec >= 24*60*60 {
		n.atime = t
	}
}

// readLocked copies the file's bytes from off into b, up to the end of
// the file, and returns how many it copied. It fails (EIO) only when the
// host cannot read data the upper layer spilled to it.
func (n *inode) readLocked(b []byte, off int64) (int, error) {
	if off >= n.size {
		return 0, nil
	}
	b = b[:min(int64(len(b)), n.size-off)]
	if err := n.data.ReadAt(b, off); err != nil {
		return 0, unix.EIO
	}
	return len(b), nil
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
		if err := n.sealedWrite(off + int64(total)); err != nil {
			return 0, err
		}
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
			t := vfs.RealtimeNow()
			n.mtime, n.ctime = t, t
			return done, nil
		}
		return 0, err
	})
}

// writeLocked copies b into the file at off, allocating pages as needed.
func (n *inode) writeLocked(b []byte, off int64) (int, error) {
	done, err := n.data.WriteAt(b, off)
	if end := off + int64(done); end > n.size {
		n.size = end
		n.data.SetSize(end)
	}
	return done, err
}

// truncateLocked sets the size. What lies past the old end (written
// there through a mapping) is cleared first, so that growing reads zeros.
func (n *inode) truncateLocked(size int64) {
	if size < n.size {
		n.data.Truncate(size)
	} else {
		n.data.Truncate(n.size)
	}
	n.size = size
	n.data.SetSize(size)
}

// allocStep is how much of a fallocate range is allocated between looks
// at whether the task was interrupted.
const allocStep = 16 << 20

// Allocate implements vfs.Allocator: every page of the range is allocated
// (so that later writes there cannot fail with ENOSPC) and the size grows
// to cover it. On ENOSPC the pages it allocated are given back, and so they
// are when the task is interrupted (EINTR): a memfd has no size limit, and
// the range may be terabytes.
func (f *file) Allocate(c vfs.Context, off, length int64) error {
	n := f.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seals&unix.F_SEAL_GROW != 0 && off+length > n.size {
		return unix.EPERM // an allocation inside changes no data: F_SEAL_WRITE lets it be
	}
	// Each step ends at most at off+length (which vfs.Fallocate checked
	// does not overflow): a range that ends near 2^63 would otherwise step
	// past it, wrap negative and never end. The holes to give back are
	// found a step at a time too, just before it, the steps aligned so
	// that no page is in two: finding those of a whole range of exabytes
	// at once took hours, before the first signal was looked for.
	var before []mm.PageRange
	for pos, step := off, int64(0); pos < off+length; pos += step {
		step = min(allocStep-pos%allocStep, off+length-pos)
		before = append(before, n.data.Holes(pos, step)...)
		err := n.data.Allocate(pos, step)
		if err == nil && c != nil && c.Interrupted() {
			err = unix.EINTR
		}
		if err != nil {
			for _, h := range before {
				n.data.Deallocate(h.Off, h.Len)
			}
			return err
		}
	}
	t := vfs.RealtimeNow()
	if off+length > n.size {
		n.size = off + length
		n.data.SetSize(n.size)
		n.mtime = t
	}
	n.ctime = t
	return nil
}

// FilePages implements mm.PagesFile: mappings of the file are made of its
// pages.
func (f *file) FilePages() *mm.FilePages { return f.n.data }

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
