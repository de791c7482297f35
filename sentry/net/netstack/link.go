package netstack

import (
	"fmt"
	"net"
	"net/netip"

	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/link/fdbased"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// Link is an interface of a joined network namespace: its name, MAC
// address, MTU and addresses (CIDR), and the packet socket (an AF_PACKET
// SOCK_RAW socket bound to it, opened by the CLI in that namespace) its
// frames move through.
type Link struct {
	Name  string
	MAC   net.HardwareAddr
	MTU   uint32
	Addrs []netip.Prefix
	FD    int
}

// Route is a route of the namespace's main table.
type Route struct {
	Dest    netip.Prefix
	Gateway netip.Addr // invalid for a route on the link
	Link    string
}

// AddLinks gives the stack the namespace's interfaces, after loopback
// (indexes 2, 3 ...), with their addresses, and its routes: netstack
// reads and writes each interface's Ethernet frames on its packet socket.
func (st *Stack) AddLinks(links []Link, routes []Route) error {
	ids := map[string]tcpip.NICID{}
	var table []tcpip.Route
	for i, l := range links {
		id := LoopbackNIC + 1 + tcpip.NICID(i)
		// RXChecksumOffload: a frame a packet socket reads off a veth
		// may carry the sender's checksum not yet filled in (the kernel
		// leaves it to an offload that a veth never does), and the host
		// kernel has already accepted the frame; outgoing checksums are
		// computed here, since the far end may verify them.
		ep, err := fdbased.New(&fdbased.Options{FDs: []int{l.FD}, MTU: l.MTU, EthernetHeader: true,
			Address: tcpip.LinkAddress(l.MAC), PacketDispatchMode: fdbased.RecvMMsg, RXChecksumOffload: true})
		if err != nil {
			return fmt.Errorf("link %s: %v", l.Name, err)
		}
		if err := st.S.CreateNICWithOptions(id, ep, stack.NICOptions{Name: l.Name}); err != nil {
			return fmt.Errorf("link %s: %v", l.Name, err)
		}
		ids[l.Name] = id
		for _, p := range l.Addrs {
			pa := protocolAddress(p)
			if err := st.S.AddProtocolAddress(id, pa, stack.AddressProperties{}); err != nil {
				return fmt.Errorf("link %s: address %s: %v", l.Name, p, err)
			}
			// The route to the link's own subnet.
			table = append(table, tcpip.Route{Destination: pa.AddressWithPrefix.Subnet(), NIC: id})
		}
	}
	for _, r := range routes {
		id, ok := ids[r.Link]
		if !ok {
			continue
		}
		dest := protocolAddress(r.Dest).AddressWithPrefix.Subnet()
		rt := tcpip.Route{Destination: dest, NIC: id}
		if r.Gateway.IsValid() {
			rt.Gateway = tcpip.AddrFromSlice(r.Gateway.AsSlice())
		} else if hasRoute(table, rt) {
			continue
		}
		table = append(table, rt)
	}
	// The kernel's own routes come first in lookups: most specific
	// first, loopback's before all.
	table = append(st.S.GetRouteTable(), table...)
	st.S.SetRouteTable(sortRoutes(table))
	return nil
}

func hasRoute(table []tcpip.Route, r tcpip.Route) bool {
	for _, t := range table {
		if t.Destination == r.Destination && t.NIC == r.NIC && t.Gateway == r.Gateway {
			return true
		}
	}
	return false
}

// sortRoutes orders routes longest prefix first, as netstack takes the
// first that matches.
func sortRoutes(t []tcpip.Route) []tcpip.Route {
	out := append([]tcpip.Route(nil), t...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Destination.Prefix() > out[j-1].Destination.Prefix(); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func protocolAddress(p netip.Prefix) tcpip.ProtocolAddress {
	a := p.Addr().Unmap()
	proto := ipv6.ProtocolNumber
	if a.Is4() {
		proto = ipv4.ProtocolNumber
	}
	return tcpip.ProtocolAddress{Protocol: proto, AddressWithPrefix: tcpip.AddressWithPrefix{
		Address: tcpip.AddrFromSlice(a.AsSlice()), PrefixLen: p.Bits()}}
}
