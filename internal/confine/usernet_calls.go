package confine

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
)

// UsernetCalls is moat usernet's allowlist: the Go runtime's calls, the
// link to the sentry (a datagram socket pair carrying Ethernet frames, read
// and written by gVisor's fdbased endpoint), and the host sockets it makes
// the guest's connections and flows again from: TCP and UDP over IPv4 or
// IPv6, nothing else. It is the one helper that keeps the host's network,
// and it parses what a hostile guest sends, so a bug there must not reach
// further: it opens no file, executes nothing, binds and listens nowhere
// (it accepts on the one socket the CLI listens on for it, where the
// runtime sends a new allowlist), and makes no socket of another family
// or type (no AF_UNIX, netlink or packet socket, no raw IP).
var UsernetCalls = goRuntimeCalls.With(Allowlist{
	call(unix.SYS_ACCEPT4, "accept4", "a new allowlist from the runtime, on the policy socket the CLI listens on for it (its owner's alone)",
		"fd UsernetPolicyFD only", seccomp.Allow(seccomp.Eq(0, UsernetPolicyFD))),
	call(unix.SYS_SOCKET, "socket", "a host connection or flow for one of the guest's, as Go's net dials it",
		"AF_INET or AF_INET6; SOCK_STREAM or SOCK_DGRAM with SOCK_NONBLOCK|SOCK_CLOEXEC; protocol 0", dialSockets()...),
	call(unix.SYS_CONNECT, "connect", "dialling a destination the policy allows", ""),
	call(unix.SYS_GETSOCKOPT, "getsockopt", "the result of a non-blocking connect", "SOL_SOCKET, SO_ERROR",
		seccomp.Allow(seccomp.Eq(1, unix.SOL_SOCKET), seccomp.Eq(2, unix.SO_ERROR))),
	call(unix.SYS_SETSOCKOPT, "setsockopt", "Go's defaults for a dialled socket (TCP_NODELAY, keep-alives, SO_BROADCAST, IPV6_V6ONLY)",
		"SOL_SOCKET, IPPROTO_TCP or IPPROTO_IPV6", oneOf(1, unix.SOL_SOCKET, unix.IPPROTO_TCP, unix.IPPROTO_IPV6)...),
	call(unix.SYS_GETSOCKNAME, "getsockname", "a dialled socket's local address", ""),
	call(unix.SYS_GETPEERNAME, "getpeername", "a dialled socket's remote address", ""),
	call(unix.SYS_SHUTDOWN, "shutdown", "a half-close passed on from the guest", ""),
	call(unix.SYS_CLOSE, "close", "sockets it is done with", ""),
	call(unix.SYS_READ, "read", "data from a dialled socket", ""),
	call(unix.SYS_WRITE, "write", "data to a dialled socket; its first line and its log; a frame to the sentry", ""),
	call(unix.SYS_READV, "readv", "a frame from the sentry", ""),
	call(unix.SYS_WRITEV, "writev", "a frame to the sentry", ""),
	call(unix.SYS_RECVMMSG, "recvmmsg", "frames from the sentry, several at once", ""),
	call(unix.SYS_SENDMMSG, "sendmmsg", "frames to the sentry, several at once", ""),
	call(unix.SYS_RECVFROM, "recvfrom", "a datagram of a UDP flow", ""),
	call(unix.SYS_SENDTO, "sendto", "a datagram of a UDP flow", ""),
	call(unix.SYS_RECVMSG, "recvmsg", "a datagram of a UDP flow", ""),
	call(unix.SYS_SENDMSG, "sendmsg", "a datagram of a UDP flow", ""),
	call(unix.SYS_PPOLL, "ppoll", "the link's reader waits for frames, or for its stop; the wait for the sentry's exit, on its pidfd", ""),
	call(unix.SYS_EVENTFD2, "eventfd2", "the descriptor that stops the link's reader", ""),
	call(unix.SYS_FCNTL, "fcntl", "descriptor flags", "F_GETFD, F_SETFD, F_GETFL, F_SETFL",
		oneOf(1, unix.F_GETFD, unix.F_SETFD, unix.F_GETFL, unix.F_SETFL)...),
	call(unix.SYS_FSTAT, "fstat", "the link endpoint checks that its descriptor is a socket", ""),
	call(unix.SYS_GETRANDOM, "getrandom", "TCP's initial sequence numbers and DNS ids of its network stack", ""),
})

// UsernetPolicyFD is moat usernet's descriptor of its policy socket.
const UsernetPolicyFD = 7

// dialSockets are the socket(2) calls Go's net makes to dial TCP or UDP.
func dialSockets() []seccomp.Rule {
	var rules []seccomp.Rule
	for _, family := range []uint64{unix.AF_INET, unix.AF_INET6} {
		for _, typ := range []uint64{unix.SOCK_STREAM, unix.SOCK_DGRAM} {
			rules = append(rules, seccomp.Allow(seccomp.Eq(0, family),
				seccomp.Eq(1, typ|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC), seccomp.Eq(2, 0)))
		}
	}
	return rules
}
