package inet

import (
	"math/bits"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"

	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// A TCP socket's send buffer, as Linux sizes it. A socket starts with
// tcp_wmem's default (16384), and once its connection is established
// Linux makes room for twice an initial congestion window of its largest
// segments, each counted as the buffer that would hold it
// (tcp_init_buffer_space, tcp_sndbuf_expand): 87040 bytes on Ethernet,
// 2.6 MB on loopback, unless the program set SO_SNDBUF (SOCK_SNDBUF_LOCK),
// which an accepted socket inherits from its listener. netstack keeps the
// default for the connection's life, so a non-blocking write of 100 KiB
// to a connected loopback socket took 16 KiB where Linux takes it all, and
// programs size their writes by what a write takes: asyncio's transports
// pause their protocol when a write leaves more than 64 KiB unsent
// (CPython's test_asyncio start_tls tests failed on that).
const (
	tcpInitCwnd   = 10  // TCP_INIT_CWND
	maxTCPHeader  = 320 // MAX_TCP_HEADER on x86-64
	skbSharedInfo = 320 // SKB_DATA_ALIGN(sizeof(struct skb_shared_info))
	skbHeader     = 256 // SKB_DATA_ALIGN(sizeof(struct sk_buff))
	// cubicExpand is Linux's default congestion control's factor (Reno
	// and CUBIC have no sndbuf_expand: 2).
	cubicExpand = 2
)

// establishedSendBuffer is the send buffer Linux gives a connection whose
// largest segment carries mss bytes.
func establishedSendBuffer(mss int) int64 {
	perMSS := int64(1)<<bits.Len(uint(mss+maxTCPHeader+skbSharedInfo-1)) + skbHeader
	return cubicExpand * tcpInitCwnd * perMSS
}

// sizeSendBuffer gives an established stream socket the send buffer
// Linux would, once: called where Linux's size would show (a send, an
// accept, a connect's end, SO_SNDBUF's value).
func (s *sock) sizeSendBuffer() {
	if s.typ != unix.SOCK_STREAM || s.sndbufSized.Load() || s.sndbufLocked.Load() || tcpState(s.ep) != stEstablished {
		return
	}
	if !s.sndbufSized.CompareAndSwap(false, true) {
		return
	}
	mss, ok := s.segmentSize()
	if !ok {
		return
	}
	so := s.ep.SocketOptions()
	if want := min(establishedSendBuffer(mss), int64(netstack.TCPWmem[2])); so.GetSendBufferSize() < want {
		so.SetSendBufferSize(want, true)
	}
}

// segmentSize is the largest segment the connection's route carries: its
// MTU less the IP and TCP headers, as the MSS a SYN advertises.
func (s *sock) segmentSize() (int, bool) {
	local, lerr := s.ep.GetLocalAddress()
	remote, rerr := s.ep.GetRemoteAddress()
	if lerr != nil || rerr != nil {
		return 0, false
	}
	proto := ipv4.ProtocolNumber
	if remote.Addr.Len() == header.IPv6AddressSize {
		proto = ipv6.ProtocolNumber
	}
	r, err := s.st.S.FindRoute(local.NIC, local.Addr, remote.Addr, proto, false)
	if err != nil {
		return 0, false
	}
	defer r.Release()
	return int(r.MTU()) - header.TCPMinimumSize, true
}

// inheritSendBuffer gives an accepted socket its listener's send buffer
// when the program set the listener's, as Linux's child sockets keep
// theirs.
func (s *sock) inheritSendBuffer(listener *sock) {
	if !listener.sndbufLocked.Load() {
		return
	}
	s.sndbufLocked.Store(true)
	s.ep.SocketOptions().SetSendBufferSize(listener.ep.SocketOptions().GetSendBufferSize(), false)
}
