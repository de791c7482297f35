// Package procfs is the sandbox's /proc: the processes of the sandbox's
// kernel and facts about the (virtual) machine, generated when read. Of
// the host it shows only what a runc container sees of it too and the
// sandbox's kernel reports elsewhere: the CPUs the sentry may use
// (cpuinfo, as sched_getaffinity counts them) and the memory figures
// (meminfo, as sysinfo gives them) while the sandbox has no memory limit.
package procfs

import (
	"hash/fnv"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// fs is one mounted /proc.
type fs struct {
	k *kernel.Kernel
	// ns is the pid namespace of the task that mounted it: the
	// processes it shows and the ids it shows them by.
	ns      *kernel.PIDNamespace
	dev     uint64
	cpuinfo []byte

	// The CPU time counters as /proc last showed them (see cpuTimes).
	timesMu                        sync.Mutex
	shownUser, shownSys, shownIdle int64
}

// New returns the root dentry of a /proc for kernel k, showing the
// processes of pid namespace ns.
func New(k *kernel.Kernel, ns *kernel.PIDNamespace) *vfs.Dentry {
	f := &fs{k: k, ns: ns, dev: vfs.NewAnonDev(), cpuinfo: host().cpuinfo}
	return vfs.NewRoot(f.rootDir())
}

// node is one /proc inode: a directory, a generated file or a symlink.
type node struct {
	fs   *fs
	path string // from /proc, for a stable inode number
	mode uint32
	// owner gives the uid and gid the node belongs to: a process's files
	// are its effective ids', as Linux's task_dump_owner gives them; nil
	// is root.
	owner func() (uid, gid uint32)

	children func() []child                     // directories
	content  func() ([]byte, error)             // files
	target   func(c vfs.Caller) (string, error) // symlinks
	jump     func() (vfs.Path, error)           // magic links (fd/N): where following leads
	volatile bool                               // children come and go (pid directories)
	// process is the process a /proc/<pid> directory stands for, nil on
	// every other node: pidfd_send_signal takes a descriptor of such a
	// directory as a pidfd (ProcessOf).
	process *kernel.ThreadGroup
	// openAs opens a file whose open depends on the opener (mem).
	openAs func(c vfs.Context, flags int) (vfs.FileImpl, error)

	// write takes one write(2) to a writable file: its first writeMax
	// bytes, on behalf of the task w. The call returns the whole count.
	write    func(w *kernel.Task, data []byte) error
	writeMax int
	// noWrite is what write(2) gives on a file opened for writing that
	// cannot be written (Linux opens such a file for a caller the mode
	// bits let through, root, and fails the write: EINVAL for a process's
	// files, EIO for the machine's). Zero refuses the open itself with
	// EACCES, as Linux's sysctl permission check does even for root.
	noWrite unix.Errno
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

// writable makes n a file its owner may write (mode 0644).
func (n *node) writable(max int, write func(w *kernel.Task, data []byte) error) *node {
	n.mode = unix.S_IFREG | 0o644
	n.write, n.writeMax = write, max
	return n
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
	if n.owner != nil {
		st.UID, st.GID = n.owner()
	}
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
			if t := n.fs.k.LookupTaskIn(n.fs.ns, int32(tid)); t != nil {
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

// Jump implements vfs.MagicLink.
func (n *node) Jump(vfs.Caller) (vfs.Path, bool, error) {
	if n.jump == nil {
		return vfs.Path{}, false, nil
	}
	p, err := n.jump()
	return p, true, err
}

// ReadlinkAs implements vfs.CallerLink.
func (n *node) ReadlinkAs(c vfs.Caller) (string, error) {
	if n.target == nil {
		return "", unix.EINVAL
	}
	return n.target(c)
}

// OpenContext implements vfs.ContextOpener: the opener decides what some
// files give (mem); the rest open as Open does.
func (n *node) OpenContext(c vfs.Context, flags int) (vfs.FileImpl, error) {
	if n.openAs != nil {
		return n.openAs(c, flags)
	}
	return n.Open(flags)
}

// Open implements vfs.Inode: a file's content is generated at an open
// for reading and again at a read that does not continue the last one
// (see snapshot.Read).
func (n *node) Open(flags int) (vfs.FileImpl, error) {
	acc := flags & unix.O_ACCMODE
	if acc != unix.O_RDONLY && n.write == nil && n.noWrite == 0 {
		return nil, unix.EACCES
	}
	if n.children != nil {
		return &snapshot{node: n}, nil
	}
	if n.content == nil {
		return nil, unix.ENXIO
	}
	if acc == unix.O_WRONLY {
		return &snapshot{node: n}, nil
	}
	return newSnapshot(n, n.content)
}

// newSnapshot opens node n for reading, its content generated by gen.
func newSnapshot(n *node, gen func() ([]byte, error)) (*snapshot, error) {
	data, err := gen()
	if err != nil {
		return nil, err
	}
	return &snapshot{node: n, gen: gen, data: data}, nil
}

// snapshot is an open /proc file: the content as it was generated at
// open or at the latest read that began afresh.
type snapshot struct {
	node *node
	gen  func() ([]byte, error) // nil for a file opened only to be written

	mu   sync.Mutex
	data []byte
	// next is the offset where the last read ended: a read there goes on
	// in the same content, so that a file read in pieces stays whole.
	next int64
}

// Read copies out the content from off. As Linux's seq_file does, a read
// at offset 0, or at any offset but where the last read ended, generates
// the content anew: a reader that rereads /proc/uptime with pread(fd, 0)
// sees the time go on.
func (s *snapshot) Read(dst *vfs.IOSeq, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != nil && (off == 0 || off != s.next) {
		data, err := s.gen()
		if err != nil {
			return 0, err
		}
		s.data = data
	}
	if off >= int64(len(s.data)) {
		s.next = off
		return 0, nil
	}
	n, err := dst.CopyOut(s.data[off:])
	s.next = off + int64(n)
	return n, err
}

// Write hands one write(2) to the node; its offset means nothing, as for
// Linux's comm and oom_score_adj.
func (s *snapshot) Write(src *vfs.IOSeq, _ int64) (int, error) {
	n := s.node
	if n.write == nil {
		return 0, n.noWrite
	}
	w, ok := src.Context().(*kernel.Task)
	if !ok {
		return 0, unix.EINVAL
	}
	count := src.Len()
	data := make([]byte, min(count, n.writeMax))
	if _, err := src.CopyIn(data); err != nil {
		return 0, unix.EFAULT
	}
	if err := n.write(w, data); err != nil {
		return 0, err
	}
	return count, nil
}

func (s *snapshot) Stat() (vfs.Stat, error) { return s.node.Stat() }

// NoSpliceRead implements vfs.Unspliceable: as in Linux, whose files of a
// process (seq_read or read without read_iter) and of /proc/net have no
// splice_read, splice and sendfile cannot read a process's files but its
// mount tables, nor /proc/net's; the machine's files and /proc/sys they
// can.
func (s *snapshot) NoSpliceRead() bool { return noSpliceRead(s.node.path) }

func noSpliceRead(path string) bool {
	first, rest, _ := strings.Cut(path, "/")
	if first == "net" {
		return true
	}
	if _, err := strconv.Atoi(first); err != nil {
		return false
	}
	switch rest[strings.LastIndex(rest, "/")+1:] {
	case "mounts", "mountinfo", "mountstats":
		return false
	}
	return true
}
func (s *snapshot) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (s *snapshot) Release() {}
func (s *snapshot) Size() (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(len(s.data)), nil
}
