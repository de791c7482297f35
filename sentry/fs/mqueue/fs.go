package mqueue

import (
	"sort"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// The mqueue file system: a namespace's queues as the files of one
// directory (mount -t mqueue). The directory is root's, sticky and
// writable by all (01777); open(2) with O_CREAT makes a queue of the
// default sizes, unlink(2) removes one; nothing else can be made there
// (EPERM). mq_open and mq_unlink change the directory without vfs, so it
// is volatile: every look-up asks it.

// direntSize is what each name adds to the directory's size, which starts
// at two (DIRENT_SIZE).
const direntSize = 20

// Root returns the root of the namespace's file system, for a mount.
func (ns *Namespace) Root() vfs.Inode { return ns.root }

// rootDir is the file system's directory.
type rootDir struct{ ns *Namespace }

func (d *rootDir) Stat() (vfs.Stat, error) {
	ns := d.ns
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return vfs.Stat{Dev: ns.dev, Ino: 1, Mode: unix.S_IFDIR | unix.S_ISVTX | 0o777, Nlink: 2,
		Size: int64(2+len(ns.queues)) * direntSize, Blksize: 4096,
		Atime: ns.rootMod, Mtime: ns.rootMod, Ctime: ns.rootMod}, nil
}

func (d *rootDir) Lookup(name string) (vfs.Inode, error) {
	ns := d.ns
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if q, ok := ns.queues[name]; ok {
		return q.node, nil
	}
	return nil, unix.ENOENT
}

func (d *rootDir) ReadDir() ([]vfs.Dirent, error) {
	ns := d.ns
	ns.mu.Lock()
	defer ns.mu.Unlock()
	out := make([]vfs.Dirent, 0, len(ns.queues))
	for name, q := range ns.queues {
		out = append(out, vfs.Dirent{Name: name, Ino: q.ino, Type: unix.DT_REG})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (d *rootDir) Readlink() (string, error) { return "", unix.EINVAL }

func (d *rootDir) Open(int) (vfs.FileImpl, error) { return &dirFile{d: d}, nil }

// Volatile implements vfs.Volatile: queues come and go through mq_open
// and mq_unlink.
func (d *rootDir) Volatile() bool { return true }

// Create implements vfs.DirWriter: a queue of the namespace's default
// sizes, owned as vfs says (open(2) in the file system).
func (d *rootDir) Create(name string, mode, uid, gid uint32) (vfs.Inode, error) {
	ns := d.ns
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if _, ok := ns.queues[name]; ok {
		return nil, unix.EEXIST
	}
	q, err := ns.createLocked(name, mode, uid, gid, Attr{MaxMsg: ns.limits.MsgDefault, MsgSize: ns.limits.MsgSizeDefault}, nil, false)
	if err != nil {
		return nil, err
	}
	return q.node, nil
}

// Unlink implements vfs.DirWriter (vfs checked the sticky directory).
func (d *rootDir) Unlink(name string) error {
	ns := d.ns
	ns.mu.Lock()
	defer ns.mu.Unlock()
	q, ok := ns.queues[name]
	if !ok {
		return unix.ENOENT
	}
	ns.unlinkLocked(name, q)
	return nil
}

// The file system holds queues only: Linux's mqueue directory has no
// mkdir, mknod, symlink, link, rename or rmdir (EPERM).
func (d *rootDir) Mkdir(string, uint32, uint32, uint32) (vfs.Inode, error) { return nil, unix.EPERM }
func (d *rootDir) Mknod(string, uint32, uint64, uint32, uint32) (vfs.Inode, error) {
	return nil, unix.EPERM
}
func (d *rootDir) Symlink(string, string, uint32, uint32) (vfs.Inode, error) { return nil, unix.EPERM }
func (d *rootDir) Link(string, vfs.Inode) error                              { return unix.EPERM }
func (d *rootDir) Rmdir(string) error                                        { return unix.EPERM }
func (d *rootDir) Rename(string, vfs.Inode, string, uint32) error            { return unix.EPERM }

// dirFile is the open directory; vfs lists it.
type dirFile struct{ d *rootDir }

func (f *dirFile) Read(*vfs.IOSeq, int64) (int, error)  { return 0, unix.EISDIR }
func (f *dirFile) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EBADF }
func (f *dirFile) Stat() (vfs.Stat, error)              { return f.d.Stat() }
func (f *dirFile) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) {
	return 0, unix.ENOTTY
}
func (f *dirFile) Release()             {}
func (f *dirFile) Size() (int64, error) { return 0, nil }

// queueInode is a queue as the file system's name for it.
type queueInode struct {
	q    *Queue
	name string
}

func (n *queueInode) Stat() (vfs.Stat, error)          { return n.q.stat(), nil }
func (n *queueInode) Lookup(string) (vfs.Inode, error) { return nil, unix.ENOTDIR }
func (n *queueInode) ReadDir() ([]vfs.Dirent, error)   { return nil, unix.ENOTDIR }
func (n *queueInode) Readlink() (string, error)        { return "", unix.EINVAL }
func (n *queueInode) Open(int) (vfs.FileImpl, error)   { return n.q.open(n.name), nil }
func (n *queueInode) SameInode(o vfs.Inode) bool       { m, ok := o.(*queueInode); return ok && m.q == n.q }

// SetAttr implements vfs.AttrSetter: the mode, owner, times and the size
// a truncate gives, as Linux's simple_setattr keeps them.
func (n *queueInode) SetAttr(a *vfs.Attr) error {
	q := n.q
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.ns.timespec()
	if a.Mask&vfs.SetMode != 0 {
		q.mode = a.Mode & 0o7777
	}
	if a.Mask&vfs.SetUID != 0 {
		q.uid = a.UID
	}
	if a.Mask&vfs.SetGID != 0 {
		q.gid = a.GID
	}
	if a.Mask&vfs.SetSize != 0 {
		q.size = a.Size
		q.mtime = now
	}
	if a.Mask&vfs.SetAtime != 0 {
		q.atime = vfs.TimeOrNow(a.Atime, now)
	}
	if a.Mask&vfs.SetMtime != 0 {
		q.mtime = vfs.TimeOrNow(a.Mtime, now)
	}
	q.ctime = now
	return nil
}

// File is an open queue: from mq_open, or open(2) in the file system.
// Reading it gives the queue's status line; it cannot be written
// (EINVAL); poll reports the queue's readiness.
type File struct {
	q    *Queue
	name string
}

// Queue returns the file's queue.
func (f *File) Queue() *Queue { return f.q }

// Read implements vfs.FileImpl: the status line from off.
func (f *File) Read(dst *vfs.IOSeq, off int64) (int, error) {
	line := f.q.status()
	if off >= int64(len(line)) {
		return 0, nil
	}
	return dst.CopyOut(line[off:])
}

// Write implements vfs.FileImpl: a queue's file has no write (EINVAL).
func (f *File) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EINVAL }

