package usernet

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"

	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// The tests' guest is a sentry's netstack on the link; the host side's
// dials are redirected (hostDials) to servers on this machine's loopback,
// so nothing is ever sent anywhere else. The addresses the guest asks
// for are documentation ones (RFC 5737).
var (
	farAddr   = netip.MustParseAddr("192.0.2.1")
	otherAddr = netip.MustParseAddr("192.0.2.2")
)

// hostDials stands for the host's network: each destination the test
// knows is a loopback server; the rest refuse. It records what was dialled.
type hostDials struct {
	mu     sync.Mutex
	to     map[string]string // destination -> loopback address
	dialed []string
}

func (h *hostDials) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	h.mu.Lock()
	h.dialed = append(h.dialed, network+" "+addr)
	real, ok := h.to[network+" "+addr]
	h.mu.Unlock()
	if !ok {
		return nil, unix.ECONNREFUSED
	}
	var d net.Dialer
	return d.DialContext(ctx, network, real)
}

func (h *hostDials) saw(what string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, d := range h.dialed {
		if d == what {
			return true
		}
	}
	return false
}

// link starts a Net with cfg and a guest stack on its link.
func link(t *testing.T, cfg Config, h *hostDials) *netstack.Stack {
	t.Helper()
	guest, _ := linkNet(t, cfg, h)
	return guest
}

// linkNet is link that also returns the host's side.
func linkNet(t *testing.T, cfg Config, h *hostDials) (*netstack.Stack, *Net) {
	t.Helper()
	sentryEnd, hostEnd, err := Pair()
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Upstream.IsValid() {
		cfg.Upstream = netip.MustParseAddrPort("192.0.2.53:53")
	}
	cfg.dial = h.dial
	n, err := Start(hostEnd, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	guest, err := netstack.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { guest.S.Close(); guest.S.Wait(); sentryEnd.Close() })
	err = guest.AddLinks([]netstack.Link{{Name: "eth0", MAC: GuestMAC, MTU: MTU, FD: int(sentryEnd.Fd()),
		Addrs: []netip.Prefix{netip.PrefixFrom(Guest, Subnet.Bits())}}},
		[]netstack.Route{{Dest: netip.MustParsePrefix("0.0.0.0/0"), Gateway: Gateway, Link: "eth0"}})
	if err != nil {
		t.Fatal(err)
	}
	return guest, n
}

func full(a netip.Addr, port uint16) tcpip.FullAddress {
	return tcpip.FullAddress{Addr: tcpip.AddrFromSlice(a.AsSlice()), Port: port}
}

// echoServer answers each connection with "from the host: " and what it
// read until the client shut down writing.
func echoServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				c.Write(append([]byte("from the host: "), b...))
			}()
		}
	}()
	return l.Addr().String()
}

