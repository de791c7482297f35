// Package goferfs is a file system served by the sandbox's gofer: every
// lookup, listing and open goes to the gofer over its socket, and opened
// files come back as host descriptors that the sentry reads and writes
// directly. It holds no host paths: the gofer alone knows where the tree is.
package goferfs

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/sentry/fs/host"
	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// fs is one mounted gofer tree.
type fs struct {
	client *gofer.Client
	dev    uint64 // the device number the guest sees for every file
	// mf holds the page caches of files, when the tree is read-only (an
	// image that does not change, so that cached pages stay right).
	mf *memfile.File

	// cachedFDs counts read-only host descriptors kept open by inodes.
	cachedFDs atomic.Int64
}

// maxCachedFDs bounds the read-only descriptors kept open after their last
// guest close, so that reopening a file costs no gofer round trip.
const maxCachedFDs = 4096

// inode is one file the gofer holds for us. Attributes are read once, at
// walk time: the tree is the container image and does not change under the
// sandbox.
type inode struct {
	fs   *fs
	node gofer.NodeID
	attr vfs.Stat

	// ro is a read-only host descriptor shared by every read-only open of
	// a regular file: I/O on it is positioned (pread), so opens need not
	// have their own. users counts the opens using it.
	mu    sync.Mutex
	ro    *host.Regular
	users int
	cache *mm.FileCache
	// target is a symlink's target once read: a symlink never changes
	// (a new one is a new inode), and a usrmerged image's /lib, /lib64 and
	// /bin are symlinks that most paths a program opens go through.
	target string
}

// New returns the root dentry of the gofer's tree. With mf set, the tree is
// read-only and its files' pages are cached in mf for mappings to share.
func New(c *gofer.Client, mf *memfile.File) (*vfs.Dentry, error) {
	f := &fs{client: c, dev: vfs.NewAnonDev(), mf: mf}
	a, err := c.Stat(gofer.RootNode)
	if err != nil {
		return nil, err
	}
	return vfs.NewRoot(&inode{fs: f, node: gofer.RootNode, attr: f.stat(a)}), nil
}

func (f *fs) stat(a gofer.Attr) vfs.Stat {
	return vfs.Stat{Dev: f.dev, Ino: a.Ino, Rdev: a.Rdev, Mode: a.Mode, Nlink: a.Nlink, UID: a.UID, GID: a.GID,
		Size: a.Size, Blksize: a.Blksize, Blocks: a.Blocks, Atime: a.Atime, Mtime: a.Mtime, Ctime: a.Ctime}
}

// Stat implements vfs.Inode.
func (i *inode) Stat() (vfs.Stat, error) { return i.attr, nil }

// Lookup implements vfs.Inode.
func (i *inode) Lookup(name string) (vfs.Inode, error) {
	if i.attr.Type() != unix.S_IFDIR {
		return nil, unix.ENOTDIR
	}
	n, a, err := i.fs.client.Walk(i.node, name)
	if err != nil {
		return nil, err
	}
	return &inode{fs: i.fs, node: n, attr: i.fs.stat(a)}, nil
}

// ReadDir implements vfs.Inode.
func (i *inode) ReadDir() ([]vfs.Dirent, error) {
	if i.attr.Type() != unix.S_IFDIR {
		return nil, unix.ENOTDIR
	}
	ents, err := i.fs.client.ReadDir(i.node)
	if err != nil {
		return nil, err
	}
	out := make([]vfs.Dirent, len(ents))
	for k, e := range ents {
		out[k] = vfs.Dirent{Name: e.Name, Ino: e.Ino, Type: e.Type}
	}
	return out, nil
}

// Readlink implements vfs.Inode.
func (i *inode) Readlink() (string, error) {
	if i.attr.Type() != unix.S_IFLNK {
		return "", unix.EINVAL
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.target == "" {
		t, err := i.fs.client.ReadLink(i.node)
		if err != nil {
			return "", err
		}
		i.target = t
	}
	return i.target, nil
}

// Open implements vfs.Inode.
func (i *inode) Open(flags int) (vfs.FileImpl, error) {
	switch i.attr.Type() {
	case unix.S_IFDIR:
		return dirFile{i}, nil
	case unix.S_IFREG, unix.S_IFIFO:
	default:
		// Device nodes in an image never reach the host's devices.
		return nil, unix.EACCES
	}
	if i.attr.Type() == unix.S_IFREG && flags&(unix.O_ACCMODE|unix.O_TRUNC) == unix.O_RDONLY {
		return i.openShared()
	}
	return i.openHost(flags)
}

// openHost asks the gofer for a descriptor of its own.
func (i *inode) openHost(flags int) (*host.Regular, error) {
	// O_APPEND stays in the sentry: a host pwrite on an O_APPEND descriptor
	// would ignore the offset the sentry chose.
	fd, err := i.fs.client.Open(i.node, flags&(unix.O_ACCMODE|unix.O_TRUNC|unix.O_NONBLOCK))
	if err != nil {
		return nil, err
	}
	f, err := host.New(fd, func(s *vfs.Stat) { s.Dev = i.fs.dev })
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	r, ok := f.(*host.Regular)
	if !ok {
		f.Release()
		return nil, unix.EACCES // only regular files are opened through the gofer
	}
	return r, nil
}

// openShared returns an open that uses the inode's read-only descriptor.
func (i *inode) openShared() (vfs.FileImpl, error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.ro == nil {
		f, err := i.openHost(unix.O_RDONLY)
		if err != nil {
			return nil, err
		}
		i.ro = f
		i.fs.cachedFDs.Add(1)
	}
	i.users++
	return &sharedFile{Regular: i.ro, i: i}, nil
}

// sharedFile is one open of a shared read-only descriptor.
type sharedFile struct {
	*host.Regular
	i *inode
}

// FileCache implements mm.Cacheable when the tree is read-only.
func (f *sharedFile) FileCache() *mm.FileCache {
	i := f.i
	if i.fs.mf == nil {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.cache == nil {
		// The cache reads through the inode's shared descriptor, which
		// stays open while the cache lives: the cache holds a user.
		i.users++
		i.cache = mm.NewFileCache(i.fs.mf, i.ro, i.attr.Size)
	}
	return i.cache
}

// Release drops the open; the descriptor stays cached unless too many are.
func (f *sharedFile) Release() {
	i := f.i
	i.mu.Lock()
	defer i.mu.Unlock()
	i.users--
	if i.users == 0 && i.fs.cachedFDs.Load() > maxCachedFDs {
		i.ro.Release()
		i.ro = nil
		i.fs.cachedFDs.Add(-1)
	}
}

// dirFile is an open directory: listing goes through the inode, and vfs
// answers reads with EISDIR.
type dirFile struct{ i *inode }

func (dirFile) Read(*vfs.IOSeq, int64) (int, error)  { return 0, unix.EISDIR }
func (dirFile) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EISDIR }
func (d dirFile) Stat() (vfs.Stat, error)            { return d.i.attr, nil }
func (dirFile) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (dirFile) Release() {}

// Directories are seekable: lseek(fd, 0, SEEK_SET) rewinds a listing.
func (dirFile) Size() (int64, error) { return 0, nil }
