package goferfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/sentry/fs/host"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// The writable tree: vfs has checked Linux's rules (see vfs.DirWriter);
// each change is one gofer call, on the directory's node pinned for it
// (evict.go), after which what it touched is marked stale or given the
// attributes the gofer answered with. A directory that gains or loses a
// name takes the attributes the gofer answered the change with
// (gofer.DirChange), which also tell whether anything else changed it
// (prefetch.go: changed).

var (
	_ vfs.DirWriter  = (*inode)(nil)
	_ vfs.AttrSetter = (*inode)(nil)
	_ vfs.FSStater   = (*inode)(nil)
)

// Create implements vfs.DirWriter. The gofer's read-write descriptor for
// the new file serves the open that follows.
func (i *inode) Create(name string, mode, uid, gid uint32) (vfs.Inode, error) {
	i.forget(name)
	var c *inode
	var fd int
	err := i.withNode(func(dn gofer.NodeID) error {
		n, a, f, ch, err := i.fs.client.Create(dn, name, mode, uid, gid)
		if err != nil {
			i.existed(name, err)
			return err
		}
		c, fd = i.fs.newInode(i, name, n, a), f
		i.changed(ch)
		return nil
	})
	if err != nil {
		return nil, err
	}
	f, err := i.fs.hostFile(fd)
	if err != nil {
		return nil, err
	}
	c.created = f
	return c, nil
}

// hostFile wraps a donated descriptor of a regular file.
func (f *fs) hostFile(fd int) (*host.Regular, error) {
	impl, err := host.New(fd, func(s *vfs.Stat) { s.Dev = f.dev })
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	r, ok := impl.(*host.Regular)
	if !ok {
		impl.Release()
		return nil, unix.EACCES // only regular files are opened through the gofer
	}
	return r, nil
}

// Mkdir implements vfs.DirWriter. The new directory is known empty, so
// that the names made in it next are not first looked up (prefetch.go).
func (i *inode) Mkdir(name string, mode, uid, gid uint32) (vfs.Inode, error) {
	c, err := i.make(name, func(dn gofer.NodeID) (gofer.NodeID, gofer.Attr, gofer.DirChange, error) {
		return i.fs.client.Mkdir(dn, name, mode, uid, gid)
	})
	if err != nil {
		return nil, err
	}
	d := c.(*inode)
	st, _ := d.AccessStat() // its attributes as made, which nothing marked stale yet
	d.madeEmpty(st.Ctime)
	return c, nil
}

// Mknod implements vfs.DirWriter: regular files, FIFOs (whose pipe the
// sentry makes when one is opened) and socket nodes; device nodes never
// reach the host.
func (i *inode) Mknod(name string, mode uint32, rdev uint64, uid, gid uint32) (vfs.Inode, error) {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFIFO, unix.S_IFSOCK:
	default:
		return nil, unix.EPERM
	}
	return i.make(name, func(dn gofer.NodeID) (gofer.NodeID, gofer.Attr, gofer.DirChange, error) {
		return i.fs.client.Mknod(dn, name, mode, uid, gid)
	})
}

// Symlink implements vfs.DirWriter.
func (i *inode) Symlink(name, target string, uid, gid uint32) (vfs.Inode, error) {
	return i.make(name, func(dn gofer.NodeID) (gofer.NodeID, gofer.Attr, gofer.DirChange, error) {
		return i.fs.client.Symlink(dn, name, target, uid, gid)
	})
}

