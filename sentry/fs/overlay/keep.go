package overlay

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// A kept upper layer (`moat sandbox --keep`) is a POSIX (pax) tar stream,
// laid out as Linux's overlayfs lays out an upper directory, so that `tar
// tvf` shows it and `tar -x --xattrs` as root makes a directory that
// `mount -t overlay` takes as its upperdir:
//
//   - names are relative to the overlay's root ("./" is the root itself,
//     "etc/motd", "opt/x/"), parents before their children;
//   - directories, regular files with their data, symlinks, hard links
//     (the later names of a file are link entries to its first), fifos
//     and devices, with mode, owner, atime and mtime (pax records, to the
//     nanosecond) and extended attributes (SCHILY.xattr records); ctime
//     is the load's, and sockets are left out, as tar leaves them;
//   - a name removed from the lower layer is a whiteout: a character
//     device 0:0 (so a 0:0 device the guest made comes back a removal, as
//     overlayfs reads its upper directory);
//   - a directory that hides the lower layer's one is opaque: it carries
//     the xattr trusted.overlay.opaque=y (the guest's own trusted.overlay.*
//     attributes are not kept);
//   - a pax global header with keepFormatKey=keepFormat comes first, and
//     one with keepEndKey (the number of entries) last: a stream that
//     lacks the end was cut short (Check).
const (
	keepFormatKey = "MOAT.keep"
	keepFormat    = "1"
	keepEndKey    = "MOAT.keep.end"

	opaqueXattr   = "trusted.overlay.opaque"
	overlayXattrs = "trusted.overlay."
	paxXattr      = "SCHILY.xattr."
)

// ErrIncomplete is a kept state that ends before its end mark.
var ErrIncomplete = errors.New("the kept state is incomplete: it ends before its end mark")

// Check reads a whole kept state from r, checking that it is one and ends
// with its end mark, and returns how many entries it holds. It keeps
// nothing of it: r may be as large as the guest wrote.
func Check(r io.Reader) (int, error) {
	tr := tar.NewReader(r)
	if err := readHead(tr); err != nil {
		return 0, err
	}
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if err == io.EOF {
			return 0, ErrIncomplete
		}
		if err != nil {
			return 0, fmt.Errorf("the kept state: %w", err)
		}
		if end, ok := endMark(hdr); ok {
			if end != fmt.Sprint(n) {
				return 0, fmt.Errorf("the kept state: its end mark counts %s entries, it holds %d", end, n)
			}
			if _, err := tr.Next(); err != io.EOF {
				return 0, fmt.Errorf("the kept state: entries after its end mark")
			}
			return n, nil
		}
	}
}

// readHead reads the global header a kept state starts with.
func readHead(tr *tar.Reader) error {
	hdr, err := tr.Next()
	if err == io.EOF {
		return ErrIncomplete
	}
	if err != nil {
		return fmt.Errorf("the kept state: %w", err)
	}
	if hdr.Typeflag != tar.TypeXGlobalHeader || hdr.PAXRecords[keepFormatKey] != keepFormat {
		return fmt.Errorf("not a kept state of this moat (format %s=%s)", keepFormatKey, keepFormat)
	}
	return nil
}

// endMark reports whether hdr is the end mark, and its count.
func endMark(hdr *tar.Header) (string, bool) {
	if hdr.Typeflag != tar.TypeXGlobalHeader {
		return "", false
	}
	v, ok := hdr.PAXRecords[keepEndKey]
	return v, ok
}

// entryName is the tar name of the file at p ("" is the root), with a
// slash after a directory's.
func entryName(p string, dir bool) string {
	switch {
	case p == "":
		return "./"
	case dir:
		return p + "/"
	}
	return p
}

// cleanEntryName is the path (relative to the root, "" for the root
// itself) a kept state's entry names, refused if it could name anything
// outside the overlay.
func cleanEntryName(name string) (string, error) {
	p := path.Clean(strings.TrimPrefix(name, "./"))
	if p == "." || p == "" {
		return "", nil
	}
	if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("entry %q: not a path inside the sandbox", name)
	}
	return p, nil
}

// walk returns the overlay inode at p (relative, "" or "." for root)
// below root.
func walk(root *inode, p string) (*inode, error) {
	i := root
	if p == "" || p == "." {
		return i, nil
	}
	for _, name := range strings.Split(p, "/") {
		if i.typ != unix.S_IFDIR {
			return nil, unix.ENOTDIR
		}
		c, err := i.child(name)
		if err != nil {
			return nil, err
		}
		i = c
	}
	return i, nil
}

// rootInode is the overlay inode of d, the root New returned.
func rootInode(d *vfs.Dentry) (*inode, error) {
	i, ok := d.Inode().(*inode)
	if !ok || i.parent != nil {
		return nil, fmt.Errorf("not an overlay's root")
	}
	return i, nil
}

// Hide makes dir (absolute, below root) a directory that shows nothing of
// the lower layer, as if it were empty, while what the upper layer holds
// in it (a kept state's) stays: an upper directory, opaque, made with
// mode, uid and gid if the upper layer has none there. Its parents must
// exist. Save leaves its opaque mark out, so that whether it hides the
// lower layer is each run's choice.
func Hide(d *vfs.Dentry, dir string, mode, uid, gid uint32) error {
	root, err := rootInode(d)
	if err != nil {
		return err
	}
	p, err := cleanEntryName(strings.TrimPrefix(path.Clean(dir), "/"))
	if err != nil || p == "" {
		return fmt.Errorf("hide %s: not a directory below the root", dir)
	}
	parent, err := walk(root, path.Dir(p))
	if err != nil {
		return fmt.Errorf("hide %s: %w", dir, err)
	}
	name := path.Base(p)
	c, err := parent.child(name)
	switch {
	case err == unix.ENOENT:
	case err != nil:
		return fmt.Errorf("hide %s: %w", dir, err)
	case c.typ != unix.S_IFDIR:
		return fmt.Errorf("hide %s: %w", dir, unix.ENOTDIR)
	}
	if c != nil && c.copied.Load() {
		c.mu.Lock()
		c.lower, c.opaque, c.whiteouts = nil, true, nil
		for n, cc := range c.children {
			if !cc.copied.Load() {
				delete(c.children, n) // a file of the lower layer, hidden now
			}
		}
		c.mu.Unlock()
		return nil
	}
	_, err = parent.Mkdir(name, unix.S_IFDIR|mode&0o7777, uid, gid)
	if err != nil {
		return fmt.Errorf("hide %s: %w", dir, err)
	}
	return nil
}
