package inet

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	gwaiter "gvisor.dev/gvisor/pkg/waiter"

	"github.com/moat-sandbox/moat/sentry/net/netstack"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// On Linux a send on a TCP connection over loopback has put the bytes in
// the peer's receive queue, and woken its poll and epoll waiters, by the
// time it returns: loopback's transmit runs the receive path in the
// sender's context. Programs count on that: CPython's test_epoll sends on
// both ends of a connection and expects one epoll_wait to report both
// readable. Netstack hands an incoming segment to a processor goroutine,
// and a socket's poll and epoll notifications go out from a goroutine of
// their own (onEvent), so without help the peer becomes readable a little
// after the send returned. A send to a peer in this same stack therefore
// waits, briefly, for the peer to become readable and for its
// notifications to have gone out.

// settleLimit bounds that wait: the processor takes microseconds; the
// bound only matters if it is starved, and then the send returns as it
// would have without the wait.
const settleLimit = 5 * time.Millisecond

// socks maps each open socket's endpoint to its socket, so that a
// connection's other end in the same stack can be found from the
// endpoint netstack's demuxer returns.
var socks sync.Map // tcpip.Endpoint -> *sock

// localPeer returns the socket at the other end of s's TCP connection
// when both ends are in this stack over loopback, nil when s is not
// connected yet, not TCP, or its peer is elsewhere. The answer is cached
// once s is connected.
func (s *sock) localPeer() *sock {
	if s.peerKnown.Load() {
		return s.peer
	}
	if s.typ != unix.SOCK_STREAM {
		return nil
	}
	info, ok := s.ep.Info().(*stack.TransportEndpointInfo)
	if !ok || info.ID.RemotePort == 0 || tcp.EndpointState(s.ep.State()) != tcp.StateEstablished {
		return nil
	}
	id := stack.TransportEndpointID{
		LocalPort: info.ID.RemotePort, LocalAddress: info.ID.RemoteAddress,
		RemotePort: info.ID.LocalPort, RemoteAddress: info.ID.LocalAddress,
	}
	s.peerMu.Lock()
	defer s.peerMu.Unlock()
	if s.peerKnown.Load() {
		return s.peer
	}
	// The demuxer answers a listener for an id without an exact match:
	// only the endpoint whose own id is the reverse of s's is the peer.
	if ep := s.st.S.FindTransportEndpoint(info.NetProto, tcp.ProtocolNumber, id, netstack.LoopbackNIC); ep != nil {
		if p, ok := socks.Load(ep); ok {
			pi, ok := p.(*sock).ep.Info().(*stack.TransportEndpointInfo)
			if ok && pi.ID == id {
				s.peer = p.(*sock)
			}
		}
	}
	s.peerKnown.Store(true)
	return s.peer
}

// settleWatch is what a send to a local peer set up before writing: an
// entry on the peer's own wait queue, so that the peer's becoming
// readable is seen even if the peer reads at once, and the count of
// segments s had sent, so that a write netstack held back (Nagle, a
// closed window) waits for nothing.
type settleWatch struct {
	peer  *sock
	entry *waiter.Entry
	ch    chan struct{}
	sent  uint64
}

// watchPeer starts a settleWatch when s's peer is local; nil otherwise.
func (s *sock) watchPeer() *settleWatch {
	p := s.localPeer()
	if p == nil {
		return nil
	}
	e, ch := waiter.NewChannelEntry(waiter.ReadableEvents | waiter.EventHUp | waiter.EventErr)
	p.block.EventRegister(e)
	return &settleWatch{peer: p, entry: e, ch: ch, sent: segmentsSent(s)}
}

func segmentsSent(s *sock) uint64 {
	if st, ok := s.ep.Stats().(*tcp.Stats); ok {
		return st.SegmentsSent.Value()
	}
	return 0
}

// settle ends w after s's write: if the write sent segments, it waits
// (up to settleLimit) until the peer is readable, then until the peer's
// poll and epoll notifications are out, running them here if no
// goroutine is.
func (w *settleWatch) settle(s *sock) {
	if w == nil {
		return
	}
	p := w.peer
	defer p.block.EventUnregister(w.entry)
	if segmentsSent(s) == w.sent {
		return
	}
	deadline := time.Now().Add(settleLimit)
	if p.ep.Readiness(gwaiter.ReadableEvents) == 0 {
		timer := time.NewTimer(settleLimit)
		select {
		case <-w.ch:
		case <-timer.C:
		}
		timer.Stop()
	}
	for time.Now().Before(deadline) {
		if p.flushing.CompareAndSwap(false, true) {
			p.flush()
			if p.pending.Load() == 0 {
				return
			}
			continue
		}
		// Another goroutine is delivering them: it is short.
		time.Sleep(20 * time.Microsecond)
	}
}
