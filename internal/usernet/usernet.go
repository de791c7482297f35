// Package usernet is the host's side of a `moat sandbox` network: a
// user-space one, as slirp's, that needs no network namespace, no root and
// no host interface. The sentry's netstack gets one Ethernet interface
// whose frames travel over a socketpair; at the other end this package's
// netstack (which moat usernet runs, confined, in the host's network)
// plays the gateway and the resolver, ends each TCP connection and UDP
// flow the guest starts, and makes it again from the host with ordinary
// sockets.
// A destination the policy refuses gets a reset (TCP) or nothing (UDP);
// with an allowlist, DNS is answered for allowed names alone and only the
// addresses those answers gave may be dialled, as in the sentry
// (sentry/net/netstack/egress.go, which this package reuses), so the rule
// holds on both sides of the link.
package usernet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/fdbased"
	"gvisor.dev/gvisor/pkg/tcpip/network/arp"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/transport/tcp"
	"gvisor.dev/gvisor/pkg/tcpip/transport/udp"

	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// The virtual network: the guest's address, the gateway (the default
// route) and the resolver, all in Subnet, as slirp numbers them.
var (
	Subnet   = netip.MustParsePrefix("10.0.2.0/24")
	Guest    = netip.MustParseAddr("10.0.2.100")
	Gateway  = netip.MustParseAddr("10.0.2.2")
	Resolver = netip.MustParseAddr("10.0.2.3")
)

// The link's MAC addresses (locally administered) and MTU.
var (
	GuestMAC   = net.HardwareAddr{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}
	gatewayMAC = net.HardwareAddr{0x52, 0x55, 0x0a, 0x00, 0x02, 0x02}
)

// MTU is the link's MTU: Ethernet's, since the frames of a link end up on
// the host's real network once unwrapped.
const MTU = 1500

// dnsPort is where the resolver answers.
const dnsPort = 53

