// Package goferfs is a file system served by the sandbox's gofer: every
// lookup, listing, open and change goes to the gofer over its socket, and
// opened files come back as host descriptors that the sentry reads and
// writes directly. It holds no host paths: the gofer alone knows where the
// tree is.
//
// Attributes are cached: the sandbox is the tree's only writer (a bind
// mount the host changes meanwhile is seen as of the sentry's last look;
// docs/architecture.md says how stale), so each change the sentry makes
// refreshes what it touched, and a file open for writing is asked the host
// descriptor's fstat, which sees every write.
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
	// mf holds the page caches of files: of every file of a read-only
	// tree (an image that does not change, so that cached pages stay
	// right), and of a writable tree's files while they are mapped.
	mf *memfile.File

	// cachedFDs counts read-only host descriptors kept open by inodes.
	cachedFDs atomic.Int64
	// readonly: the gofer refuses every change, and attributes never
	// change.
	readonly bool

	// files are the inodes of files other than directories by their host
	// identity, so that every name of one file (hard links) is one inode,
	// whose attributes (the link count) stay right whichever name changes.
	filesMu sync.Mutex
	files   map[hostID]*inode

	// The files whose nodes may be given back, and where each is named
	// (evict.go); walkHeld counts the nodes directories' walks hold and
	// have not handed over (prefetch.go), and walks are the directories
	// walked, oldest first (lruMu).
	lruMu       sync.Mutex
	lru         nodeList
	names       map[dirName]*inode
	maxAttached int
	walkHeld    atomic.Int64
	walks       []*inode
}

// hostID is a file's identity on the host.
type hostID struct{ dev, ino uint64 }

// maxCachedFDs bounds the read-only descriptors kept open after their last
// guest close, so that reopening a file costs no gofer round trip.
const maxCachedFDs = 4096

