// Package netstack is a sandbox's TCP/IP stack: gVisor's netstack
// (gvisor.dev/gvisor/pkg/tcpip, the one part of gVisor moat uses) with
// IPv4, IPv6, TCP, UDP and ICMP, a loopback interface that is always
// there, and, when the sandbox joins a network namespace, the interfaces
// it was given (link.go). Guest traffic never reaches the host's network
// stack: loopback stays here, and an interface's packets go through the
// packet socket the CLI opened in that namespace.
package netstack

import (
	"sync"
	"sync/atomic"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/loopback"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/icmp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/raw"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"

	"github.com/moat-sandbox/moat/sentry/kernel"
)

// LoopbackNIC is the loopback interface's index, 1 as on Linux.
const LoopbackNIC tcpip.NICID = 1

// The sandbox's TCP buffer sizes (net.ipv4.tcp_wmem and tcp_rmem:
// minimum, default, maximum), Linux's but for tcp_rmem's default, which is
// gVisor's (1 MiB) rather than Linux's 131072: Linux's receive buffer
// grows within milliseconds of a bulk transfer, netstack's moderation
// barely did, and a connection's window stayed at 128 KiB. 256 MiB over a
// loopback connection took 0.84 s with it, 0.21 s with 1 MiB (runsc 0.16
// s, native 0.10 s). /proc/sys/net/ipv4/tcp_rmem says so, as a host whose
// administrator raised it would.
var (
	TCPWmem = [3]int{4096, 16384, 4194304}
	TCPRmem = [3]int{4096, 1 << 20, 6291456}
)

// Stack is one sandbox's network stack.
type Stack struct {
	S *stack.Stack
	// egress, when set, is the only way out (egress.go); nil lets
	// everything through. SetEgress replaces it while the sandbox runs,
	// and refusedBefore keeps what the lists it replaced refused.
	egress        atomic.Pointer[Egress]
	refusedBefore atomic.Uint64

	mu sync.Mutex
	// sysctls are the net.* values the sandbox's config set
	// (linux.sysctl), which the stack answers by.
	sysctls map[string]string
	// sockets are the AF_INET and AF_INET6 sockets open, for
	// /proc/net/tcp and the like.
	sockets map[Socket]struct{}
}

// Socket is what /proc/net lists of an AF_INET or AF_INET6 socket.
type Socket interface {
	Endpoint() tcpip.Endpoint
	Inode() uint64
	Owner() uint32
	Family() int
	Type() int
	Protocol() int
}

// New returns a stack with the loopback interface up, 127.0.0.1/8 and
// ::1/128 on it, and routes to them.
func New() (*Stack, error) {
	s := stack.New(stack.Options{
		// ARP resolves IPv4 neighbours on a joined namespace's Ethernet
		// links (IPv6 has NDP of its own).
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, ipv6.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol, icmp.NewProtocol4, icmp.NewProtocol6},
		HandleLocal:        true,
		RawFactory:         raw.EndpointFactory{},
	})
	st := &Stack{S: s, sysctls: map[string]string{}, sockets: map[Socket]struct{}{}}
	sack := tcpip.TCPSACKEnabled(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &sack)
	moderate := tcpip.TCPModerateReceiveBufferOption(true)
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &moderate)
	snd := tcpip.TCPSendBufferSizeRangeOption{Min: TCPWmem[0], Default: TCPWmem[1], Max: TCPWmem[2]}
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &snd)
	rcv := tcpip.TCPReceiveBufferSizeRangeOption{Min: TCPRmem[0], Default: TCPRmem[1], Max: TCPRmem[2]}
	s.SetTransportProtocolOption(tcp.ProtocolNumber, &rcv)
	ttl := tcpip.DefaultTTLOption(64)
	s.SetNetworkProtocolOption(ipv4.ProtocolNumber, &ttl)
	s.SetNetworkProtocolOption(ipv6.ProtocolNumber, &ttl)
	if err := s.CreateNICWithOptions(LoopbackNIC, loopback.New(), stack.NICOptions{Name: "lo"}); err != nil {
		return nil, Error(err)
	}
	for _, pa := range []tcpip.ProtocolAddress{
		{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom4([4]byte{127, 0, 0, 1}), PrefixLen: 8}},
		{Protocol: ipv6.ProtocolNumber, AddressWithPrefix: tcpip.AddressWithPrefix{Address: tcpip.AddrFrom16([16]byte{15: 1}), PrefixLen: 128}},
	} {
		if err := s.AddProtocolAddress(LoopbackNIC, pa, stack.AddressProperties{}); err != nil {
			return nil, Error(err)
		}
	}
	v4, _ := tcpip.NewSubnet(tcpip.AddrFrom4([4]byte{127, 0, 0, 0}), tcpip.MaskFromBytes([]byte{255, 0, 0, 0}))
	v6 := tcpip.AddressWithPrefix{Address: tcpip.AddrFrom16([16]byte{15: 1}), PrefixLen: 128}.Subnet()
	s.SetRouteTable([]tcpip.Route{{Destination: v4, NIC: LoopbackNIC}, {Destination: v6, NIC: LoopbackNIC}})
	return st, nil
}

