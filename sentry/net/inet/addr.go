package inet

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// parseAddr reads a sockaddr_in or sockaddr_in6 of the socket's family,
// as inet_bind and the connect calls check it: too short is EINVAL,
// another family EAFNOSUPPORT. An unspecified address is netstack's empty
// one, which means any.
func (s *sock) parseAddr(b []byte) (tcpip.FullAddress, error) {
	if len(b) < 2 {
		return tcpip.FullAddress{}, unix.EINVAL
	}
	fam := int(binary.LittleEndian.Uint16(b))
	switch s.family {
	case unix.AF_INET:
		if len(b) < unix.SizeofSockaddrInet4 {
			return tcpip.FullAddress{}, unix.EINVAL
		}
		if fam != unix.AF_INET {
			return tcpip.FullAddress{}, unix.EAFNOSUPPORT
		}
		fa := tcpip.FullAddress{Port: binary.BigEndian.Uint16(b[2:]), Addr: tcpip.AddrFrom4Slice(b[4:8])}
		if fa.Addr.Unspecified() {
			fa.Addr = tcpip.Address{}
		}
		return fa, nil
	default:
		if len(b) < 24 { // SIN6_LEN_RFC2133: without sin6_scope_id
			return tcpip.FullAddress{}, unix.EINVAL
		}
		if fam != unix.AF_INET6 {
			return tcpip.FullAddress{}, unix.EAFNOSUPPORT
		}
		fa := tcpip.FullAddress{Port: binary.BigEndian.Uint16(b[2:]), Addr: tcpip.AddrFrom16Slice(b[8:24])}
		if len(b) >= unix.SizeofSockaddrInet6 {
			fa.NIC = tcpip.NICID(binary.LittleEndian.Uint32(b[24:]))
		}
		if fa.Addr.Unspecified() {
			fa.Addr = tcpip.Address{}
		}
		// An IPv4-mapped address stays as it is: netstack's dual-stack
		// endpoints take it as the IPv4 address (or refuse it with
		// IPV6_V6ONLY).
		return fa, nil
	}
}

// formatAddr writes fa as the socket's family gives addresses: an IPv4
// address to an AF_INET6 socket as IPv4-mapped.
func (s *sock) formatAddr(fa tcpip.FullAddress) []byte {
	if s.family == unix.AF_INET {
		b := make([]byte, unix.SizeofSockaddrInet4)
		binary.LittleEndian.PutUint16(b, unix.AF_INET)
		binary.BigEndian.PutUint16(b[2:], fa.Port)
		if fa.Addr.Len() == 4 {
			a := fa.Addr.As4()
			copy(b[4:], a[:])
		}
		return b
	}
	b := make([]byte, unix.SizeofSockaddrInet6)
	binary.LittleEndian.PutUint16(b, unix.AF_INET6)
	binary.BigEndian.PutUint16(b[2:], fa.Port)
	switch fa.Addr.Len() {
	case 4:
		a := fa.Addr.As4()
		b[18], b[19] = 0xff, 0xff
		copy(b[20:], a[:])
	case 16:
		a := fa.Addr.As16()
		copy(b[8:], a[:])
		if a[0] == 0xfe && a[1]&0xc0 == 0x80 {
			binary.LittleEndian.PutUint32(b[24:], uint32(fa.NIC))
		}
	}
	return b
}

// anyMeansLoopback is Linux's BSD-ism for a destination: connect(2) or
// sendto(2) to INADDR_ANY (0.0.0.0, ::, ::ffff:0.0.0.0) goes to loopback.
// ip_route_output_key takes an IPv4 socket's bound address as the
// destination, 127.0.0.1 if it has none; tcp_v6_connect,
// ip6_datagram_connect and udpv6_sendmsg take ::1, or ::ffff:127.0.0.1
// for a socket bound to an IPv4-mapped address or asked for a mapped one.
// netstack has no such rule: a connect to the unspecified address went
// nowhere (a SYN retransmitted until the program gave up).
func (s *sock) anyMeansLoopback(fa tcpip.FullAddress) tcpip.FullAddress {
	loop4 := [4]byte{127, 0, 0, 1}
	switch {
	case fa.Addr.Len() == 0:
	case fa.Addr.Len() == 16 && isMapped(fa.Addr) && fa.Addr.As16()[12]|fa.Addr.As16()[13]|fa.Addr.As16()[14]|fa.Addr.As16()[15] == 0:
		fa.Addr = mapped(loop4)
		return fa
	default:
		return fa
	}
	local, _ := s.ep.GetLocalAddress()
	if s.family == unix.AF_INET {
		if local.Addr.Len() == 4 && !local.Addr.Unspecified() {
			fa.Addr = local.Addr
		} else {
			fa.Addr = tcpip.AddrFrom4(loop4)
		}
		return fa
	}
	if local.Addr.Len() == 4 || local.Addr.Len() == 16 && isMapped(local.Addr) {
		fa.Addr = mapped(loop4)
	} else {
		fa.Addr = tcpip.AddrFrom16([16]byte{15: 1})
	}
	return fa
}