func TestGuestConnectionIsDialledFromTheHostAndJoinedWithHalfClose(t *testing.T) {
	h := &hostDials{to: map[string]string{"tcp 192.0.2.1:80": echoServer(t)}}
	guest := link(t, Config{}, h)
	c, err := gonet.DialTCP(guest.S, full(farAddr, 80), ipv4.ProtocolNumber)
	if err != nil {
		t.Fatalf("connect from the guest: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	// The server answers only once it read the end: the FIN must pass.
	c.CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "from the host: ping" {
		t.Errorf("the guest read %q, %v; want the host server's answer to its request", got, err)
	}
}

func TestDestinationTheHostCannotReachRefusesTheGuestsConnect(t *testing.T) {
	h := &hostDials{to: map[string]string{}}
	guest := link(t, Config{}, h)
	_, err := gonet.DialTCP(guest.S, full(farAddr, 81), ipv4.ProtocolNumber)
	if err == nil || !strings.Contains(err.Error(), "connection was refused") {
		t.Errorf("connect to a destination the host could not dial: %v, want refused", err)
	}
	if !h.saw("tcp 192.0.2.1:81") {
		t.Errorf("the host did not try the destination: %v", h.dialed)
	}
}

func TestVirtualSubnetAndHostLoopbackAreNeverDialled(t *testing.T) {
	h := &hostDials{to: map[string]string{}}
	guest := link(t, Config{}, h)
	if _, err := gonet.DialTCP(guest.S, full(Gateway, 22), ipv4.ProtocolNumber); err == nil {
		t.Error("a connection to the gateway's address succeeded: nothing is there")
	}
	for _, a := range []string{"127.0.0.1", "127.0.0.53", "0.0.0.0", "10.0.2.2", "10.0.2.77", "255.255.255.255", "224.0.0.1"} {
		if !refusedAlways(netip.MustParseAddr(a)) {
			t.Errorf("%s is dialled: the host's loopback, the virtual subnet and no-one in particular must never be", a)
		}
	}
	if refusedAlways(farAddr) {
		t.Errorf("%s is refused without an allowlist", farAddr)
	}
	if len(h.dialed) != 0 {
		t.Errorf("the host dialled %v", h.dialed)
	}
}

// dnsQuery is an A query for name with id.
func dnsQuery(id uint16, name string) []byte {
	q := binary.BigEndian.AppendUint16(nil, id)
	q = append(q, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0) // RD; one question
	for _, l := range strings.Split(name, ".") {
		q = append(append(q, byte(len(l))), l...)
	}
	return append(q, 0, 0, 1, 0, 1)
}

// upstream is a resolver on loopback that answers every A query with
// addr and sends each name asked for on asked.
func upstream(t *testing.T, addr netip.Addr, asked chan<- string) string {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			size, from, err := c.ReadFrom(buf)
			if err != nil {
				return
			}
			end, ok := questionsEnd(buf[:size])
			if !ok {
				continue
			}
			var labels []string
			for off := 12; buf[off] != 0; off += 1 + int(buf[off]) {
				labels = append(labels, string(buf[off+1:off+1+int(buf[off])]))
			}
			asked <- strings.Join(labels, ".")
			r := append([]byte(nil), buf[:end]...)
			r[2], r[3] = 0x81, 0x80
			binary.BigEndian.PutUint16(r[6:], 1)
			binary.BigEndian.PutUint16(r[10:], 0)
			r = append(r, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
			r = append(r, addr.AsSlice()...)
			c.WriteTo(r, from)
		}
	}()
	return c.LocalAddr().String()
}

// resolve sends an A query for name to the resolver and returns the
// answer's rcode and addresses.
func resolve(t *testing.T, guest *netstack.Stack, id uint16, name string) (rcode int, addrs []netip.Addr) {
	t.Helper()
	raddr := full(Resolver, dnsPort)
	c, err := gonet.DialUDP(guest.S, nil, &raddr, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.Write(dnsQuery(id, name)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 512)
	size, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no answer for %s: %v", name, err)
	}
	a := buf[:size]
	if binary.BigEndian.Uint16(a) != id {
		t.Fatalf("answer id %d, want %d", binary.BigEndian.Uint16(a), id)
	}
	end, ok := questionsEnd(a)
	if !ok {
		t.Fatalf("answer %x: no question section", a)
	}
	for i, off := 0, end; i < int(binary.BigEndian.Uint16(a[6:])) && off+16 <= len(a); i++ {
		addrs = append(addrs, netip.AddrFrom4([4]byte(a[off+12:off+16])))
		off += 16
	}
	return int(a[3] & 0xf), addrs
}

func TestAllowlistAnswersOnlyAllowedNamesAndDialsOnlyWhatTheyResolvedTo(t *testing.T) {
	asked := make(chan string, 8)
	up := upstream(t, farAddr, asked)
	h := &hostDials{to: map[string]string{"udp 192.0.2.53:53": up, "tcp 192.0.2.1:80": echoServer(t)}}
	allow, err := netstack.ParseEgress("allowed.test:80", nil)
	if err != nil {
		t.Fatal(err)
	}
	guest := link(t, Config{Allow: allow}, h)

	// Before any answer, the address is refused without a dial.
	if _, err := gonet.DialTCP(guest.S, full(farAddr, 80), ipv4.ProtocolNumber); err == nil {
		t.Error("connect before the name was resolved: succeeded, want refused")
	}
	if rcode, _ := resolve(t, guest, 1, "denied.test"); rcode != 5 {
		t.Errorf("denied.test: rcode %d, want 5 (REFUSED)", rcode)
	}
	rcode, addrs := resolve(t, guest, 2, "allowed.test")
	if rcode != 0 || len(addrs) != 1 || addrs[0] != farAddr {
		t.Fatalf("allowed.test: rcode %d, addresses %v; want 0 and %s", rcode, addrs, farAddr)
	}
	if name := <-asked; name != "allowed.test" {
		t.Errorf("the upstream resolver was asked for %q first: a name not allowed left", name)
	}
	c, err := gonet.DialTCP(guest.S, full(farAddr, 80), ipv4.ProtocolNumber)
	if err != nil {
		t.Fatalf("connect to allowed.test's address on its port: %v", err)
	}
	c.Close()
	for _, dst := range []tcpip.FullAddress{full(farAddr, 81), full(otherAddr, 80)} {
		if _, err := gonet.DialTCP(guest.S, dst, ipv4.ProtocolNumber); err == nil {
			t.Errorf("connect to %v: succeeded, want refused", dst)
		}
	}
	if h.saw("tcp 192.0.2.1:81") || h.saw("tcp 192.0.2.2:80") {
		t.Errorf("the host dialled a destination the allowlist refuses: %v", h.dialed)
	}
	select {
	case name := <-asked:
		t.Errorf("the upstream resolver was asked for %q", name)
	default:
	}
}

func TestRefusalKeepsTheQuestion(t *testing.T) {
	q := dnsQuery(7, "a.example")
	q = append(q, 0, 0, 41, 16, 0, 0, 0, 0, 0, 0, 0) // an EDNS OPT record
	q[11] = 1
	r := refusal(q)
	if len(r) != len(dnsQuery(7, "a.example")) || r[0] != 0 || r[1] != 7 || r[2]&0x80 == 0 || r[3]&0xf != 5 ||
		binary.BigEndian.Uint16(r[4:]) != 1 || binary.BigEndian.Uint16(r[10:]) != 0 {
		t.Errorf("refusal %x: want the header (response, REFUSED), the one question, and nothing more", r)
	}
	if refusal([]byte{0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 5, 'a'}) != nil {
		t.Error("a refusal of a truncated question")
	}
}

func TestDNSOverTCPGoesUpstreamWithoutAnAllowlistAndIsRefusedWithOne(t *testing.T) {
	upstreamTCP := echoServer(t)
	h := &hostDials{to: map[string]string{"tcp 192.0.2.53:53": upstreamTCP}}
	guest := link(t, Config{}, h)
	c, err := gonet.DialTCP(guest.S, full(Resolver, dnsPort), ipv4.ProtocolNumber)
	if err != nil {
		t.Fatalf("DNS over TCP to the resolver: %v", err)
	}
	c.SetDeadline(time.Now().Add(60 * time.Second))
	c.Write([]byte("query"))
	c.CloseWrite()
	if got, err := io.ReadAll(c); err != nil || string(got) != "from the host: query" {
		t.Errorf("the guest read %q, %v; want the upstream resolver's answer", got, err)
	}
	c.Close()

	allow, err := netstack.ParseEgress("allowed.test", nil)
	if err != nil {
		t.Fatal(err)
	}
	h2 := &hostDials{to: map[string]string{"tcp 192.0.2.53:53": upstreamTCP}}
	guest2 := link(t, Config{Allow: allow}, h2)
	if _, err := gonet.DialTCP(guest2.S, full(Resolver, dnsPort), ipv4.ProtocolNumber); err == nil {
		t.Error("DNS over TCP with an allowlist: connected, want refused (neither side reads it)")
	}
	if len(h2.dialed) != 0 {
		t.Errorf("the host dialled %v", h2.dialed)
	}
}

func TestAnAllowlistReplacedWhileRunningRulesTheConnectionsThatFollow(t *testing.T) {
	h := &hostDials{to: map[string]string{"tcp 192.0.2.1:80": echoServer(t), "tcp 192.0.2.2:80": echoServer(t)}}
	first, err := netstack.ParseEgress("192.0.2.1:80", nil)
	if err != nil {
		t.Fatal(err)
	}
	guest, n := linkNet(t, Config{Allow: first}, h)
	dials := func(a netip.Addr) bool {
		c, err := gonet.DialTCP(guest.S, full(a, 80), ipv4.ProtocolNumber)
		if err == nil {
			c.Close()
		}
		return err == nil
	}
	if !dials(farAddr) || dials(otherAddr) {
		t.Fatalf("the create's list: %s %v, %s %v; want only the first", farAddr, dials(farAddr), otherAddr, dials(otherAddr))
	}
	wider, err := netstack.ParseEgress("192.0.2.1:80,192.0.2.2:80", nil)
	if err != nil {
		t.Fatal(err)
	}
	n.SetAllow(wider)
	if !dials(otherAddr) {
		t.Error("a widened list: the added address is still refused")
	}
	n.SetAllow(netstack.EmptyEgress(nil))
	if dials(farAddr) || dials(otherAddr) {
		t.Error("an emptied list: an address is still reached")
	}
	n.SetAllow(nil)
	if !dials(farAddr) || !dials(otherAddr) {
		t.Error("all of the network: an address is refused")
	}
}
