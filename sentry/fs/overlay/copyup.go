package overlay

import (
	"io"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// copyChunk is how much of a file one step of a copy-up moves.
const copyChunk = 1 << 20

// copyUp gives i an upper file, a copy of its lower one with the same
// mode, owner and times, made in its parent's upper directory (which is
// copied up first). A file with other names below that was copied up
// already is linked instead of copied again.
func (i *inode) copyUp() error {
	if _, upper := i.layers(); upper != nil {
		return nil
	}
	f := i.fs
	f.copyMu.Lock()
	defer f.copyMu.Unlock()
	return i.copyUpLocked()
}

func (i *inode) copyUpLocked() error {
	i.mu.Lock()
	lower, upper, parent, name := i.lower, i.upper, i.parent, i.name
	i.mu.Unlock()
	if upper != nil {
		return nil
	}
	if err := parent.copyUpLocked(); err != nil {
		return err
	}
	_, dir := parent.layers()
	w := dir.(vfs.DirWriter)
	st, err := lower.Stat()
	if err != nil {
		return err
	}
	multi := st.Nlink > 1 && i.typ != unix.S_IFDIR
	if c, ok := i.fs.copied[st.Ino]; ok && multi {
		if err := w.Link(name, c.upper); err != nil {
			return err
		}
		c.up++
		i.linked.Store(true)
		i.setUpper(c.upper)
		return nil
	}
	perm := st.Mode & 0o7777
	var u vfs.Inode
	switch i.typ {
	case unix.S_IFDIR:
		u, err = w.Mkdir(name, unix.S_IFDIR|perm, st.UID, st.GID)
	case unix.S_IFREG:
		if u, err = w.Create(name, unix.S_IFREG|perm, st.UID, st.GID); err == nil {
			if err = copyData(u, lower, st.Size); err != nil {
				w.Unlink(name)
			}
		}
	case unix.S_IFLNK:
		var target string
		if target, err = lower.Readlink(); err == nil {
			u, err = w.Symlink(name, target, st.UID, st.GID)
		}
	default:
		u, err = w.Mknod(name, st.Mode, st.Rdev, st.UID, st.GID)
	}
	if err != nil {
		return err
	}
	if err := copyAttr(u, st); err != nil {
		return err
	}
	copyXattrs(u, lower)
	i.setUpper(u)
	if multi {
		i.fs.copied[st.Ino] = &linkedCopy{upper: u, n: st.Nlink, up: 1}
		i.linked.Store(true)
		// The names already reached are linked now.
		for _, o := range i.fs.links[st.Ino] {
			if err := o.copyUpLocked(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (i *inode) setUpper(u vfs.Inode) {
	i.mu.Lock()
	i.upper = u
	i.mu.Unlock()
	i.copied.Store(true)
}

// copyAttr gives u the lower file's mode, owner and times.
func copyAttr(u vfs.Inode, st vfs.Stat) error {
	s, ok := u.(vfs.AttrSetter)
	if !ok {
		return unix.EROFS
	}
	a := vfs.Attr{Mask: vfs.SetMode | vfs.SetUID | vfs.SetGID | vfs.SetAtime | vfs.SetMtime,
		Mode: st.Mode & 0o7777, UID: st.UID, GID: st.GID, Atime: st.Atime, Mtime: st.Mtime}
	if st.Type() == unix.S_IFLNK {
		a.Mask &^= vfs.SetMode // a symlink's mode is always 0777
	}
	return s.SetAttr(&a)
}

// copyData copies size bytes of lower into the new upper file u.
func copyData(u, lower vfs.Inode, size int64) error {
	src, err := lower.Open(unix.O_RDONLY)
	if err != nil {
		return err
	}
	defer src.Release()
	dst, err := u.Open(unix.O_WRONLY)
	if err != nil {
		return err
	}
	defer dst.Release()
	r, ok := src.(io.ReaderAt)
	if !ok {
		return unix.EIO
	}
	buf := make([]byte, min(size, copyChunk))
	for off := int64(0); off < size; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		if n > 0 {
			if _, werr := dst.Write(vfs.NewIOSeqBuffer(buf[:n]), off); werr != nil {
				return werr
			}
			off += int64(n)
		}
		if err == io.EOF {
			break // the file is shorter than it said: copy what there is
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyUpTree copies a directory and everything in it up, so that it can
// move: a renamed directory takes its whole tree with it, and is then
// opaque, its lower layer no longer below it.
func (i *inode) copyUpTree() error {
	f := i.fs
	f.copyMu.Lock()
	defer f.copyMu.Unlock()
	return i.copyUpTreeLocked()
}

func (i *inode) copyUpTreeLocked() error {
	if err := i.copyUpLocked(); err != nil {
		return err
	}
	if i.typ != unix.S_IFDIR {
		return nil
	}
	i.mu.Lock()
	lower, opaque := i.lower, i.opaque
	i.mu.Unlock()
	if lower != nil && !opaque {
		ents, err := i.ReadDir()
		if err != nil {
			return err
		}
		for _, e := range ents {
			c, err := i.Lookup(e.Name)
			if err != nil {
				return err
			}
			if err := c.(*inode).copyUpTreeLocked(); err != nil {
				return err
			}
		}
	}
	i.mu.Lock()
	i.lower, i.opaque, i.whiteouts = nil, true, nil
	i.mu.Unlock()
	return nil
}
