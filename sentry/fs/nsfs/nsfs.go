// Package nsfs is the files that stand for namespaces: what opening
// /proc/<pid>/ns/<kind> gives, which setns(2) takes, and the inode
// numbers that tell namespaces apart (readlink shows "uts:[4026532170]").
// It holds a namespace as an opaque value; what joining one means is the
// kernel's.
package nsfs

import (
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// firstIno is where Linux's proc_inum numbers for namespaces other than
// the initial ones start (PROC_DYNAMIC_FIRST).
const firstIno = 0xF0000000

var (
	lastIno atomic.Uint64
	dev     = vfs.NewAnonDev()
)

// NewIno returns a new namespace's inode number.
func NewIno() uint64 { return firstIno + lastIno.Add(1) - 1 }

// Single is a namespace kind the sandbox has exactly one of (its pid,
// network, cgroup, time and user namespaces): Kind names it.
type Single struct{ Kind string }

var singles sync.Map // kind -> inode number

// SingleIno is the inode number of the sandbox's one namespace of kind.
func SingleIno(kind string) uint64 {
	if ino, ok := singles.Load(kind); ok {
		return ino.(uint64)
	}
	ino, _ := singles.LoadOrStore(kind, NewIno())
	return ino.(uint64)
}

// Inode is a namespace as a file: kind is its name in /proc/<pid>/ns
// ("uts", "ipc", ...).
type Inode struct {
	Kind string
	Ino  uint64
	NS   any
}

// Name is the namespace link's target, "kind:[ino]".
func (n *Inode) Name() string { return fmt.Sprintf("%s:[%d]", n.Kind, n.Ino) }

// Stat implements vfs.Inode: a read-only regular file of nsfs.
func (n *Inode) Stat() (vfs.Stat, error) {
	return vfs.Stat{Dev: dev, Ino: n.Ino, Mode: unix.S_IFREG | 0o444, Nlink: 1, Blksize: 4096}, nil
}

func (n *Inode) Lookup(string) (vfs.Inode, error) { return nil, unix.ENOTDIR }
func (n *Inode) ReadDir() ([]vfs.Dirent, error)   { return nil, unix.ENOTDIR }
func (n *Inode) Readlink() (string, error)        { return "", unix.EINVAL }

// Open implements vfs.Inode.
func (n *Inode) Open(int) (vfs.FileImpl, error) { return &File{n: n}, nil }

// File is an open namespace file. It cannot be read or written (EINVAL),
// as Linux's nsfs files cannot.
type File struct{ n *Inode }

// Namespace returns the file's namespace and its kind.
func (f *File) Namespace() (kind string, ns any) { return f.n.Kind, f.n.NS }

func (f *File) Read(*vfs.IOSeq, int64) (int, error)  { return 0, unix.EINVAL }
func (f *File) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EINVAL }
func (f *File) Stat() (vfs.Stat, error)              { return f.n.Stat() }

// Ioctl implements vfs.FileImpl: the NS_GET_* requests are not answered.
func (f *File) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) { return 0, unix.ENOTTY }
func (f *File) Release()                                            {}
