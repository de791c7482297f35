package unixsock

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/waiter"
)

// eventWrBand is POLLWRBAND, which Linux reports with POLLOUT for sockets.
const eventWrBand waiter.EventMask = 0x200

const writable = waiter.WritableEvents | eventWrBand

// writableLocked is unix_writable: not listening, and at most a quarter
// of SO_SNDBUF in flight.
func (e *endpoint) writableLocked() bool {
	return e.state != stListen && e.wmem*4 <= int(e.opts.SndBuf)
}

// Readiness implements waiter.Waitable: unix_poll for stream sockets,
// unix_dgram_poll for datagram and seqpacket ones.
func (e *endpoint) Readiness(mask waiter.EventMask) waiter.EventMask {
	e.ns.mu.Lock()
	defer e.ns.mu.Unlock()
	var ev waiter.EventMask
	if e.err != 0 {
		ev |= waiter.EventErr
	}
	if e.shut == shutdownMask {
		ev |= waiter.EventHUp
	}
	if e.shut&rcvShutdown != 0 {
		ev |= waiter.EventRdHUp | waiter.ReadableEvents
	}
	if len(e.recvq) > 0 {
		ev |= waiter.ReadableEvents
	}
	if e.typ != unix.SOCK_DGRAM && e.state == stClose {
		ev |= waiter.EventHUp
	}
	w := e.writableLocked()
	if e.typ != unix.SOCK_STREAM && w {
		// A datagram socket connected to one that is not connected back
		// waits for room in that one's queue too.
		if p := e.peer; p != nil && p.peer != e && !p.dead && len(p.recvq) > p.backlog {
			w = false
		}
	}
	if w {
		ev |= writable
	}
	return ev & (mask | waiter.EventHUp | waiter.EventErr)
}
