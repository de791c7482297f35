// Package inet is AF_INET and AF_INET6 in the sentry: TCP, UDP, ICMP echo
// ("ping") and raw sockets over the sandbox's netstack (sentry/net/netstack),
// with the socket calls, options and readiness Linux gives them. Nothing
// here touches the host's network.
package inet

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	// netstack's endpoints take a wait queue of its own kind: the one
	// other gVisor package moat names, because tcpip's API does.
	gwaiter "gvisor.dev/gvisor/pkg/waiter"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
	"github.com/moat-sandbox/moat/sentry/net/socket"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// sock is one AF_INET or AF_INET6 socket.
type sock struct {
	st                 *netstack.Stack
	family, typ, proto int
	ep                 tcpip.Endpoint
	wq                 *gwaiter.Queue
	entry              gwaiter.Entry
	socket.Node        // the sockfs inode

	// block wakes this socket's own blocking calls and queue its poll
	// and epoll waiters, both straight from netstack's notification
	// (onEvent). netstack notifies with its endpoint's lock held; that is
	// safe because what the waiters' callbacks take (a channel send,
	// epoll's lock) is never held by anything that then waits for that
	// endpoint lock: Readiness takes only netstack's queue locks, which
	// netstack releases before it notifies.
	block waiter.Queue
	queue waiter.Queue

	mu   sync.Mutex // opts
	opts socket.Options

	// The other end of a TCP connection within this stack, and what a
	// send waits on until that end is readable (loopback.go).
	loop loopState

	// sndbufLocked: the program set SO_SNDBUF; sndbufSized: the
	// established connection's send buffer was sized (sndbuf.go).
	sndbufLocked, sndbufSized atomic.Bool

	// inq: TCP_INQ is on, and each recvmsg(2) says in a TCP_CM_INQ
	// control message how much is left to read (io.go).
	inq atomic.Bool
}

// New returns a socket for socket(2) in family AF_INET or AF_INET6.
func New(t *kernel.Task, family, typ, protocol int) (socket.Socket, error) {
	st, err := netstack.Of(t.Kernel())
	if err != nil {
		return nil, err
	}
	netProto := ipv4.ProtocolNumber
	if family == unix.AF_INET6 {
		netProto = ipv6.ProtocolNumber
	}
	wq := &gwaiter.Queue{}
	var ep tcpip.Endpoint
	var terr tcpip.Error
	switch typ {
	case unix.SOCK_STREAM:
		if protocol != 0 && protocol != unix.IPPROTO_TCP {
			return nil, unix.EPROTONOSUPPORT
		}
		protocol = unix.IPPROTO_TCP
		ep, terr = st.S.NewEndpoint(tcp.ProtocolNumber, netProto, wq)
	case unix.SOCK_DGRAM:
		switch {
		case protocol == 0 || protocol == unix.IPPROTO_UDP:
			protocol = unix.IPPROTO_UDP
			ep, terr = st.S.NewEndpoint(udp.ProtocolNumber, netProto, wq)
		case family == unix.AF_INET && protocol == unix.IPPROTO_ICMP,
			family == unix.AF_INET6 && protocol == unix.IPPROTO_ICMPV6:
			if !pingAllowed(t, st) {
				return nil, unix.EACCES
			}
			ep, terr = st.S.NewEndpoint(icmpProto(family), netProto, wq)
		default:
			return nil, unix.EPROTONOSUPPORT
		}
	case unix.SOCK_RAW:
		if !t.Capable(unix.CAP_NET_RAW) {
			return nil, unix.EPERM
		}
		var tp tcpip.TransportProtocolNumber
		switch protocol {
		case unix.IPPROTO_ICMP, unix.IPPROTO_ICMPV6:
			tp = icmpProto(family)
		case unix.IPPROTO_UDP:
			tp = udp.ProtocolNumber
		case unix.IPPROTO_TCP:
			tp = tcp.ProtocolNumber
		default:
			return nil, unix.EPROTONOSUPPORT
		}
		ep, terr = st.S.NewRawEndpoint(tp, netProto, wq, true)
	default:
		return nil, unix.ESOCKTNOSUPPORT
	}
	if terr != nil {
		return nil, netstack.Error(terr)
	}
	if typ == unix.SOCK_STREAM {
		// Nagle's algorithm is on until TCP_NODELAY, as on Linux.
		ep.SocketOptions().SetDelayOption(true)
	}
	return newSock(t, st, family, typ, protocol, ep, wq), nil
}

func icmpProto(family int) tcpip.TransportProtocolNumber {
	if family == unix.AF_INET6 {
		return icmp.ProtocolNumber6
	}
	return icmp.ProtocolNumber4
}

