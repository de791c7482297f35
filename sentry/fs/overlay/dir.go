package overlay

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Changes to names. vfs has checked Linux's rules against the merged view
// and serialises every change; each lands in the upper layer, after the
// directories it changes are copied up, and a name the lower layer has is
// then hidden by a whiteout.

var (
	_ vfs.DirWriter  = (*inode)(nil)
	_ vfs.AttrSetter = (*inode)(nil)
	_ vfs.FSStater   = (*inode)(nil)
)

// upperDir copies directory i up and returns its upper layer's writer.
func (i *inode) upperDir() (vfs.DirWriter, error) {
	if err := i.copyUp(); err != nil {
		return nil, err
	}
	_, u := i.layers()
	w, ok := u.(vfs.DirWriter)
	if !ok {
		return nil, unix.EROFS
	}
	return w, nil
}

// made records u, just made as name in the upper layer, as i's child: a
// name of the upper layer alone, which hides whatever the lower layer had
// there (a new directory shows nothing from below: it is opaque).
func (i *inode) made(name string, u vfs.Inode, err error) (vfs.Inode, error) {
	if err != nil {
		return nil, err
	}
	st, err := u.Stat()
	if err != nil {
		return nil, err
	}
	c := &inode{fs: i.fs, typ: st.Type(), ino: upperInoBase + st.Ino, upper: u, parent: i, name: name,
		opaque: st.Type() == unix.S_IFDIR}
	c.copied.Store(true)
	i.setChild(name, c)
	return c, nil
}

// setChild makes c child name, which exists now.
func (i *inode) setChild(name string, c *inode) {
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.whiteouts, name)
	if i.children == nil {
		i.children = make(map[string]*inode)
	}
	i.children[name] = c
}

// removed forgets child name; a name the lower layer has is whited out.
func (i *inode) removed(name string, below bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.children, name)
	if below {
		if i.whiteouts == nil {
			i.whiteouts = make(map[string]bool)
		}
		i.whiteouts[name] = true
	}
}

// below reports whether the lower layer shows a file as name in i.
func (i *inode) below(name string) bool {
	i.mu.Lock()
	lower, hidden := i.lower, i.opaque || i.whiteouts[name]
	i.mu.Unlock()
	if lower == nil || hidden {
		return false
	}
	_, err := lower.Lookup(name)
	return err == nil
}

// Create implements vfs.DirWriter.
func (i *inode) Create(name string, mode, uid, gid uint32) (vfs.Inode, error) {
	w, err := i.upperDir()
	if err != nil {
		return nil, err
	}
	u, err := w.Create(name, mode, uid, gid)
	return i.made(name, u, err)
}

// Mkdir implements vfs.DirWriter.
func (i *inode) Mkdir(name string, mode, uid, gid uint32) (vfs.Inode, error) {
	w, err := i.upperDir()
	if err != nil {
		return nil, err
	}
	u, err := w.Mkdir(name, mode, uid, gid)
	return i.made(name, u, err)
}

// Mknod implements vfs.DirWriter.
func (i *inode) Mknod(name string, mode uint32, rdev uint64, uid, gid uint32) (vfs.Inode, error) {
	w, err := i.upperDir()
	if err != nil {
		return nil, err
	}
	u, err := w.Mknod(name, mode, rdev, uid, gid)
	return i.made(name, u, err)
}

// Symlink implements vfs.DirWriter.
func (i *inode) Symlink(name, target string, uid, gid uint32) (vfs.Inode, error) {
	w, err := i.upperDir()
	if err != nil {
		return nil, err
	}
	u, err := w.Symlink(name, target, uid, gid)
	return i.made(name, u, err)
}

// Link implements vfs.DirWriter: target is copied up, and both names are
// the one overlay inode.
func (i *inode) Link(name string, target vfs.Inode) error {
	t, ok := target.(*inode)
	if !ok || t.fs != i.fs {
		return unix.EXDEV
	}
	if err := t.copyUp(); err != nil {
		return err
	}
	w, err := i.upperDir()
	if err != nil {
		return err
	}
	_, u := t.layers()
	if err := w.Link(name, u); err != nil {
		return err
	}
	i.setChild(name, t)
	return nil
}

// child returns i's child name.
func (i *inode) child(name string) (*inode, error) {
	c, err := i.Lookup(name)
	if err != nil {
		return nil, err
	}
	return c.(*inode), nil
}

// Unlink implements vfs.DirWriter.
func (i *inode) Unlink(name string) error {
	c, err := i.child(name)
	if err != nil {
		return err
	}
	if c.typ == unix.S_IFDIR {
		return unix.EISDIR
	}
	return i.remove(name, c, false)
}

