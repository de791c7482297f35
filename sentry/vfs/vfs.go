// Package vfs is the sentry's virtual file system: dentries and mounts, path
// resolution with Linux's rules (symlinks, "..", mount crossings, ELOOP and
// ENAMETOOLONG limits), and open file descriptions. File systems (fs/...)
// supply inodes; vfs never touches the host itself.
package vfs

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Linux limits.
const (
	PathMax     = 4096 // including the NUL
	NameMax     = 255
	MaxSymlinks = 40
)

// Stat is a file's attributes, as stat(2) reports them.
type Stat struct {
	Dev, Ino, Rdev uint64
	Mode           uint32 // type and permission bits
	Nlink          uint64
	UID, GID       uint32
	Size           int64
	Blksize        int64
	Blocks         int64
	Atime          unix.Timespec
	Mtime          unix.Timespec
	Ctime          unix.Timespec
}

// Type returns the S_IFMT bits.
func (s *Stat) Type() uint32 { return s.Mode & unix.S_IFMT }

// Dirent is one directory entry.
type Dirent struct {
	Name string
	Ino  uint64
	Type uint8 // DT_*
}

// Inode is a file as its file system knows it. Calls that do not apply to
// the inode's type return the errno Linux gives (ENOTDIR, EINVAL, ...).
type Inode interface {
	Stat() (Stat, error)
	// Lookup finds a child of a directory ("." and ".." never reach it).
	Lookup(name string) (Inode, error)
	// ReadDir lists a directory, without "." and "..".
	ReadDir() ([]Dirent, error)
	// Readlink returns a symlink's target.
	Readlink() (string, error)
	// Open opens the inode for I/O with open(2)'s flags.
	Open(flags int) (FileImpl, error)
}

// Caller is the task on whose behalf a path is resolved: a few files
// (/proc/self) name something different for each caller.
type Caller interface {
	PID() int32
	TID() int32
}

// CallerLink is implemented by symlinks whose target depends on who reads
// them (/proc/self, /proc/thread-self).
type CallerLink interface {
	ReadlinkAs(c Caller) (string, error)
}

// Readlink returns the target of the symlink ino as c sees it.
func Readlink(ino Inode, c Caller) (string, error) {
	if cl, ok := ino.(CallerLink); ok && c != nil {
		return cl.ReadlinkAs(c)
	}
	return ino.Readlink()
}

// Volatile is implemented by directories whose children come and go
// without the sandbox's file operations (/proc): their lookups are never
// cached.
type Volatile interface {
	Volatile() bool
}

// AccessStater is implemented by inodes whose Stat may have to ask their
// file system again for times, sizes or link counts that a change of the
// sandbox's own made old, while the attributes a permission check reads
// (type, mode, owner, group) are as current as Stat's would be: no change
// the sandbox makes moves those without telling the inode. Permission
// checks ask AccessStat, so that a directory just written to is not asked
// again for its times before the next name is made in it.
type AccessStater interface {
	AccessStat() (Stat, error)
}

// AccessStat returns the attributes a permission check on ino reads: its
// type, mode, owner and group are current, its times and size may not be.
func AccessStat(ino Inode) (Stat, error) {
	if a, ok := ino.(AccessStater); ok {
		return a.AccessStat()
	}
	return ino.Stat()
}

// DirentType converts S_IFMT bits to a DT_* value.
func DirentType(mode uint32) uint8 {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return unix.DT_REG
	case unix.S_IFDIR:
		return unix.DT_DIR
	case unix.S_IFLNK:
		return unix.DT_LNK
	case unix.S_IFCHR:
		return unix.DT_CHR
	case unix.S_IFBLK:
		return unix.DT_BLK
	case unix.S_IFIFO:
		return unix.DT_FIFO
	case unix.S_IFSOCK:
		return unix.DT_SOCK
	}
	return unix.DT_UNKNOWN
}

var anonDevs atomic.Uint32

// NewAnonDev returns a fresh device number for a file system with no
// backing device, as Linux gives tmpfs, procfs and the like (major 0).
func NewAnonDev() uint64 {
	return unix.Mkdev(0, 16+anonDevs.Add(1))
}

// Access bits for Creds.Permission.
const (
	MayExec  = 1
	MayWrite = 2
	MayRead  = 4
)
