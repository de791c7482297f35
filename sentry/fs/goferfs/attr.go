package goferfs

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/sentry/fs/host"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Stat implements vfs.Inode: the cached attributes, or, for a file open
// for writing, the host descriptor's (writes change size and times without
// the sentry's knowing how), or the gofer's after a change made them old.
func (i *inode) Stat() (vfs.Stat, error) {
	i.attrMu.Lock()
	defer i.attrMu.Unlock()
	for w := range i.writers {
		st, err := w.Stat()
		if err != nil {
			return vfs.Stat{}, err
		}
		i.setAttrLocked(st)
		return i.attr, nil
	}
	if i.stale {
		var a gofer.Attr
		err := i.withNode(func(n gofer.NodeID) (err error) {
			a, err = i.fs.client.Stat(n)
			return err
		})
		if err != nil {
			return vfs.Stat{}, err
		}
		i.rememberLocked(i.fs.stat(a))
		i.stale = false
	}
	return i.attr, nil
}

// AccessStat implements vfs.AccessStater: the cached attributes, even when
// stale. What makes them stale (a name made or removed in a directory, a
// rename, a truncation, a read that moves the access time) changes times,
// sizes and link counts, never the type, mode or owner, which only
// SetAttr changes here, and SetAttr records the gofer's answer. So the
// mode and owner a permission check reads are exactly as current as those
// of a file the sandbox has not touched, which the cache answers for until
// it changes it (docs/architecture.md: a host's chmod behind the sandbox is
// seen no sooner). A file open for writing answers from its descriptor, as
// Stat does: a host write may clear its set-id bits.
func (i *inode) AccessStat() (vfs.Stat, error) {
	i.attrMu.Lock()
	writing := len(i.writers) > 0
	st := i.attr
	i.attrMu.Unlock()
	if writing {
		return i.Stat()
	}
	return st, nil
}

// setAttrLocked records st, the host's attributes, in the guest's terms.
func (i *inode) setAttrLocked(st vfs.Stat) {
	st.Dev = i.fs.dev
	i.rememberLocked(st)
}

// rememberLocked caches st (attrMu held, or i not yet shared). On a
// writable tree, relatime's rule (Linux's relatime_need_update) says
// whether the host will move the access time at the next read: an access
// time not after the change or modification time, or a day old.
func (i *inode) rememberLocked(st vfs.Stat) {
	i.attr = st
	if i.fs.readonly || i.typ != unix.S_IFREG {
		return
	}
	at, mt, ct := st.Atime.Nano(), st.Mtime.Nano(), st.Ctime.Nano()
	i.atimeDue.Store(at <= mt || at <= ct || time.Now().UnixNano()-at >= int64(24*time.Hour))
}

// markStale says a change made the cached attributes old.
func (i *inode) markStale() {
	i.attrMu.Lock()
	i.stale = true
	i.attrMu.Unlock()
}

// setAttr records attributes the gofer answered a change with.
func (i *inode) setAttr(a gofer.Attr) {
	i.attrMu.Lock()
	i.rememberLocked(i.fs.stat(a))
	i.stale = false
	i.attrMu.Unlock()
}

// writer makes f, open for writing (or truncated), one the inode's Stat
// asks.
func (i *inode) writer(f *host.Regular, writable bool) vfs.FileImpl {
	i.attrMu.Lock()
	if i.writers == nil {
		i.writers = make(map[*host.Regular]struct{})
	}
	i.writers[f] = struct{}{}
	i.attrMu.Unlock()
	i.opens.Add(1)
	return &writableFile{Regular: f, i: i, writable: writable}
}

// takeCreated returns, once, the descriptor Create got.
func (i *inode) takeCreated() *host.Regular {
	i.attrMu.Lock()
	defer i.attrMu.Unlock()
	f := i.created
	i.created = nil
	return f
}

// writableFile is an open for writing, which keeps the inode's attributes
// current while it lasts and when it ends.
type writableFile struct {
	*host.Regular
	i        *inode
	writable bool // opened for writing, not only with O_TRUNC
}

// Release implements vfs.FileImpl: the file's last attributes are kept.
func (f *writableFile) Release() {
	i := f.i
	i.attrMu.Lock()
	delete(i.writers, f.Regular)
	if st, err := f.Regular.Stat(); err == nil {
		i.setAttrLocked(st)
	} else {
		i.stale = true
	}
	i.attrMu.Unlock()
	f.Regular.Release()
	if i.opens.Add(-1) == 0 {
		i.dropCacheIfIdle()
	}
}

// Read implements vfs.FileImpl: from the cache of a mapped file.
func (f *writableFile) Read(dst *vfs.IOSeq, off int64) (int, error) {
	if c := f.i.pages.Load(); c != nil {
		return f.i.readCached(c, dst, off)
	}
	return f.Regular.Read(dst, off)
}

// Write implements vfs.FileImpl: to the host, and into the cache of a
// mapped file, whose mappings see it.
func (f *writableFile) Write(src *vfs.IOSeq, off int64) (int, error) {
	n, err := f.Regular.Write(src, off)
	if c := f.i.pages.Load(); c != nil && n > 0 {
		updateCached(c, src, off, n)
	}
	return n, err
}

// FilePages implements mm.PagesFile: mappings share the cache.
func (f *writableFile) FilePages() *mm.FilePages {
	return f.i.filePages(f.Regular, f.writable)
}

// Sync implements vfs.Syncer: what mappings wrote goes back first.
func (f *writableFile) Sync() error {
	if err := f.i.syncCached(); err != nil {
		return err
	}
	return f.Regular.Sync()
}

// Allocate implements vfs.Allocator: the host file system reserves the
// space.
func (f *writableFile) Allocate(c vfs.Context, off, length int64) error {
	for {
		err := unix.Fallocate(f.FD(), 0, off, length)
		if err != unix.EINTR {
			return err
		}
	}
}
