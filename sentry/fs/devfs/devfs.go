// Package devfs is the sandbox's /dev: the character devices every Linux
// program may rely on (null, zero, full, random, urandom, tty), the
// conventional symlinks into /proc/self/fd, and ptmx as a symlink into the
// devpts mounted at /dev/pts (as runc makes it). Nothing here reaches a
// host device.
package devfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// node is one inode of the tree.
type node struct {
	stat     vfs.Stat
	children map[string]*node // directories
	order    []string         // children in listing order
	target   string           // symlinks
	open     func(flags int) (deviceIO, error)
	ctty     bool // /dev/tty: opens the caller's controlling terminal
}

// New builds a /dev tree whose timestamps are now.
func New(now unix.Timespec) *vfs.Dentry {
	dev := vfs.NewAnonDev()
	var ino uint64
	mk := func(mode uint32, rdev uint64) *node {
		ino++
		return &node{stat: vfs.Stat{Dev: dev, Ino: ino, Mode: mode, Nlink: 1, Rdev: rdev, Blksize: 4096,
			Atime: now, Mtime: now, Ctime: now}}
	}
	root := mk(unix.S_IFDIR|0o755, 0)
	root.stat.Nlink = 2
	add := func(name string, n *node) {
		if root.children == nil {
			root.children = make(map[string]*node)
		}
		root.children[name] = n
		root.order = append(root.order, name)
		if n.stat.Mode&unix.S_IFMT == unix.S_IFDIR {
			root.stat.Nlink++
		}
	}
	for _, d := range devices {
		n := mk(unix.S_IFCHR|d.perm, unix.Mkdev(d.major, d.minor))
		n.open = d.open
		n.ctty = d.major == 5 && d.minor == 0
		add(d.name, n)
	}
	for _, dir := range []string{"pts", "shm"} {
		n := mk(unix.S_IFDIR|0o755, 0)
		if dir == "shm" {
			n.stat.Mode = unix.S_IFDIR | 0o1777
		}
		n.stat.Nlink = 2
		add(dir, n)
	}
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"},
		{"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}, {"ptmx", "pts/ptmx"}} {
		n := mk(unix.S_IFLNK|0o777, 0)
		n.target = l[1]
		n.stat.Size = int64(len(l[1]))
		add(l[0], n)
	}
	return vfs.NewRoot(root)
}

// Stat implements vfs.Inode.
func (n *node) Stat() (vfs.Stat, error) { return n.stat, nil }

// Lookup implements vfs.Inode.
func (n *node) Lookup(name string) (vfs.Inode, error) {
	if n.stat.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, unix.ENOTDIR
	}
	c, ok := n.children[name]
	if !ok {
		return nil, unix.ENOENT
	}
	return c, nil
}

// ReadDir implements vfs.Inode.
func (n *node) ReadDir() ([]vfs.Dirent, error) {
	if n.stat.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil, unix.ENOTDIR
	}
	out := make([]vfs.Dirent, 0, len(n.order))
	for _, name := range n.order {
		c := n.children[name]
		out = append(out, vfs.Dirent{Name: name, Ino: c.stat.Ino, Type: vfs.DirentType(c.stat.Mode)})
	}
	return out, nil
}

// Readlink implements vfs.Inode.
func (n *node) Readlink() (string, error) {
	if n.target == "" {
		return "", unix.EINVAL
	}
	return n.target, nil
}

// Open implements vfs.Inode.
func (n *node) Open(flags int) (vfs.FileImpl, error) {
	switch {
	case n.open != nil:
		impl, err := n.open(flags)
		if err != nil {
			return nil, err
		}
		return &openNode{deviceIO: impl, node: n}, nil
	case n.stat.Mode&unix.S_IFMT == unix.S_IFDIR:
		// Listing goes through the inode; reads give EISDIR in vfs.
		return &openNode{deviceIO: noIO{}, node: n}, nil
	}
	return nil, unix.ENXIO
}

// OpenTask implements kernel.TTYOpener: /dev/tty is the caller's
// controlling terminal (ENXIO without one), opened again with the
// attributes of /dev/tty; other nodes open as they always do.
func (n *node) OpenTask(t *kernel.Task, flags int) (vfs.FileImpl, error) {
	if n.ctty {
		return t.OpenControlling(flags, func() vfs.Stat { return n.stat })
	}
	return n.Open(flags)
}

// openNode is an open devfs node: the device's I/O with the node's
// attributes.
type openNode struct {
	deviceIO
	node *node
}

func (f *openNode) Stat() (vfs.Stat, error) { return f.node.stat, nil }

// MapsAsAnonymous tells mmap that mapping /dev/zero gives zeroed memory.
func (f *openNode) MapsAsAnonymous() bool {
	_, ok := f.deviceIO.(zeroDev)
	return ok
}
