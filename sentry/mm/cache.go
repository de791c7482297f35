package mm

import (
	"errors"
	"io"
	"sync"

	"github.com/moat-sandbox/moat/sentry/memfile"
)

// FileSource is a file a mapping takes its initial contents from.
type FileSource interface {
	ReadAt(dst []byte, off int64) (int, error)
}

// maxCachedFile bounds the files whose pages are copied into the cache
// whole: larger ones are copied into each mapping, for the range it maps.
const maxCachedFile = 256 << 20

// errNotCached says a file is too large for the page cache.
var errNotCached = errors.New("file too large to cache")

// FileCache holds a file's contents in the memory file, once for every
// mapping of it: mapping a cached library costs no copy, and its pages are
// shared copy-on-write. Only files that do not change while the sandbox runs
// (a read-only image) may be cached. A file whose source is a host
// descriptor (HostFile) is not copied at all where the platform maps host
// files: its pages are the host's page cache, seen through the memory file
// (memfile.MapHostFile), shared with every sandbox of the same image.
type FileCache struct {
	mf   *memfile.File
	src  FileSource
	size int64

	once sync.Once
	off  uint64 // memory-file offset of the file's first page
	err  error
}

// NewFileCache returns an empty cache for src, a file of size bytes.
func NewFileCache(mf *memfile.File, src FileSource, size int64) *FileCache {
	return &FileCache{mf: mf, src: src, size: size}
}

// pages fills the cache on first use and returns where the file's pages
// are and how many bytes (page rounded) they span.
func (c *FileCache) pages() (uint64, uint64, error) {
	c.once.Do(func() {
		n := (uint64(c.size) + PageSize - 1) &^ (PageSize - 1)
		if n == 0 {
			return
		}
		// The host's pages cost the sandbox nothing, whatever the file's
		// size; a file they cannot be had for is copied (a noexec mount,
		// a platform that maps the memory file alone).
		if h, ok := c.src.(HostFile); ok {
			if off, err := c.mf.MapHostFile(h.FD(), uint64(c.size)); err == nil {
				c.off = off
				return
			}
		}
		if c.size > maxCachedFile {
			c.err = errNotCached
			return
		}
		off, err := c.mf.Allocate(n)
		if err != nil {
			c.err = err
			return
		}
		if _, err := c.src.ReadAt(c.mf.Slice(off, uint64(c.size)), 0); err != nil && err != io.EOF {
			c.mf.DecRef(off, n)
			c.err = err
			return
		}
		c.off = off
	})
	n := (uint64(c.size) + PageSize - 1) &^ (PageSize - 1)
	return c.off, n, c.err
}

// HostFile is a FileSource read from a host descriptor, which the memory
// file may map instead of copying from it.
type HostFile interface {
	FD() int
}

// Cacheable is a file whose pages may be cached (FileCache), shared by
// every mapping of it.
type Cacheable interface {
	FileCache() *FileCache
}

// NewResidentCache returns a cache over size bytes already in the memory
// file at off (page aligned), such as the vDSO's: pages the sentry filled
// itself, which the cache's owner keeps for the sandbox's life.
func NewResidentCache(mf *memfile.File, off uint64, size int64) *FileCache {
	c := &FileCache{mf: mf, size: size, off: off}
	c.once.Do(func() {})
	return c
}