// Rmdir implements vfs.DirWriter: the directory must be empty as the
// guest sees it, both layers merged.
func (i *inode) Rmdir(name string) error {
	c, err := i.child(name)
	if err != nil {
		return err
	}
	if c.typ != unix.S_IFDIR {
		return unix.ENOTDIR
	}
	if ents, err := c.ReadDir(); err != nil {
		return err
	} else if len(ents) > 0 {
		return unix.ENOTEMPTY
	}
	return i.remove(name, c, true)
}

func (i *inode) remove(name string, c *inode, dir bool) error {
	below := i.below(name)
	if _, u := c.layers(); u != nil {
		w, err := i.upperDir()
		if err != nil {
			return err
		}
		if dir {
			err = w.Rmdir(name)
		} else {
			err = w.Unlink(name)
		}
		if err != nil {
			return err
		}
	}
	i.removed(name, below)
	return nil
}

// Rename implements vfs.DirWriter. What moves is copied up first (a
// directory with everything in it, after which it is opaque), and the old
// name, if the lower layer has it, is whited out.
func (i *inode) Rename(oldName string, newDir vfs.Inode, newName string, flags uint32) error {
	nd, ok := newDir.(*inode)
	if !ok || nd.fs != i.fs {
		return unix.EXDEV
	}
	if flags&unix.RENAME_WHITEOUT != 0 {
		return unix.EINVAL
	}
	src, err := i.child(oldName)
	if err != nil {
		return err
	}
	dst, err := nd.child(newName)
	if err != nil && err != unix.ENOENT {
		return err
	}
	exchange := flags&unix.RENAME_EXCHANGE != 0
	if dst != nil && !exchange {
		switch {
		case src.typ == unix.S_IFDIR && dst.typ != unix.S_IFDIR:
			return unix.ENOTDIR
		case src.typ != unix.S_IFDIR && dst.typ == unix.S_IFDIR:
			return unix.EISDIR
		case dst.typ == unix.S_IFDIR:
			if ents, err := dst.ReadDir(); err != nil {
				return err
			} else if len(ents) > 0 {
				return unix.ENOTEMPTY
			}
		}
	}
	for _, c := range []*inode{src, dst} {
		if c != nil && (c == src || exchange) {
			if err := c.copyUpTree(); err != nil {
				return err
			}
		}
	}
	w, err := i.upperDir()
	if err != nil {
		return err
	}
	if _, err := nd.upperDir(); err != nil {
		return err
	}
	_, ndUpper := nd.layers()
	oldBelow := i.below(oldName)
	// A victim only the lower layer has is hidden by the new name; one in
	// the upper layer is replaced there.
	if err := w.Rename(oldName, ndUpper, newName, flags); err != nil {
		return err
	}
	if exchange {
		i.setChild(oldName, dst)
		nd.setChild(newName, src)
		src.relocate(nd, newName)
		dst.relocate(i, oldName)
		return nil
	}
	i.removed(oldName, oldBelow)
	nd.setChild(newName, src)
	src.relocate(nd, newName)
	return nil
}

// relocate records that i is now name in dir.
func (i *inode) relocate(dir *inode, name string) {
	i.mu.Lock()
	i.parent, i.name = dir, name
	i.mu.Unlock()
}

// SetAttr implements vfs.AttrSetter: the file is copied up and changed
// there.
func (i *inode) SetAttr(a *vfs.Attr) error {
	if err := i.copyUp(); err != nil {
		return err
	}
	_, u := i.layers()
	s, ok := u.(vfs.AttrSetter)
	if !ok {
		return unix.EROFS
	}
	return s.SetAttr(a)
}

// Tmpfile implements vfs.TmpfileMaker: an unnamed file of the upper
// layer.
func (i *inode) Tmpfile(mode, uid, gid uint32, linkable bool) (vfs.Inode, error) {
	if _, err := i.upperDir(); err != nil {
		return nil, err
	}
	_, upper := i.layers()
	m, ok := upper.(vfs.TmpfileMaker)
	if !ok {
		return nil, unix.EOPNOTSUPP
	}
	u, err := m.Tmpfile(mode, uid, gid, linkable)
	if err != nil {
		return nil, err
	}
	st, err := u.Stat()
	if err != nil {
		return nil, err
	}
	c := &inode{fs: i.fs, typ: unix.S_IFREG, ino: upperInoBase + st.Ino, upper: u}
	c.copied.Store(true)
	return c, nil
}

// Linkable implements vfs.Linkable.
func (i *inode) Linkable() bool {
	_, upper := i.layers()
	l, ok := upper.(vfs.Linkable)
	return ok && l.Linkable()
}
