package overlay

import (
	"archive/tar"
	"fmt"
	"io"
	"math"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Load fills the upper layer of the overlay whose root is d (New's, before
// anything else has used it) from the kept state on r (keep.go), as Save
// wrote it. The state is the guest's doing and is checked as it is read:
// an entry that names a path outside the overlay, comes twice or is of a
// kind the format does not have fails the load, and so does a stream
// without its end mark. It streams as Save does.
func Load(d *vfs.Dentry, r io.Reader) error {
	root, err := rootInode(d)
	if err != nil {
		return err
	}
	tr := tar.NewReader(r)
	if err := readHead(tr); err != nil {
		return err
	}
	l := &loader{root: root, tr: tr}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return ErrIncomplete
		}
		if err != nil {
			return fmt.Errorf("the kept state: %w", err)
		}
		if _, ok := endMark(hdr); ok {
			return l.finish()
		}
		if err := l.entry(hdr); err != nil {
			return fmt.Errorf("the kept state: entry %q: %w", hdr.Name, err)
		}
	}
}

// loader is one Load.
type loader struct {
	root *inode
	tr   *tar.Reader
	buf  []byte
	// dirs get their attributes once everything in them is made, which
	// changes their times.
	dirs []pendingDir
}

type pendingDir struct {
	upper vfs.Inode
	hdr   *tar.Header
}

func (l *loader) entry(hdr *tar.Header) error {
	p, err := cleanEntryName(hdr.Name)
	if err != nil {
		return err
	}
	if hdr.Uid < 0 || hdr.Gid < 0 || hdr.Uid > math.MaxUint32 || hdr.Gid > math.MaxUint32 || hdr.Mode&^0o7777 != 0 {
		return unix.EINVAL
	}
	if p == "" {
		if hdr.Typeflag != tar.TypeDir {
			return unix.ENOTDIR
		}
		_, upper := l.root.layers()
		return l.dir(upper, hdr)
	}
	parent, err := walk(l.root, path.Dir(p))
	if err != nil {
		return err
	}
	if parent.typ != unix.S_IFDIR {
		return unix.ENOTDIR
	}
	if _, err := parent.upperDir(); err != nil {
		return err
	}
	name := path.Base(p)
	_, pu := parent.layers()
	if _, err := pu.Lookup(name); err == nil {
		return unix.EEXIST // the same name twice
	}
	mode, uid, gid := uint32(hdr.Mode), uint32(hdr.Uid), uint32(hdr.Gid)
	var made vfs.Inode
	switch hdr.Typeflag {
	case tar.TypeDir:
		return l.mkdir(parent, name, hdr)
	case tar.TypeReg:
		if made, err = parent.Create(name, unix.S_IFREG|mode, uid, gid); err == nil {
			err = l.data(made, hdr.Size)
		}
	case tar.TypeSymlink:
		made, err = parent.Symlink(name, hdr.Linkname, uid, gid)
	case tar.TypeLink:
		return l.link(parent, name, hdr.Linkname)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		if hdr.Typeflag == tar.TypeChar && hdr.Devmajor == 0 && hdr.Devminor == 0 {
			parent.removed(name, true) // a whiteout
			return nil
		}
		if hdr.Devmajor < 0 || hdr.Devminor < 0 || hdr.Devmajor > math.MaxUint32 || hdr.Devminor > math.MaxUint32 {
			return unix.EINVAL
		}
		typ := map[byte]uint32{tar.TypeChar: unix.S_IFCHR, tar.TypeBlock: unix.S_IFBLK, tar.TypeFifo: unix.S_IFIFO}[hdr.Typeflag]
		made, err = parent.Mknod(name, typ|mode, unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor)), uid, gid)
	default:
		return fmt.Errorf("entry type %q is not one a kept state has", hdr.Typeflag)
	}
	if err != nil {
		return err
	}
	_, u := made.(*inode).layers()
	return setAttrs(u, hdr)
}

