package boot

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
)

// setupNetwork gives the sandbox its network stack: its allowlist, if
// the config has one, loopback, the
// interfaces of the network namespace the config joins (their packet
// sockets, which the CLI opened there, on control.NetFD onwards), and the
// net.* sysctls of the config (net.ipv4.ping_group_range says who may
// make ICMP echo sockets, as in a container).
func setupNetwork(k *kernel.Kernel, setup *control.Setup, log func(string, ...any)) error {
	st, err := netstack.New()
	if err != nil {
		return err
	}
	// The allowlist (dev.moat.net-allow): deny by default.
	if v, ok := setup.Spec.Annotations[netstack.EgressAnnotation]; ok {
		e, err := netstack.ParseEgress(v, log)
		if err != nil {
			return err
		}
		st.SetEgress(e)
	}
	if l := setup.Spec.Linux; l != nil {
		sysctls := map[string]string{}
		for name, v := range l.Sysctl {
			if strings.HasPrefix(name, "net.") {
				sysctls[name] = v
			}
		}
		st.SetSysctls(sysctls)
	}
	if n := setup.Network; n != nil {
		links, routes, err := networkLinks(n, len(setup.Binds))
		if err != nil {
			return fmt.Errorf("network namespace %s: %w", n.Path, err)
		}
		if err := st.AddLinks(links, routes); err != nil {
			return fmt.Errorf("network namespace %s: %w", n.Path, err)
		}
	}
	netstack.Install(k, st)
	return nil
}

// networkLinks reads the Setup's description of the namespace.
func networkLinks(n *control.Network, binds int) ([]netstack.Link, []netstack.Route, error) {
	var links []netstack.Link
	for i, l := range n.Links {
		mac, err := net.ParseMAC(l.MAC)
		if err != nil {
			return nil, nil, fmt.Errorf("link %s: %w", l.Name, err)
		}
		link := netstack.Link{Name: l.Name, MAC: mac, MTU: l.MTU, FD: control.NetFD(binds, i)}
		for _, a := range l.Addrs {
			p, err := netip.ParsePrefix(a)
			if err != nil {
				return nil, nil, fmt.Errorf("link %s: %w", l.Name, err)
			}
			link.Addrs = append(link.Addrs, p)
		}
		links = append(links, link)
	}
	var routes []netstack.Route
	for _, r := range n.Route {
		dest, err := netip.ParsePrefix(r.Dest)
		if err != nil {
			return nil, nil, fmt.Errorf("route %s: %w", r.Dest, err)
		}
		rt := netstack.Route{Dest: dest, Link: r.Link}
		if r.Gateway != "" {
			if rt.Gateway, err = netip.ParseAddr(r.Gateway); err != nil {
				return nil, nil, fmt.Errorf("route %s: %w", r.Dest, err)
			}
		}
		routes = append(routes, rt)
	}
	return links, routes, nil
}

// setEgress replaces the running sandbox's allowlist (control.OpEgress).
// The sandbox must have its stack installed with a way out: one booted
// with loopback alone has nowhere to go whatever a list says.
func (s *Sandbox) setEgress(e *control.Egress) error {
	if e == nil {
		return fmt.Errorf("egress: no allowlist given")
	}
	st, ok := netstack.StackOf(s.Kernel)
	if !ok {
		return fmt.Errorf("egress: the sandbox has no network of its own")
	}
	list, err := netstack.EgressFrom(e.All, e.Allow, s.log)
	if err != nil {
		return err
	}
	st.SetEgress(list)
	return nil
}
