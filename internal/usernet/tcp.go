package usernet

import (
	"context"
	"io"
	"net"
	"net/netip"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// dialTimeout bounds the host's connect for one of the guest's; the
// guest's own connect keeps waiting (its SYNs are retransmitted) until
// then, and gets a reset if the host's failed.
const dialTimeout = 60 * time.Second

// forwardTCP takes a connection the guest opens (a SYN to anywhere):
// the host dials the destination first, so that a refusal there reaches
// the guest as its own connect's ECONNREFUSED; then the guest's handshake
// completes and the two connections are joined.
func (n *Net) forwardTCP(r *tcp.ForwarderRequest) {
	id := r.ID()
	dst := addrPort(id.LocalAddress, id.LocalPort)
	target := dst
	switch {
	case dst == netip.AddrPortFrom(Resolver, dnsPort) && n.policy() == nil:
		// DNS over TCP (an answer too long for UDP) goes upstream as
		// well; with an allowlist it is refused, as the sentry does, since
		// neither side reads it.
		target = n.cfg.Upstream
	case !n.allowed(dst, "a connection"):
		r.Complete(true)
		return
	}
	ctx, cancel := context.WithTimeout(n.ctx, dialTimeout)
	host, err := n.dial(ctx, "tcp", target.String())
	cancel()
	if err != nil {
		r.Complete(true)
		return
	}
	var wq waiter.Queue
	ep, terr := r.CreateEndpoint(&wq)
	if terr != nil {
		host.Close()
		r.Complete(true)
		return
	}
	r.Complete(false)
	guest := gonet.NewTCPConn(&wq, ep)
	if !n.track(host, guest) {
		return
	}
	defer n.untrack(host, guest)
	done := make(chan struct{})
	go func() {
		copyHalf(host, guest)
		close(done)
	}()
	copyHalf(guest, host)
	<-done
}

// halfCloser is a connection whose writing side closes alone (TCP's
// FIN), net.TCPConn and gonet.TCPConn.
type halfCloser interface {
	net.Conn
	CloseWrite() error
}

// copyHalf copies one direction until its end, then passes the end on,
// leaving the other direction open, as a TCP proxy must for a request
// that says it is complete by shutting down writing.
// A direction that fails (a reset) ends both.
func copyHalf(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		src.Close()
		return
	}
	if hc, ok := dst.(halfCloser); ok {
		hc.CloseWrite()
	} else {
		dst.Close()
	}
}
