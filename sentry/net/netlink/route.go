package netlink

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

func nlmsgAlign(n int) int { return (n + 3) &^ 3 }

// msg builds one netlink message: a header, a fixed part and attributes.
type msg struct {
	b []byte
}

func newMsg(typ, flags uint16, seq, port uint32, fixed []byte) *msg {
	m := &msg{b: make([]byte, unix.SizeofNlMsghdr, 256)}
	binary.LittleEndian.PutUint16(m.b[4:], typ)
	binary.LittleEndian.PutUint16(m.b[6:], flags)
	binary.LittleEndian.PutUint32(m.b[8:], seq)
	binary.LittleEndian.PutUint32(m.b[12:], port)
	m.b = append(m.b, fixed...)
	m.pad()
	return m
}

func (m *msg) pad() {
	for len(m.b)%4 != 0 {
		m.b = append(m.b, 0)
	}
}

// attr appends an rtattr.
func (m *msg) attr(typ uint16, data []byte) {
	h := make([]byte, 4)
	binary.LittleEndian.PutUint16(h, uint16(4+len(data)))
	binary.LittleEndian.PutUint16(h[2:], typ)
	m.b = append(append(m.b, h...), data...)
	m.pad()
}

func (m *msg) u32(typ uint16, v uint32) { m.attr(typ, binary.LittleEndian.AppendUint32(nil, v)) }
func (m *msg) str(typ uint16, s string) { m.attr(typ, append([]byte(s), 0)) }

func (m *msg) bytes() []byte {
	binary.LittleEndian.PutUint32(m.b, uint32(len(m.b)))
	return m.b
}

// errMsg is NLMSG_ERROR for the request req: an errno (0 for an ack) and
// the request, as netlink_ack quotes it: its header alone for an ack or
// with NETLINK_CAP_ACK, else the whole request.
func errMsg(req []byte, errno unix.Errno, port uint32, capAck bool) []byte {
	seq := binary.LittleEndian.Uint32(req[8:])
	body := binary.LittleEndian.AppendUint32(nil, uint32(-int32(errno)))
	quoted := req[:unix.SizeofNlMsghdr]
	if errno != 0 && !capAck {
		quoted = req
	}
	body = append(body, quoted...)
	return newMsg(unix.NLMSG_ERROR, 0, seq, port, body).bytes()
}

// handle answers one request: the datagrams of its reply.
func (s *sock) handle(t *kernel.Task, req []byte, port uint32) [][]byte {
	typ := binary.LittleEndian.Uint16(req[4:])
	flags := binary.LittleEndian.Uint16(req[6:])
	seq := binary.LittleEndian.Uint32(req[8:])
	if flags&unix.NLM_F_REQUEST == 0 || typ < unix.NLMSG_MIN_TYPE {
		return nil
	}
	dump := flags&unix.NLM_F_DUMP == unix.NLM_F_DUMP
	s.mu.Lock()
	capAck := s.flags[unix.NETLINK_CAP_ACK]
	s.mu.Unlock()
	if s.proto == unix.NETLINK_SOCK_DIAG {
		return diag(t, req, port, capAck)
	}
	var out [][]byte
	switch typ {
	case unix.RTM_GETLINK:
		ifcs := s.st.Interfaces()
		if !dump {
			var idx int32
			if len(req) >= unix.SizeofNlMsghdr+unix.SizeofIfInfomsg {
				idx = int32(binary.LittleEndian.Uint32(req[unix.SizeofNlMsghdr+4:]))
			}
			name := attrString(req[min(len(req), unix.SizeofNlMsghdr+unix.SizeofIfInfomsg):], unix.IFLA_IFNAME)
			for _, ifc := range ifcs {
				if (idx != 0 && ifc.Index == idx) || (idx == 0 && name != "" && ifc.Name == name) {
					return [][]byte{linkMsg(ifc, unix.RTM_NEWLINK, 0, seq, port)}
				}
			}
			return [][]byte{errMsg(req, unix.ENODEV, port, capAck)}
		}
		var parts []byte
		for _, ifc := range ifcs {
			parts = append(parts, linkMsg(ifc, unix.RTM_NEWLINK, unix.NLM_F_MULTI, seq, port)...)
		}
		out = append(out, append(parts, done(seq, port)...))
	case unix.RTM_GETADDR:
		family := uint8(0)
		if len(req) > unix.SizeofNlMsghdr {
			family = req[unix.SizeofNlMsghdr]
		}
		var parts []byte
		for _, ifc := range s.st.Interfaces() {
			for _, pa := range ifc.Addrs {
				m := addrMsg(ifc, pa, seq, port)
				if m == nil || family != 0 && m[unix.SizeofNlMsghdr] != family {
					continue
				}
				parts = append(parts, m...)
			}
		}
		out = append(out, append(parts, done(seq, port)...))
	case unix.RTM_GETROUTE:
		family := uint8(0)
		if len(req) > unix.SizeofNlMsghdr {
			family = req[unix.SizeofNlMsghdr]
		}
		var parts []byte
		for _, m := range routeMsgs(s.st, family, seq, port) {
			parts = append(parts, m...)
		}
		out = append(out, append(parts, done(seq, port)...))
	case unix.RTM_GETNEIGH, unix.RTM_GETRULE, unix.RTM_GETQDISC, unix.RTM_GETNETCONF, unix.RTM_GETNSID:
		if dump {
			out = append(out, done(seq, port))
		} else {
			out = append(out, errMsg(req, unix.EOPNOTSUPP, port, capAck))
		}
	case unix.RTM_NEWLINK, unix.RTM_DELLINK, unix.RTM_SETLINK, unix.RTM_NEWADDR, unix.RTM_DELADDR,
		unix.RTM_NEWROUTE, unix.RTM_DELROUTE, unix.RTM_NEWNEIGH, unix.RTM_DELNEIGH:
		errno := unix.EOPNOTSUPP
		if t != nil && !t.Capable(unix.CAP_NET_ADMIN) {
			errno = unix.EPERM
		}
		return [][]byte{errMsg(req, errno, port, capAck)}
	default:
		return [][]byte{errMsg(req, unix.EOPNOTSUPP, port, capAck)}
	}
	if flags&unix.NLM_F_ACK != 0 && !dump {
		out = append(out, errMsg(req, 0, port, capAck))
	}
	return out
}

