// Package devfs is the sandbox's /dev: the character devices every Linux
// program may rely on (null, zero, full, random, urandom, tty), the
// conventional symlinks into /proc/self/fd, ptmx as a symlink into the
// devpts mounted at /dev/pts (as runc makes it), and the nodes the
// container's config adds. A device node opens by its number, on any file
// system (OpenDevice). Nothing here reaches a host device.
package devfs

import (
	"fmt"
	"path"
	"strings"

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
}

// Node is a device node a container's config adds to /dev
// (linux.devices): Path is its place under /dev ("fuse", "net/tun"), Mode
// its type (S_IFCHR, S_IFBLK, S_IFIFO) and permission bits.
type Node struct {
	Path     string
	Mode     uint32
	Rdev     uint64
	UID, GID uint32
}

// New builds a /dev tree whose timestamps are now, with nodes added (one
// at the place of a standard device replaces it). A node's directories
// are made as needed; a path through a file that is not a directory is
// an error.
func New(now unix.Timespec, nodes []Node) (*vfs.Dentry, error) {
	dev := vfs.NewAnonDev()
	var ino uint64
	mk := func(mode uint32, rdev uint64) *node {
		ino++
		return &node{stat: vfs.Stat{Dev: dev, Ino: ino, Mode: mode, Nlink: 1, Rdev: rdev, Blksize: 4096,
			Atime: now, Mtime: now, Ctime: now}}
	}
	mkdir := func(perm uint32) *node {
		n := mk(unix.S_IFDIR|perm, 0)
		n.stat.Nlink = 2
		return n
	}
	root := mkdir(0o755)
	for _, d := range devices {
		root.add(d.name, mk(unix.S_IFCHR|d.perm, unix.Mkdev(d.major, d.minor)))
	}
	root.add("pts", mkdir(0o755))
	root.add("shm", mkdir(0o1777))
	for _, l := range [][2]string{{"fd", "/proc/self/fd"}, {"stdin", "/proc/self/fd/0"},
		{"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"}, {"ptmx", "pts/ptmx"}} {
		n := mk(unix.S_IFLNK|0o777, 0)
		n.target = l[1]
		n.stat.Size = int64(len(l[1]))
		root.add(l[0], n)
	}
	for _, d := range nodes {
		dir, name := root, ""
		parts := strings.Split(path.Clean("/" + d.Path)[1:], "/")
		for i, part := range parts {
			if i == len(parts)-1 {
				name = part
				break
			}
			c, ok := dir.children[part]
			if !ok {
				c = mkdir(0o755)
				dir.add(part, c)
			} else if c.stat.Type() != unix.S_IFDIR {
				return nil, fmt.Errorf("device /dev/%s: /dev/%s is not a directory", d.Path, strings.Join(parts[:i+1], "/"))
			}
			dir = c
		}
		if name == "" || name == "." {
			return nil, fmt.Errorf("device /dev/%s: not a file's path", d.Path)
		}
		if old, ok := dir.children[name]; ok && old.stat.Type() == unix.S_IFDIR {
			return nil, fmt.Errorf("device /dev/%s: a directory is there", d.Path)
		}
		n := mk(d.Mode, d.Rdev)
		n.stat.UID, n.stat.GID = d.UID, d.GID
		dir.add(name, n)
	}
	return vfs.NewRoot(root), nil
}

// add makes c the child name of directory n, replacing one there.
func (n *node) add(name string, c *node) {
	if n.children == nil {
		n.children = make(map[string]*node)
	}
	if _, ok := n.children[name]; !ok {
		n.order = append(n.order, name)
	}
	n.children[name] = c
	if c.stat.Type() == unix.S_IFDIR {
		n.stat.Nlink++
	}
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
	if n.stat.Type() == unix.S_IFDIR {
		// Listing goes through the inode; reads give EISDIR in vfs.
		return &openNode{deviceIO: noIO{}, ino: n}, nil
	}
	return nil, unix.ENXIO
}

// OpenTask implements kernel.TTYOpener: a device node opens the device
// its number names (OpenDevice), on behalf of t.
func (n *node) OpenTask(t *kernel.Task, flags int) (vfs.FileImpl, error) {
	if typ := n.stat.Type(); typ == unix.S_IFCHR || typ == unix.S_IFBLK {
		return OpenDevice(t, n, flags)
	}
	return n.Open(flags)
}

// OpenDevice opens the device node ino, of any file system, as its type
// and number say: one of the devices the sandbox implements, the
// caller's controlling terminal for /dev/tty (5:0), or for any other
// number ENXIO, as Linux answers a node whose device has no driver.
// Nothing here reaches a host device.
func OpenDevice(t *kernel.Task, ino vfs.Inode, flags int) (vfs.FileImpl, error) {
	st, err := ino.Stat()
	if err != nil {
		return nil, err
	}
	if st.Type() != unix.S_IFCHR {
		return nil, unix.ENXIO
	}
	major, minor := unix.Major(st.Rdev), unix.Minor(st.Rdev)
	if major == 5 && minor == 0 {
		return t.OpenControlling(flags, func() vfs.Stat {
			st, _ := ino.Stat()
			return st
		})
	}
	for _, d := range devices {
		if d.major == major && d.minor == minor && d.open != nil {
			impl, err := d.open(flags)
			if err != nil {
				return nil, err
			}
			return &openNode{deviceIO: impl, ino: ino}, nil
		}
	}
	return nil, unix.ENXIO
}

// openNode is an open device node: the device's I/O with the node's
// attributes.
type openNode struct {
	deviceIO
	ino vfs.Inode
}

func (f *openNode) Stat() (vfs.Stat, error) { return f.ino.Stat() }

// MapsAsAnonymous tells mmap that mapping /dev/zero gives zeroed memory.
func (f *openNode) MapsAsAnonymous() bool {
	_, ok := f.deviceIO.(zeroDev)
	return ok
}
