package vfs

import (
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Dentry is a name in a file system's tree, with its inode. Dentries are
// cached for the file system's life; the tree a sandbox sees is small
// enough that nothing evicts them.
type Dentry struct {
	name   string
	parent *Dentry // nil at a file system's root
	inode  Inode
	isDir  bool
	isLink bool

	// opens counts the files open on the dentry; goneID is its inode's
	// identity once its last name is removed, for inotify's
	// IN_DELETE_SELF at the last close (inotify_events.go).
	opens  atomic.Int32
	goneID atomic.Pointer[FileID]
	// deleted: the name was removed (unlink, rmdir, a rename over it) or
	// there never was one (O_TMPFILE), as Linux's d_unlinked.
	deleted atomic.Bool
	// llID is the file's identity for Landlock's rules (landlock.go).
	llID atomic.Pointer[landlockIdent]

	mu       sync.Mutex
	children map[string]*Dentry
	// absent holds names the file system said do not exist: a dynamic
	// loader and an interpreter probe dozens of paths that are not there
	// at every start, and each look-up would be a gofer round trip. Every
	// change that makes a name (addChildLocked, Rename) drops it here. At
	// most maxAbsent are kept, so a guest probing random names cannot grow
	// the sentry without bound.
	absent map[string]struct{}
	// made holds mount points the sentry added to a directory whose file
	// system lacks them (a read-only image without /proc): they are listed
	// and found as if the file system had them.
	made map[string]*Dentry
}

// NewRoot returns the root dentry of a file system whose root is inode
// (a directory, or a single file: a bind mount of one).
func NewRoot(inode Inode) *Dentry {
	isDir := true
	if st, err := inode.Stat(); err == nil {
		isDir = st.Type() == unix.S_IFDIR
	}
	return &Dentry{name: "/", inode: inode, isDir: isDir}
}

// Inode returns the dentry's inode.
func (d *Dentry) Inode() Inode { return d.inode }

// Deleted reports whether d's name was removed, or it never had one.
func (d *Dentry) Deleted() bool { return d.deleted.Load() }

// Name returns the dentry's name in its parent.
func (d *Dentry) Name() string {
	renameMu.RLock()
	defer renameMu.RUnlock()
	return d.name
}

// IsDir reports whether the dentry is a directory (a file opened from
// outside the tree, such as the sandbox's stdio, has no dentry).
func (d *Dentry) IsDir() bool { return d != nil && d.isDir }

// maxAbsent bounds the absent names remembered per directory; past it the
// directory starts over.
const maxAbsent = 256

// child returns the named child, looking it up in the file system once
// (every time, in a volatile directory).
func (d *Dentry) child(name string) (*Dentry, error) {
	volatile := false
	if v, ok := d.inode.(Volatile); ok {
		volatile = v.Volatile()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.made[name]; ok {
		return c, nil
	}
	cached, isCached := d.children[name]
	if isCached && !volatile {
		return cached, nil
	}
	if _, ok := d.absent[name]; ok && !volatile {
		return nil, unix.ENOENT
	}
	ino, err := d.inode.Lookup(name)
	if err == unix.ENOENT && !volatile {
		if d.absent == nil || len(d.absent) >= maxAbsent {
			d.absent = make(map[string]struct{})
		}
		d.absent[name] = struct{}{}
	}
	if err != nil {
		return nil, err
	}
	st, err := ino.Stat()
	if err != nil {
		return nil, err
	}
	if volatile {
		// The dentry a mount is attached at stays while the file system
		// gives the same inode for the name (pin, bind.go).
		if isCached && sameInode(cached.inode, ino) {
			return cached, nil
		}
		return &Dentry{name: name, parent: d, inode: ino,
			isDir: st.Type() == unix.S_IFDIR, isLink: st.Type() == unix.S_IFLNK}, nil
	}
	c := &Dentry{name: name, parent: d, inode: ino,
		isDir: st.Type() == unix.S_IFDIR, isLink: st.Type() == unix.S_IFLNK}
	if d.children == nil {
		d.children = make(map[string]*Dentry)
	}
	d.children[name] = c
	return c, nil
}

// Mount is a file system attached at a dentry of another mount.
type Mount struct {
	root   *Dentry
	parent *Mount  // nil for the root mount
	point  *Dentry // where it is attached, in parent
	// Type is the file system type for /proc/mounts.
	Type  string
	Flags int       // MS_RDONLY, MS_NOSUID, ...
	meta  mountMeta // what /proc/<pid>/mountinfo shows (mountinfo.go)
	// owner is the user namespace of the mount namespace the mount is in
	// (nil: the sandbox's first), which mount(2) asks for CAP_SYS_ADMIN
	// in; every mount of a tree has the same.
	owner any
	// locked: the mount came into a tree owned by a less privileged user
	// namespace along with the mount it is on, and cannot be taken off
	// it there (Linux's MNT_LOCKED): it may hide what the namespace's
	// creator could not see. lockedFlags are the per-mount flags of
	// those in MS_RDONLY, MS_NOSUID, MS_NODEV and MS_NOEXEC it had then,
	// which a remount cannot clear (MNT_LOCK_*); a bind of it keeps them.
	locked      bool
	lockedFlags int

	mu       sync.Mutex
	children map[*Dentry]*Mount // mounts attached at dentries of this mount
}

// Path is a dentry as reached through a mount.
type Path struct {
	Mount  *Mount
	Dentry *Dentry
}

// NewRootMount makes a mount of root that is the root of a tree.
func NewRootMount(root *Dentry, fsType string, flags int) *Mount {
	return &Mount{root: root, Type: fsType, Flags: flags, meta: newMountMeta(true, flags)}
}

// Root returns the root path of mount m.
func (m *Mount) Root() Path { return Path{m, m.root} }

// Attach mounts root (a file system's root dentry) on p: a directory on a
// directory, a file on anything else. The newest mount on a dentry hides
// older ones.
func Attach(p Path, root *Dentry, fsType string, flags int) (*Mount, error) {
	if p.Dentry.isDir != root.isDir {
		return nil, unix.ENOTDIR
	}
	m := &Mount{root: root, parent: p.Mount, point: p.Dentry, Type: fsType, Flags: flags, meta: newMountMeta(false, flags),
		owner: p.Mount.owner}
	pin(p.Dentry)
	p.Mount.mu.Lock()
	if p.Mount.children == nil {
		p.Mount.children = make(map[*Dentry]*Mount)
	}
	p.Mount.children[p.Dentry] = m
	p.Mount.mu.Unlock()
	return m, nil
}

// MakeMountPoint returns name in p, adding an empty directory (or, unless
// dir, an empty file) if the file system has none, so that a file system
// can be mounted there.
func MakeMountPoint(p Path, name string, dir bool) (Path, error) {
	c, err := p.Dentry.child(name)
	if err == nil {
		return crossMounts(Path{p.Mount, c}), nil
	}
	if err != unix.ENOENT {
		return Path{}, err
	}
	d := p.Dentry
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.made == nil {
		d.made = make(map[string]*Dentry)
	}
	var ino Inode = emptyDir{}
	if !dir {
		ino = emptyFile{}
	}
	c = &Dentry{name: name, parent: d, inode: ino, isDir: dir}
	d.made[name] = c
	return Path{p.Mount, c}, nil
}

// madeEntries lists the mount points MakeMountPoint added to d.
func (d *Dentry) madeEntries() []Dirent {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []Dirent
	for name, c := range d.made {
		typ := uint8(unix.DT_REG)
		if c.isDir {
			typ = unix.DT_DIR
		}
		out = append(out, Dirent{Name: name, Type: typ, Ino: 2})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// emptyDir is the inode of a made mount point, which a mount always hides.
type emptyDir struct{}

func (emptyDir) Stat() (Stat, error) {
	return Stat{Ino: 2, Mode: unix.S_IFDIR | 0o755, Nlink: 2}, nil
}
func (emptyDir) Lookup(string) (Inode, error) { return nil, unix.ENOENT }
func (emptyDir) ReadDir() ([]Dirent, error)   { return nil, nil }
func (emptyDir) Readlink() (string, error)    { return "", unix.EINVAL }
func (emptyDir) Open(int) (FileImpl, error)   { return nil, unix.ENOENT }

// emptyFile is the inode of a made mount point for a file.
type emptyFile struct{ emptyDir }

func (emptyFile) Stat() (Stat, error) {
	return Stat{Ino: 2, Mode: unix.S_IFREG | 0o644, Nlink: 1}, nil
}

// mountedOn returns the mount attached at d in m, if any.
func (m *Mount) mountedOn(d *Dentry) *Mount {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.children[d]
}

// crossMounts follows mounts stacked on p down to the topmost root.
func crossMounts(p Path) Path {
	for {
		child := p.Mount.mountedOn(p.Dentry)
		if child == nil {
			return p
		}
		p = child.Root()
	}
}

// parentOf returns the path of ".." from p, not rising above root.
func parentOf(p, root Path) Path {
	renameMu.RLock()
	defer renameMu.RUnlock()
	for {
		if p == root {
			return p
		}
		if p.Dentry != p.Mount.root {
			return Path{p.Mount, p.Dentry.parent}
		}
		if p.Mount.parent == nil {
			return p // the root of the whole tree
		}
		p = Path{p.Mount.parent, p.Mount.point}
	}
}

// ShownName is p's name as /proc shows it (Linux's d_path): PathName,
// followed by " (deleted)" once the name is gone.
func ShownName(p, root Path) string {
	name := PathName(p, root)
	if p.Dentry != nil && p.Dentry.Deleted() {
		name += " (deleted)"
	}
	return name
}

// PathName returns the absolute name of p as seen from root, as getcwd and
// /proc/<pid>/fd report it.
func PathName(p, root Path) string {
	if p.Dentry == nil {
		return ""
	}
	if p == root {
		return "/"
	}
	renameMu.RLock()
	defer renameMu.RUnlock()
	var parts []string
	for p != root {
		if p.Dentry == p.Mount.root {
			if p.Mount.parent == nil {
				break
			}
			p = Path{p.Mount.parent, p.Mount.point}
			continue
		}
		parts = append(parts, p.Dentry.name)
		p = Path{p.Mount, p.Dentry.parent}
	}
	n := 0
	for _, s := range parts {
		n += len(s) + 1
	}
	b := make([]byte, 0, n)
	for i := len(parts) - 1; i >= 0; i-- {
		b = append(append(b, '/'), parts[i]...)
	}
	return string(b)
}