// inode is one file the gofer holds for us.
type inode struct {
	fs *fs
	// node is the gofer's node for the file, which may be given back
	// (detached) while the file is not in use, or, for a file other than a
	// directory, swapped for one in other (nodeMu): use it through
	// withNode or viaNode.
	node gofer.NodeID
	typ  uint32 // the S_IFMT bits, which never change
	id   hostID

	// other are the gofer's nodes for the file's other names (hard
	// links), through which it can still be opened when the one node was
	// walked to goes (nodeMu).
	nodeMu sync.Mutex
	other  []gofer.NodeID
	// For a file reached by a name: that name, so that its node may be
	// given back while it is not in use and walked to again (evict.go);
	// pins counts the calls using a node now (nodeMu).
	parent *inode
	name   string
	pins   int
	// holder is the directory the node of a file other than a directory
	// was walked to from, which the gofer keeps open while the node lasts
	// (nodeMu); kids counts, in a directory, the files it is holder of.
	holder *inode
	kids   atomic.Int32
	// Its place in fs.lru (lruMu), and whether it was used since its last
	// turn there.
	prev, next *inode
	listed     bool
	recent     atomic.Bool

	// A directory's walk, for its look-ups (prefetch.go).
	pfMu sync.Mutex
	pf   prefetch

	// attr is the file's attributes as last seen; stale says a change
	// since made them old, to be asked again at the next Stat.
	attrMu sync.Mutex
	attr   vfs.Stat
	stale  bool
	// atimeDue says that a read through the host will move the file's
	// access time there (relatime's rule holds for the cached times), so
	// that the read makes the attributes old: an atomic load per read.
	atimeDue atomic.Bool
	// writers are the host descriptors open for writing, each of which
	// fstat answers for with the file's current size and times.
	writers map[*host.Regular]struct{}
	// created is the read-write descriptor Create got, for the open that
	// follows it.
	created *host.Regular
	// linkable: an O_TMPFILE file that link may still name.
	linkable bool

	// opens counts the open files of the inode, which keep a cache of a
	// writable file's pages (cache.go) while it is not mapped.
	opens   atomic.Int64
	cacheMu sync.Mutex
	pages   atomic.Pointer[mm.FilePages]
	backing *hostBacking // cacheMu

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

// New returns the root dentry of the gofer's tree, whose files' pages are
// cached in mf for mappings. A readonly tree (an image) never changes:
// every file's pages may be cached for the sandbox's life.
func New(c *gofer.Client, mf *memfile.File, readonly bool) (*vfs.Dentry, error) {
	f := &fs{client: c, dev: vfs.NewAnonDev(), mf: mf, readonly: readonly, files: make(map[hostID]*inode),
		names: make(map[dirName]*inode), maxAttached: attachedLimit}
	a, err := c.Stat(gofer.RootNode)
	if err != nil {
		return nil, err
	}
	return vfs.NewRoot(f.newInode(nil, "", gofer.RootNode, a)), nil
}

// newInode returns the inode of node n, name in dir (nil for the root or an
// unnamed file), whose attributes are a: the one the file already has if
// another of its names was reached before (n is then one more way to it).
func (f *fs) newInode(dir *inode, name string, n gofer.NodeID, a gofer.Attr) *inode {
	i := &inode{fs: f, node: n, typ: a.Mode & unix.S_IFMT, id: hostID{a.Dev, a.Ino}}
	i.rememberLocked(f.stat(a)) // no one else has i yet
	named := dir != nil
	if i.typ != unix.S_IFDIR && !f.readonly {
		// Hard links are one inode, whose attributes (the link count) stay
		// right whichever name changes.
		f.filesMu.Lock()
		old := f.files[i.id]
		if old == nil {
			f.files[i.id] = i
		}
		f.filesMu.Unlock()
		if old != nil {
			if old.addNode(n, dir, name) && named {
				f.track(old, dir, name)
			}
			old.setAttr(a)
			return old
		}
	}
	if named {
		f.track(i, dir, name)
	}
	return i
}

// addNode records n, name in dir, as another node of the file, or as its
// node if it had given its own back, and then reports true. (A file that
// gave its node back no longer keeps the host from giving its inode number
// to a new file, should the host remove it behind the sandbox; the new
// file would then be taken for another name of it.)
func (i *inode) addNode(n gofer.NodeID, dir *inode, name string) bool {
	i.nodeMu.Lock()
	defer i.nodeMu.Unlock()
	if i.node == detached {
		i.node, i.parent, i.name = n, dir, name
		i.heldByLocked(dir)
		return true
	}
	i.other = append(i.other, n)
	return false
}

// viaNode calls fn with a node of the file that can be reopened: the first,
// else (ESTALE: its name is gone) each other one, which then comes first.
func (i *inode) viaNode(fn func(gofer.NodeID) error) error {
	nodes, err := i.pin()
	if err != nil {
		return err
	}
	defer i.unpin()
	for k, n := range nodes {
		if err = fn(n); err != unix.ESTALE {
			if k > 0 {
				i.nodeMu.Lock()
				if i.node == nodes[0] && k-1 < len(i.other) && i.other[k-1] == n {
					i.node, i.other[k-1] = n, i.node
				}
				i.nodeMu.Unlock()
			}
			return err
		}
	}
	return err
}

// Unlinked implements vfs.Unlinked: a name of the file is gone, and with
// it its link count and change time, which the next Stat asks for. (vfs
// calls it with its locks held: it must not wait for the gofer.)
func (i *inode) Unlinked() { i.markStale() }

// Moved implements vfs.Moved: a rename moved the file's change time.
func (i *inode) Moved() { i.markStale() }

func (f *fs) stat(a gofer.Attr) vfs.Stat {
	return vfs.Stat{Dev: f.dev, Ino: a.Ino, Rdev: a.Rdev, Mode: a.Mode, Nlink: a.Nlink, UID: a.UID, GID: a.GID,
		Size: a.Size, Blksize: a.Blksize, Blocks: a.Blocks, Atime: a.Atime, Mtime: a.Mtime, Ctime: a.Ctime}
}

// Lookup implements vfs.Inode. The child's inode is made while the
// directory is pinned, so that the directory keeps its node for the
// child's (evict.go).
func (i *inode) Lookup(name string) (vfs.Inode, error) {
	if i.typ != unix.S_IFDIR {
		return nil, unix.ENOTDIR
	}
	var c vfs.Inode
	err := i.withNode(func(dn gofer.NodeID) error {
		n, a, err := i.lookupNode(dn, name)
		if err != nil {
			return err
		}
		c = i.fs.newInode(i, name, n, a)
		return nil
	})
	return c, err
}

// ReadDir implements vfs.Inode.
func (i *inode) ReadDir() ([]vfs.Dirent, error) {
	if i.typ != unix.S_IFDIR {
		return nil, unix.ENOTDIR
	}
	var ents []gofer.Dirent
	err := i.withNode(func(dn gofer.NodeID) (err error) {
		ents, err = i.fs.client.ReadDir(dn)
		return err
	})
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
	if i.typ != unix.S_IFLNK {
		return "", unix.EINVAL
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.target == "" {
		var t string
		err := i.withNode(func(n gofer.NodeID) (err error) {
			t, err = i.fs.client.ReadLink(n)
			return err
		})
		if err != nil {
			return "", err
		}
		i.target = t
	}
	return i.target, nil
}

// Open implements vfs.Inode.
func (i *inode) Open(flags int) (vfs.FileImpl, error) {
	switch i.typ {
	case unix.S_IFDIR:
		i.opens.Add(1) // an open directory keeps its node (evict.go)
		return dirFile{i}, nil
	case unix.S_IFREG:
	default:
		// Device nodes in an image never reach the host's devices.
		return nil, unix.EACCES
	}
	if f := i.takeCreated(); f != nil {
		return i.writer(f, flags&unix.O_ACCMODE != unix.O_RDONLY), nil
	}
	if flags&(unix.O_ACCMODE|unix.O_TRUNC) == unix.O_RDONLY {
		return i.openShared()
	}
	f, err := i.openHost(flags)
	if err != nil {
		return nil, err
	}
	if flags&unix.O_TRUNC != 0 {
		i.markStale() // the size and times changed, and the file may be opened read-only
		if c := i.pages.Load(); c != nil {
			c.Truncate(0)
			c.SetSize(0)
		}
	}
	return i.writer(f, flags&unix.O_ACCMODE != unix.O_RDONLY), nil
}

// openHost asks the gofer for a descriptor of its own.
func (i *inode) openHost(flags int) (*host.Regular, error) {
	// O_APPEND stays in the sentry: a host pwrite on an O_APPEND descriptor
	// would ignore the offset the sentry chose.
	var fd int
	err := i.viaNode(func(n gofer.NodeID) error {
		var err error
		fd, err = i.fs.client.Open(n, flags&(unix.O_ACCMODE|unix.O_TRUNC|unix.O_NONBLOCK))
		return err
	})
	if err != nil {
		return nil, err
	}
	return i.fs.hostFile(fd)
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
	i.opens.Add(1)
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
		i.cache = mm.NewFileCache(i.fs.mf, i.ro, i.attr.Size) // read-only: the size never changes
	}
	return i.cache
}

// Release drops the open; the descriptor stays cached unless too many are.
func (f *sharedFile) Release() {
	i := f.i
	i.mu.Lock()
	i.users--
	if i.users == 0 && i.fs.cachedFDs.Load() > maxCachedFDs {
		i.ro.Release()
		i.ro = nil
		i.fs.cachedFDs.Add(-1)
	}
	i.mu.Unlock()
	if i.opens.Add(-1) == 0 {
		i.dropCacheIfIdle()
	}
}

// Read implements vfs.FileImpl: from the cache of a mapped file.
func (f *sharedFile) Read(dst *vfs.IOSeq, off int64) (int, error) {
	if c := f.i.pages.Load(); c != nil {
		return f.i.readCached(c, dst, off)
	}
	n, err := f.Regular.Read(dst, off)
	if n > 0 && f.i.atimeDue.Load() {
		f.i.markStale()
	}
	return n, err
}

// FilePages implements mm.PagesFile for a file of a writable tree.
func (f *sharedFile) FilePages() *mm.FilePages { return f.i.filePages(f.Regular, false) }

// dirFile is an open directory: listing goes through the inode, and vfs
// answers reads with EISDIR.
type dirFile struct{ i *inode }

func (dirFile) Read(*vfs.IOSeq, int64) (int, error)  { return 0, unix.EISDIR }
func (dirFile) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EISDIR }
func (d dirFile) Stat() (vfs.Stat, error)            { return d.i.Stat() }
func (dirFile) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (d dirFile) Release() { d.i.opens.Add(-1) }

// Directories are seekable: lseek(fd, 0, SEEK_SET) rewinds a listing.
func (dirFile) Size() (int64, error) { return 0, nil }
