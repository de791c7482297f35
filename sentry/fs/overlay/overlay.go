// Package overlay stacks a writable upper file system over a read-only
// lower one, as Linux's overlayfs does: the container image (through the
// gofer) below, a tmpfs held by the sentry above, so that a sandbox may
// write anywhere and the image stays byte-for-byte as it was.
//
// A file is read from the lower layer until something changes it; then it
// is copied up (its parents first) and lives in the upper layer from then
// on. A name removed from the lower layer is hidden by a whiteout, and a
// directory made where the lower layer had something is opaque: nothing
// below shows through it. Both are kept here, in the overlay's own inodes,
// never written to either layer: the upper layer is the sentry's alone.
//
// Every file keeps the inode number it had below across its copy-up, and
// lower hard links stay links: the first name copied up brings the file,
// the others link to it.
//
// It must never write to the lower layer.
package overlay

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// upperInoBase separates the inode numbers of files made in the upper
// layer from those of the image, which keep their own.
const upperInoBase = 1 << 48

// fs is one overlay mount.
type fs struct {
	dev uint64

	// copyMu serialises copy-ups: a file is copied up once, however many
	// opens for writing race for it, and its parents before it.
	copyMu sync.Mutex
	// Lower files with several names (copyMu): each name looked up so
	// far, and the upper copy once one of them was copied up, which the
	// others are then linked to.
	links  map[uint64][]*inode
	copied map[uint64]*linkedCopy
}

// linkedCopy is the upper copy of a lower file with several names. Every
// name the guest has reached is linked to it; the others still count, as
// the lower layer's: n names below, up of them linked.
type linkedCopy struct {
	upper vfs.Inode
	n, up uint64
}

// inode is a file of the overlay: its lower inode, its upper one, or both
// (a directory that exists in both layers merges them).
type inode struct {
	fs  *fs
	typ uint32 // S_IFMT
	ino uint64 // what stat reports, for the file's whole life

	mu    sync.Mutex
	lower vfs.Inode // nil for a file made in the upper layer
	upper vfs.Inode // nil until copied up
	// copied says upper is set, for open files that read the lower
	// layer until then without taking mu.
	copied atomic.Bool
	// linked: a lower file with several names, now copied up: its link
	// count adds the names below not yet linked (fs.copied).
	linked atomic.Bool
	// parent and name locate the file for its copy-up; nil at the root.
	parent *inode
	name   string
	// For directories: names the lower layer has that are removed here,
	// whether the lower layer shows through at all, and the children
	// looked up or made so far (which renames and copy-ups must find).
	whiteouts map[string]bool
	opaque    bool
	children  map[string]*inode
}

// New returns the root of an overlay of upper (writable) over lower
// (read-only), both directories.
func New(lower, upper *vfs.Dentry) (*vfs.Dentry, error) {
	f := &fs{dev: vfs.NewAnonDev(), links: make(map[uint64][]*inode), copied: make(map[uint64]*linkedCopy)}
	st, err := lower.Inode().Stat()
	if err != nil {
		return nil, err
	}
	root := &inode{fs: f, typ: unix.S_IFDIR, ino: st.Ino, lower: lower.Inode(), upper: upper.Inode()}
	root.copied.Store(true)
	// The root's attributes (mode, owner, times) are the image's.
	if err := copyAttr(root.upper, st); err != nil {
		return nil, err
	}
	return vfs.NewRoot(root), nil
}

func (i *inode) layers() (lower, upper vfs.Inode) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.lower, i.upper
}

// Stat implements vfs.Inode: the upper file's attributes once there is
// one, with the overlay's device and the file's own inode number.
func (i *inode) Stat() (vfs.Stat, error) {
	lower, upper := i.layers()
	src := upper
	if src == nil {
		src = lower
	}
	st, err := src.Stat()
	if err != nil {
		return vfs.Stat{}, err
	}
	if i.typ == unix.S_IFDIR && upper != nil && lower != nil {
		// A directory both layers make up: its links cannot be counted
		// cheaply, and 1 tells find(1) and fts not to trust the count, as
		// Linux's overlayfs reports.
		st.Nlink = 1
	}
	if i.linked.Load() {
		f := i.fs
		f.copyMu.Lock()
		if c := f.copied[i.ino]; c != nil {
			st.Nlink += c.n - c.up
		}
		f.copyMu.Unlock()
	}
	st.Dev, st.Ino = i.fs.dev, i.ino
	return st, nil
}

