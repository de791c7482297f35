package inet

import (
	"bytes"
	"io"
	"net/netip"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
)

// dnsPort is where the sandbox's resolver answers.
const dnsPort = 53

// maxDatagram bounds the payload copied to read a DNS message.
const maxDatagram = 1 << 16

// refuse checks a destination against the sandbox's allowlist
// (netstack.Egress): a stream socket is refused at once (ECONNREFUSED,
// as a reset would), a datagram one has no way there (ENETUNREACH).
func (s *sock) refuse(fa tcpip.FullAddress) error {
	if s.st.Reachable(fa.Addr, fa.Port, s.proto) {
		return nil
	}
	a, _ := netip.AddrFromSlice(fa.Addr.AsSlice())
	kind := "a datagram"
	if s.typ == unix.SOCK_STREAM {
		kind = "a connection"
	}
	if e := s.st.Egress(); e != nil { // replaced meanwhile: it refused all the same
		e.Refused(kind, a, fa.Port)
	}
	if s.typ == unix.SOCK_STREAM {
		return unix.ECONNREFUSED
	}
	return unix.ENETUNREACH
}

// isDNS says whether a UDP datagram to or from fa is the resolver's
// business, which the allowlist reads: port 53 outside the sandbox.
func (s *sock) isDNS(fa tcpip.FullAddress) bool {
	if s.st.Egress() == nil || s.proto != unix.IPPROTO_UDP || fa.Port != dnsPort {
		return false
	}
	a, _ := netip.AddrFromSlice(fa.Addr.AsSlice())
	return !a.Unmap().IsLoopback()
}

// egressPayload, for a UDP datagram to the resolver, reads the guest's
// data and lets it go only if the query asks for allowed names; it
// returns the payload to send instead of r (nil: r as it is).
func (s *sock) egressPayload(r *reader, to *tcpip.FullAddress) (tcpip.Payloader, error) {
	e := s.st.Egress()
	if e == nil || s.typ == unix.SOCK_STREAM {
		return nil, nil
	}
	dest := to
	if dest == nil {
		ra, terr := s.ep.GetRemoteAddress()
		if terr != nil {
			return nil, nil // unconnected: netstack says so
		}
		dest = &ra
	} else if err := s.refuse(*dest); err != nil {
		return nil, err
	}
	if !s.isDNS(*dest) {
		return nil, nil
	}
	buf := make([]byte, min(r.Len(), maxDatagram))
	n, err := io.ReadFull(r, buf)
	if err != nil && n == 0 && len(buf) > 0 {
		return nil, err
	}
	if !e.QueryAllowed(buf[:n]) {
		return nil, unix.ECONNREFUSED
	}
	return bytes.NewReader(buf[:n]), nil
}

// capture keeps the first bytes a datagram read gives the guest, for
// the allowlist to read the resolver's answer.
type capture struct {
	w   io.Writer
	buf []byte
}

func (c *capture) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if room := maxDatagram - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(n, room)]...)
	}
	return n, err
}

// learn gives the allowlist a resolver's answer the guest read.
func (s *sock) learn(from tcpip.FullAddress, c *capture) {
	e := s.st.Egress()
	if c == nil || e == nil || !s.isDNS(from) || !s.st.Reachable(from.Addr, from.Port, s.proto) {
		return
	}
	e.LearnAnswer(c.buf)
}
