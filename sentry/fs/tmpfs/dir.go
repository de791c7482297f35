package tmpfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Changes to names. Each holds fs.mu, then locks the directories it
// changes, then the children, one at a time.

// addLocked enters c as name in directory n (locked) at time t.
func (n *inode) addLocked(name string, c *inode, t unix.Timespec) {
	n.seq++
	n.entries[name] = &entry{n: c, seq: n.seq}
	n.size += bogoDirentSize
	if c.isDir() {
		n.nlink++
	}
	n.mtime, n.ctime = t, t
}

// removeLocked takes name, leading to c, out of directory n (locked) at
// time t, and drops the link: c's data goes when nothing holds it.
func (n *inode) removeLocked(name string, c *inode, t unix.Timespec) {
	delete(n.entries, name)
	n.size -= bogoDirentSize
	n.mtime, n.ctime = t, t
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.isDir() {
		n.nlink--
		c.nlink = 0
		c.dead = true
	} else {
		c.nlink--
	}
	c.ctime = t
	c.releaseIfUnusedLocked()
}

// releaseIfUnusedLocked frees a file that has no name and no open file.
func (n *inode) releaseIfUnusedLocked() {
	if n.nlink > 0 || n.opens > 0 || n.freed {
		return
	}
	n.freed = true
	if n.data != nil {
		n.data.Release()
	}
	n.fs.inodes.Add(-1)
}

// makeChild is what Create, Mkdir and Symlink share.
func (n *inode) makeChild(name string, mode, uid, gid uint32, target string) (vfs.Inode, error) {
	return n.makeNode(name, mode, 0, uid, gid, target)
}

// makeNode is makeChild for a device node too: rdev is its number.
func (n *inode) makeNode(name string, mode uint32, rdev uint64, uid, gid uint32, target string) (vfs.Inode, error) {
	if !n.isDir() {
		return nil, unix.ENOTDIR
	}
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.dead {
		return nil, unix.ENOENT
	}
	if _, ok := n.entries[name]; ok {
		return nil, unix.EEXIST
	}
	t := vfs.RealtimeNow()
	c := n.fs.newInode(mode, uid, gid, t)
	c.rdev = rdev
	if mode&unix.S_IFMT == unix.S_IFLNK {
		c.target = target
		c.size = int64(len(target))
	}
	n.addLocked(name, c, t)
	return c, nil
}

// Create implements vfs.DirWriter.
func (n *inode) Create(name string, mode, uid, gid uint32) (vfs.Inode, error) {
	return n.makeChild(name, unix.S_IFREG|mode&0o7777, uid, gid, "")
}

// Mkdir implements vfs.DirWriter.
func (n *inode) Mkdir(name string, mode, uid, gid uint32) (vfs.Inode, error) {
	return n.makeChild(name, unix.S_IFDIR|mode&0o7777, uid, gid, "")
}

// Mknod implements vfs.DirWriter: FIFOs (whose pipe the sentry makes
// when one is opened) and socket nodes are kept; device nodes are not,
// since nothing in the sandbox may reach a device through one.
func (n *inode) Mknod(name string, mode uint32, rdev uint64, uid, gid uint32) (vfs.Inode, error) {
	switch typ := mode & unix.S_IFMT; typ {
	case unix.S_IFREG:
		return n.Create(name, mode, uid, gid)
	case unix.S_IFIFO, unix.S_IFSOCK:
		return n.makeChild(name, typ|mode&0o7777, uid, gid, "")
	case unix.S_IFCHR, unix.S_IFBLK:
		return n.makeNode(name, typ|mode&0o7777, rdev, uid, gid, "")
	}
	return nil, unix.EPERM
}

// maxSymlink is the longest target a symlink holds (a page, with its NUL).
const maxSymlink = pageSize - 1

// Symlink implements vfs.DirWriter.
func (n *inode) Symlink(name, target string, uid, gid uint32) (vfs.Inode, error) {
	if len(target) > maxSymlink {
		return nil, unix.ENAMETOOLONG
	}
	return n.makeChild(name, unix.S_IFLNK|0o777, uid, gid, target)
}