// Lookup implements vfs.Inode.
func (i *inode) Lookup(name string) (vfs.Inode, error) {
	if i.typ != unix.S_IFDIR {
		return nil, unix.ENOTDIR
	}
	i.mu.Lock()
	if c, ok := i.children[name]; ok {
		i.mu.Unlock()
		return c, nil
	}
	lower, upper, hidden := i.lower, i.upper, i.whiteouts[name] || i.opaque
	i.mu.Unlock()

	c := &inode{fs: i.fs, parent: i, name: name}
	if upper != nil {
		u, err := upper.Lookup(name)
		switch {
		case err == nil:
			st, err := u.Stat()
			if err != nil {
				return nil, err
			}
			c.upper, c.typ, c.ino = u, st.Type(), upperInoBase+st.Ino
			c.copied.Store(true)
			if c.typ == unix.S_IFDIR && !hidden && lower != nil {
				c.lower = lowerDir(lower, name) // a directory in both layers
			}
			if c.lower == nil && c.typ == unix.S_IFDIR {
				c.opaque = true
			}
		case err != unix.ENOENT:
			return nil, err
		}
	}
	if c.upper == nil {
		if hidden || lower == nil {
			return nil, unix.ENOENT
		}
		l, err := lower.Lookup(name)
		if err != nil {
			return nil, err
		}
		st, err := l.Stat()
		if err != nil {
			return nil, err
		}
		c.lower, c.typ, c.ino = l, st.Type(), st.Ino
		if st.Nlink > 1 && c.typ != unix.S_IFDIR {
			// One of several names of a file: if another was copied up,
			// this one is linked to the copy now, so that both keep
			// showing one file.
			f := i.fs
			f.copyMu.Lock()
			f.links[st.Ino] = append(f.links[st.Ino], c)
			var err error
			if _, ok := f.copied[st.Ino]; ok {
				err = c.copyUpLocked()
			}
			f.copyMu.Unlock()
			if err != nil {
				return nil, err
			}
		}
	} else if c.lower != nil {
		if st, err := c.lower.Stat(); err == nil {
			c.ino = st.Ino
		}
	}
	return i.adopt(name, c), nil
}

// lowerDir returns name in lower if it is a directory there.
func lowerDir(lower vfs.Inode, name string) vfs.Inode {
	l, err := lower.Lookup(name)
	if err != nil {
		return nil
	}
	if st, err := l.Stat(); err != nil || st.Type() != unix.S_IFDIR {
		return nil
	}
	return l
}

// adopt records c as child name, unless a concurrent look-up did first.
func (i *inode) adopt(name string, c *inode) *inode {
	i.mu.Lock()
	defer i.mu.Unlock()
	if old, ok := i.children[name]; ok {
		return old
	}
	if i.children == nil {
		i.children = make(map[string]*inode)
	}
	i.children[name] = c
	return c
}

// ReadDir implements vfs.Inode: the upper layer's entries, then the lower
// layer's that are neither there nor removed, unless the directory is
// opaque. A file that came from below keeps its lower inode number.
func (i *inode) ReadDir() ([]vfs.Dirent, error) {
	if i.typ != unix.S_IFDIR {
		return nil, unix.ENOTDIR
	}
	i.mu.Lock()
	lower, upper, opaque := i.lower, i.upper, i.opaque
	whiteouts := make(map[string]bool, len(i.whiteouts))
	for k := range i.whiteouts {
		whiteouts[k] = true
	}
	i.mu.Unlock()

	var below map[string]vfs.Dirent
	var order []string
	if lower != nil && !opaque {
		ents, err := lower.ReadDir()
		if err != nil {
			return nil, err
		}
		below = make(map[string]vfs.Dirent, len(ents))
		for _, e := range ents {
			if !whiteouts[e.Name] {
				below[e.Name] = e
				order = append(order, e.Name)
			}
		}
	}
	var out []vfs.Dirent
	seen := make(map[string]bool)
	if upper != nil {
		ents, err := upper.ReadDir()
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			seen[e.Name] = true
			if b, ok := below[e.Name]; ok && b.Type == e.Type {
				e.Ino = b.Ino
			} else {
				e.Ino = i.childIno(e.Name, upperInoBase+e.Ino)
			}
			out = append(out, e)
		}
	}
	for _, name := range order {
		if !seen[name] {
			out = append(out, below[name])
		}
	}
	return out, nil
}

// childIno is the inode number of child name as stat reports it, if it
// has been looked up, else def.
func (i *inode) childIno(name string, def uint64) uint64 {
	i.mu.Lock()
	defer i.mu.Unlock()
	if c, ok := i.children[name]; ok {
		return c.ino
	}
	return def
}

// Readlink implements vfs.Inode.
func (i *inode) Readlink() (string, error) {
	lower, upper := i.layers()
	if upper != nil {
		return upper.Readlink()
	}
	return lower.Readlink()
}

// StatFS implements vfs.FSStater: the upper layer's figures, where writes
// go.
func (i *inode) StatFS() (vfs.FSStat, error) {
	root := i
	for root.parent != nil {
		root = root.parent
	}
	_, upper := root.layers()
	if s, ok := upper.(vfs.FSStater); ok {
		return s.StatFS()
	}
	return vfs.FSStat{Type: unix.OVERLAYFS_SUPER_MAGIC, Bsize: 4096, Namelen: vfs.NameMax}, nil
}
