package overlay

import (
	"archive/tar"
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Save writes the upper layer of the overlay whose root is d (New's) to w
// as a kept state (keep.go). It streams: a file's data passes through one
// buffer of copyChunk bytes, so that the sentry's memory does not grow
// with what the guest wrote. hidden are the directories Hide made this
// run (absolute paths), saved without their opaque mark. The guest should
// be done: a file changed meanwhile is saved as some mix of before and
// after, never as a broken stream.
func Save(d *vfs.Dentry, w io.Writer, hidden []string) error {
	root, err := rootInode(d)
	if err != nil {
		return err
	}
	s := &saver{tw: tar.NewWriter(w), links: make(map[uint64]string), hidden: make(map[string]bool)}
	for _, h := range hidden {
		s.hidden[strings.TrimPrefix(path.Clean(h), "/")] = true
	}
	if err := s.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Format: tar.FormatPAX,
		PAXRecords: map[string]string{keepFormatKey: keepFormat}}); err != nil {
		return err
	}
	if err := s.dir(root, ""); err != nil {
		return err
	}
	if err := s.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Format: tar.FormatPAX,
		PAXRecords: map[string]string{keepEndKey: fmt.Sprint(s.n)}}); err != nil {
		return err
	}
	return s.tw.Close()
}

// saver is one Save.
type saver struct {
	tw *tar.Writer
	n  int // entries written
	// links are the first names of the upper files with several, by
	// their upper inode number: the others are written as links to them.
	links  map[uint64]string
	hidden map[string]bool
	buf    []byte
}

func (s *saver) write(hdr *tar.Header) error {
	if err := s.tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("%s: %w", hdr.Name, err)
	}
	s.n++
	return nil
}

// dir writes directory i, at p, and everything the upper layer holds in
// it: its files, the directories below it that hold whiteouts, then its
// own whiteouts. A directory of the lower layer alone has some (a name
// removed from it copies nothing up): it is written as it is below, so
// that the load makes it in the upper layer, merged.
func (s *saver) dir(i *inode, p string) error {
	i.mu.Lock()
	upper, lower, opaque := i.upper, i.lower, i.opaque
	whiteouts := make([]string, 0, len(i.whiteouts))
	for name := range i.whiteouts {
		whiteouts = append(whiteouts, name)
	}
	var belowOnly []string
	for name, c := range i.children {
		if c.typ == unix.S_IFDIR && !c.copied.Load() {
			belowOnly = append(belowOnly, name)
		}
	}
	i.mu.Unlock()
	src := upper
	if src == nil {
		src = lower
	}
	st, err := src.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", entryName(p, true), err)
	}
	hdr := header(src, st, entryName(p, true), tar.TypeDir)
	if opaque && p != "" && !s.hidden[p] {
		hdr.PAXRecords[paxXattr+opaqueXattr] = "y"
	}
	if err := s.write(hdr); err != nil {
		return err
	}
	present := make(map[string]bool)
	if upper != nil {
		ents, err := upper.ReadDir()
		if err != nil {
			return fmt.Errorf("%s: %w", hdr.Name, err)
		}
		slices.SortFunc(ents, func(a, b vfs.Dirent) int { return strings.Compare(a.Name, b.Name) })
		for _, e := range ents {
			present[e.Name] = true
			if err := s.child(i, upper, e, path.Join(p, e.Name)); err != nil {
				return err
			}
		}
	}
	slices.Sort(belowOnly)
	for _, name := range belowOnly {
		c, err := i.child(name)
		if err != nil || present[name] || c.copied.Load() || !c.holdsWhiteouts() {
			continue
		}
		if err := s.dir(c, path.Join(p, name)); err != nil {
			return err
		}
	}
	slices.Sort(whiteouts)
	for _, name := range whiteouts {
		if present[name] {
			continue
		}
		if err := s.write(&tar.Header{Typeflag: tar.TypeChar, Name: path.Join(p, name), Format: tar.FormatPAX,
			ModTime: time.Unix(st.Mtime.Unix())}); err != nil {
			return err
		}
	}
	return nil
}

