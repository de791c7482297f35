// Package netlink is AF_NETLINK in the sentry. NETLINK_ROUTE: enough of
// rtnetlink for `ip addr`, `ip link`, `ip route` and the C library's
// getifaddrs and if_nameindex to see the sandbox's interfaces, addresses
// and routes (from its netstack). Changes (RTM_NEW*, RTM_DEL*) answer
// EPERM without CAP_NET_ADMIN and EOPNOTSUPP with it: the sandbox's
// network is what moat gave it. NETLINK_SOCK_DIAG: AF_UNIX sockets
// (diag.go).
package netlink

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
	"github.com/moat-sandbox/moat/sentry/net/socket"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// sock is one NETLINK_ROUTE or NETLINK_SOCK_DIAG socket.
type sock struct {
	st          *netstack.Stack
	typ, proto  int
	socket.Node // the sockfs inode
	queue       waiter.Queue

	mu     sync.Mutex
	portID uint32
	groups uint32
	recvq  [][]byte // datagrams waiting
	opts   socket.Options
	flags  map[int]bool // SOL_NETLINK flags
}

var ports struct {
	mu   sync.Mutex
	used map[uint32]bool
	next atomic.Int32
}

// New returns a netlink socket for socket(2): NETLINK_ROUTE or
// NETLINK_SOCK_DIAG.
func New(t *kernel.Task, typ, protocol int) (socket.Socket, error) {
	if typ != unix.SOCK_RAW && typ != unix.SOCK_DGRAM {
		return nil, unix.ESOCKTNOSUPPORT
	}
	if protocol != unix.NETLINK_ROUTE && protocol != unix.NETLINK_SOCK_DIAG {
		return nil, unix.EPROTONOSUPPORT
	}
	st, err := netstack.Of(t.Kernel())
	if err != nil {
		return nil, err
	}
	s := &sock{st: st, typ: typ, proto: protocol, opts: socket.NewOptions(), flags: map[int]bool{}}
	s.Init(socket.Owner(t))
	return s, nil
}

// bindLocked gives the socket its port id (netlink_autobind): the
// process id the first time, then negative numbers from -4096 down.
func (s *sock) bindLocked(t *kernel.Task, want uint32) error {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.used == nil {
		ports.used = map[uint32]bool{}
	}
	if s.portID != 0 {
		if want != 0 && want != s.portID {
			return unix.EINVAL
		}
		return nil
	}
	if want != 0 {
		if ports.used[want] {
			return unix.EADDRINUSE
		}
		s.portID = want
	} else if pid := uint32(t.PID()); !ports.used[pid] {
		s.portID = pid
	} else {
		for {
			id := uint32(-4096 + ports.next.Add(-1))
			if !ports.used[id] {
				s.portID = id
				break
			}
		}
	}
	ports.used[s.portID] = true
	return nil
}

// Family, Type and Protocol implement socket.Socket.
func (s *sock) Family() int   { return unix.AF_NETLINK }
func (s *sock) Type() int     { return s.typ }
func (s *sock) Protocol() int { return s.proto }

// Release implements vfs.FileImpl.
func (s *sock) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.portID != 0 {
		ports.mu.Lock()
		delete(ports.used, s.portID)
		ports.mu.Unlock()
	}
}

// Readiness implements waiter.Waitable: always writable, readable while
// a reply waits.
func (s *sock) Readiness(mask waiter.EventMask) waiter.EventMask {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := waiter.WritableEvents
	if len(s.recvq) > 0 {
		ev |= waiter.ReadableEvents
	}
	return ev & mask
}

func (s *sock) EventRegister(e *waiter.Entry)   { s.queue.EventRegister(e) }
func (s *sock) EventUnregister(e *waiter.Entry) { s.queue.EventUnregister(e) }

// sockaddrNL encodes a struct sockaddr_nl.
func sockaddrNL(pid, groups uint32) []byte {
	b := make([]byte, unix.SizeofSockaddrNetlink)
	binary.LittleEndian.PutUint16(b, unix.AF_NETLINK)
	binary.LittleEndian.PutUint32(b[4:], pid)
	binary.LittleEndian.PutUint32(b[8:], groups)
	return b
}

