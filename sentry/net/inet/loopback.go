package inet

import (
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"

	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// On Linux a send on a TCP connection over loopback has put the bytes in
// the peer's receive queue, and woken its poll and epoll waiters, by the
// time it returns: loopback's transmit runs the receive path in the
// sender's context. Programs count on that: CPython's test_epoll sends on
// both ends of a connection and expects one epoll_wait to report both
// readable. Netstack's write puts the segment on the peer's queue in the
// sender's goroutine, but a processor goroutine takes it from there, so
// the peer becomes readable a little after the write. A send to a peer in
// this same stack therefore waits, briefly, until the peer's next
// readable notification has gone out to its poll and epoll waiters
// (onEvent tells them first). The wait costs no allocation: each socket
// makes its channel and timer once, when it finds its peer, and the peer
// wakes it through loopState.

// settleLimit bounds that wait: the processor takes microseconds; the
// bound only matters if it is starved or the segment does not make the
// peer readable (out of its window, its queue full), and then the send
// returns as it would have without the wait.
const settleLimit = 5 * time.Millisecond

// socks maps each open socket's endpoint to its socket, so that a
// connection's other end in the same stack can be found from the
// endpoint netstack's demuxer returns.
var socks sync.Map // tcpip.Endpoint -> *sock

// loopState is a TCP socket's side of a connection within the stack.
type loopState struct {
	known atomic.Bool // peer is settled, nil or not
	mu    sync.Mutex  // the lookup
	peer  *sock

	// notified counts the readable (or hang-up, error) notifications
	// this socket's poll and epoll waiters have had; closed is set when
	// the socket is released, after which nothing will be notified.
	notified atomic.Uint64
	closed   atomic.Bool
	// sender is the other end once it found this one: the socket whose
	// sends wait for notified to move.
	sender atomic.Pointer[sock]

	// This socket's own wait for its peer: waiting says a send is in it
	// (one at a time: a concurrent send of the same socket does not
	// wait), wake is poked by the peer, timer bounds it.
	waiting atomic.Bool
	wake    chan struct{}
	timer   *time.Timer
}

// localPeer returns the socket at the other end of s's TCP connection
// when both ends are in this stack over loopback, nil when s is not
// connected yet, not TCP, or its peer is elsewhere. The answer is kept
// once s is connected.
func (s *sock) localPeer() *sock {
	l := &s.loop
	if l.known.Load() {
		return l.peer
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
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.known.Load() {
		return l.peer
	}
	// The demuxer answers a listener for an id without an exact match:
	// only the endpoint whose own id is the reverse of s's is the peer.
	if ep := s.st.S.FindTransportEndpoint(info.NetProto, tcp.ProtocolNumber, id, netstack.LoopbackNIC); ep != nil {
		if v, ok := socks.Load(ep); ok {
			p := v.(*sock)
			if pi, ok := p.ep.Info().(*stack.TransportEndpointInfo); ok && pi.ID == id {
				l.wake = make(chan struct{}, 1)
				l.timer = time.NewTimer(settleLimit)
				l.timer.Stop()
				l.peer = p
				p.loop.sender.Store(s)
			}
		}
	}
	l.known.Store(true)
	return l.peer
}

// delivered is onEvent's news that s's poll and epoll waiters have just
// been told s is readable: it wakes the send of s's peer waiting for it.
func (s *sock) delivered() {
	s.loop.notified.Add(1)
	s.wakeSender()
}

// released marks s gone for a send waiting for it.
func (s *sock) released() {
	s.loop.closed.Store(true)
	s.wakeSender()
}

func (s *sock) wakeSender() {
	if w := s.loop.sender.Load(); w != nil && w.loop.waiting.Load() {
		select {
		case w.loop.wake <- struct{}{}:
		default:
		}
	}
}

// sendMark is what a send to a local peer notes before writing: how many
// segments s had sent, so that a write netstack held back (Nagle, a
// closed window) waits for nothing, and how many readable notifications
// the peer had had.
type sendMark struct {
	sent, notified uint64
}

func (s *sock) markSend(p *sock) sendMark {
	return sendMark{sent: segmentsSent(s), notified: p.loop.notified.Load()}
}

func segmentsSent(s *sock) uint64 {
	if st, ok := s.ep.Stats().(*tcp.Stats); ok {
		return st.SegmentsSent.Value()
	}
	return 0
}

// settle ends a send of s to its local peer p: if the write sent
// segments, it waits (up to settleLimit) until p's poll and epoll waiters
// have been told p is readable, or p is released.
func (s *sock) settle(p *sock, m sendMark) {
	if segmentsSent(s) == m.sent || p.loop.notified.Load() != m.notified {
		return
	}
	l := &s.loop
	if !l.waiting.CompareAndSwap(false, true) {
		return
	}
	defer l.waiting.Store(false)
	// waiting is set before notified is read again, and the peer bumps
	// notified before it reads waiting: one of the two sees the other.
	select {
	case <-l.wake: // a poke for an earlier send
	default:
	}
	if p.loop.notified.Load() != m.notified || p.loop.closed.Load() {
		return
	}
	l.timer.Reset(settleLimit)
	defer l.timer.Stop()
	for p.loop.notified.Load() == m.notified && !p.loop.closed.Load() {
		select {
		case <-l.wake:
		case <-l.timer.C:
			return
		}
	}
}
