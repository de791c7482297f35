package goferfs

import (
	"github.com/moat-sandbox/moat/gofer"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Extended attributes live on the host file, through the gofer, which
// reopens a node by its name: so through any name the file has left.

var _ vfs.XattrInode = (*inode)(nil)

// GetXattr implements vfs.XattrInode.
func (i *inode) GetXattr(name string) (value []byte, err error) {
	err = i.viaNode(func(n gofer.NodeID) (err error) {
		value, err = i.fs.client.GetXattr(n, name)
		return err
	})
	return value, err
}

// SetXattr implements vfs.XattrInode.
func (i *inode) SetXattr(name string, value []byte, flags int) error {
	if err := i.viaNode(func(n gofer.NodeID) error { return i.fs.client.SetXattr(n, name, value, flags) }); err != nil {
		return err
	}
	i.markStale() // the change time moved
	return nil
}

// ListXattr implements vfs.XattrInode.
func (i *inode) ListXattr() (names []string, err error) {
	err = i.viaNode(func(n gofer.NodeID) (err error) {
		names, err = i.fs.client.ListXattr(n)
		return err
	})
	return names, err
}

// RemoveXattr implements vfs.XattrInode.
func (i *inode) RemoveXattr(name string) error {
	if err := i.viaNode(func(n gofer.NodeID) error { return i.fs.client.RemoveXattr(n, name) }); err != nil {
		return err
	}
	i.markStale()
	return nil
}
