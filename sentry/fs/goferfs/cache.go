package goferfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/host"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// The cache of a writable file's pages, made when the file is first
// mapped: every mapping of the file (shared ones alike) is made of it, so
// they and read(2) and write(2) see one another's changes, as on Linux.
// While it lasts, reads of the file come from it and writes go to the host
// and into it; what the guest writes through a mapping reaches the host
// when the mapping goes, on msync and fsync, and when the cache does (at
// the file's last close, once nothing maps it).

// hostBacking is the host file a cache stands for, through a descriptor
// of the cache's own, which outlives the opens that made it.
type hostBacking struct {
	i        *inode
	fd       int
	writable bool
}

// ReadAt implements mm.Backing.
func (b *hostBacking) ReadAt(p []byte, off int64) (int, error) {
	done := 0
	for done < len(p) {
		n, err := unix.Pread(b.fd, p[done:], off+int64(done))
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return done, err
		}
		done += n
	}
	return done, nil
}

// WriteBack implements mm.Backing: no further than the file's end, which
// the cache's last chunk runs past.
func (b *hostBacking) WriteBack(p []byte, off int64) error {
	if !b.writable {
		return nil // only a read-write open maps the file writable
	}
	st, err := b.i.Stat()
	if err != nil {
		return err
	}
	if off >= st.Size {
		return nil
	}
	p = p[:min(int64(len(p)), st.Size-off)]
	for len(p) > 0 {
		n, err := unix.Pwrite(b.fd, p, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		p, off = p[n:], off+int64(n)
	}
	return nil
}

// filePages returns the inode's cache, made if there is none, for a
// mapping through the open host file f, with the file's size recorded.
func (i *inode) filePages(f *host.Regular, writable bool) *mm.FilePages {
	if i.fs.readonly {
		return nil // the image's pages are cached otherwise (FileCache)
	}
	st, err := i.Stat()
	if err != nil {
		return nil
	}
	i.cacheMu.Lock()
	defer i.cacheMu.Unlock()
	if c := i.pages.Load(); c != nil {
		if writable && !i.backing.writable {
			if fd, err := dupFD(f.FD()); err == nil {
				unix.Close(i.backing.fd)
				i.backing.fd, i.backing.writable = fd, true
			}
		}
		c.SetSize(st.Size)
		return c
	}
	fd, err := dupFD(f.FD())
	if err != nil {
		return nil
	}
	i.backing = &hostBacking{i: i, fd: fd, writable: writable}
	c := mm.NewCachePages(i.fs.mf, i.backing)
	c.SetSize(st.Size)
	i.pages.Store(c)
	return c
}

func dupFD(fd int) (int, error) {
	return unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
}

// readCached reads the file at off from its cache, up to its end.
func (i *inode) readCached(c *mm.FilePages, dst *vfs.IOSeq, off int64) (int, error) {
	st, err := i.Stat()
	if err != nil {
		return 0, err
	}
	if off >= st.Size {
		return 0, nil
	}
	dst = dst.Truncated(int(min(int64(dst.Len()), st.Size-off)))
	return dst.WithSlices(true, func(bufs [][]byte) (int, error) {
		done := 0
		for _, b := range bufs {
			c.ReadAt(b, off+int64(done))
			done += len(b)
		}
		return done, nil
	})
}

// updateCached copies n bytes of src, just written to the host at off,
// into the cache.
func updateCached(c *mm.FilePages, src *vfs.IOSeq, off int64, n int) {
	c.GrowSize(off + int64(n))
	src.Truncated(n).WithSlices(false, func(bufs [][]byte) (int, error) {
		done := 0
		for _, b := range bufs {
			c.UpdateAt(b, off+int64(done))
			done += len(b)
		}
		return done, nil
	})
}

// dropCacheIfIdle gives the cache up once the file is neither open nor
// mapped, its pages written back first.
func (i *inode) dropCacheIfIdle() {
	i.cacheMu.Lock()
	defer i.cacheMu.Unlock()
	c := i.pages.Load()
	if c == nil || i.opens.Load() > 0 || c.Mapped() {
		return
	}
	c.Sync(0, -1)
	c.Release()
	unix.Close(i.backing.fd)
	i.pages.Store(nil)
	i.backing = nil
}

// syncCached writes the cache back, for fsync.
func (i *inode) syncCached() error {
	if c := i.pages.Load(); c != nil {
		return c.Sync(0, -1)
	}
	return nil
}
