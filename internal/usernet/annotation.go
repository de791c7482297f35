package usernet

import (
	"net/netip"
	"strings"
)

// Annotation asks for this package's network in a container's config:
// moat create then starts moat usernet beside the sentry, for as long as
// the sentry lives, instead of giving the sandbox a namespace's
// interfaces. Its one value is AnnotationUser; the egress allowlist
// annotation (dev.moat.net-allow) beside it limits what the network
// reaches, and without it the network reaches all the host does
// (docs/network.md).
const Annotation = "dev.moat.net"

// AnnotationUser is Annotation's value: the user-space network.
const AnnotationUser = "user"

// ResolvConf is a sandbox's /etc/resolv.conf on this network: its
// resolver, which asks the host's.
var ResolvConf = "nameserver " + Resolver.String() + "\n"

// SentryAllow is the allowlist the sentry applies for a network whose
// allowlist is entries: those, and the network's resolver, which the
// guest's queries must reach for allowed names to resolve.
func SentryAllow(entries string) string {
	return strings.Join([]string{entries, netip.AddrPortFrom(Resolver, dnsPort).String()}, ",")
}
