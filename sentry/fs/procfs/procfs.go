// Package procfs is the sandbox's /proc: the processes of the sandbox's
// kernel and facts about the (virtual) machine, generated when read. It
// shows nothing of the host beyond what the sandbox's own kernel reports
// elsewhere (uname, sysinfo).
package procfs

import (
	"hash/fnv"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// fs is one mounted /proc.
type fs struct {
	k   *kernel.Kernel
	dev uint64
}

// New returns the root dentry of a /proc for kernel k.
func New(k *kernel.Kernel) *vfs.Dentry {
	f := &fs{k: k, dev: vfs.NewAnonDev()}
	return vfs.NewRoot(f.rootDir())
}

// node is one /proc inode: a directory, a generated file or a symlink.
type node struct {
	fs   *fs
	path string // from /proc, for a stable inode number
	mode uint32

	children func() []child                     // directories
	content  func() ([]byte, error)             // files
	target   func(c vfs.Caller) (string, error) // symlinks
	volatile bool                               // children come and go (pid directories)
}

// child is a directory entry with the node it leads to.
type child struct {
	name string
	node *node
}

func (f *fs) dir(path string, volatile bool, children func() []child) *node {
	return &node{fs: f, path: path, mode: unix.S_IFDIR | 0o555, children: children, volatile: volatile}
}

func (f *fs) file(path string, content func() ([]byte, error)) *node {
	return &node{fs: f, path: path, mode: unix.S_IFREG | 0o444, content: content}
}

func (f *fs) link(path string, target func(c vfs.Caller) (string, error)) *node {
	return &node{fs: f, path: path, mode: unix.S_IFLNK | 0o777, target: target}
}

func (n *node) ino() uint64 {
	h := fnv.New64a()
	h.Write([]byte(n.path))
	return h.Sum64()
}

// Stat implements vfs.Inode.
func (n *node) Stat() (vfs.Stat, error) {
	t, _ := unix.TimeToTimespec(n.fs.k.BootTime())
	st := vfs.Stat{Dev: n.fs.dev, Ino: n.ino(), Mode: n.mode, Nlink: 1, Blksize: 1024, Atime: t, Mtime: t, Ctime: t}
	if n.children != nil {
		st.Nlink = 2
	}
	return st, nil
}

// Volatile implements vfs.Volatile.
func (n *node) Volatile() bool { return n.volatile }

// Lookup implements vfs.Inode.
func (n *node) Lookup(name string) (vfs.Inode, error) {
	if n.children == nil {
		return nil, unix.ENOTDIR
	}
	for _, c := range n.children() {
		if c.name == name {
			return c.node, nil
		}
	}
	if n.path == "" {
		// /proc/<tid> of a thread that is not a process leader: reachable,
		// though not listed, as on Linux.
		if tid, err := strconv.Atoi(name); err == nil {
			if t := n.fs.k.TaskByTID(int32(tid)); t != nil {
				return n.fs.pidDir(t.ThreadGroup(), name), nil
			}
		}
	}
	return nil, unix.ENOENT
}

// ReadDir implements vfs.Inode.
func (n *node) ReadDir() ([]vfs.Dirent, error) {
	if n.children == nil {
		return nil, unix.ENOTDIR
	}
	cs := n.children()
	out := make([]vfs.Dirent, len(cs))
	for i, c := range cs {
		out[i] = vfs.Dirent{Name: c.name, Ino: c.node.ino(), Type: vfs.DirentType(c.node.mode)}
	}
	return out, nil
}

// Readlink implements vfs.Inode, for links whose target does not depend on
// the caller.
func (n *node) Readlink() (string, error) { return n.ReadlinkAs(nil) }

// ReadlinkAs implements vfs.CallerLink.
func (n *node) ReadlinkAs(c vfs.Caller) (string, error) {
	if n.target == nil {
		return "", unix.EINVAL
	}
	return n.target(c)
}

// Open implements vfs.Inode: a file's content is generated once, at open.
func (n *node) Open(flags int) (vfs.FileImpl, error) {
	if flags&unix.O_ACCMODE != unix.O_RDONLY {
		return nil, unix.EACCES
	}
	if n.children != nil {
		return &snapshot{node: n}, nil
	}
	if n.content == nil {
		return nil, unix.ENXIO
	}
	data, err := n.content()
	if err != nil {
		return nil, err
	}
	return &snapshot{node: n, data: data}, nil
}

// snapshot is an open /proc file: the content as it was at open.
type snapshot struct {
	node *node
	data []byte
}

func (s *snapshot) Read(dst *vfs.IOSeq, off int64) (int, error) {
	if off >= int64(len(s.data)) {
		return 0, nil
	}
	return dst.CopyOut(s.data[off:])
}

func (s *snapshot) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EBADF }
func (s *snapshot) Stat() (vfs.Stat, error)              { return s.node.Stat() }
func (s *snapshot) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (s *snapshot) Release()             {}
func (s *snapshot) Size() (int64, error) { return int64(len(s.data)), nil }
