package gofer

import (
	"strings"

	"golang.org/x/sys/unix"
)

// This file is the containment boundary: every host lookup the gofer makes
// goes through walkAt or reopen, and nothing else names a host path but
// the root's own, which the caller gives (from the trusted OCI bundle).

// resolveFlags confine each lookup to beneath the directory fd it starts
// from, and refuse every symlink and magic link (/proc/<pid>/{root,cwd,fd/N}
// and the like) met while resolving. Names are single components, so the
// only link resolution could meet is the name itself, and O_NOFOLLOW keeps
// that from being followed too. (RESOLVE_NO_SYMLINKS implies NO_MAGICLINKS;
// both are named so that dropping one never drops the other.)
const resolveFlags = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// checkName accepts exactly one path component. It runs before any host
// call, so nothing the kernel might make of "..", "/x" or an embedded NUL
// is ever asked of it.
func checkName(name string) error {
	switch {
	case len(name) > maxName:
		return unix.ENAMETOOLONG
	case name == "", name == ".", name == "..", strings.ContainsAny(name, "/\x00"):
		return unix.EINVAL
	}
	return nil
}

// openat2 opens name in dirfd, confined; mode matters with O_CREAT and
// O_TMPFILE only.
func openat2(dirfd int, name string, flags int, mode uint32) (int, error) {
	return unix.Openat2(dirfd, name, &unix.OpenHow{
		Flags:   uint64(flags | unix.O_NOFOLLOW | unix.O_CLOEXEC),
		Mode:    uint64(mode),
		Resolve: resolveFlags,
	})
}

// walkAt opens name in dirfd as an O_PATH node. O_PATH|O_NOFOLLOW on a
// symlink opens the link itself, even under RESOLVE_NO_SYMLINKS, so a link
// becomes a node of type S_IFLNK; walking on from it gives ENOTDIR because
// the kernel will not use a symlink fd as a directory.
func walkAt(dirfd int, name string) (int, error) {
	return openat2(dirfd, name, unix.O_PATH, 0)
}

// reopen opens node n for I/O. A file other than a directory goes back
// through the parent by name, the one way to upgrade an O_PATH fd without
// /proc/self/fd, and then checks that the name still leads to the same
// file: if it was replaced after the walk, ESTALE. A directory (the root
// among them) is re-opened as "." beneath itself, which is the directory
// the node holds whatever became of its name; one whose name was removed
// is ESTALE all the same, as a file is.
//
// The open is non-blocking: if the name was swapped for a FIFO after the
// walk, the open must not hang the gofer before the check can refuse it.
// O_NOCTTY likewise keeps a swapped-in terminal from becoming the gofer's.
//
// A node renamed out of the served tree after it was walked keeps its fd,
// and RESOLVE_BENEATH on that fd still confines every name walked from it
// to the renamed directory itself: no name reaches its new parent or
// siblings. Only a host actor can move it there; the gofer renames nothing.
func reopen(n *node, flags int) (int, error) {
	if n.parent != nil && n.name == "" {
		return -1, unix.ESTALE
	}
	dirfd, name := n.fd, "."
	if n.holdsParent() {
		dirfd, name = n.parent.fd, n.name
	}
	var fd int
	var err error
	if n.path != "" {
		fd, err = unix.Open(n.path, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	} else {
		fd, err = openat2(dirfd, name, flags|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	}
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if st.Dev != n.dev || st.Ino != n.ino {
		unix.Close(fd)
		return -1, unix.ESTALE
	}
	if flags&unix.O_NONBLOCK == 0 {
		// F_SETFL replaces all the settable status flags; of those the
		// caller can only have asked for O_APPEND.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags&unix.O_APPEND); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

// openFlags are the flags a Client may pass to Open beside the access mode.
// Creating, O_PATH, O_TMPFILE and friends are not reads or writes of an
// existing file and have no place in this call.
const openFlags = unix.O_APPEND | unix.O_TRUNC | unix.O_DIRECTORY | unix.O_NONBLOCK

// checkOpen decides, before any host call, whether node n may be opened
// with flags.
func checkOpen(n *node, flags int, readonly bool) error {
	acc := flags & unix.O_ACCMODE
	if flags&^(unix.O_ACCMODE|openFlags) != 0 || acc == unix.O_ACCMODE {
		return unix.EINVAL
	}
	if readonly && (acc != unix.O_RDONLY || flags&unix.O_TRUNC != 0) {
		return unix.EROFS
	}
	switch n.mode & unix.S_IFMT {
	case unix.S_IFREG:
		return nil
	case unix.S_IFDIR:
		// open(2) wants write access for O_TRUNC, which a directory
		// never grants; say so here, as truncate runs after the open.
		if flags&unix.O_TRUNC != 0 {
			return unix.EISDIR
		}
		return nil
	case unix.S_IFLNK:
		return unix.ELOOP // what open(2) says for O_NOFOLLOW on a link
	default:
		// Devices, FIFOs and sockets: EACCES, as on a nodev mount.
		return unix.EACCES
	}
}

// truncate applies O_TRUNC to fd, which reopen opened without it: truncating
// at open time would hit whatever file the name led to before the identity
// check. Like open(2), it needs write permission even for O_RDONLY, so a
// read-only fd truncates through a second, write-only one.
func truncate(n *node, fd, flags int) error {
	if flags&unix.O_ACCMODE != unix.O_RDONLY {
		return unix.Ftruncate(fd, 0)
	}
	wfd, err := reopen(n, unix.O_WRONLY)
	if err != nil {
		return err
	}
	defer unix.Close(wfd)
	return unix.Ftruncate(wfd, 0)
}