// done is NLMSG_DONE, which ends a dump.
func done(seq, port uint32) []byte {
	return newMsg(unix.NLMSG_DONE, unix.NLM_F_MULTI, seq, port, make([]byte, 4)).bytes()
}

// attrString finds a string attribute in a request's attributes.
func attrString(b []byte, typ uint16) string {
	for len(b) >= 4 {
		l := int(binary.LittleEndian.Uint16(b))
		if l < 4 || l > len(b) {
			break
		}
		if binary.LittleEndian.Uint16(b[2:]) == typ {
			v := b[4:l]
			for i, c := range v {
				if c == 0 {
					v = v[:i]
					break
				}
			}
			return string(v)
		}
		b = b[min(nlmsgAlign(l), len(b)):]
	}
	return ""
}

// linkMsg is RTM_NEWLINK for an interface, with the attributes ip(8) and
// getifaddrs read.
func linkMsg(ifc netstack.Interface, typ, flags uint16, seq, port uint32) []byte {
	fixed := make([]byte, unix.SizeofIfInfomsg)
	fixed[0] = unix.AF_UNSPEC
	binary.LittleEndian.PutUint16(fixed[2:], ifc.Type)
	binary.LittleEndian.PutUint32(fixed[4:], uint32(ifc.Index))
	binary.LittleEndian.PutUint32(fixed[8:], ifc.Flags)
	m := newMsg(typ, flags, seq, port, fixed)
	m.str(unix.IFLA_IFNAME, ifc.Name)
	m.u32(unix.IFLA_TXQLEN, 1000)
	oper := byte(6) // IF_OPER_UP
	if ifc.Flags&unix.IFF_LOOPBACK != 0 {
		oper = 0 // IF_OPER_UNKNOWN, as Linux's lo
	}
	m.attr(unix.IFLA_OPERSTATE, []byte{oper})
	m.attr(unix.IFLA_LINKMODE, []byte{0})
	m.u32(unix.IFLA_MTU, ifc.MTU)
	m.u32(unix.IFLA_GROUP, 0)
	m.u32(unix.IFLA_PROMISCUITY, 0)
	m.u32(unix.IFLA_NUM_TX_QUEUES, 1)
	m.u32(unix.IFLA_NUM_RX_QUEUES, 1)
	m.attr(unix.IFLA_CARRIER, []byte{1})
	m.str(unix.IFLA_QDISC, "noqueue")
	hw := ifc.HWAddr
	if len(hw) == 0 {
		hw = make([]byte, 6)
	}
	m.attr(unix.IFLA_ADDRESS, hw)
	bcast := make([]byte, len(hw))
	if ifc.Flags&unix.IFF_LOOPBACK == 0 {
		for i := range bcast {
			bcast[i] = 0xff
		}
	}
	m.attr(unix.IFLA_BROADCAST, bcast)
	st := make([]byte, 0, 24*4)
	for _, v := range []uint64{ifc.Stats.Rx.Packets.Value(), ifc.Stats.Tx.Packets.Value(),
		ifc.Stats.Rx.Bytes.Value(), ifc.Stats.Tx.Bytes.Value()} {
		st = binary.LittleEndian.AppendUint32(st, uint32(v))
	}
	st = append(st, make([]byte, 20*4)...)
	m.attr(unix.IFLA_STATS, st)
	return m.bytes()
}

