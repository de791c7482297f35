package inet

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
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