// pingAllowed is ping_init_sock: an ICMP echo socket needs the caller's
// group in net.ipv4.ping_group_range, "1 0" (no group) unless the
// sandbox's config sets it.
func pingAllowed(t *kernel.Task, st *netstack.Stack) bool {
	lo, hi := uint32(1), uint32(0)
	if v, ok := st.Sysctl("net.ipv4.ping_group_range"); ok {
		f := strings.Fields(v)
		if len(f) == 2 {
			a, err1 := strconv.ParseUint(f[0], 10, 32)
			b, err2 := strconv.ParseUint(f[1], 10, 32)
			if err1 == nil && err2 == nil {
				lo, hi = uint32(a), uint32(b)
			}
		}
	}
	c := t.Creds()
	c.Lock()
	defer c.Unlock()
	for _, g := range append([]uint32{c.EGID}, c.Groups...) {
		if lo <= g && g <= hi {
			return true
		}
	}
	return false
}

func newSock(t *kernel.Task, st *netstack.Stack, family, typ, protocol int, ep tcpip.Endpoint, wq *gwaiter.Queue) *sock {
	s := &sock{st: st, family: family, typ: typ, proto: protocol, ep: ep, wq: wq, opts: socket.NewOptions()}
	s.Init(socket.Owner(t))
	s.entry = gwaiter.NewFunctionEntry(gwaiter.EventMask(^uint32(0)), s.onEvent)
	wq.EventRegister(&s.entry)
	st.Add(s)
	socks.Store(ep, s)
	return s
}

// onEvent runs when netstack notifies the endpoint's queue: poll and
// epoll hear of it first, then a send waiting for this socket to become
// readable (loopback.go), then the socket's own blocking calls.
func (s *sock) onEvent(m gwaiter.EventMask) {
	mask := waiter.EventMask(m.ToLinux())
	s.queue.Notify(mask)
	if mask&(waiter.ReadableEvents|waiter.EventHUp|waiter.EventErr) != 0 {
		s.delivered()
	}
	s.block.Notify(mask)
}

// Endpoint, Inode and Owner implement netstack.Socket.
func (s *sock) Endpoint() tcpip.Endpoint { return s.ep }
func (s *sock) Inode() uint64            { return s.Ino() }

// Owner is the uid /proc/net shows: the sockfs inode's, which fchown
// changes, as Linux's sockfs_setattr changes sk_uid.
func (s *sock) Owner() uint32 {
	uid, _ := s.IDs()
	return uid
}

// Family, Type and Protocol implement socket.Socket.
func (s *sock) Family() int   { return s.family }
func (s *sock) Type() int     { return s.typ }
func (s *sock) Protocol() int { return s.proto }

// Release implements vfs.FileImpl.
func (s *sock) Release() {
	s.wq.EventUnregister(&s.entry)
	s.released()
	s.st.Remove(s)
	socks.Delete(s.ep)
	s.ep.Close()
}

// Readiness implements waiter.Waitable.
func (s *sock) Readiness(mask waiter.EventMask) waiter.EventMask {
	ev := waiter.EventMask(s.ep.Readiness(gwaiter.EventMask(mask | waiter.EventHUp | waiter.EventErr)).ToLinux())
	return ev & (mask | waiter.EventHUp | waiter.EventErr)
}

// EventRegister and EventUnregister implement waiter.Waitable.
func (s *sock) EventRegister(e *waiter.Entry)   { s.queue.EventRegister(e) }
func (s *sock) EventUnregister(e *waiter.Entry) { s.queue.EventUnregister(e) }

// waitFor blocks t until the endpoint is ready for one of mask (checked
// once more with the waiter registered, so that no notification is
// lost), the deadline passes or a signal comes (socket.Wait's errors).
func (s *sock) waitFor(t *kernel.Task, mask waiter.EventMask, timeo socket.Timeout) error {
	w, ch := waiter.NewChannelEntry(mask | waiter.EventHUp | waiter.EventErr)
	s.block.EventRegister(w)
	defer s.block.EventUnregister(w)
	if s.Readiness(mask) != 0 {
		return nil
	}
	return socket.Wait(t, ch, timeo.Deadline())
}

// Bind implements socket.Socket.
func (s *sock) Bind(t *kernel.Task, addr []byte) error {
	fa, err := s.parseAddr(addr)
	if err != nil {
		if err == unix.EAFNOSUPPORT && s.family == unix.AF_INET && len(addr) >= 8 &&
			addr[0] == unix.AF_UNSPEC && addr[1] == 0 && addr[4]|addr[5]|addr[6]|addr[7] == 0 {
			// AF_UNSPEC with INADDR_ANY binds as AF_INET, for old programs.
			fa, err = tcpip.FullAddress{Port: uint16(addr[2])<<8 | uint16(addr[3])}, nil
		}
		if err != nil {
			return err
		}
	}
	if fa.Port != 0 && fa.Port < 1024 && !t.Capable(unix.CAP_NET_BIND_SERVICE) {
		return unix.EACCES
	}
	if s.listenerInTheWay(fa.Addr, fa.Port) {
		return unix.EADDRINUSE
	}
	return netstack.Error(s.ep.Bind(fa))
}

