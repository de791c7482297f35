package gofer

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// The Client's calls that change the tree. A tree served read-only answers
// every one with EROFS. New files get exactly the mode (permission bits)
// and owner given: the sentry has applied the umask and the set-group-ID
// directory rule already. Each change of a name also answers with what it
// did to the directory (DirChange).

// Create makes a regular file name in dir and returns its node, its
// attributes and a read-write host fd for it (close-on-exec). name must
// not exist: a name there, a dangling symlink included, gives EEXIST.
func (c *Client) Create(dir NodeID, name string, mode, uid, gid uint32) (NodeID, Attr, int, DirChange, error) {
	return c.makeFile(opCreate, dir, name, mode, uid, gid, true)
}

// Mkdir makes a directory.
func (c *Client) Mkdir(dir NodeID, name string, mode, uid, gid uint32) (NodeID, Attr, DirChange, error) {
	id, a, _, ch, err := c.makeFile(opMkdir, dir, name, mode, uid, gid, false)
	return id, a, ch, err
}

// Mknod makes a FIFO, a socket node or an empty regular file, as mode's
// type bits say; a device node gives EPERM.
func (c *Client) Mknod(dir NodeID, name string, mode, uid, gid uint32) (NodeID, Attr, DirChange, error) {
	id, a, _, ch, err := c.makeFile(opMknod, dir, name, mode, uid, gid, false)
	return id, a, ch, err
}

func (c *Client) makeFile(op uint8, dir NodeID, name string, mode, uid, gid uint32, wantFD bool) (NodeID, Attr, int, DirChange, error) {
	if len(name) > maxName {
		return 0, Attr{}, -1, DirChange{}, unix.ENAMETOOLONG
	}
	req := request(op, dir)
	req = le.AppendUint32(req, mode)
	req = le.AppendUint32(req, uid)
	req = le.AppendUint32(req, gid)
	req = append(req, name...)
	return c.callNode(req, wantFD, true)
}

// Tmpfile makes an unnamed regular file in dir, as open(O_TMPFILE) does,
// and returns its node (which Link can name) and a read-write host fd.
func (c *Client) Tmpfile(dir NodeID, mode, uid, gid uint32) (NodeID, Attr, int, error) {
	req := request(opTmpfile, dir)
	req = le.AppendUint32(req, mode)
	req = le.AppendUint32(req, uid)
	req = le.AppendUint32(req, gid)
	id, a, fd, _, err := c.callNode(req, true, false)
	return id, a, fd, err
}

// Symlink makes name in dir a symlink to target.
func (c *Client) Symlink(dir NodeID, name, target string, uid, gid uint32) (NodeID, Attr, DirChange, error) {
	if len(name) > maxName || len(target) >= unix.PathMax {
		return 0, Attr{}, DirChange{}, unix.ENAMETOOLONG
	}
	req := request(opSymlink, dir)
	req = le.AppendUint32(req, uid)
	req = le.AppendUint32(req, gid)
	req = le.AppendUint16(req, uint16(len(name)))
	req = append(append(req, name...), target...)
	id, a, _, ch, err := c.callNode(req, false, true)
	return id, a, ch, err
}

// Link makes name in dir another name for target, which is not a
// directory, and returns a node for the new name.
func (c *Client) Link(dir, target NodeID, name string) (NodeID, Attr, DirChange, error) {
	if len(name) > maxName {
		return 0, Attr{}, DirChange{}, unix.ENAMETOOLONG
	}
	req := le.AppendUint64(request(opLink, dir), uint64(target))
	id, a, _, ch, err := c.callNode(append(req, name...), false, true)
	return id, a, ch, err
}

// callNode makes a call whose answer is a new node and its attributes,
// and, with wantFD, a donated fd, and, with named, the DirChange of the
// name made.
func (c *Client) callNode(req []byte, wantFD, named bool) (NodeID, Attr, int, DirChange, error) {
	var (
		id NodeID
		a  Attr
		ch DirChange
	)
	fd, err := c.call(req, wantFD, func(d *decoder) {
		id = NodeID(d.u64())
		a = d.attr()
		if named {
			ch = d.dirChange()
		}
	})
	return id, a, fd, ch, err
}

