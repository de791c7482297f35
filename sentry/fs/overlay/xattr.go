package overlay

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Extended attributes are the upper file's once there is one, the lower
// one's until then; a change copies the file up (its attributes with it).

var _ vfs.XattrInode = (*inode)(nil)

// current is the layer that holds the file now.
func (i *inode) current() vfs.Inode {
	lower, upper := i.layers()
	if upper != nil {
		return upper
	}
	return lower
}

// GetXattr implements vfs.XattrInode.
func (i *inode) GetXattr(name string) ([]byte, error) {
	x, ok := i.current().(vfs.XattrInode)
	if !ok {
		return nil, unix.ENODATA
	}
	return x.GetXattr(name)
}

// ListXattr implements vfs.XattrInode.
func (i *inode) ListXattr() ([]string, error) {
	x, ok := i.current().(vfs.XattrInode)
	if !ok {
		return nil, nil
	}
	return x.ListXattr()
}

// SetXattr implements vfs.XattrInode.
func (i *inode) SetXattr(name string, value []byte, flags int) error {
	x, err := i.upperXattrs()
	if err != nil {
		return err
	}
	return x.SetXattr(name, value, flags)
}

// RemoveXattr implements vfs.XattrInode.
func (i *inode) RemoveXattr(name string) error {
	x, err := i.upperXattrs()
	if err != nil {
		return err
	}
	return x.RemoveXattr(name)
}

func (i *inode) upperXattrs() (vfs.XattrInode, error) {
	if err := i.copyUp(); err != nil {
		return nil, err
	}
	_, upper := i.layers()
	x, ok := upper.(vfs.XattrInode)
	if !ok {
		return nil, unix.EOPNOTSUPP
	}
	return x, nil
}

// copyXattrs gives the new upper file u the lower file's attributes; ones
// the lower layer cannot read are left behind.
func copyXattrs(u, lower vfs.Inode) {
	from, ok1 := lower.(vfs.XattrInode)
	to, ok2 := u.(vfs.XattrInode)
	if !ok1 || !ok2 {
		return
	}
	names, err := from.ListXattr()
	if err != nil {
		return
	}
	for _, n := range names {
		if v, err := from.GetXattr(n); err == nil {
			to.SetXattr(n, v, 0)
		}
	}
}