// Bind implements socket.Socket.
func (s *sock) Bind(t *kernel.Task, addr []byte) error {
	if len(addr) < unix.SizeofSockaddrNetlink {
		return unix.EINVAL
	}
	if binary.LittleEndian.Uint16(addr) != unix.AF_NETLINK {
		return unix.EINVAL
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.bindLocked(t, binary.LittleEndian.Uint32(addr[4:])); err != nil {
		return err
	}
	s.groups = binary.LittleEndian.Uint32(addr[8:])
	return nil
}

func (s *sock) Listen(*kernel.Task, int) error { return unix.EOPNOTSUPP }
func (s *sock) Accept(*kernel.Task, bool) (socket.Socket, error) {
	return nil, unix.EOPNOTSUPP
}

// Connect implements socket.Socket: the kernel (port 0) is the only peer.
func (s *sock) Connect(t *kernel.Task, addr []byte, _ bool) error {
	if len(addr) < unix.SizeofSockaddrNetlink || binary.LittleEndian.Uint16(addr) != unix.AF_NETLINK {
		return unix.EINVAL
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bindLocked(t, 0)
}

func (s *sock) Shutdown(*kernel.Task, int) error { return nil }

// SockName implements socket.Socket.
func (s *sock) SockName() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sockaddrNL(s.portID, s.groups)
}

// PeerName implements socket.Socket: the kernel.
func (s *sock) PeerName() ([]byte, error) { return sockaddrNL(0, 0), nil }

// Write implements vfs.FileImpl.
func (s *sock) Write(src *vfs.IOSeq, _ int64) (int, error) {
	t, _ := src.Context().(*kernel.Task)
	return s.SendMsg(t, src, &socket.SendMessage{})
}

// Read implements vfs.FileImpl.
func (s *sock) Read(dst *vfs.IOSeq, _ int64) (int, error) {
	if socket.ZeroRead(dst) {
		return 0, nil
	}
	t, _ := dst.Context().(*kernel.Task)
	m := &socket.RecvMessage{}
	if dst.NonBlocking() {
		m.Flags = unix.MSG_DONTWAIT
	}
	return s.RecvMsg(t, dst, m)
}

// SendMsg implements socket.Socket: each request of the datagram is
// answered in the socket's queue.
func (s *sock) SendMsg(t *kernel.Task, src *vfs.IOSeq, m *socket.SendMessage) (int, error) {
	n := src.Len()
	buf := make([]byte, n)
	if got, _ := src.CopyIn(buf); got < n {
		return 0, unix.EFAULT
	}
	s.mu.Lock()
	if t != nil {
		if err := s.bindLocked(t, 0); err != nil {
			s.mu.Unlock()
			return 0, err
		}
	}
	port := s.portID
	s.mu.Unlock()
	var replies [][]byte
	for len(buf) >= unix.SizeofNlMsghdr {
		l := int(binary.LittleEndian.Uint32(buf))
		if l < unix.SizeofNlMsghdr || l > len(buf) {
			break
		}
		replies = append(replies, s.handle(t, buf[:l], port)...)
		buf = buf[min(nlmsgAlign(l), len(buf)):]
	}
	if len(replies) > 0 {
		s.mu.Lock()
		s.recvq = append(s.recvq, replies...)
		s.mu.Unlock()
		s.queue.Notify(waiter.ReadableEvents)
	}
	return n, nil
}

// Deliver queues a datagram the kernel sends the socket: a message
// queue's SIGEV_THREAD notification cookie (mq_notify), which glibc's
// helper thread reads.
func (s *sock) Deliver(datagram []byte) {
	s.mu.Lock()
	s.recvq = append(s.recvq, datagram)
	s.mu.Unlock()
	s.queue.Notify(waiter.ReadableEvents)
}

// RecvMsg implements socket.Socket: a datagram at a time, with
// MSG_PEEK and MSG_TRUNC as netlink_recvmsg gives them.
func (s *sock) RecvMsg(t *kernel.Task, dst *vfs.IOSeq, m *socket.RecvMessage) (int, error) {
	s.mu.Lock()
	for len(s.recvq) == 0 {
		if m.Flags&unix.MSG_DONTWAIT != 0 || t == nil {
			s.mu.Unlock()
			return 0, unix.EAGAIN
		}
		w, ch := waiter.NewChannelEntry(waiter.ReadableEvents)
		s.queue.EventRegister(w)
		timeo := s.opts.RcvTimeo
		s.mu.Unlock()
		err := socket.Wait(t, ch, timeo.Deadline())
		s.queue.EventUnregister(w)
		if err == unix.ETIMEDOUT {
			return 0, unix.EAGAIN
		} else if err != nil {
			return 0, err
		}
		s.mu.Lock()
	}
	d := s.recvq[0]
	if m.Flags&unix.MSG_PEEK == 0 {
		s.recvq = s.recvq[1:]
	}
	s.mu.Unlock()
	n, _ := dst.CopyOut(d)
	if n < len(d) {
		m.OutFlags |= unix.MSG_TRUNC
	}
	m.From = sockaddrNL(0, 0)
	if m.Flags&unix.MSG_TRUNC != 0 {
		return len(d), nil
	}
	return n, nil
}

// GetSockOpt implements socket.Socket.
func (s *sock) GetSockOpt(t *kernel.Task, level, name, size int) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch level {
	case unix.SOL_SOCKET:
		switch name {
		case unix.SO_TYPE:
			return socket.PutInt32(int32(s.typ)), nil
		case unix.SO_DOMAIN:
			return socket.PutInt32(unix.AF_NETLINK), nil
		case unix.SO_PROTOCOL:
			return socket.PutInt32(int32(s.proto)), nil
		case unix.SO_ERROR:
			return socket.PutInt32(0), nil
		case unix.SO_PASSCRED:
			return socket.PutBool(s.opts.Flag(unix.SO_PASSCRED)), nil
		}
		if v, ok := s.opts.Get(name); ok {
			return v, nil
		}
	case unix.SOL_NETLINK:
		switch name {
		case unix.NETLINK_EXT_ACK, unix.NETLINK_GET_STRICT_CHK, unix.NETLINK_CAP_ACK, unix.NETLINK_NO_ENOBUFS,
			unix.NETLINK_PKTINFO, unix.NETLINK_BROADCAST_ERROR, unix.NETLINK_LISTEN_ALL_NSID:
			return socket.PutBool(s.flags[name]), nil
		}
	}
	return nil, unix.ENOPROTOOPT
}

