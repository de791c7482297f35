package boot

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/control"
)

func TestNetworkLinksPutsEachLinkOnItsOwnFDAfterTheBinds(t *testing.T) {
	n := &control.Network{Path: "/run/netns/x", Links: []control.Link{
		{Name: "eth0", MAC: "02:00:00:00:00:01", MTU: 1500, Addrs: []string{"10.88.0.2/16", "fe80::1/64"}},
		{Name: "eth1", MAC: "02:00:00:00:00:02", MTU: 9000},
	}, Route: []control.Route{{Dest: "0.0.0.0/0", Gateway: "10.88.0.1", Link: "eth0"}, {Dest: "10.9.0.0/24", Link: "eth1"}}}
	links, routes, err := networkLinks(n, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(links) != 2 || links[0].FD != control.NetFD(2, 0) || links[1].FD != control.NetFD(2, 1) || links[1].FD != links[0].FD+1 {
		t.Fatalf("links %+v: want eth0 and eth1 on consecutive fds after 2 binds' sockets", links)
	}
	if links[0].MTU != 1500 || links[0].MAC.String() != "02:00:00:00:00:01" || len(links[0].Addrs) != 2 ||
		links[0].Addrs[0] != netip.MustParsePrefix("10.88.0.2/16") {
		t.Errorf("eth0: %+v", links[0])
	}
	if len(routes) != 2 || routes[0].Gateway != netip.MustParseAddr("10.88.0.1") || routes[1].Gateway.IsValid() {
		t.Errorf("routes %+v: want the gateway on the default route alone", routes)
	}
}

func TestNetworkLinksNamesWhatIsMalformed(t *testing.T) {
	for _, c := range []struct {
		n    control.Network
		want string
	}{
		{control.Network{Links: []control.Link{{Name: "eth0", MAC: "nope"}}}, "link eth0"},
		{control.Network{Links: []control.Link{{Name: "eth0", MAC: "02:00:00:00:00:01", Addrs: []string{"10.0.0.300/8"}}}}, "link eth0"},
		{control.Network{Route: []control.Route{{Dest: "default", Link: "eth0"}}}, "route default"},
		{control.Network{Route: []control.Route{{Dest: "0.0.0.0/0", Gateway: "x", Link: "eth0"}}}, "route 0.0.0.0/0"},
	} {
		if _, _, err := networkLinks(&c.n, 0); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%+v: %v, want an error naming %q", c.n, err, c.want)
		}
	}
}