// make makes name in directory i with mk, given i's node.
func (i *inode) make(name string, mk func(dn gofer.NodeID) (gofer.NodeID, gofer.Attr, gofer.DirChange, error)) (vfs.Inode, error) {
	i.forget(name)
	var c *inode
	err := i.withNode(func(dn gofer.NodeID) error {
		n, a, ch, err := mk(dn)
		if err != nil {
			i.existed(name, err)
			return err
		}
		c = i.fs.newInode(i, name, n, a)
		i.changed(ch)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// Link implements vfs.DirWriter.
func (i *inode) Link(name string, target vfs.Inode) error {
	t, ok := target.(*inode)
	if !ok || t.fs != i.fs {
		return unix.EXDEV
	}
	i.forget(name)
	err := i.withNode(func(dn gofer.NodeID) error {
		var n gofer.NodeID
		var a gofer.Attr
		var ch gofer.DirChange
		err := t.withNode(func(tn gofer.NodeID) (err error) {
			n, a, ch, err = i.fs.client.Link(dn, tn, name)
			return err
		})
		if err != nil {
			i.existed(name, err)
			return err
		}
		// The dentry vfs makes for the new name holds target, whose
		// link count and change time are now a's, and which can be
		// opened through the new name's node once the old name is gone.
		if t.addNode(n, i, name) {
			i.fs.track(t, i, name) // its own node was given back meanwhile
		}
		t.setAttr(a)
		i.changed(ch)
		return nil
	})
	if err != nil {
		return err
	}
	t.linkable = false
	return nil
}

// Unlink implements vfs.DirWriter.
func (i *inode) Unlink(name string) error { return i.remove(name, 0) }

// Rmdir implements vfs.DirWriter.
func (i *inode) Rmdir(name string) error { return i.remove(name, unix.AT_REMOVEDIR) }

func (i *inode) remove(name string, flags int) error {
	i.forget(name)
	var ch gofer.DirChange
	err := i.withNode(func(dn gofer.NodeID) (err error) {
		ch, err = i.fs.client.Unlink(dn, name, flags)
		return err
	})
	if err != nil {
		return err
	}
	i.fs.removed(i, name)
	i.changed(ch)
	return nil
}

// Rename implements vfs.DirWriter.
func (i *inode) Rename(oldName string, newDir vfs.Inode, newName string, flags uint32) error {
	nd, ok := newDir.(*inode)
	if !ok || nd.fs != i.fs {
		return unix.EXDEV
	}
	i.forget(oldName)
	nd.forget(newName)
	var from, to gofer.DirChange
	err := i.withNode(func(on gofer.NodeID) error {
		return nd.withNode(func(nn gofer.NodeID) (err error) {
			from, to, err = i.fs.client.Rename(on, oldName, nn, newName, flags)
			return err
		})
	})
	if err != nil {
		nd.existed(newName, err)
		return err
	}
	i.fs.renamed(i, oldName, nd, newName, flags)
	i.changed(from)
	if nd != i {
		nd.changed(to) // within one directory, to is from again
	}
	return nil
}

// SetAttr implements vfs.AttrSetter.
func (i *inode) SetAttr(a *vfs.Attr) error {
	ga := gofer.SetAttr{Mode: a.Mode, UID: ^uint32(0), GID: ^uint32(0), Size: a.Size, Atime: a.Atime, Mtime: a.Mtime}
	if a.Mask&vfs.SetMode != 0 {
		ga.Mask |= gofer.SetMode
	}
	if a.Mask&vfs.SetUID != 0 {
		ga.Mask |= gofer.SetOwner
		ga.UID = a.UID
	}
	if a.Mask&vfs.SetGID != 0 {
		ga.Mask |= gofer.SetOwner
		ga.GID = a.GID
	}
	if a.Mask&vfs.SetSize != 0 {
		ga.Mask |= gofer.SetSize
	}
	if a.Mask&vfs.SetAtime != 0 {
		ga.Mask |= gofer.SetAtime
	}
	if a.Mask&vfs.SetMtime != 0 {
		ga.Mask |= gofer.SetMtime
	}
	if ga.Mask == 0 {
		// chown(-1, -1), which changes nothing but the change time: the
		// host's fchownat(-1, -1) does just that.
		ga.Mask = gofer.SetOwner
	}
	var out gofer.Attr
	err := i.viaNode(func(n gofer.NodeID) error {
		var err error
		out, err = i.fs.client.SetAttr(n, ga)
		return err
	})
	if err != nil {
		return err
	}
	i.setAttr(out)
	if c := i.pages.Load(); c != nil && a.Mask&vfs.SetSize != 0 {
		c.Truncate(a.Size)
		c.SetSize(a.Size)
	}
	return nil
}

// StatFS implements vfs.FSStater: the host file system's figures.
func (i *inode) StatFS() (vfs.FSStat, error) {
	var s gofer.StatFS
	err := i.withNode(func(n gofer.NodeID) (err error) {
		s, err = i.fs.client.StatFS(n)
		return err
	})
	if err != nil {
		return vfs.FSStat{}, err
	}
	return vfs.FSStat{Type: s.Type, Bsize: s.Bsize, Frsize: s.Frsize, Namelen: s.Namelen, Blocks: s.Blocks,
		Bfree: s.Bfree, Bavail: s.Bavail, Files: s.Files, Ffree: s.Ffree}, nil
}

// Tmpfile implements vfs.TmpfileMaker: the gofer's O_TMPFILE file, whose
// read-write descriptor serves the open that follows.
func (i *inode) Tmpfile(mode, uid, gid uint32, linkable bool) (vfs.Inode, error) {
	var n gofer.NodeID
	var a gofer.Attr
	var fd int
	err := i.withNode(func(dn gofer.NodeID) (err error) {
		n, a, fd, err = i.fs.client.Tmpfile(dn, mode, uid, gid)
		return err
	})
	if err != nil {
		return nil, err
	}
	c := i.fs.newInode(nil, "", n, a)
	f, err := i.fs.hostFile(fd)
	if err != nil {
		return nil, err
	}
	c.created, c.linkable = f, linkable
	return c, nil
}

// Linkable implements vfs.Linkable.
func (i *inode) Linkable() bool {
	st, err := i.Stat()
	return err == nil && st.Nlink == 0 && i.linkable
}