// holdsWhiteouts reports whether directory i, of the lower layer alone,
// or one below it hides a name.
func (i *inode) holdsWhiteouts() bool {
	i.mu.Lock()
	found := len(i.whiteouts) > 0
	var dirs []*inode
	for _, c := range i.children {
		if c.typ == unix.S_IFDIR && !c.copied.Load() {
			dirs = append(dirs, c)
		}
	}
	i.mu.Unlock()
	for _, c := range dirs {
		if found {
			break
		}
		found = c.holdsWhiteouts()
	}
	return found
}

// child writes entry e of directory i, whose upper directory is upper. A
// name gone since the directory was read is skipped.
func (s *saver) child(i *inode, upper vfs.Inode, e vfs.Dirent, p string) error {
	if e.Type == unix.DT_DIR {
		c, err := i.child(e.Name)
		if err == unix.ENOENT {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if _, cu := c.layers(); cu == nil || c.typ != unix.S_IFDIR {
			return nil
		}
		return s.dir(c, p)
	}
	u, err := upper.Lookup(e.Name)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	st, err := u.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	typ := st.Type()
	if typ == unix.S_IFDIR || typ == unix.S_IFSOCK {
		return nil // a directory made since the listing; a socket, which tar does not keep
	}
	if st.Nlink > 1 {
		if first, ok := s.links[st.Ino]; ok {
			return s.write(&tar.Header{Typeflag: tar.TypeLink, Name: p, Linkname: first, Format: tar.FormatPAX})
		}
		s.links[st.Ino] = p
	}
	var hdr *tar.Header
	switch typ {
	case unix.S_IFREG:
		hdr = header(u, st, p, tar.TypeReg)
		hdr.Size = st.Size
	case unix.S_IFLNK:
		target, err := u.Readlink()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		hdr = header(u, st, p, tar.TypeSymlink)
		hdr.Linkname = target
	default:
		hdr = header(u, st, p, map[uint32]byte{unix.S_IFCHR: tar.TypeChar, unix.S_IFBLK: tar.TypeBlock, unix.S_IFIFO: tar.TypeFifo}[typ])
		hdr.Devmajor, hdr.Devminor = int64(unix.Major(st.Rdev)), int64(unix.Minor(st.Rdev))
	}
	if err := s.write(hdr); err != nil {
		return err
	}
	if typ == unix.S_IFREG {
		return s.data(u, p, st.Size)
	}
	return nil
}

// data writes size bytes of file u: what it holds, and zeros past its end
// if it shrank since its stat.
func (s *saver) data(u vfs.Inode, p string, size int64) error {
	if size == 0 {
		return nil
	}
	f, err := u.Open(unix.O_RDONLY)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	defer f.Release()
	r, ok := f.(io.ReaderAt)
	if !ok {
		return fmt.Errorf("%s: %w", p, unix.EIO)
	}
	if s.buf == nil {
		s.buf = make([]byte, copyChunk)
	}
	for off := int64(0); off < size; {
		chunk := s.buf[:min(int64(len(s.buf)), size-off)]
		n, err := r.ReadAt(chunk, off)
		if err == io.EOF {
			clear(chunk[n:])
			n, err = len(chunk), nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if _, err := s.tw.Write(chunk[:n]); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		off += int64(n)
	}
	return nil
}

// header is the tar header of file u at name: its mode, owner, times and
// extended attributes.
func header(u vfs.Inode, st vfs.Stat, name string, typ byte) *tar.Header {
	hdr := &tar.Header{Typeflag: typ, Name: name, Mode: int64(st.Mode & 0o7777), Uid: int(st.UID), Gid: int(st.GID),
		ModTime: time.Unix(st.Mtime.Unix()), AccessTime: time.Unix(st.Atime.Unix()), Format: tar.FormatPAX,
		PAXRecords: make(map[string]string)}
	if x, ok := u.(vfs.XattrInode); ok {
		names, _ := x.ListXattr()
		for _, n := range names {
			if strings.HasPrefix(n, overlayXattrs) {
				continue // the overlay's own, which the guest may not keep
			}
			if v, err := x.GetXattr(n); err == nil {
				hdr.PAXRecords[paxXattr+n] = string(v)
			}
		}
	}
	return hdr
}