// Unlink removes name from dir: a directory (which must be empty) with
// unix.AT_REMOVEDIR in flags, anything else without. Nodes of the removed
// file stay valid for Stat and for the fds already opened, but no longer
// Open.
func (c *Client) Unlink(dir NodeID, name string, flags int) (DirChange, error) {
	if len(name) > maxName {
		return DirChange{}, unix.ENAMETOOLONG
	}
	req := le.AppendUint32(request(opUnlink, dir), uint32(flags))
	var ch DirChange
	_, err := c.call(append(req, name...), false, func(d *decoder) { ch = d.dirChange() })
	return ch, err
}

// Rename moves oldName in oldDir to newName in newDir, with renameat2's
// flags (RENAME_NOREPLACE, RENAME_EXCHANGE, RENAME_WHITEOUT). Nodes of the
// moved files follow them. It answers with the DirChange of oldDir, then
// newDir's.
func (c *Client) Rename(oldDir NodeID, oldName string, newDir NodeID, newName string, flags uint32) (DirChange, DirChange, error) {
	if len(oldName) > maxName || len(newName) > maxName {
		return DirChange{}, DirChange{}, unix.ENAMETOOLONG
	}
	req := le.AppendUint64(request(opRename, oldDir), uint64(newDir))
	req = le.AppendUint32(req, flags)
	req = le.AppendUint16(req, uint16(len(oldName)))
	req = append(append(req, oldName...), newName...)
	var from, to DirChange
	_, err := c.call(req, false, func(d *decoder) {
		from = d.dirChange()
		to = d.dirChange()
	})
	return from, to, err
}

// SetAttr changes the attributes of n that a.Mask names and returns them
// all, as they are now.
func (c *Client) SetAttr(n NodeID, a SetAttr) (Attr, error) {
	var out Attr
	_, err := c.call(appendSetAttr(request(opSetAttr, n), &a), false, func(d *decoder) { out = d.attr() })
	return out, err
}

// StatFS describes the host file system n is on.
func (c *Client) StatFS(n NodeID) (StatFS, error) {
	var out StatFS
	_, err := c.call(request(opStatFS, n), false, func(d *decoder) { out = d.statFS() })
	return out, err
}

// GetXattr returns the value of n's extended attribute name.
func (c *Client) GetXattr(n NodeID, name string) ([]byte, error) {
	var v []byte
	_, err := c.call(append(request(opGetXattr, n), name...), false, func(d *decoder) { v = append([]byte(nil), d.rest()...) })
	return v, err
}

// SetXattr sets n's extended attribute name to value, with setxattr's
// XATTR_CREATE or XATTR_REPLACE in flags.
func (c *Client) SetXattr(n NodeID, name string, value []byte, flags int) error {
	if len(name) > linuxabi.XATTR_NAME_MAX {
		return unix.ERANGE
	}
	if len(value) > linuxabi.XATTR_SIZE_MAX {
		return unix.E2BIG
	}
	req := le.AppendUint32(request(opSetXattr, n), uint32(flags))
	req = le.AppendUint16(req, uint16(len(name)))
	req = append(append(req, name...), value...)
	_, err := c.call(req, false, nil)
	return err
}

// ListXattr returns the names of n's extended attributes.
func (c *Client) ListXattr(n NodeID) ([]string, error) {
	var names []string
	_, err := c.call(request(opListXattr, n), false, func(d *decoder) {
		for _, name := range strings.Split(string(d.rest()), "\x00") {
			if name != "" {
				names = append(names, name)
			}
		}
	})
	return names, err
}

// RemoveXattr removes n's extended attribute name.
func (c *Client) RemoveXattr(n NodeID, name string) error {
	_, err := c.call(append(request(opRemoveXattr, n), name...), false, nil)
	return err
}