// SetSysctls records the net.* sysctls of the sandbox's config.
func (st *Stack) SetSysctls(m map[string]string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	for k, v := range m {
		st.sysctls[k] = v
	}
}

// Sysctl returns a net.* sysctl the config set, ok false if it set none.
func (st *Stack) Sysctl(name string) (string, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	v, ok := st.sysctls[name]
	return v, ok
}

// Add and Remove keep the list of open sockets.
func (st *Stack) Add(s Socket) {
	st.mu.Lock()
	st.sockets[s] = struct{}{}
	st.mu.Unlock()
}

func (st *Stack) Remove(s Socket) {
	st.mu.Lock()
	delete(st.sockets, s)
	st.mu.Unlock()
}

// Sockets returns the open sockets.
func (st *Stack) Sockets() []Socket {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]Socket, 0, len(st.sockets))
	for s := range st.sockets {
		out = append(out, s)
	}
	return out
}

var stacks sync.Map // *kernel.Kernel → *Stack

// Install makes s the stack of k's sandbox (before it starts); it is
// closed when the sandbox ends.
func Install(k *kernel.Kernel, s *Stack) {
	if _, loaded := stacks.LoadOrStore(k, s); !loaded {
		go func() {
			<-k.Done()
			stacks.Delete(k)
			s.S.Close()
		}()
	}
}

// Egress is the stack's allowlist now, nil for none.
func (st *Stack) Egress() *Egress { return st.egress.Load() }

// SetEgress makes e the stack's allowlist (nil: none), for the
// connections, datagrams and queries that follow: a connection made
// before stays. What e allows by name it learns from answers to the
// queries it lets through, so the addresses the old list learned are not
// carried over: a guest that kept them must ask again.
func (st *Stack) SetEgress(e *Egress) {
	if old := st.egress.Swap(e); old != nil {
		st.refusedBefore.Add(old.RefusedCount())
	}
}

// EgressRefused is how many attempts to leave k's sandbox its allowlists
// refused: 0 without one.
func EgressRefused(k *kernel.Kernel) uint64 {
	s, ok := stacks.Load(k)
	if !ok {
		return 0
	}
	st := s.(*Stack)
	n := st.refusedBefore.Load()
	if e := st.Egress(); e != nil {
		n += e.RefusedCount()
	}
	return n
}

// StackOf returns k's installed stack, if it has one.
func StackOf(k *kernel.Kernel) (*Stack, bool) {
	s, ok := stacks.Load(k)
	if !ok {
		return nil, false
	}
	return s.(*Stack), true
}

// Of returns k's stack: the one installed, or a stack with loopback alone
// made at its first use (a new network namespace without a path).
func Of(k *kernel.Kernel) (*Stack, error) {
	if s, ok := stacks.Load(k); ok {
		return s.(*Stack), nil
	}
	s, err := New()
	if err != nil {
		return nil, err
	}
	Install(k, s)
	v, _ := stacks.Load(k)
	if v.(*Stack) != s {
		s.S.Close()
	}
	return v.(*Stack), nil
}