// Listen implements socket.Socket. Linux's accept queue is full only
// when it holds more than the backlog (sk_acceptq_is_full), so listen(fd,
// 0) still takes one connection; netstack's is full at the backlog, and
// refused every SYN with 0: it is given one more.
func (s *sock) Listen(t *kernel.Task, backlog int) error {
	if s.typ != unix.SOCK_STREAM {
		return unix.EOPNOTSUPP
	}
	if tcpState(s.ep) != stListen {
		if local, terr := s.ep.GetLocalAddress(); terr == nil && s.listenerInTheWay(local.Addr, local.Port) {
			return unix.EADDRINUSE
		}
	}
	return netstack.Error(s.ep.Listen(backlog + 1))
}

// Accept implements socket.Socket.
func (s *sock) Accept(t *kernel.Task, nonblock bool) (socket.Socket, error) {
	if s.typ != unix.SOCK_STREAM {
		return nil, unix.EOPNOTSUPP
	}
	timeo := s.rcvTimeout(nonblock)
	for {
		ep, wq, terr := s.ep.Accept(nil)
		if terr == nil {
			// An accepted socket has the listener's TCP_NODELAY.
			ep.SocketOptions().SetDelayOption(s.ep.SocketOptions().GetDelayOption())
			ns := newSock(t, s.st, s.family, s.typ, s.proto, ep, wq)
			ns.inheritSendBuffer(s)
			ns.inq.Store(s.inq.Load())
			ns.sizeSendBuffer()
			return ns, nil
		}
		if _, block := terr.(*tcpip.ErrWouldBlock); !block {
			return nil, netstack.Error(terr)
		}
		if timeo == 0 {
			return nil, unix.EAGAIN
		}
		if err := s.waitFor(t, waiter.ReadableEvents, timeo); err == unix.ETIMEDOUT {
			timeo = 0
		} else if err != nil {
			return nil, err
		}
	}
}

func (s *sock) rcvTimeout(nonblock bool) socket.Timeout {
	if nonblock {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.RcvTimeo
}

func (s *sock) sndTimeout(nonblock bool) socket.Timeout {
	if nonblock {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.SndTimeo
}

// Connect implements socket.Socket: AF_UNSPEC disconnects; a stream
// connection waits for the handshake unless non-blocking (EINPROGRESS),
// and a wait cut short by SO_SNDTIMEO is EINPROGRESS too, as Linux's.
func (s *sock) Connect(t *kernel.Task, addr []byte, nonblock bool) error {
	if len(addr) < 2 {
		return unix.EINVAL
	}
	if addr[0] == unix.AF_UNSPEC && addr[1] == 0 {
		if s.typ == unix.SOCK_STREAM {
			return netstack.Error(s.ep.Disconnect())
		}
		s.ep.Disconnect()
		return nil
	}
	fa, err := s.parseAddr(addr)
	if err != nil {
		return err
	}
	if s.typ == unix.SOCK_STREAM && tcpState(s.ep) == stListen {
		return unix.EISCONN // __inet_stream_connect: not TCP_CLOSE (netstack: EINVAL)
	}
	fa = s.anyMeansLoopback(fa)
	if err := s.refuse(fa); err != nil {
		return err
	}
	if s.tupleTaken(fa) {
		return unix.EADDRNOTAVAIL
	}
	terr := s.ep.Connect(fa)
	if _, started := terr.(*tcpip.ErrConnectStarted); !started {
		s.sizeSendBuffer()
		return netstack.Error(terr)
	}
	timeo := s.sndTimeout(nonblock)
	if timeo == 0 {
		return unix.EINPROGRESS
	}
	if err := s.waitFor(t, waiter.WritableEvents, timeo); err == unix.ETIMEDOUT {
		return unix.EINPROGRESS
	} else if err != nil {
		return err
	}
	s.sizeSendBuffer()
	return netstack.Error(s.ep.LastError())
}

// Shutdown implements socket.Socket.
func (s *sock) Shutdown(t *kernel.Task, how int) error {
	var f tcpip.ShutdownFlags
	switch how {
	case unix.SHUT_RD:
		f = tcpip.ShutdownRead
	case unix.SHUT_WR:
		f = tcpip.ShutdownWrite
	case unix.SHUT_RDWR:
		f = tcpip.ShutdownRead | tcpip.ShutdownWrite
	default:
		return unix.EINVAL
	}
	return netstack.Error(s.ep.Shutdown(f))
}

// SockName implements socket.Socket.
func (s *sock) SockName() []byte {
	fa, _ := s.ep.GetLocalAddress()
	return s.formatAddr(fa)
}

// PeerName implements socket.Socket.
func (s *sock) PeerName() ([]byte, error) {
	fa, terr := s.ep.GetRemoteAddress()
	if terr != nil {
		return nil, netstack.Error(terr)
	}
	return s.formatAddr(fa), nil
}

var _ socket.Socket = (*sock)(nil)
