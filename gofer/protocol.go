package gofer

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// Wire format. One request and one answer per SOCK_SEQPACKET message, so
// the socket itself keeps message boundaries; integers are little-endian and
// no message is longer than maxMessage.
//
//	request: op u8, then the op's arguments
//	answer:  errno u32 (0 on success), then, on success only, the op's results
//
//	op          arguments                            results
//	opHello     version u32                          version u32
//	opStat      node u64                             attr
//	opWalk      dir u64, name                        node u64, attr
//	opOpen      node u64, flags u32                  none; the fd rides in SCM_RIGHTS
//	opReadDir   dir u64, cookie u64                  next cookie u64, eof u8, entries
//	opReadLink  node u64                             target
//	opRelease   node u64, ...                        none
//	opCreate    dir u64, mode u32, uid u32, gid u32, name
//	                                                 node u64, attr, dirchange; an O_RDWR fd in SCM_RIGHTS
//	opMkdir     dir u64, mode u32, uid u32, gid u32, name
//	                                                 node u64, attr, dirchange
//	opMknod     dir u64, mode u32, uid u32, gid u32, name
//	                                                 node u64, attr, dirchange
//	opSymlink   dir u64, uid u32, gid u32, name length u16, name, target
//	                                                 node u64, attr, dirchange
//	opLink      dir u64, target node u64, name       node u64, attr, dirchange
//	opUnlink    dir u64, flags u32, name             dirchange
//	opRename    dir u64, new dir u64, flags u32, name length u16, name, new name
//	                                                 dirchange (dir), dirchange (new dir)
//	opSetAttr   node u64, setattr                    attr
//	opStatFS    node u64                             statfs
//	opTmpfile   dir u64, mode u32, uid u32, gid u32  node u64, attr; an O_RDWR fd in SCM_RIGHTS
//	opGetXattr  node u64, name                       value
//	opSetXattr  node u64, flags u32, name length u16, name, value
//	                                                 none
//	opListXattr node u64                             names, each NUL-terminated
//	opRemoveXattr node u64, name                     none
//	opWalkDir   dir u64                              complete u8, then per entry:
//	                                                 node u64, attr, name length u16, name
//
// A name or link target that ends its message fills the rest of it, so it
// carries no length of its own. An attr is encoded by appendAttr, a
// dirchange by appendDirChange, a setattr by appendSetAttr and a statfs by
// appendStatFS; a directory entry is ino
// u64, type u8, name length u16, name. The first request on a connection
// must be opHello; the server answers anything else with EPROTO until it
// has agreed on the version.
const (
	opHello uint8 = iota + 1
	opStat
	opWalk
	opOpen
	opReadDir
	opReadLink
	opRelease
	opCreate
	opMkdir
	opMknod
	opSymlink
	opLink
	opUnlink
	opRename
	opSetAttr
	opStatFS
	opTmpfile
	opGetXattr
	opSetXattr
	opListXattr
	opRemoveXattr
	opWalkDir
)

const (
	protocolVersion = 3

	// maxMessage bounds every request and answer. ReadDir answers are
	// paged to fit it, and Release batches are split to fit it.
	maxMessage = 64 << 10

	// maxRelease is how many node IDs fit in one opRelease request.
	maxRelease = (maxMessage - 1) / 8

	// maxName is NAME_MAX: no host file system accepts a longer component.
	maxName = 255

	// maxWalkDir is the most entries opWalkDir walks: a larger directory
	// is answered incomplete, with none.
	maxWalkDir = 1024
)

// NodeID names a host file the gofer holds open (O_PATH) for one client.
type NodeID uint64

// RootNode is the root of the served tree, valid once the handshake is done
// (the Client does it on its first call) and never released.
const RootNode NodeID = 1

// Attr is what fstatat says about a node, AT_SYMLINK_NOFOLLOW.
type Attr struct {
	Ino, Dev, Rdev      uint64
	Mode                uint32 // st_mode, type bits included
	Nlink               uint64
	UID, GID            uint32
	Size, Blocks        int64
	Blksize             int64
	Atime, Mtime, Ctime unix.Timespec
}

