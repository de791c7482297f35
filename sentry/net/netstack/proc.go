package netstack

import (
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
)

// TCPState is an endpoint's state as Linux numbers TCP's
// (include/net/tcp_states.h); netstack numbers its own first eleven the
// same, and its internal ones are CLOSE, or SYN_SENT while connecting.
func TCPState(ep tcpip.Endpoint) uint8 {
	st := tcp.EndpointState(ep.State())
	switch {
	case st >= tcp.StateEstablished && st <= tcp.StateClosing:
		return uint8(st)
	case st == tcp.StateConnecting:
		return uint8(tcp.StateSynSent)
	}
	return uint8(tcp.StateClose)
}

// hexAddr is an address as /proc/net prints it: each 32-bit word of the
// address in network order read as a host (little-endian) number.
func hexAddr(a tcpip.Address, v6 bool) string {
	var b []byte
	switch {
	case v6 && a.Len() == 4:
		v := a.As4()
		b = append(make([]byte, 10), 0xff, 0xff)
		b = append(b, v[:]...)
	case v6:
		v := a.As16()
		b = v[:]
	case a.Len() == 4:
		v := a.As4()
		b = v[:]
	default:
		b = make([]byte, 4)
	}
	if v6 && len(b) < 16 {
		b = make([]byte, 16)
	}
	var s strings.Builder
	for i := 0; i < len(b); i += 4 {
		fmt.Fprintf(&s, "%02X%02X%02X%02X", b[i+3], b[i+2], b[i+1], b[i])
	}
	return s.String()
}

// ProcNet is /proc/net/{tcp,tcp6,udp,udp6} of the stack, as Linux's
// tcp4_seq_show and udp4_seq_format_sock print them (with their line
// widths); timers and retransmits are 0.
func (st *Stack) ProcNet(proto int, v6 bool) string {
	var b strings.Builder
	width := 0
	switch {
	case proto == unix.IPPROTO_TCP && !v6:
		b.WriteString("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode")
		width = 149
	case proto == unix.IPPROTO_TCP:
		b.WriteString("  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode")
	case !v6:
		b.WriteString("   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops")
		width = 127
	default:
		b.WriteString("  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops")
	}
	pad := func() {
		line := b.String()
		last := line[strings.LastIndexByte(line, '\n')+1:]
		for n := len(last); n < width; n++ {
			b.WriteByte(' ')
		}
		b.WriteByte('\n')
	}
	pad()
	socks := st.Sockets()
	sort.Slice(socks, func(i, j int) bool { return socks[i].Inode() < socks[j].Inode() })
	sl := 0
	for _, s := range socks {
		if s.Protocol() != proto || (s.Family() == unix.AF_INET6) != v6 || s.Type() == unix.SOCK_RAW {
			continue
		}
		ep := s.Endpoint()
		local, _ := ep.GetLocalAddress()
		remote, _ := ep.GetRemoteAddress()
		state := uint8(7) // TCP_CLOSE: an unconnected UDP socket
		if proto == unix.IPPROTO_TCP {
			state = TCPState(ep)
		} else if remote.Port != 0 {
			state = 1
		}
		tx, _ := ep.GetSockOptInt(tcpip.SendQueueSizeOption)
		rx, _ := ep.GetSockOptInt(tcpip.ReceiveQueueSizeOption)
		slw := 4
		if proto != unix.IPPROTO_TCP {
			slw = 5
		}
		fmt.Fprintf(&b, "%*d: %s:%04X %s:%04X %02X %08X:%08X 00:00000000 00000000 %5d %8d %d 1 %016x",
			slw, sl, hexAddr(local.Addr, v6), local.Port, hexAddr(remote.Addr, v6), remote.Port,
			state, tx, rx, s.Owner(), 0, s.Inode(), s.Inode()*0x9e3779b97f4a7c15>>20)
		if proto == unix.IPPROTO_TCP {
			b.WriteString(" 100 0 0 10 0")
		} else {
			b.WriteString(" 0")
		}
		if width > 0 {
			pad()
		} else {
			b.WriteByte('\n')
		}
		sl++
	}
	return b.String()
}

// ProcNetDev is /proc/net/dev.
func (st *Stack) ProcNetDev() string {
	var b strings.Builder
	b.WriteString("Inter-|   Receive                                                |  Transmit\n")
	b.WriteString(" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n")
	for _, ifc := range st.Interfaces() {
		s := ifc.Stats
		fmt.Fprintf(&b, "%6s:%8d %7d %4d %4d %4d %5d %10d %9d %8d %7d %4d %4d %4d %5d %7d %10d\n", ifc.Name,
			s.Rx.Bytes.Value(), s.Rx.Packets.Value(), 0, 0, 0, 0, 0, 0,
			s.Tx.Bytes.Value(), s.Tx.Packets.Value(), 0, s.TxPacketsDroppedNoBufferSpace.Value(), 0, 0, 0, 0)
	}
	return b.String()
}

// ProcNetRoute is /proc/net/route: the IPv4 routes of the main table.
func (st *Stack) ProcNetRoute() string {
	var b strings.Builder
	line := func(s string) {
		b.WriteString(s)
		for n := len(s); n < 127; n++ {
			b.WriteByte(' ')
		}
		b.WriteByte('\n')
	}
	line("Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT")
	names := map[tcpip.NICID]Interface{}
	for _, ifc := range st.Interfaces() {
		names[tcpip.NICID(ifc.Index)] = ifc
	}
	for _, r := range st.S.GetRouteTable() {
		ifc := names[r.NIC]
		if ifc.Flags&unix.IFF_LOOPBACK != 0 || r.Destination.ID().Len() != 4 {
			continue
		}
		flags := 0x1 // RTF_UP
		if r.Gateway.Len() > 0 {
			flags |= 0x2 // RTF_GATEWAY
		}
		mask := r.Destination.Mask()
		line(fmt.Sprintf("%s\t%s\t%s\t%04X\t%d\t%d\t%d\t%s\t%d\t%d\t%d", ifc.Name, hexAddr(r.Destination.ID(), false),
			hexAddr(r.Gateway, false), flags, 0, 0, 0, hexAddr(tcpip.AddrFromSlice(mask.AsSlice()), false), 0, 0, 0))
	}
	return b.String()
}

// ProcNetIfInet6 is /proc/net/if_inet6: each IPv6 address, its
// interface, prefix, scope and flags.
func (st *Stack) ProcNetIfInet6() string {
	var b strings.Builder
	for _, ifc := range st.Interfaces() {
		for _, pa := range ifc.Addrs {
			if pa.Protocol == ipv4.ProtocolNumber {
				continue
			}
			a := pa.AddressWithPrefix.Address.As16()
			scope := 0
			switch {
			case ifc.Flags&unix.IFF_LOOPBACK != 0:
				scope = 0x10
			case a[0] == 0xfe && a[1]&0xc0 == 0x80:
				scope = 0x20
			}
			fmt.Fprintf(&b, "%x %02x %02x %02x %02x %8s\n", a[:], ifc.Index, pa.AddressWithPrefix.PrefixLen, scope, 0x80, ifc.Name)
		}
	}
	return b.String()
}