// Stat implements vfs.FileImpl.
func (f *File) Stat() (vfs.Stat, error) { return f.q.stat(), nil }

// Size implements vfs.Seeker: the file's size, as lseek's SEEK_END uses.
func (f *File) Size() (int64, error) {
	f.q.mu.Lock()
	defer f.q.mu.Unlock()
	return f.q.size, nil
}

// Ioctl implements vfs.FileImpl.
func (f *File) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) { return 0, unix.ENOTTY }

// Release implements vfs.FileImpl.
func (f *File) Release() { f.q.release() }

// Flush is told of each close of one of the file's descriptors, by the
// descriptor table that held it: a notification the table's process
// registered goes (Linux's mqueue_flush_file).
func (f *File) Flush(files any) {
	f.q.clearIf(func(n *Notification) bool { return n.Files == files }, false)
}

// Name is what /proc/<pid>/fd shows for a descriptor mq_open made: the
// queue's name in its file system.
func (f *File) Name() string { return f.name }

// Readiness, EventRegister and EventUnregister implement waiter.Waitable.
func (f *File) Readiness(mask waiter.EventMask) waiter.EventMask { return f.q.Readiness(mask) }
func (f *File) EventRegister(e *waiter.Entry)                    { f.q.events.EventRegister(e) }
func (f *File) EventUnregister(e *waiter.Entry)                  { f.q.events.EventUnregister(e) }