func isMapped(a tcpip.Address) bool {
	if a.Len() != 16 {
		return false
	}
	b := a.As16()
	return b[10] == 0xff && b[11] == 0xff && all0(b[:10])
}

func all0(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func mapped(a [4]byte) tcpip.Address {
	var b [16]byte
	b[10], b[11] = 0xff, 0xff
	copy(b[12:], a[:])
	return tcpip.AddrFrom16(b)
}

// tupleTaken says whether a TCP socket bound to a port (SO_REUSEADDR
// lets two share one) would connect to fa from the address and port of
// another connection in the stack: Linux's __inet_hash_connect refuses
// that with EADDRNOTAVAIL and leaves the socket bound as it was, free to
// listen. netstack refuses it too, but keeps the failed connection's
// addresses in the endpoint, so a listen after it collided with the
// other connection (EADDRINUSE); the check is made here first, and
// netstack is not asked.
func (s *sock) tupleTaken(fa tcpip.FullAddress) bool {
	if s.typ != unix.SOCK_STREAM || tcpState(s.ep) != stClose || fa.Addr.Len() == 0 || isMapped(fa.Addr) {
		return false
	}
	info, ok := s.ep.Info().(*stack.TransportEndpointInfo)
	if !ok || info.ID.LocalPort == 0 || isMapped(info.ID.LocalAddress) {
		return false
	}
	r, terr := s.st.S.FindRoute(fa.NIC, info.ID.LocalAddress, fa.Addr, info.NetProto, false)
	if terr != nil {
		return false
	}
	defer r.Release()
	id := stack.TransportEndpointID{
		LocalPort: info.ID.LocalPort, LocalAddress: r.LocalAddress(),
		RemotePort: fa.Port, RemoteAddress: r.RemoteAddress(),
	}
	ep, ok := s.st.S.FindTransportEndpoint(info.NetProto, tcp.ProtocolNumber, id, r.NICID()).(tcpip.Endpoint)
	if !ok || ep == s.ep {
		return false
	}
	other, ok := ep.Info().(*stack.TransportEndpointInfo)
	return ok && other.ID == id
}

// span is what a bound address covers: IPv4, IPv6 or both, each any
// address or one.
type span struct {
	v4, v6       bool
	any4, any6   bool
	addr4, addr6 tcpip.Address
}

// boundSpan is the span of a socket bound to local, as
// inet_rcv_saddr_equal and ipv6_rcv_saddr_equal read a bound address: an
// AF_INET6 socket on :: covers IPv4 too unless IPV6_V6ONLY, and one on an
// IPv4-mapped address covers that IPv4 address alone.
func boundSpan(family int, v6only bool, local tcpip.Address) span {
	switch {
	case local.Len() == 4:
		return span{v4: true, any4: local.Unspecified(), addr4: local}
	case local.Len() == 16 && isMapped(local):
		b := local.As16()
		a := tcpip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		return span{v4: true, any4: a.Unspecified(), addr4: a}
	case family == unix.AF_INET:
		return span{v4: true, any4: true}
	case local.Len() == 16 && !local.Unspecified():
		return span{v6: true, addr6: local}
	}
	return span{v6: true, any6: true, v4: !v6only, any4: !v6only}
}

func (a span) overlaps(b span) bool {
	return a.v4 && b.v4 && (a.any4 || b.any4 || a.addr4 == b.addr4) ||
		a.v6 && b.v6 && (a.any6 || b.any6 || a.addr6 == b.addr6)
}

// listenerInTheWay says whether a TCP socket may not take local:port
// because another socket listens there: Linux's inet_csk_bind_conflict
// lets SO_REUSEADDR share a port only with sockets that are not
// listening, on bind and on listen alike, and SO_REUSEPORT share it with
// a listener of the same owner that set it too. netstack's port
// reservations know nothing of listening: with SO_REUSEADDR on both, a
// bind to 0.0.0.0 beside a listener on 127.0.0.1 succeeded, and so did a
// second listener there.
func (s *sock) listenerInTheWay(local tcpip.Address, port uint16) bool {
	if s.typ != unix.SOCK_STREAM || port == 0 {
		return false
	}
	mine := boundSpan(s.family, s.ep.SocketOptions().GetV6Only(), local)
	reuseport := s.ep.SocketOptions().GetReusePort()
	for _, n := range s.st.Sockets() {
		o, ok := n.(*sock)
		if !ok || o == s || o.typ != unix.SOCK_STREAM || tcpState(o.ep) != stListen {
			continue
		}
		ol, terr := o.ep.GetLocalAddress()
		if terr != nil || ol.Port != port {
			continue
		}
		if reuseport && o.ep.SocketOptions().GetReusePort() && o.Owner() == s.Owner() {
			continue
		}
		if mine.overlaps(boundSpan(o.family, o.ep.SocketOptions().GetV6Only(), ol.Addr)) {
			return true
		}
	}
	return false
}
