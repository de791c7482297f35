// Package socket is what every socket family of the sentry shares: the
// Socket interface the socket system calls drive, control messages in
// Linux's layout, the sockfs identity a socket file stats with, and the
// SOL_SOCKET option encodings that mean the same in every family. The
// families live beside it (unixsock, inet, netlink); none of them ever
// opens a host socket.
package socket

import (
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// Socket is one socket of any family. Methods answer with the errno Linux
// gives for the family; a call the family does not have answers
// EOPNOTSUPP. Addresses are the guest's sockaddr bytes, as long as the
// guest passed them.
type Socket interface {
	vfs.FileImpl
	waiter.Waitable

	// Family, Type and Protocol are what SO_DOMAIN, SO_TYPE and
	// SO_PROTOCOL report.
	Family() int
	Type() int
	Protocol() int

	Bind(t *kernel.Task, addr []byte) error
	Listen(t *kernel.Task, backlog int) error
	// Accept takes the first connection off a listener's queue.
	Accept(t *kernel.Task, nonblock bool) (Socket, error)
	Connect(t *kernel.Task, addr []byte, nonblock bool) error
	Shutdown(t *kernel.Task, how int) error
	SendMsg(t *kernel.Task, src *vfs.IOSeq, m *SendMessage) (int, error)
	// RecvMsg fills dst and m's results; it returns the byte count the
	// call returns (with MSG_TRUNC, a datagram's whole length).
	RecvMsg(t *kernel.Task, dst *vfs.IOSeq, m *RecvMessage) (int, error)
	// GetSockOpt returns the option's value, which the caller cuts to
	// the guest's optlen; size is that optlen, for options whose answer
	// depends on it.
	GetSockOpt(t *kernel.Task, level, name, size int) ([]byte, error)
	SetSockOpt(t *kernel.Task, level, name int, val []byte) error
	SockName() []byte
	PeerName() ([]byte, error)
}

// SendMessage is what sendmsg(2) hands a socket besides the data.
type SendMessage struct {
	To      []byte // msg_name; nil when the guest gave none
	Control []Cmsg
	Flags   int // MSG_*, with MSG_DONTWAIT for an O_NONBLOCK file
}

// RecvMessage is what recvmsg(2) asks of a socket and gets back.
type RecvMessage struct {
	Flags int // MSG_*, with MSG_DONTWAIT for an O_NONBLOCK file

	From     []byte // the sender's address, nil for none
	OutFlags int    // msg_flags: MSG_TRUNC, MSG_EOR, MSG_CTRUNC
	Control  RecvControl
}

// RecvControl is the ancillary data a received message brings: cmsgs in
// the order Linux writes them, then the files of SCM_RIGHTS, whose
// references the receiver now owns.
type RecvControl struct {
	Cmsgs  []Cmsg
	Rights []*vfs.File
	// Wanted reports ancillary data the receiver asked for but the
	// guest gave no room for (SO_PASSCRED): MSG_CTRUNC even when Cmsgs
	// is empty, as Linux's scm_recv sets it without msg_control.
	Wanted bool
}

// Release drops the files of c that were never installed.
func (c *RecvControl) Release() {
	for _, f := range c.Rights {
		f.DecRef()
	}
	c.Rights = nil
}

var (
	sockDev = vfs.NewAnonDev()
	lastIno atomic.Uint64
)

// Node is a socket's sockfs inode: its number, and the mode, owner and
// times that fstat(2) reports and fchmod(2) and fchown(2) change (Linux's
// sockfs_setattr). A family's socket embeds it, which gives the socket
// its Stat, its SetAttr (vfs.AttrSetter) and its Name.
type Node struct {
	ino   uint64
	attrs vfs.InodeAttrs
}

// Init gives n a fresh inode number, mode S_IFSOCK|0777, owner uid and
// gid, and times of zero, as Linux's sock_alloc makes the inode.
func (n *Node) Init(uid, gid uint32) {
	n.ino = lastIno.Add(1)
	n.attrs.Init(unix.S_IFSOCK|0o777, uid, gid, unix.Timespec{})
}

// Ino is the inode number, which /proc/net lists and SO_COOKIE reports.
func (n *Node) Ino() uint64 { return n.ino }

// IDs returns the inode's owner: the creator's, or what fchown made it.
func (n *Node) IDs() (uid, gid uint32) { return n.attrs.IDs() }

// Stat implements vfs.FileImpl.
func (n *Node) Stat() (vfs.Stat, error) {
	st := vfs.Stat{Dev: sockDev, Ino: n.ino, Nlink: 1, Blksize: 4096}
	n.attrs.Fill(&st)
	return st, nil
}

// SetAttr implements vfs.AttrSetter.
func (n *Node) SetAttr(a *vfs.Attr) error { return n.attrs.SetAttr(a) }

// Name is what /proc/<pid>/fd shows for a socket.
func (n *Node) Name() string { return "socket:[" + strconv.FormatUint(n.ino, 10) + "]" }

// NewFile opens s as a file description: read and write, with
// SOCK_NONBLOCK's O_NONBLOCK. A socket that keeps its file (AF_UNIX's,
// for the collector of sockets in flight) is told it by Opened.
func NewFile(s Socket, nonblock bool) *vfs.File {
	flags := unix.O_RDWR
	if nonblock {
		flags |= unix.O_NONBLOCK
	}
	f := vfs.NewFile(s, vfs.Path{}, flags)
	if o, ok := s.(interface{ Opened(*vfs.File) }); ok {
		o.Opened(f)
	}
	return f
}

// Owner returns the effective ids a new socket is owned by (sockfs gives
// its inode the creator's fsuid and fsgid).
func Owner(t *kernel.Task) (uid, gid uint32) {
	c := t.Creds()
	c.Lock()
	defer c.Unlock()
	return c.FSUID, c.FSGID
}
