package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/usernet"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// localNetwork is a `moat sandbox` run's network for --net and
// --net-allow: a user-space one (internal/usernet) whose host side runs
// in this process and dials out as the caller, so that it works alike as
// root and rootless, with no network namespace to make.
type localNetwork struct {
	sentryEnd *os.File // the sentry's end of the link, its control.NetFD
	net       *usernet.Net
}

// localResolvConf is the sandbox's /etc/resolv.conf: the user-space
// network's resolver, which asks the host's.
var localResolvConf = "nameserver " + usernet.Resolver.String() + "\n"

// localNetAllow is the sandbox's allowlist annotation for --net-allow's
// entries: theirs, and the user-space network's resolver, which the
// sentry must let the guest's queries reach (docs/network.md).
func localNetAllow(entries []string) (string, error) {
	v := strings.Join(entries, ",")
	if _, err := netstack.ParseEgress(v, nil); err != nil {
		return "", flagErr("--net-allow", "%s", strings.TrimPrefix(err.Error(), netstack.EgressAnnotation+": "))
	}
	return v + "," + netip.AddrPortFrom(usernet.Resolver, 53).String(), nil
}

// startLocalNetwork starts the host's side of the sandbox's network under
// policy p; log gets the destinations it refuses.
func startLocalNetwork(p localPolicy, log func(string, ...any)) (*localNetwork, error) {
	flag := "--net"
	if !p.Net {
		flag = "--net-allow"
	}
	upstream, err := hostResolver("/etc/resolv.conf")
	if err != nil {
		return nil, flagErr(flag, "%v", err)
	}
	cfg := usernet.Config{Upstream: upstream, Log: log}
	if !p.Net {
		if cfg.Allow, err = netstack.ParseEgress(strings.Join(p.NetAllow, ","), log); err != nil {
			return nil, flagErr(flag, "%s", strings.TrimPrefix(err.Error(), netstack.EgressAnnotation+": "))
		}
	}
	sentryEnd, hostEnd, err := usernet.Pair()
	if err != nil {
		return nil, err
	}
	n, err := usernet.Start(hostEnd, cfg)
	if err != nil {
		sentryEnd.Close()
		return nil, err
	}
	return &localNetwork{sentryEnd: sentryEnd, net: n}, nil
}

// close ends the network and every connection it carries.
func (l *localNetwork) close() {
	l.sentryEnd.Close()
	l.net.Close()
}

// network is the sentry's description of its one interface, whose
// frames travel over sentryEnd.
func (l *localNetwork) network() *control.Network {
	return &control.Network{
		Path: "moat sandbox's user-space network",
		Links: []control.Link{{Name: "eth0", MAC: usernet.GuestMAC.String(), MTU: usernet.MTU,
			Addrs: []string{netip.PrefixFrom(usernet.Guest, usernet.Subnet.Bits()).String()}}},
		Route: []control.Route{{Dest: "0.0.0.0/0", Gateway: usernet.Gateway.String(), Link: "eth0"}},
	}
}

// hostResolver is the first nameserver of the host's resolv.conf, where
// the sandbox's queries go (resolv.conf(5): "nameserver ADDR", port 53).
func hostResolver(path string) (netip.AddrPort, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("the host's resolver: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		// An IPv6 link-local address may carry a zone (fe80::1%eth0).
		if a, err := netip.ParseAddr(f[1]); err == nil {
			return netip.AddrPortFrom(a, 53), nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("the host's resolver: no nameserver in %s", path)
}