// addrMsg is RTM_NEWADDR for one address of an interface.
func addrMsg(ifc netstack.Interface, pa tcpip.ProtocolAddress, seq, port uint32) []byte {
	a := pa.AddressWithPrefix
	fixed := make([]byte, unix.SizeofIfAddrmsg)
	family := byte(unix.AF_INET6)
	if pa.Protocol == ipv4.ProtocolNumber {
		family = unix.AF_INET
	}
	fixed[0] = family
	fixed[1] = byte(a.PrefixLen)
	fixed[2] = unix.IFA_F_PERMANENT
	switch {
	case ifc.Flags&unix.IFF_LOOPBACK != 0:
		fixed[3] = unix.RT_SCOPE_HOST
	case family == unix.AF_INET6 && header.IsV6LinkLocalUnicastAddress(a.Address):
		// fe80::/10, which Linux scopes to the link.
		fixed[3] = unix.RT_SCOPE_LINK
	}
	binary.LittleEndian.PutUint32(fixed[4:], uint32(ifc.Index))
	m := newMsg(unix.RTM_NEWADDR, unix.NLM_F_MULTI, seq, port, fixed)
	m.attr(unix.IFA_ADDRESS, a.Address.AsSlice())
	if family == unix.AF_INET {
		m.attr(unix.IFA_LOCAL, a.Address.AsSlice())
		if ifc.Flags&unix.IFF_LOOPBACK == 0 && a.PrefixLen < 31 {
			sub := a.Subnet()
			b := sub.Broadcast()
			m.attr(unix.IFA_BROADCAST, b.AsSlice())
		}
		m.str(unix.IFA_LABEL, ifc.Name)
	}
	m.u32(unix.IFA_FLAGS, unix.IFA_F_PERMANENT)
	ci := make([]byte, 16) // ifa_cacheinfo: forever
	binary.LittleEndian.PutUint32(ci, 0xffffffff)
	binary.LittleEndian.PutUint32(ci[4:], 0xffffffff)
	m.attr(unix.IFA_CACHEINFO, ci)
	return m.bytes()
}

// routeMsgs are the routes of the main table (the stack's routes but
// loopback's, as a container's main table holds none for lo) and of the
// local table (one per address, as Linux adds them).
func routeMsgs(st *netstack.Stack, family uint8, seq, port uint32) [][]byte {
	var out [][]byte
	ifcs := st.Interfaces()
	byIndex := map[int32]netstack.Interface{}
	for _, ifc := range ifcs {
		byIndex[ifc.Index] = ifc
	}
	for _, r := range st.S.GetRouteTable() {
		ifc, ok := byIndex[int32(r.NIC)]
		if !ok || ifc.Flags&unix.IFF_LOOPBACK != 0 {
			continue
		}
		fam := byte(unix.AF_INET6)
		if r.Destination.ID().Len() == 4 {
			fam = unix.AF_INET
		}
		if family != 0 && family != fam {
			continue
		}
		fixed := make([]byte, unix.SizeofRtMsg)
		fixed[0] = fam
		fixed[1] = byte(r.Destination.Prefix())
		fixed[4] = unix.RT_TABLE_MAIN
		fixed[5] = unix.RTPROT_KERNEL
		fixed[6] = unix.RT_SCOPE_LINK
		fixed[7] = unix.RTN_UNICAST
		m := newMsg(unix.RTM_NEWROUTE, unix.NLM_F_MULTI, seq, port, fixed)
		m.u32(unix.RTA_TABLE, unix.RT_TABLE_MAIN)
		if r.Destination.Prefix() > 0 {
			id := r.Destination.ID()
			m.attr(unix.RTA_DST, id.AsSlice())
		}
		if r.Gateway.Len() > 0 {
			fixed[5], fixed[6] = unix.RTPROT_BOOT, unix.RT_SCOPE_UNIVERSE
			copy(m.b[unix.SizeofNlMsghdr:], fixed)
			m.attr(unix.RTA_GATEWAY, r.Gateway.AsSlice())
		}
		m.u32(unix.RTA_OIF, uint32(r.NIC))
		out = append(out, m.bytes())
	}
	for _, ifc := range ifcs {
		for _, pa := range ifc.Addrs {
			fam := byte(unix.AF_INET6)
			if pa.Protocol == ipv4.ProtocolNumber {
				fam = unix.AF_INET
			}
			if family != 0 && family != fam {
				continue
			}
			a := pa.AddressWithPrefix.Address
			fixed := make([]byte, unix.SizeofRtMsg)
			fixed[0] = fam
			fixed[1] = byte(a.Len() * 8)
			fixed[4] = unix.RT_TABLE_LOCAL
			fixed[5] = unix.RTPROT_KERNEL
			fixed[6] = unix.RT_SCOPE_HOST
			fixed[7] = unix.RTN_LOCAL
			m := newMsg(unix.RTM_NEWROUTE, unix.NLM_F_MULTI, seq, port, fixed)
			m.u32(unix.RTA_TABLE, unix.RT_TABLE_LOCAL)
			m.attr(unix.RTA_DST, a.AsSlice())
			if fam == unix.AF_INET {
				m.attr(unix.RTA_PREFSRC, a.AsSlice())
			}
			m.u32(unix.RTA_OIF, uint32(ifc.Index))
			out = append(out, m.bytes())
		}
	}
	return out
}
