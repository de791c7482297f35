// Package tmpfs is an in-memory file system, as Linux's tmpfs: directories,
// regular files whose data lives in the memory file (so that mappings of a
// file are its pages, as on Linux), symlinks and hard
// links, with inode numbers, link counts, timestamps and an optional size
// limit (ENOSPC). It never touches the host. vfs checks names, types and
// permissions before calling it; tmpfs stores what it is told and answers
// only what it alone knows (ENOTEMPTY, ENOSPC). FIFOs and socket nodes are
// kept; device nodes are not: mknod of one gives EPERM.
package tmpfs

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Magic is TMPFS_MAGIC, statfs's f_type.
const Magic = 0x01021994

// bogoDirentSize is what each entry adds to a directory's size, as in
// Linux's tmpfs (an empty directory has size 2*20, for "." and "..").
const bogoDirentSize = 20

// fs is one mounted tmpfs.
type fs struct {
	dev  uint64
	inos atomic.Uint64
	mf   *memfile.File // holds the files' data
	// spill, if set, takes data past its limit out of mf (Options.Spill).
	spill *mm.Spill

	// mu serialises changes to names (create, link, unlink, rename), so
	// that those may lock several inodes; everything else locks one.
	mu sync.Mutex

	maxPages int64        // the size limit
	pages    atomic.Int64 // pages held by files
	inodes   atomic.Int64 // inodes with a name or an open file
}

// inode is a file, directory or symlink. mu guards every field below it.
type inode struct {
	fs  *fs
	ino uint64

	mu                  sync.Mutex
	mode                uint32 // type and permission bits
	nlink               uint64
	uid, gid            uint32
	size                int64
	atime, mtime, ctime unix.Timespec

	// Directories: entries by name, listed in the order they were made.
	entries map[string]*entry
	seq     uint64
	dead    bool // removed: nothing may be made in it

	// Regular files: the data, in the memory file; a hole reads as zeros.
	data  *mm.FilePages
	opens int  // open files, which keep the data of an unlinked file
	freed bool // no name and no open file left: the data is gone

	target string // symlinks
	rdev   uint64 // device nodes

	xattrs vfs.Xattrs
	seals  uint32 // a memfd's (seals.go)
	memfd  string // a memfd's name: its opens are memFiles
	// linkable: an O_TMPFILE file, with no link yet, that link may name
	linkable bool
}

type entry struct {
	n   *inode
	seq uint64
}

// New returns the root dentry of a new tmpfs with opts, its files' data in
// mf. Without a size limit, the limit is the host's memory, as it is in
// effect.
func New(mf *memfile.File, opts Options) *vfs.Dentry {
	f := &fs{dev: vfs.NewAnonDev(), mf: mf, spill: opts.Spill, maxPages: (opts.Size + pageSize - 1) / pageSize}
	if f.maxPages == 0 {
		var si unix.Sysinfo_t
		f.maxPages = math.MaxInt64
		if err := unix.Sysinfo(&si); err == nil && si.Totalram > 0 {
			f.maxPages = int64(uint64(si.Totalram) * uint64(si.Unit) / pageSize)
			if f.spill != nil {
				f.maxPages += f.spill.Capacity() / pageSize
			}
		}
	}
	root := f.newInode(unix.S_IFDIR|opts.Mode&0o7777, opts.UID, opts.GID, vfs.RealtimeNow())
	return vfs.NewRoot(root)
}

func (f *fs) newInode(mode, uid, gid uint32, t unix.Timespec) *inode {
	n := &inode{fs: f, ino: f.inos.Add(1), mode: mode, nlink: 1, uid: uid, gid: gid, atime: t, mtime: t, ctime: t}
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		n.nlink = 2
		n.entries = make(map[string]*entry)
		n.size = 2 * bogoDirentSize
	case unix.S_IFREG:
		if f.spill != nil {
			n.data = mm.NewSpillingPages(f.mf, f.account, f.spill)
		} else {
			n.data = mm.NewFilePages(f.mf, f.account)
		}
	}
	f.inodes.Add(1)
	return n
}

// account charges n pages of data against the size limit (ENOSPC past
// it), or gives them back.
func (f *fs) account(n int64) error {
	if used := f.pages.Add(n); n > 0 && used > f.maxPages {
		f.pages.Add(-n)
		return unix.ENOSPC
	}
	return nil
}

func (n *inode) isDir() bool { return n.mode&unix.S_IFMT == unix.S_IFDIR }

// blocksLocked is st_blocks: 512-byte units of the pages holding data.
func (n *inode) blocksLocked() int64 {
	if n.data == nil {
		return 0
	}
	return n.data.Pages() * (pageSize / 512)
}

// Stat implements vfs.Inode.
func (n *inode) Stat() (vfs.Stat, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.statLocked(), nil
}

