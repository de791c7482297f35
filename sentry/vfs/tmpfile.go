package vfs

import (
	"strconv"

	"golang.org/x/sys/unix"
)

// open(O_TMPFILE): a regular file made in a directory's file system with no
// name, which lives while it is open and which linkat(AT_EMPTY_PATH) may
// give a name, unless it was made with O_EXCL (Linux's I_LINKABLE).

// TmpfileMaker is implemented by the directories of file systems that make
// unnamed files.
type TmpfileMaker interface {
	// Tmpfile makes an unnamed regular file with the final mode, owner and
	// group; linkable says whether link may name it later.
	Tmpfile(mode, uid, gid uint32, linkable bool) (Inode, error)
}

// Linkable is implemented by inodes that may be linked with no link left
// (an unnamed file made by open(O_TMPFILE) without O_EXCL).
type Linkable interface {
	Linkable() bool
}

// Tmpfile implements open(O_TMPFILE) in directory dir: mode has the umask
// applied. The path it returns names no entry of dir.
func Tmpfile(c *Creds, dir Path, mode uint32, linkable bool) (Path, error) {
	if !dir.Dentry.isDir {
		return Path{}, unix.ENOTDIR
	}
	if dir.Mount.Flags&unix.MS_RDONLY != 0 {
		return Path{}, unix.EROFS
	}
	st, err := AccessStat(dir.Dentry.inode)
	if err != nil {
		return Path{}, err
	}
	if err := c.Permission(&st, MayWrite|MayExec); err != nil {
		return Path{}, err
	}
	m, ok := dir.Dentry.inode.(TmpfileMaker)
	if !ok {
		return Path{}, unix.EOPNOTSUPP
	}
	uid, gid, mode := c.newOwner(&st, unix.S_IFREG|mode&0o7777)
	ino, err := m.Tmpfile(mode, uid, gid, linkable)
	if err != nil {
		return Path{}, err
	}
	ist, err := ino.Stat()
	if err != nil {
		return Path{}, err
	}
	// Linux names it "#<inode number>" in /proc/<pid>/fd.
	d := &Dentry{name: "#" + strconv.FormatUint(ist.Ino, 10), parent: dir.Dentry, inode: ino}
	d.deleted.Store(true)
	return Path{dir.Mount, d}, nil
}
