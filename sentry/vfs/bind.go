package vfs

import (
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Bind mounts: a tree already in the sandbox's VFS attached again
// elsewhere (or on itself), as mount(2) with MS_BIND does. OCI configs ask
// for them directly and through linux.readonlyPaths, which runc turns into
// a bind of each path on itself, remounted read-only.

// bindFlags are the flags a bind mount has of its own.
const bindFlags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME |
	unix.MS_NODIRATIME | unix.MS_RELATIME | unix.MS_STRICTATIME

// BindMount attaches the tree under src at dst: the same dentries and
// files, reached through a new mount whose flags are flags' per-mount
// flags (what a bind followed by a remount gives, as mount(8) and runc do
// it for "bind,ro"). With MS_REC in flags the mounts below src come too,
// each a new mount with its original's flags, as MS_BIND|MS_REC copies
// them; without, they are left behind and what they hid shows. A
// directory goes on a directory and anything else on a non-directory
// (ENOTDIR otherwise), as on Linux.
func BindMount(src, dst Path, flags int) (*Mount, error) {
	if src.Dentry.isDir != dst.Dentry.isDir {
		return nil, unix.ENOTDIR
	}
	if flags&unix.MS_REC == 0 && HasLockedChildren(src) {
		return nil, unix.EINVAL
	}
	m := bindOf(src.Mount, src.Dentry, flags&bindFlags|src.Mount.lockedFlags)
	m.owner, m.lockedFlags = dst.Mount.owner, src.Mount.lockedFlags
	if flags&unix.MS_REC != 0 {
		copySubmounts(src.Mount, src.Dentry, m)
	}
	m.parent, m.point = dst.Mount, dst.Dentry
	pin(dst.Dentry)
	dst.Mount.mu.Lock()
	defer dst.Mount.mu.Unlock()
	if dst.Mount.children == nil {
		dst.Mount.children = make(map[*Dentry]*Mount)
	}
	dst.Mount.children[dst.Dentry] = m
	return m, nil
}

// bindOf makes an unattached mount of from's file system rooted at root:
// the file system's type, source, options and read-only state are
// from's, the mount's flags are flags.
func bindOf(from *Mount, root *Dentry, flags int) *Mount {
	meta := newMountMeta(false, 0)
	meta.source, meta.data, meta.superRO, meta.hostRoot = from.meta.source, from.meta.data, from.meta.superRO, from.meta.hostRoot
	return &Mount{root: root, Type: from.Type, Flags: flags, meta: meta}
}

// copySubmounts gives to, a bind of orig at root, a copy of each mount
// attached in orig at or below root, and of their mounts in turn.
func copySubmounts(orig *Mount, root *Dentry, to *Mount) {
	orig.mu.Lock()
	all := make([]*Mount, 0, len(orig.children))
	for _, c := range orig.children {
		all = append(all, c)
	}
	orig.mu.Unlock()
	var under []*Mount
	renameMu.RLock()
	for _, c := range all {
		if isAncestor(root, c.point) {
			under = append(under, c)
		}
	}
	renameMu.RUnlock()
	// In the order they were made, so that the copies' ids keep it.
	sort.Slice(under, func(i, j int) bool { return under[i].meta.id < under[j].meta.id })
	for _, c := range under {
		cp := bindOf(c, c.root, c.Flags)
		cp.parent, cp.point = to, c.point
		cp.owner, cp.locked, cp.lockedFlags = to.owner, c.locked, c.lockedFlags
		to.mu.Lock()
		if to.children == nil {
			to.children = make(map[*Dentry]*Mount)
		}
		to.children[c.point] = cp
		to.mu.Unlock()
		copySubmounts(c, c.root, cp)
	}
}

// MakeMountPath resolves the absolute path name from root, following
// symlinks, and makes each directory on the way that does not exist as
// MakeMountPoint makes one, in the sentry's tree and never in the file
// system (a read-only image may lack them): runc makes a mount's
// destination with its parents (mkdir -p) in the rootfs. The last
// component is made a directory, or with dir false an empty file.
func MakeMountPath(root Path, name string, dir bool) (Path, error) {
	cur := root
	parts := strings.FieldsFunc(name, func(r rune) bool { return r == '/' })
	for i, part := range parts {
		last := i == len(parts)-1
		next, err := Resolver{Root: root, Start: cur, Creds: KernelCreds}.Lookup(part, true) // as the runtime, not a user
		if err == unix.ENOENT {
			next, err = MakeMountPoint(cur, part, dir || !last)
		}
		if err != nil {
			return Path{}, err
		}
		if !last && !next.Dentry.isDir {
			return Path{}, unix.ENOTDIR
		}
		cur = next
	}
	return cur, nil
}

// pin keeps d, a mount point, in its parent's cache even when the parent
// is Volatile (a /proc directory, whose look-ups make new dentries each
// time): a later look-up of the name finds d, and the mount on it, while
// the file system answers it with the same inode. runc's readonlyPaths
// and maskedPaths mount on /proc/sys and the like.
func pin(d *Dentry) {
	p := d.parent
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.made[d.name] == d {
		return
	}
	if p.children == nil {
		p.children = make(map[string]*Dentry)
	}
	p.children[d.name] = d
}

// sameInode reports whether a and b are one inode. Volatile file systems
// give their inodes as pointers, which compare without panicking.
func sameInode(a, b Inode) bool {
	defer func() { recover() }()
	return a == b
}
