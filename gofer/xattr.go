package gofer

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// Extended attributes of regular files and directories, through a
// descriptor reopened for them (the host refuses attribute calls on the
// O_PATH descriptors nodes hold). Only the namespaces the sentry keeps
// rules for pass: user., trusted. and security.; the sentry has checked
// who may read and write which.

// xattrNamespaces are the prefixes the gofer serves.
var xattrNamespaces = []string{"user.", "trusted.", "security."}

func checkXattrName(name string) error {
	if name == "" || len(name) > linuxabi.XATTR_NAME_MAX || strings.IndexByte(name, 0) >= 0 {
		return unix.ERANGE
	}
	for _, p := range xattrNamespaces {
		if strings.HasPrefix(name, p) {
			return nil
		}
	}
	return unix.EOPNOTSUPP
}

// xattrFD reopens node id for an attribute call; the caller closes it.
func (s *session) xattrFD(id NodeID) (int, error) {
	n, err := s.lookup(id)
	if err != nil {
		return -1, err
	}
	switch n.mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFDIR:
	default:
		return -1, unix.EOPNOTSUPP // a link's or a FIFO's would need a path
	}
	return reopen(n, unix.O_RDONLY)
}

func (s *session) getXattr(id NodeID, name string) error {
	if err := checkXattrName(name); err != nil {
		return err
	}
	fd, err := s.xattrFD(id)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	buf := s.scratch[:linuxabi.XATTR_SIZE_MAX]
	n, err := unix.Fgetxattr(fd, name, buf)
	if err != nil {
		return err
	}
	s.out = append(s.out, buf[:n]...)
	return nil
}

func (s *session) setXattr(id NodeID, flags int, name string, value []byte) error {
	if s.readonly {
		return unix.EROFS
	}
	if err := checkXattrName(name); err != nil {
		return err
	}
	if flags&^(unix.XATTR_CREATE|unix.XATTR_REPLACE) != 0 {
		return unix.EINVAL
	}
	fd, err := s.xattrFD(id)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsetxattr(fd, name, value, flags)
}

func (s *session) removeXattr(id NodeID, name string) error {
	if s.readonly {
		return unix.EROFS
	}
	if err := checkXattrName(name); err != nil {
		return err
	}
	fd, err := s.xattrFD(id)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fremovexattr(fd, name)
}

// listXattr answers the names in the served namespaces.
func (s *session) listXattr(id NodeID) error {
	fd, err := s.xattrFD(id)
	if err == unix.EOPNOTSUPP {
		return nil // a link or FIFO: none the gofer can reach
	}
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	buf := s.scratch[:linuxabi.XATTR_SIZE_MAX]
	n, err := unix.Flistxattr(fd, buf)
	if err != nil {
		return err
	}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if name != "" && checkXattrName(name) == nil {
			s.out = append(append(s.out, name...), 0)
		}
	}
	return nil
}