// Config is a network's policy.
type Config struct {
	// Allow, if set, is the allowlist: only the destinations it allows
	// are dialled, and only allowed names resolved. nil: every address
	// but those never reachable (refusedAlways). SetAllow replaces it.
	Allow *netstack.Egress
	// Upstream is the host's DNS server the guest's queries go to.
	Upstream netip.AddrPort
	// Log gets one line for each destination refused.
	Log func(format string, args ...any)
	// dial, if set, replaces the host's dialer (tests): set before the
	// stack starts, so its forwarders never see it change.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Net is one sandbox's user-space network, running until Close.
type Net struct {
	cfg Config
	// allow is the allowlist in force: Config.Allow, then SetAllow's.
	allow atomic.Pointer[netstack.Egress]
	s     *stack.Stack
	file  *os.File
	ctx   context.Context
	stop  context.CancelFunc
	// dial makes the host's side of a connection or flow: the dialer's
	// DialContext, replaced in tests.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]struct{} // host and guest sides open, closed by Close
	wg     sync.WaitGroup
}

// Pair makes the link: the sentry's end (a descriptor to pass to it) and
// this package's. Datagram sockets, so a frame is one message, and a
// peer that goes away is no end-of-file to spin on.
func Pair() (sentry, host *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("usernet: socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "usernet-sentry"), os.NewFile(uintptr(fds[1]), "usernet-host"), nil
}

// Start serves the host's end of a link made by Pair; Net owns the file.
func Start(host *os.File, cfg Config) (*Net, error) {
	if !cfg.Upstream.IsValid() {
		return nil, errors.New("usernet: no upstream resolver")
	}
	n := &Net{cfg: cfg, file: host, conns: map[net.Conn]struct{}{}}
	n.allow.Store(cfg.Allow)
	n.ctx, n.stop = context.WithCancel(context.Background())
	n.dial = cfg.dial
	if n.dial == nil {
		n.dial = (&net.Dialer{}).DialContext
	}
	if err := n.build(); err != nil {
		n.stop()
		host.Close()
		return nil, err
	}
	return n, nil
}

func (n *Net) build() error {
	n.s = stack.New(stack.Options{
		NetworkProtocols:   []stack.NetworkProtocolFactory{ipv4.NewProtocol, arp.NewProtocol},
		TransportProtocols: []stack.TransportProtocolFactory{tcp.NewProtocol, udp.NewProtocol},
	})
	// The forwarders are in place before the link is: the link's
	// processors deliver frames from the moment the NIC exists.
	tf := tcp.NewForwarder(n.s, 0, maxPendingConnections, n.forwardTCP)
	n.s.SetTransportProtocolHandler(tcp.ProtocolNumber, tf.HandlePacket)
	uf := udp.NewForwarder(n.s, n.forwardUDP)
	n.s.SetTransportProtocolHandler(udp.ProtocolNumber, uf.HandlePacket)
	// Frames come from the guest's stack, which may be hostile: their
	// checksums are checked here.
	ep, err := fdbased.New(&fdbased.Options{FDs: []int{int(n.file.Fd())}, MTU: MTU, EthernetHeader: true,
		Address: tcpip.LinkAddress(gatewayMAC)})
	if err != nil {
		return fmt.Errorf("usernet: link: %v", err)
	}
	const nic = 1
	if terr := n.s.CreateNIC(nic, ep); terr != nil {
		return fmt.Errorf("usernet: link: %v", terr)
	}
	for _, a := range []netip.Addr{Gateway, Resolver} {
		pa := tcpip.ProtocolAddress{Protocol: ipv4.ProtocolNumber, AddressWithPrefix: tcpip.AddressWithPrefix{
			Address: tcpip.AddrFromSlice(a.AsSlice()), PrefixLen: Subnet.Bits()}}
		if terr := n.s.AddProtocolAddress(nic, pa, stack.AddressProperties{}); terr != nil {
			return fmt.Errorf("usernet: address %s: %v", a, terr)
		}
	}
	// Every destination is this stack's to answer for (promiscuous), from
	// that destination's address (spoofing): the guest talks to the
	// world through it.
	if terr := n.s.SetPromiscuousMode(nic, true); terr != nil {
		return fmt.Errorf("usernet: %v", terr)
	}
	if terr := n.s.SetSpoofing(nic, true); terr != nil {
		return fmt.Errorf("usernet: %v", terr)
	}
	n.s.SetRouteTable([]tcpip.Route{{Destination: mustSubnet(Subnet), NIC: nic}})
	if err := n.serveDNS(); err != nil {
		return err
	}
	return nil
}

// maxPendingConnections bounds the guest's connections still being
// dialled on the host, as a listen backlog does.
const maxPendingConnections = 256

func mustSubnet(p netip.Prefix) tcpip.Subnet {
	s, err := tcpip.NewSubnet(tcpip.AddrFromSlice(p.Addr().AsSlice()), tcpip.MaskFromBytes(net.CIDRMask(p.Bits(), 32)))
	if err != nil {
		panic(err)
	}
	return s
}

// Close stops the network: every connection it carries ends.
func (n *Net) Close() {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	for c := range n.conns {
		c.Close()
	}
	n.mu.Unlock()
	n.stop()
	n.s.Close()
	n.wg.Wait()
	n.s.Wait()
	n.file.Close()
}

// track keeps c until untrack or Close; false if the network is closed
// (c is closed then).
func (n *Net) track(cs ...net.Conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		n.conns[c] = struct{}{}
	}
	n.wg.Add(1)
	return true
}

func (n *Net) untrack(cs ...net.Conn) {
	n.mu.Lock()
	for _, c := range cs {
		c.Close()
		delete(n.conns, c)
	}
	n.mu.Unlock()
	n.wg.Done()
}

// refusedAlways are destinations the guest never reaches through the
// host: the host's own loopback (its local-only services), the virtual
// subnet (nothing there but this stack), and no-one in particular.
func refusedAlways(a netip.Addr) bool {
	return a.IsLoopback() || a.IsUnspecified() || a.IsMulticast() || a.IsLinkLocalMulticast() ||
		Subnet.Contains(a) || a == netip.AddrFrom4([4]byte{255, 255, 255, 255})
}

// SetAllow replaces the allowlist (nil: all of the network) for the
// connections, flows and DNS queries that follow; those under way keep
// theirs, as in the sentry (netstack.Stack.SetEgress). What the old list
// learned from DNS answers goes with it: names must be resolved again.
func (n *Net) SetAllow(e *netstack.Egress) { n.allow.Store(e) }

// policy is the allowlist in force; nil for all of the network.
func (n *Net) policy() *netstack.Egress { return n.allow.Load() }

// allowed says whether the guest may reach dst over proto ("tcp",
// "udp"), and logs a refusal.
func (n *Net) allowed(dst netip.AddrPort, proto string) bool {
	a := dst.Addr().Unmap()
	allow := n.policy()
	ok := !refusedAlways(a) && (allow == nil || allow.Allowed(a, dst.Port()))
	if !ok && n.cfg.Log != nil {
		n.cfg.Log("net: sandbox: %s to %s refused", proto, dst)
	}
	return ok
}

func addrPort(a tcpip.Address, port uint16) netip.AddrPort {
	ip, _ := netip.AddrFromSlice(a.AsSlice())
	return netip.AddrPortFrom(ip.Unmap(), port)
}