func (n *inode) statLocked() vfs.Stat {
	return vfs.Stat{Dev: n.fs.dev, Ino: n.ino, Mode: n.mode, Nlink: n.nlink, UID: n.uid, GID: n.gid, Rdev: n.rdev,
		Size: n.size, Blksize: pageSize, Blocks: n.blocksLocked(),
		Atime: n.atime, Mtime: n.mtime, Ctime: n.ctime}
}

// Lookup implements vfs.Inode.
func (n *inode) Lookup(name string) (vfs.Inode, error) {
	if !n.isDir() {
		return nil, unix.ENOTDIR
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.entries[name]
	if !ok {
		return nil, unix.ENOENT
	}
	return e.n, nil
}

// ReadDir implements vfs.Inode: entries in the order they were made.
func (n *inode) ReadDir() ([]vfs.Dirent, error) {
	if !n.isDir() {
		return nil, unix.ENOTDIR
	}
	n.mu.Lock()
	if n.dead {
		n.mu.Unlock()
		return nil, unix.ENOENT
	}
	type named struct {
		name string
		e    *entry
	}
	list := make([]named, 0, len(n.entries))
	for name, e := range n.entries {
		list = append(list, named{name, e})
	}
	n.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].e.seq < list[j].e.seq })
	out := make([]vfs.Dirent, len(list))
	for i, l := range list {
		// The child's type and number never change.
		out[i] = vfs.Dirent{Name: l.name, Ino: l.e.n.ino, Type: vfs.DirentType(l.e.n.mode)}
	}
	return out, nil
}

// Readlink implements vfs.Inode.
func (n *inode) Readlink() (string, error) {
	if n.mode&unix.S_IFMT != unix.S_IFLNK {
		return "", unix.EINVAL
	}
	return n.target, nil
}

// Open implements vfs.Inode. O_TRUNC empties a regular file (and updates
// its times, even when it was empty), but a memfd with F_SEAL_SHRINK,
// which is EPERM.
func (n *inode) Open(flags int) (vfs.FileImpl, error) {
	switch n.mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return dirFile{n}, nil
	case unix.S_IFREG:
	default:
		return nil, unix.ENXIO
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if flags&unix.O_TRUNC != 0 {
		if err := n.sealedResize(0); err != nil {
			return nil, err // a memfd sealed against shrinking
		}
		t := vfs.RealtimeNow()
		n.truncateLocked(0)
		n.mtime, n.ctime = t, t
	}
	n.opens++
	if n.memfd != "" {
		return &memFile{file: &file{n: n}, name: n.memfd}, nil
	}
	return &file{n: n}, nil
}

// StatFS implements vfs.FSStater.
func (n *inode) StatFS() (vfs.FSStat, error) {
	f := n.fs
	used := uint64(f.pages.Load())
	total := uint64(f.maxPages)
	free := uint64(0)
	if total > used {
		free = total - used
	}
	files := total / 2
	inodes := uint64(f.inodes.Load())
	ffree := uint64(0)
	if files > inodes {
		ffree = files - inodes
	}
	return vfs.FSStat{Type: Magic, Bsize: pageSize, Blocks: total, Bfree: free, Bavail: free,
		Files: files, Ffree: ffree, Namelen: vfs.NameMax}, nil
}

// SetAttr implements vfs.AttrSetter.
func (n *inode) SetAttr(a *vfs.Attr) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	t := vfs.RealtimeNow()
	if a.Mask&vfs.SetSize != 0 {
		if n.mode&unix.S_IFMT != unix.S_IFREG {
			return unix.EINVAL
		}
		if err := n.sealedResize(a.Size); err != nil {
			return err
		}
		if a.Size != n.size {
			n.truncateLocked(a.Size)
			n.mtime = t
		}
	}
	if a.Mask&vfs.SetMode != 0 {
		if n.seals&unix.F_SEAL_EXEC != 0 && (n.mode^a.Mode)&0o111 != 0 {
			return unix.EPERM
		}
		n.mode = n.mode&unix.S_IFMT | a.Mode&0o7777
	}
	if a.Mask&vfs.SetUID != 0 {
		n.uid = a.UID
	}
	if a.Mask&vfs.SetGID != 0 {
		n.gid = a.GID
	}
	if a.Mask&vfs.SetAtime != 0 {
		n.atime = vfs.TimeOrNow(a.Atime, t)
	}
	if a.Mask&vfs.SetMtime != 0 {
		n.mtime = vfs.TimeOrNow(a.Mtime, t)
	}
	n.ctime = t
	return nil
}

// dirFile is an open directory: vfs lists it through the inode and answers
// reads with EISDIR.
type dirFile struct{ n *inode }

func (dirFile) Read(*vfs.IOSeq, int64) (int, error)  { return 0, unix.EISDIR }
func (dirFile) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EISDIR }
func (d dirFile) Stat() (vfs.Stat, error)            { return d.n.Stat() }
func (dirFile) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (dirFile) Release() {}

// Directories are seekable: lseek(fd, 0, SEEK_SET) rewinds a listing.
func (dirFile) Size() (int64, error) { return 0, nil }
