package vfs

import "golang.org/x/sys/unix"

// Mount namespaces and mount(2) inside the sandbox: a copy of a whole
// tree, for unshare(CLONE_NEWNS), and the changes mount and umount2 make
// to a tree. moat's mounts have no propagation: every mount is private,
// so a change in one tree is never seen in another.

// CopyTree copies the tree p lies in: a new mount for every mount of it,
// over the same dentries, with the same flags and description and new
// ids, as a new mount namespace starts. It returns where a path of the old
// tree leads in the copy (a path in no mount of the tree is kept).
//
// owner is the new tree's user namespace; lock (a namespace less
// privileged than the old tree's) locks every copied mount but the root
// on the one it is on, and its flags.
func CopyTree(p Path, owner any, lock bool) func(Path) Path {
	top := p.Mount
	for top.parent != nil {
		top = top.parent
	}
	copies := make(map[*Mount]*Mount)
	var copyMount func(orig, parent *Mount) *Mount
	copyMount = func(orig, parent *Mount) *Mount {
		meta, fresh := orig.meta, newMountMeta(parent == nil, 0)
		meta.id, meta.outsideID = fresh.id, fresh.outsideID
		cp := &Mount{root: orig.root, parent: parent, point: orig.point, Type: orig.Type, Flags: orig.Flags, meta: meta,
			owner: owner, locked: orig.locked, lockedFlags: orig.lockedFlags}
		if lock {
			cp.locked = parent != nil
			cp.lockedFlags |= orig.Flags & lockableFlags
		}
		copies[orig] = cp
		orig.mu.Lock()
		children := make(map[*Dentry]*Mount, len(orig.children))
		for d, c := range orig.children {
			children[d] = c
		}
		orig.mu.Unlock()
		for d, c := range children {
			if cp.children == nil {
				cp.children = make(map[*Dentry]*Mount)
			}
			cp.children[d] = copyMount(c, cp)
		}
		return cp
	}
	copyMount(top, nil)
	return func(p Path) Path {
		if c, ok := copies[p.Mount]; ok {
			return Path{c, p.Dentry}
		}
		return p
	}
}

// lockableFlags are the per-mount flags a less privileged namespace's
// copy of a mount cannot clear.
const lockableFlags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC

// Owner is the user namespace of the mount tree p lies in (nil: the
// sandbox's first).
func Owner(p Path) any { return p.Mount.owner }

// SameTree reports whether a and b lie in the same mount tree (Linux's
// check_mnt: mount(2) changes only the caller's own namespace).
func SameTree(a, b Path) bool { return top(a.Mount) == top(b.Mount) }

func top(m *Mount) *Mount {
	renameMu.RLock()
	defer renameMu.RUnlock()
	for m.parent != nil {
		m = m.parent
	}
	return m
}

// HasLockedChildren reports whether a mount locked on p's mount is
// attached at or below p: a bind of p without MS_REC would show what it
// hides (EINVAL, as Linux's has_locked_children).
func HasLockedChildren(p Path) bool {
	m := p.Mount
	m.mu.Lock()
	defer m.mu.Unlock()
	renameMu.RLock()
	defer renameMu.RUnlock()
	for d, c := range m.children {
		if c.locked && isAncestor(p.Dentry, d) {
			return true
		}
	}
	return false
}

// IsMountRoot reports whether p is the root of its mount, where umount2
// and a propagation change must be aimed.
func IsMountRoot(p Path) bool { return p.Dentry == p.Mount.root }

// Detach implements umount2(2) of the mount whose root p is: EINVAL for a
// path that is no mount's root or for the tree's own root; EBUSY for a
// mount with mounts on it unless lazy (MNT_DETACH), which takes them with
// it. What it hid shows again; open files in it go on working.
func Detach(p Path, lazy bool) error {
	m := p.Mount
	if !IsMountRoot(p) || m.parent == nil || m.locked {
		return unix.EINVAL
	}
	m.mu.Lock()
	busy := len(m.children) > 0
	m.mu.Unlock()
	if busy && !lazy {
		return unix.EBUSY
	}
	parent := m.parent
	parent.mu.Lock()
	defer parent.mu.Unlock()
	if parent.children[m.point] != m {
		return unix.EINVAL
	}
	delete(parent.children, m.point)
	return nil
}

// SetFlags replaces the per-mount flags of the mount whose root p is
// (mount(2) with MS_REMOUNT): EINVAL for a path that is no mount's root.
func SetFlags(p Path, flags int) error {
	if !IsMountRoot(p) {
		return unix.EINVAL
	}
	if p.Mount.lockedFlags&^flags != 0 {
		return unix.EPERM
	}
	p.Mount.mu.Lock()
	p.Mount.Flags = flags & bindFlags
	p.Mount.mu.Unlock()
	return nil
}

// Pivot implements pivot_root(2) for a caller whose root is root: the
// mount whose root newRoot is becomes the tree's root mount, and the old
// root mount is attached at putOld, which must be newRoot or below it.
// EBUSY if newRoot or putOld is on the root's mount; EINVAL unless root
// (the tree's root mount) and newRoot are mount roots, newRoot lies under
// root and putOld under newRoot. It returns the new root.
func Pivot(root, newRoot, putOld Path) (Path, error) {
	if !root.Dentry.isDir || !newRoot.Dentry.isDir || !putOld.Dentry.isDir {
		return Path{}, unix.ENOTDIR
	}
	old, nu := root.Mount, newRoot.Mount
	if nu == old || putOld.Mount == old {
		return Path{}, unix.EBUSY
	}
	if !IsMountRoot(root) || old.parent != nil || !IsMountRoot(newRoot) || nu.locked {
		return Path{}, unix.EINVAL
	}
	if !under(putOld, newRoot) || !under(newRoot, root) {
		return Path{}, unix.EINVAL
	}
	parent := nu.parent
	parent.mu.Lock()
	if parent.children[nu.point] != nu {
		parent.mu.Unlock()
		return Path{}, unix.EINVAL
	}
	delete(parent.children, nu.point)
	parent.mu.Unlock()
	// Path walks read the mounts' parents under renameMu.
	renameMu.Lock()
	nu.parent, nu.point = nil, nil
	nu.meta.outsideID = old.meta.outsideID
	old.parent, old.point = putOld.Mount, putOld.Dentry
	renameMu.Unlock()
	pin(putOld.Dentry)
	putOld.Mount.mu.Lock()
	if putOld.Mount.children == nil {
		putOld.Mount.children = make(map[*Dentry]*Mount)
	}
	putOld.Mount.children[putOld.Dentry] = old
	putOld.Mount.mu.Unlock()
	return nu.Root(), nil
}

// under reports whether p is top or lies below it, through its mounts.
func under(p, top Path) bool {
	renameMu.RLock()
	defer renameMu.RUnlock()
	for {
		if p.Mount == top.Mount {
			return isAncestor(top.Dentry, p.Dentry)
		}
		if p.Mount.parent == nil {
			return false
		}
		p = Path{p.Mount.parent, p.Mount.point}
	}
}