// SetSockOpt implements socket.Socket.
func (s *sock) SetSockOpt(t *kernel.Task, level, name int, val []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch level {
	case unix.SOL_SOCKET:
		if name == unix.SO_PASSCRED {
			on, err := socket.Bool(val)
			s.opts.SetFlag(name, on)
			return err
		}
		if ok, err := s.opts.Set(t, name, val); ok {
			return err
		}
	case unix.SOL_NETLINK:
		switch name {
		case unix.NETLINK_EXT_ACK, unix.NETLINK_GET_STRICT_CHK, unix.NETLINK_CAP_ACK, unix.NETLINK_NO_ENOBUFS,
			unix.NETLINK_PKTINFO, unix.NETLINK_BROADCAST_ERROR, unix.NETLINK_LISTEN_ALL_NSID:
			on, err := socket.Bool(val)
			s.flags[name] = on
			return err
		case unix.NETLINK_ADD_MEMBERSHIP, unix.NETLINK_DROP_MEMBERSHIP:
			_, err := socket.Int32(val)
			return err
		}
	}
	return unix.ENOPROTOOPT
}

// Ioctl implements vfs.FileImpl.
func (s *sock) Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	if cmd == linuxabi.FIONREAD {
		s.mu.Lock()
		n := 0
		if len(s.recvq) > 0 {
			n = len(s.recvq[0])
		}
		s.mu.Unlock()
		_, err := io.CopyOut(arg, socket.PutInt32(int32(n)))
		return 0, err
	}
	if handled, err := netstack.InterfaceIoctl(s.st, cmd, arg, io); handled {
		return 0, err
	}
	return 0, unix.ENOTTY
}

var _ socket.Socket = (*sock)(nil)
