package goferfs

import "github.com/moat-sandbox/moat/sentry/vfs"

// Extended attributes live on the host file, through the gofer.

var _ vfs.XattrInode = (*inode)(nil)

// GetXattr implements vfs.XattrInode.
func (i *inode) GetXattr(name string) ([]byte, error) { return i.fs.client.GetXattr(i.node, name) }

// SetXattr implements vfs.XattrInode.
func (i *inode) SetXattr(name string, value []byte, flags int) error {
	if err := i.fs.client.SetXattr(i.node, name, value, flags); err != nil {
		return err
	}
	i.markStale() // the change time moved
	return nil
}

// ListXattr implements vfs.XattrInode.
func (i *inode) ListXattr() ([]string, error) { return i.fs.client.ListXattr(i.node) }

// RemoveXattr implements vfs.XattrInode.
func (i *inode) RemoveXattr(name string) error {
	if err := i.fs.client.RemoveXattr(i.node, name); err != nil {
		return err
	}
	i.markStale()
	return nil
}