// Dirent is one directory entry as getdents64 gave it.
type Dirent struct {
	Name string
	Ino  uint64
	Type uint8 // DT_*
}

func attrOf(st *unix.Stat_t) Attr {
	return Attr{
		Ino: st.Ino, Dev: st.Dev, Rdev: st.Rdev,
		Mode:  st.Mode,
		Nlink: uint64(st.Nlink),
		UID:   st.Uid, GID: st.Gid,
		Size: st.Size, Blocks: st.Blocks,
		Blksize: int64(st.Blksize),
		Atime:   st.Atim, Mtime: st.Mtim, Ctime: st.Ctim,
	}
}

var le = binary.LittleEndian

// attrSize is an encoded attr's length.
const attrSize = 3*8 + 4 + 8 + 2*4 + 3*8 + 3*16

func appendAttr(b []byte, a *Attr) []byte {
	b = le.AppendUint64(b, a.Ino)
	b = le.AppendUint64(b, a.Dev)
	b = le.AppendUint64(b, a.Rdev)
	b = le.AppendUint32(b, a.Mode)
	b = le.AppendUint64(b, a.Nlink)
	b = le.AppendUint32(b, a.UID)
	b = le.AppendUint32(b, a.GID)
	b = le.AppendUint64(b, uint64(a.Size))
	b = le.AppendUint64(b, uint64(a.Blocks))
	b = le.AppendUint64(b, uint64(a.Blksize))
	for _, t := range []*unix.Timespec{&a.Atime, &a.Mtime, &a.Ctime} {
		b = le.AppendUint64(b, uint64(t.Sec))
		b = le.AppendUint64(b, uint64(t.Nsec))
	}
	return b
}

func (d *decoder) attr() Attr {
	var a Attr
	a.Ino = d.u64()
	a.Dev = d.u64()
	a.Rdev = d.u64()
	a.Mode = d.u32()
	a.Nlink = d.u64()
	a.UID = d.u32()
	a.GID = d.u32()
	a.Size = int64(d.u64())
	a.Blocks = int64(d.u64())
	a.Blksize = int64(d.u64())
	for _, t := range []*unix.Timespec{&a.Atime, &a.Mtime, &a.Ctime} {
		t.Sec = int64(d.u64())
		t.Nsec = int64(d.u64())
	}
	return a
}

// DirChange is what a change of a name did to the directory that holds
// it: the change time the directory had just before the change, and its
// attributes just after. A client that cached the directory's attributes
// tells by them whether anything else changed the directory since it last
// looked (Before is the change time it cached: the host gives every change
// a change time of its own once the last one was read, as Linux's
// multigrain timestamps do), and has its new attributes without asking.
// After.Ino is 0 when the gofer could not read them, which tells nothing.
type DirChange struct {
	Before unix.Timespec
	After  Attr
}

func appendDirChange(b []byte, c *DirChange) []byte {
	b = le.AppendUint64(b, uint64(c.Before.Sec))
	b = le.AppendUint64(b, uint64(c.Before.Nsec))
	return appendAttr(b, &c.After)
}

func (d *decoder) dirChange() DirChange {
	var c DirChange
	c.Before.Sec = int64(d.u64())
	c.Before.Nsec = int64(d.u64())
	c.After = d.attr()
	return c
}

// SetAttr is a change of attributes: the fields whose bits are in Mask.
// Atime and Mtime may carry UTIME_NOW in Nsec.
type SetAttr struct {
	Mask         uint32
	Mode         uint32 // permission bits, 07777
	UID, GID     uint32
	Size         int64
	Atime, Mtime unix.Timespec
}

// SetAttr.Mask bits.
const (
	SetMode  = 1 << iota
	SetOwner // UID and GID; either may be -1 (leave it)
	SetSize
	SetAtime
	SetMtime
)