// mkdir makes directory name in parent: merged with the lower layer's, if
// it has one there and the entry is not opaque.
func (l *loader) mkdir(parent *inode, name string, hdr *tar.Header) error {
	if hdr.PAXRecords[paxXattr+opaqueXattr] != "y" {
		if c, err := parent.child(name); err == nil && c.typ == unix.S_IFDIR {
			if err := c.copyUp(); err != nil {
				return err
			}
			_, u := c.layers()
			return l.dir(u, hdr)
		}
	}
	c, err := parent.Mkdir(name, unix.S_IFDIR|uint32(hdr.Mode), uint32(hdr.Uid), uint32(hdr.Gid))
	if err != nil {
		return err
	}
	_, u := c.(*inode).layers()
	return l.dir(u, hdr)
}

// dir gives upper directory u its extended attributes now and the rest
// of its attributes at the end.
func (l *loader) dir(u vfs.Inode, hdr *tar.Header) error {
	if err := setXattrs(u, hdr); err != nil {
		return err
	}
	l.dirs = append(l.dirs, pendingDir{u, hdr})
	return nil
}

// link makes name in parent another name of the file at target.
func (l *loader) link(parent *inode, name, target string) error {
	tp, err := cleanEntryName(target)
	if err != nil {
		return err
	}
	t, err := walk(l.root, tp)
	if err != nil {
		return err
	}
	if t.typ == unix.S_IFDIR {
		return unix.EPERM
	}
	return parent.Link(name, t)
}

// data copies size bytes of the entry's data into the new file u.
func (l *loader) data(u vfs.Inode, size int64) error {
	if size == 0 {
		return nil
	}
	_, upper := u.(*inode).layers()
	f, err := upper.Open(unix.O_WRONLY)
	if err != nil {
		return err
	}
	defer f.Release()
	if l.buf == nil {
		l.buf = make([]byte, copyChunk)
	}
	for off := int64(0); off < size; {
		n, err := io.ReadFull(l.tr, l.buf[:min(int64(len(l.buf)), size-off)])
		if n > 0 {
			if _, werr := f.Write(vfs.NewIOSeqBuffer(l.buf[:n]), off); werr != nil {
				return werr
			}
			off += int64(n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// finish sets the directories' attributes, now that nothing more is made
// in them.
func (l *loader) finish() error {
	for _, d := range l.dirs {
		if err := setAttrs(d.upper, d.hdr); err != nil {
			return fmt.Errorf("the kept state: entry %q: %w", d.hdr.Name, err)
		}
	}
	return nil
}

// setAttrs gives upper file u the entry's mode, owner, times and extended
// attributes.
func setAttrs(u vfs.Inode, hdr *tar.Header) error {
	s, ok := u.(vfs.AttrSetter)
	if !ok {
		return unix.EROFS
	}
	atime := hdr.AccessTime
	if atime.IsZero() {
		atime = hdr.ModTime
	}
	a := vfs.Attr{Mask: vfs.SetMode | vfs.SetUID | vfs.SetGID | vfs.SetAtime | vfs.SetMtime,
		Mode: uint32(hdr.Mode) & 0o7777, UID: uint32(hdr.Uid), GID: uint32(hdr.Gid),
		Atime: timespec(atime), Mtime: timespec(hdr.ModTime)}
	if hdr.Typeflag == tar.TypeSymlink {
		a.Mask &^= vfs.SetMode
	}
	if err := s.SetAttr(&a); err != nil {
		return err
	}
	if hdr.Typeflag == tar.TypeDir {
		return nil // Load.dir set them
	}
	return setXattrs(u, hdr)
}

// setXattrs gives u the entry's extended attributes, but the overlay's own.
func setXattrs(u vfs.Inode, hdr *tar.Header) error {
	for k, v := range hdr.PAXRecords {
		name, ok := strings.CutPrefix(k, paxXattr)
		if !ok || strings.HasPrefix(name, overlayXattrs) {
			continue
		}
		x, ok := u.(vfs.XattrInode)
		if !ok {
			return unix.EOPNOTSUPP
		}
		if err := x.SetXattr(name, []byte(v), 0); err != nil {
			return fmt.Errorf("xattr %s: %w", name, err)
		}
	}
	return nil
}

func timespec(t time.Time) unix.Timespec { return unix.NsecToTimespec(t.UnixNano()) }
