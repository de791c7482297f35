package netstack

import (
	"context"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/adapters/gonet"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
)

// wire is two stacks whose one link each are the ends of a socketpair,
// as a veth pair's two ends: frames written on one are read on the other.
func wire(t *testing.T, a, b []Link, ra, rb []Route) (*Stack, *Stack) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a[0].FD, b[0].FD = fds[0], fds[1]
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	var out []*Stack
	// Both stacks stop before either end closes: a link reader whose peer
	// has closed reads end-of-file without blocking, so it would never
	// look at its stop signal and Wait would not return.
	t.Cleanup(func() {
		for _, st := range out {
			st.S.Close()
		}
		for _, st := range out {
			st.S.Wait()
		}
	})
	for i, side := range [][]Link{a, b} {
		st, err := New()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, st)
		if err := st.AddLinks(side, [][]Route{ra, rb}[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out[0], out[1]
}

func mac(t *testing.T, s string) net.HardwareAddr {
	m, err := net.ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// echoOnce listens on st at addr and answers one connection with what it
// reads until EOF.
func echoOnce(t *testing.T, st *Stack, addr netip.AddrPort) {
	t.Helper()
	l, err := gonet.ListenTCP(st.S, tcpip.FullAddress{Addr: tcpip.AddrFromSlice(addr.Addr().AsSlice()), Port: addr.Port()}, ipv4.ProtocolNumber)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.Copy(c, c)
	}()
}

// roundTrip dials addr from st, sends msg, half-closes and reads back.
func roundTrip(t *testing.T, st *Stack, addr netip.AddrPort, msg string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := gonet.DialContextTCP(ctx, st.S, tcpip.FullAddress{Addr: tcpip.AddrFromSlice(addr.Addr().AsSlice()), Port: addr.Port()}, ipv4.ProtocolNumber)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, msg); err != nil {
		return "", err
	}
	c.CloseWrite()
	b, err := io.ReadAll(c)
	return string(b), err
}

func TestLinkCarriesTCPToItsSubnetAndThroughItsGateway(t *testing.T) {
	client := []Link{{Name: "eth0", MAC: mac(t, "02:00:00:00:00:02"), MTU: 1500,
		Addrs: []netip.Prefix{netip.MustParsePrefix("10.1.0.2/24")}}}
	// The server's link also has an address outside the client's subnet,
	// reached only through the client's default route.
	server := []Link{{Name: "veth-s", MAC: mac(t, "02:00:00:00:00:01"), MTU: 1500,
		Addrs: []netip.Prefix{netip.MustParsePrefix("10.1.0.1/24"), netip.MustParsePrefix("10.9.0.1/32")}}}
	routes := []Route{{Dest: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.1.0.1"), Link: "eth0"}}
	c, s := wire(t, client, server, routes, nil)
	for _, dst := range []string{"10.1.0.1:7", "10.9.0.1:8"} {
		ap := netip.MustParseAddrPort(dst)
		echoOnce(t, s, ap)
		if got, err := roundTrip(t, c, ap, "ping "+dst); err != nil || got != "ping "+dst {
			t.Errorf("to %s: %q, %v; want the message back", dst, got, err)
		}
	}
}

func TestLinkWithoutARouteLeavesOtherNetworksUnreachable(t *testing.T) {
	client := []Link{{Name: "eth0", MAC: mac(t, "02:00:00:00:00:02"), MTU: 1500,
		Addrs: []netip.Prefix{netip.MustParsePrefix("10.1.0.2/24")}}}
	server := []Link{{Name: "veth-s", MAC: mac(t, "02:00:00:00:00:01"), MTU: 1500,
		Addrs: []netip.Prefix{netip.MustParsePrefix("10.1.0.1/24"), netip.MustParsePrefix("10.9.0.1/32")}}}
	c, _ := wire(t, client, server, nil, nil)
	_, err := roundTrip(t, c, netip.MustParseAddrPort("10.9.0.1:8"), "x")
	if err == nil || !isUnreachable(err) {
		t.Errorf("dial 10.9.0.1 with no route: %v, want network unreachable", err)
	}
}

// isUnreachable: gonet reports netstack's error by its text.
func isUnreachable(err error) bool {
	msg := err.Error()
	return strings.HasSuffix(msg, (&tcpip.ErrNetworkUnreachable{}).String()) ||
		strings.HasSuffix(msg, (&tcpip.ErrHostUnreachable{}).String())
}

func TestAddLinksPutsLongerPrefixesFirst(t *testing.T) {
	client := []Link{{Name: "eth0", MAC: mac(t, "02:00:00:00:00:02"), MTU: 1500,
		Addrs: []netip.Prefix{netip.MustParsePrefix("10.1.0.2/24")}}}
	server := []Link{{Name: "veth-s", MAC: mac(t, "02:00:00:00:00:01"), MTU: 1500}}
	routes := []Route{
		{Dest: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.1.0.1"), Link: "eth0"},
		{Dest: netip.MustParsePrefix("10.1.0.0/24"), Link: "eth0"}, // the subnet's, given again
		{Dest: netip.MustParsePrefix("10.7.0.0/16"), Gateway: netip.MustParseAddr("10.1.0.9"), Link: "eth0"},
		{Dest: netip.MustParsePrefix("10.8.0.0/16"), Link: "no-such-link"},
	}
	c, _ := wire(t, client, server, routes, nil)
	var got []string
	for _, r := range c.S.GetRouteTable() {
		got = append(got, r.Destination.String()+" "+r.Gateway.String())
	}
	// Loopback's ::1/128 and 127/8, then the link's by prefix length; the
	// subnet route once, the route on an unknown link left out.
	want := []string{"::1/128 ", "10.1.0.0/24 ", "10.7.0.0/16 10.1.0.9", "127.0.0.0/8 ", "0.0.0.0/0 10.1.0.1"}
	if len(got) != len(want) {
		t.Fatalf("routes %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("routes %q, want %q", got, want)
		}
	}
}
