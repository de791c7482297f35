package tmpfs

import "github.com/moat-sandbox/moat/sentry/vfs"

var _ vfs.XattrInode = (*inode)(nil)

// GetXattr implements vfs.XattrInode.
func (n *inode) GetXattr(name string) ([]byte, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.xattrs.Get(name)
}

// SetXattr implements vfs.XattrInode; the change time moves.
func (n *inode) SetXattr(name string, value []byte, flags int) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.xattrs.Set(name, value, flags); err != nil {
		return err
	}
	n.ctime = vfs.RealtimeNow()
	return nil
}

// ListXattr implements vfs.XattrInode.
func (n *inode) ListXattr() ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.xattrs.Names(), nil
}

// RemoveXattr implements vfs.XattrInode.
func (n *inode) RemoveXattr(name string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.xattrs.Remove(name); err != nil {
		return err
	}
	n.ctime = vfs.RealtimeNow()
	return nil
}