func appendSetAttr(b []byte, a *SetAttr) []byte {
	b = le.AppendUint32(b, a.Mask)
	b = le.AppendUint32(b, a.Mode)
	b = le.AppendUint32(b, a.UID)
	b = le.AppendUint32(b, a.GID)
	b = le.AppendUint64(b, uint64(a.Size))
	for _, t := range []*unix.Timespec{&a.Atime, &a.Mtime} {
		b = le.AppendUint64(b, uint64(t.Sec))
		b = le.AppendUint64(b, uint64(t.Nsec))
	}
	return b
}

func (d *decoder) setAttr() SetAttr {
	var a SetAttr
	a.Mask = d.u32()
	a.Mode = d.u32()
	a.UID = d.u32()
	a.GID = d.u32()
	a.Size = int64(d.u64())
	for _, t := range []*unix.Timespec{&a.Atime, &a.Mtime} {
		t.Sec = int64(d.u64())
		t.Nsec = int64(d.u64())
	}
	return a
}

// StatFS is what fstatfs says about the file system holding a node.
type StatFS struct {
	Type, Bsize, Frsize, Namelen int64
	Blocks, Bfree, Bavail        uint64
	Files, Ffree                 uint64
}

func appendStatFS(b []byte, s *StatFS) []byte {
	for _, v := range []uint64{uint64(s.Type), uint64(s.Bsize), uint64(s.Frsize), uint64(s.Namelen),
		s.Blocks, s.Bfree, s.Bavail, s.Files, s.Ffree} {
		b = le.AppendUint64(b, v)
	}
	return b
}

func (d *decoder) statFS() StatFS {
	var s StatFS
	s.Type, s.Bsize, s.Frsize, s.Namelen = int64(d.u64()), int64(d.u64()), int64(d.u64()), int64(d.u64())
	s.Blocks, s.Bfree, s.Bavail, s.Files, s.Ffree = d.u64(), d.u64(), d.u64(), d.u64(), d.u64()
	return s
}

// name16 reads a name with a u16 length, the first of two names.
func (d *decoder) name16() string { return string(d.take(int(d.u16()))) }

func appendDirent(b []byte, ino uint64, typ uint8, name []byte) []byte {
	b = le.AppendUint64(b, ino)
	b = append(b, typ)
	b = le.AppendUint16(b, uint16(len(name)))
	return append(b, name...)
}

func (d *decoder) dirent() Dirent {
	var e Dirent
	e.Ino = d.u64()
	e.Type = d.u8()
	e.Name = string(d.take(int(d.u16())))
	return e
}

// decoder reads a message front to back. Running short sets bad and makes
// every later read return zero, so callers check once at the end.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) take(n int) []byte {
	if d.bad || len(d.b) < n {
		d.bad = true
		return nil
	}
	p := d.b[:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) u8() uint8 {
	if p := d.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if p := d.take(2); p != nil {
		return le.Uint16(p)
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if p := d.take(4); p != nil {
		return le.Uint32(p)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if p := d.take(8); p != nil {
		return le.Uint64(p)
	}
	return 0
}

func (d *decoder) rest() []byte {
	p := d.b
	d.b = nil
	return p
}

func (d *decoder) empty() bool { return len(d.b) == 0 }

// ok reports whether every read succeeded and nothing is left over: a
// message with trailing bytes is as malformed as a short one.
func (d *decoder) ok() bool { return !d.bad && len(d.b) == 0 }

// sendMsg writes one message, donating fd in SCM_RIGHTS if it is not -1.
// MSG_NOSIGNAL: a vanished peer is an EPIPE to handle, not a signal.
func sendMsg(sock int, b []byte, fd int) error {
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	for {
		err := unix.Sendmsg(sock, b, oob, nil, unix.MSG_NOSIGNAL)
		if err != unix.EINTR {
			return err
		}
	}
}

// recvMsg reads one message. With a nil oob the kernel discards, rather
// than installs, any fd the peer tries to send.
func recvMsg(sock int, b, oob []byte, flags int) (n, oobn, rflags int, err error) {
	for {
		n, oobn, rflags, _, err = unix.Recvmsg(sock, b, oob, flags)
		if err != unix.EINTR {
			return n, oobn, rflags, err
		}
	}
}
