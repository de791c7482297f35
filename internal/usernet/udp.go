package usernet

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"time"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"
	"gvisor.dev/gvisor/pkg/waiter"
)

// How long the host waits for the upstream resolver's answer to one
// query, and keeps a UDP flow nobody sends on.
const (
	dnsTimeout = 10 * time.Second
	udpIdle    = 60 * time.Second
)

// maxQueries bounds the guest's DNS queries in flight upstream; more are
// dropped, as a busy resolver's, and retried by the guest's resolver.
const maxQueries = 64

// serveDNS answers the guest's queries to Resolver:53 by asking the
// host's resolver (Config.Upstream), for allowed names alone when there
// is an allowlist.
func (n *Net) serveDNS() error {
	laddr := tcpip.FullAddress{NIC: 1, Addr: tcpip.AddrFromSlice(Resolver.AsSlice()), Port: dnsPort}
	c, err := gonet.DialUDP(n.s, &laddr, nil, ipv4.ProtocolNumber)
	if err != nil {
		return fmt.Errorf("usernet: resolver: %v", err)
	}
	if !n.track(c) {
		return nil
	}
	slots := make(chan struct{}, maxQueries)
	go func() {
		defer n.untrack(c)
		buf := make([]byte, 1<<16)
		for {
			size, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			select {
			case slots <- struct{}{}:
			default:
				continue
			}
			q := append([]byte(nil), buf[:size]...)
			go func() {
				defer func() { <-slots }()
				if a := n.answer(q); a != nil {
					c.WriteTo(a, from)
				}
			}()
		}
	}()
	return nil
}

// answer is the reply to query q: REFUSED for a name not allowed, else
// the upstream resolver's; nil for none (a malformed query, or no
// answer in time).
func (n *Net) answer(q []byte) []byte {
	if len(q) < 12 || q[2]&0x80 != 0 {
		return nil
	}
	allow := n.policy()
	if allow != nil && !allow.QueryAllowed(q) {
		return refusal(q)
	}
	a := n.ask(q)
	if a != nil && allow != nil {
		allow.LearnAnswer(a)
	}
	return a
}

// ask sends q to the upstream resolver and returns its answer to it.
func (n *Net) ask(q []byte) []byte {
	ctx, cancel := context.WithTimeout(n.ctx, dnsTimeout)
	defer cancel()
	c, err := n.dial(ctx, "udp", n.cfg.Upstream.String())
	if err != nil {
		return nil
	}
	if !n.track(c) {
		return nil
	}
	defer n.untrack(c)
	c.SetDeadline(time.Now().Add(dnsTimeout))
	if _, err := c.Write(q); err != nil {
		return nil
	}
	buf := make([]byte, 1<<16)
	// Datagrams that are not the answer (a stale one, another id) are
	// skipped until the deadline.
	for {
		size, err := c.Read(buf)
		if err != nil {
			return nil
		}
		if size >= 12 && buf[0] == q[0] && buf[1] == q[1] && buf[2]&0x80 != 0 {
			return append([]byte(nil), buf[:size]...)
		}
	}
}

// refusal is a REFUSED answer to q: its header and question, nothing
// else.
func refusal(q []byte) []byte {
	end, ok := questionsEnd(q)
	if !ok {
		return nil
	}
	r := append([]byte(nil), q[:end]...)
	r[2] = 0x80 | q[2]&0x79 // a response, the query's opcode and RD
	r[3] = 0x80 | 5         // RA, REFUSED
	binary.BigEndian.PutUint16(r[6:], 0)
	binary.BigEndian.PutUint16(r[8:], 0)
	binary.BigEndian.PutUint16(r[10:], 0)
	return r
}

// questionsEnd is the offset after a query's question section.
func questionsEnd(q []byte) (int, bool) {
	off := 12
	for i := 0; i < int(binary.BigEndian.Uint16(q[4:])); i++ {
		for {
			if off >= len(q) {
				return 0, false
			}
			l := int(q[off])
			if l == 0 {
				off++
				break
			}
			if l&0xc0 == 0xc0 {
				off += 2
				break
			}
			if l&0xc0 != 0 {
				return 0, false
			}
			off += 1 + l
		}
		off += 4 // type, class
		if off > len(q) {
			return 0, false
		}
	}
	return off, true
}

// forwardUDP takes the first datagram of a flow the guest starts to
// anywhere but the resolver, and relays the flow through a host socket
// connected to its destination until neither side has sent for udpIdle.
// A destination refused is left unhandled: the guest gets ICMP's port
// unreachable (ECONNREFUSED on a connected socket).
func (n *Net) forwardUDP(r *udp.ForwarderRequest) bool {
	id := r.ID()
	dst := addrPort(id.LocalAddress, id.LocalPort)
	if !n.allowed(dst, "a datagram") {
		return false
	}
	var wq waiter.Queue
	ep, terr := r.CreateEndpoint(&wq)
	if terr != nil {
		return true
	}
	guest := gonet.NewUDPConn(&wq, ep)
	go func() {
		ctx, cancel := context.WithTimeout(n.ctx, dialTimeout)
		host, err := n.dial(ctx, "udp", dst.String())
		cancel()
		if err != nil {
			guest.Close()
			return
		}
		if !n.track(host, guest) {
			return
		}
		defer n.untrack(host, guest)
		// DNS to a resolver the allowlist names goes through its rules
		// here too: the list in force when the flow began.
		allow := n.policy()
		dns := allow != nil && dst.Port() == dnsPort
		done := make(chan struct{})
		go func() {
			relay(guest, host, func(a []byte) bool {
				if dns {
					allow.LearnAnswer(a)
				}
				return true
			})
			close(done)
		}()
		relay(host, guest, func(q []byte) bool { return !dns || allow.QueryAllowed(q) })
		host.Close()
		guest.Close()
		<-done
	}()
	return true
}

// relay copies datagrams from src to dst that pass ok, until src has
// been quiet for udpIdle or either fails.
func relay(dst, src net.Conn, ok func([]byte) bool) {
	buf := make([]byte, 1<<16)
	for {
		src.SetReadDeadline(time.Now().Add(udpIdle))
		size, err := src.Read(buf)
		if err != nil {
			dst.Close()
			return
		}
		if !ok(buf[:size]) {
			continue
		}
		if _, err := dst.Write(buf[:size]); err != nil {
			src.Close()
			return
		}
	}
}