// Link implements vfs.DirWriter.
func (n *inode) Link(name string, target vfs.Inode) error {
	c, ok := target.(*inode)
	if !ok || c.fs != n.fs {
		return unix.EXDEV
	}
	if !n.isDir() {
		return unix.ENOTDIR
	}
	if c.isDir() {
		return unix.EPERM
	}
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.dead {
		return unix.ENOENT
	}
	if _, ok := n.entries[name]; ok {
		return unix.EEXIST
	}
	t := vfs.RealtimeNow()
	c.mu.Lock()
	if c.nlink == 0 && !c.linkable {
		c.mu.Unlock()
		return unix.ENOENT
	}
	c.nlink++
	c.linkable = false
	c.ctime = t
	c.mu.Unlock()
	n.addLocked(name, c, t)
	return nil
}

// Unlink implements vfs.DirWriter.
func (n *inode) Unlink(name string) error {
	return n.remove(name, false)
}

// Rmdir implements vfs.DirWriter.
func (n *inode) Rmdir(name string) error {
	return n.remove(name, true)
}

func (n *inode) remove(name string, dir bool) error {
	if !n.isDir() {
		return unix.ENOTDIR
	}
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	e, ok := n.entries[name]
	if !ok {
		return unix.ENOENT
	}
	c := e.n
	switch {
	case dir && !c.isDir():
		return unix.ENOTDIR
	case !dir && c.isDir():
		return unix.EISDIR
	case dir && c.hasEntries():
		return unix.ENOTEMPTY
	}
	n.removeLocked(name, c, vfs.RealtimeNow())
	return nil
}

func (n *inode) hasEntries() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.entries) > 0
}

// Rename implements vfs.DirWriter.
func (n *inode) Rename(oldName string, newDir vfs.Inode, newName string, flags uint32) error {
	nd, ok := newDir.(*inode)
	if !ok || nd.fs != n.fs {
		return unix.EXDEV
	}
	if !n.isDir() || !nd.isDir() {
		return unix.ENOTDIR
	}
	if flags&^(unix.RENAME_NOREPLACE|unix.RENAME_EXCHANGE) != 0 {
		return unix.EINVAL
	}
	n.fs.mu.Lock()
	defer n.fs.mu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if nd != n {
		nd.mu.Lock()
		defer nd.mu.Unlock()
	}
	src, ok := n.entries[oldName]
	if !ok {
		return unix.ENOENT
	}
	dst := nd.entries[newName]
	if dst != nil && dst.n == src.n {
		return nil
	}
	t := vfs.RealtimeNow()
	if flags&unix.RENAME_EXCHANGE != 0 {
		if dst == nil {
			return unix.ENOENT
		}
		n.entries[oldName], nd.entries[newName] = dst, src
		if n != nd && src.n.isDir() != dst.n.isDir() {
			// The directory among the two changes parent.
			from, to := n, nd
			if dst.n.isDir() {
				from, to = nd, n
			}
			from.nlink--
			to.nlink++
		}
		for _, c := range []*inode{src.n, dst.n} {
			c.touchCtime(t)
		}
		n.mtime, n.ctime, nd.mtime, nd.ctime = t, t, t, t
		return nil
	}
	if dst != nil {
		if flags&unix.RENAME_NOREPLACE != 0 {
			return unix.EEXIST
		}
		switch {
		case src.n.isDir() && !dst.n.isDir():
			return unix.ENOTDIR
		case !src.n.isDir() && dst.n.isDir():
			return unix.EISDIR
		case dst.n.isDir() && dst.n.hasEntries():
			return unix.ENOTEMPTY
		}
		nd.removeLocked(newName, dst.n, t)
	}
	delete(n.entries, oldName)
	n.size -= bogoDirentSize
	if src.n.isDir() {
		n.nlink--
	}
	nd.addLocked(newName, src.n, t)
	n.mtime, n.ctime = t, t
	src.n.touchCtime(t)
	return nil
}

func (n *inode) touchCtime(t unix.Timespec) {
	n.mu.Lock()
	n.ctime = t
	n.mu.Unlock()
}

// Tmpfile implements vfs.TmpfileMaker: an unnamed file, which its opens
// keep.
func (n *inode) Tmpfile(mode, uid, gid uint32, linkable bool) (vfs.Inode, error) {
	if !n.isDir() {
		return nil, unix.ENOTDIR
	}
	c := n.fs.newInode(unix.S_IFREG|mode&0o7777, uid, gid, vfs.RealtimeNow())
	c.nlink = 0
	c.linkable = linkable
	return c, nil
}

// Linkable implements vfs.Linkable.
func (n *inode) Linkable() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nlink == 0 && n.linkable
}
