package vfs

import (
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// Extended attributes, with Linux's rules (fs/xattr.c's xattr_permission
// and commoncap's security checks): names are namespaced; user.* is for
// regular files and directories only, and needs read or write permission;
// trusted.* needs CAP_SYS_ADMIN (without it, reads find nothing and writes
// are refused); security.* may be read by anyone and written with
// CAP_SYS_ADMIN (security.capability with CAP_SETFCAP). A file system
// stores what it is told.

// XattrInode is implemented by inodes that keep extended attributes.
type XattrInode interface {
	GetXattr(name string) ([]byte, error) // ENODATA when absent
	// SetXattr stores value; flags is XATTR_CREATE (EEXIST if present),
	// XATTR_REPLACE (ENODATA if absent) or 0.
	SetXattr(name string, value []byte, flags int) error
	ListXattr() ([]string, error)
	RemoveXattr(name string) error // ENODATA when absent
}

var xattrPrefixes = []string{"user.", "trusted.", "security."}

// checkXattrName validates a name: ERANGE for an empty or too long one,
// EOPNOTSUPP for a namespace no file system here keeps (system.*, whose
// POSIX ACLs moat does not have, and anything unknown).
func checkXattrName(name string) error {
	if name == "" || len(name) > linuxabi.XATTR_NAME_MAX {
		return unix.ERANGE
	}
	for _, p := range xattrPrefixes {
		if strings.HasPrefix(name, p) && len(name) > len(p) {
			return nil
		}
	}
	return unix.EOPNOTSUPP
}

// xattrPermission is Linux's xattr_permission, with the capability checks
// that commoncap adds for writes to security.*.
func (c *Creds) xattrPermission(st *Stat, name string, write bool) error {
	switch {
	case strings.HasPrefix(name, "trusted."):
		if !c.capable(unix.CAP_SYS_ADMIN) {
			if write {
				return unix.EPERM
			}
			return unix.ENODATA
		}
		return nil
	case strings.HasPrefix(name, "security."):
		if !write {
			return nil
		}
		need := uint(unix.CAP_SYS_ADMIN)
		if name == "security.capability" {
			need = unix.CAP_SETFCAP
		}
		if !c.capable(need) {
			return unix.EPERM
		}
		return nil
	}
	// user.*
	if typ := st.Type(); typ != unix.S_IFREG && typ != unix.S_IFDIR {
		if write {
			return unix.EPERM
		}
		return unix.ENODATA
	}
	if write && st.Type() == unix.S_IFDIR && st.Mode&unix.S_ISVTX != 0 && !c.ownerOrCapable(st) {
		return unix.EPERM
	}
	want := uint32(MayRead)
	if write {
		want = MayWrite
	}
	return c.Permission(st, want)
}

// XattrTarget is the file an attribute call names: its attributes, where
// it keeps extended attributes (nil: a file that keeps none, such as a
// pipe), and whether its mount is read-only.
type XattrTarget struct {
	Stat     Stat
	Store    XattrInode
	ReadOnly bool
	dentry   *Dentry // for inotify's IN_ATTRIB, when it has a name
}

// XattrTargetOf is the target for the file at p.
func XattrTargetOf(p Path) (XattrTarget, error) {
	st, err := p.Dentry.inode.Stat()
	if err != nil {
		return XattrTarget{}, err
	}
	x, _ := p.Dentry.inode.(XattrInode)
	return XattrTarget{Stat: st, Store: x, ReadOnly: p.Mount.Flags&unix.MS_RDONLY != 0, dentry: p.Dentry}, nil
}

// GetXattr implements getxattr(2).
func GetXattr(c *Creds, t XattrTarget, name string) ([]byte, error) {
	if err := checkXattrName(name); err != nil {
		return nil, err
	}
	if err := c.xattrPermission(&t.Stat, name, false); err != nil {
		return nil, err
	}
	if t.Store == nil {
		return nil, unix.EOPNOTSUPP
	}
	return t.Store.GetXattr(name)
}

// SetXattr implements setxattr(2).
func SetXattr(c *Creds, t XattrTarget, name string, value []byte, flags int) error {
	if flags&^(unix.XATTR_CREATE|unix.XATTR_REPLACE) != 0 {
		return unix.EINVAL
	}
	if err := checkXattrName(name); err != nil {
		return err
	}
	if len(value) > linuxabi.XATTR_SIZE_MAX {
		return unix.E2BIG
	}
	return c.writeXattr(t, name, func() error { return t.Store.SetXattr(name, value, flags) })
}

// RemoveXattr implements removexattr(2).
func RemoveXattr(c *Creds, t XattrTarget, name string) error {
	if err := checkXattrName(name); err != nil {
		return err
	}
	return c.writeXattr(t, name, func() error { return t.Store.RemoveXattr(name) })
}

// writeXattr makes a change of attributes, once it is allowed.
func (c *Creds) writeXattr(t XattrTarget, name string, change func() error) error {
	if t.ReadOnly {
		return unix.EROFS
	}
	if err := c.xattrPermission(&t.Stat, name, true); err != nil {
		return err
	}
	if t.Store == nil {
		return unix.EOPNOTSUPP
	}
	if err := change(); err != nil {
		return err
	}
	notifyXattr(t.dentry)
	return nil
}

// ListXattr implements listxattr(2): the names the caller may see, each
// NUL-terminated. A file that keeps no attributes has none.
func ListXattr(c *Creds, t XattrTarget) ([]byte, error) {
	if t.Store == nil {
		return nil, nil
	}
	names, err := t.Store.ListXattr()
	if err != nil {
		return nil, err
	}
	var out []byte
	for _, n := range names {
		if strings.HasPrefix(n, "trusted.") && !c.capable(unix.CAP_SYS_ADMIN) {
			continue
		}
		if typ := t.Stat.Type(); strings.HasPrefix(n, "user.") && typ != unix.S_IFREG && typ != unix.S_IFDIR {
			continue
		}
		out = append(append(out, n...), 0)
	}
	if len(out) > linuxabi.XATTR_LIST_MAX {
		return nil, unix.E2BIG
	}
	return out, nil
}

// Xattrs is the attribute store a file system may keep for an inode, under
// the inode's own lock.
type Xattrs map[string][]byte

// Get returns name's value.
func (x Xattrs) Get(name string) ([]byte, error) {
	v, ok := x[name]
	if !ok {
		return nil, unix.ENODATA
	}
	return append([]byte(nil), v...), nil
}

// Set stores name's value, with setxattr's flags; *x is made if nil.
func (x *Xattrs) Set(name string, value []byte, flags int) error {
	_, ok := (*x)[name]
	switch {
	case flags&unix.XATTR_CREATE != 0 && ok:
		return unix.EEXIST
	case flags&unix.XATTR_REPLACE != 0 && !ok:
		return unix.ENODATA
	}
	if *x == nil {
		*x = make(Xattrs)
	}
	(*x)[name] = append([]byte(nil), value...)
	return nil
}

// Remove removes name.
func (x Xattrs) Remove(name string) error {
	if _, ok := x[name]; !ok {
		return unix.ENODATA
	}
	delete(x, name)
	return nil
}

// Names lists the names stored, in order, as Linux's tmpfs lists them.
func (x Xattrs) Names() []string {
	out := make([]string, 0, len(x))
	for n := range x {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
