package netstack

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv4"
	"gvisor.dev/gvisor/pkg/tcpip/network/ipv6"
)

// EgressAnnotation lists the only destinations a sandbox may reach
// outside itself, comma-separated: NAME[:PORT] (a domain, or *.domain
// for its subdomains), ADDR[:PORT] or CIDR[:PORT] ([...] around an IPv6
// address with a port); no port is any port. A name's addresses are the
// ones the sandbox's resolver answered for it: its resolver must be
// allowed itself (ADDR:53).
const EgressAnnotation = "dev.moat.net-allow"

// Egress is a sandbox's allowlist. Loopback and the sandbox's own
// addresses are always reachable; anything else only as an entry allows.
type Egress struct {
	names []nameRule
	nets  []netRule
	log   func(string, ...any)

	mu sync.Mutex
	// learned are the addresses DNS answers gave for allowed names, with
	// the ports the names' entries allow (0: any).
	learned map[netip.Addr]map[uint16]bool

	// refused counts the attempts refused: connections, datagrams and
	// DNS queries (moat serve's denied-egress metric, through the
	// sandbox's stats).
	refused atomic.Uint64
}

// RefusedCount is how many attempts to leave the sandbox were refused.
func (e *Egress) RefusedCount() uint64 { return e.refused.Load() }

type nameRule struct {
	name     string // lower case, no trailing dot
	wildcard bool   // *.name: a subdomain of name, not name itself
	port     uint16
}

type netRule struct {
	prefix netip.Prefix
	port   uint16
}

// EmptyEgress is an allowlist of nothing: the sandbox reaches only
// itself. log gets a line for each destination refused.
func EmptyEgress(log func(string, ...any)) *Egress {
	return &Egress{log: log, learned: map[netip.Addr]map[uint16]bool{}}
}

// EgressFrom is the allowlist of an update (control.Egress): nil for all
// of the network, EmptyEgress for no entries, else the entries parsed.
func EgressFrom(all bool, entries []string, log func(string, ...any)) (*Egress, error) {
	switch {
	case all:
		return nil, nil
	case len(entries) == 0:
		return EmptyEgress(log), nil
	}
	return ParseEgress(strings.Join(entries, ","), log)
}

// ParseEgress reads the annotation's value; log gets a line for each
// destination refused.
func ParseEgress(v string, log func(string, ...any)) (*Egress, error) {
	e := EmptyEgress(log)
	for _, entry := range strings.Split(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("%s: an empty entry in %q", EgressAnnotation, v)
		}
		host, port, err := splitPort(entry)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %v", EgressAnnotation, entry, err)
		}
		if p, err := netip.ParsePrefix(host); err == nil {
			e.nets = append(e.nets, netRule{p.Masked(), port})
			continue
		}
		if a, err := netip.ParseAddr(host); err == nil {
			e.nets = append(e.nets, netRule{netip.PrefixFrom(a, a.BitLen()), port})
			continue
		}
		r := nameRule{name: strings.ToLower(strings.TrimSuffix(host, ".")), port: port}
		if rest, ok := strings.CutPrefix(r.name, "*."); ok {
			r.name, r.wildcard = rest, true
		}
		if !validName(r.name) {
			return nil, fmt.Errorf("%s: %q: not a domain name, address or CIDR", EgressAnnotation, entry)
		}
		e.names = append(e.names, r)
	}
	return e, nil
}

// splitPort splits HOST[:PORT] ([V6]:PORT for an IPv6 address).
func splitPort(s string) (string, uint16, error) {
	host, port := s, ""
	if strings.HasPrefix(s, "[") {
		end := strings.Index(s, "]")
		if end < 0 {
			return "", 0, fmt.Errorf("no closing ]")
		}
		host, port = s[1:end], strings.TrimPrefix(s[end+1:], ":")
		if s[end+1:] != "" && !strings.HasPrefix(s[end+1:], ":") {
			return "", 0, fmt.Errorf("text after ]")
		}
	} else if strings.Count(s, ":") == 1 {
		host, port, _ = strings.Cut(s, ":")
	}
	if port == "" {
		return host, 0, nil
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 {
		return "", 0, fmt.Errorf("port %q is not 1-65535", port)
	}
	return host, uint16(n), nil
}

// validName: labels of letters, digits and hyphens, not starting or
// ending with a hyphen, at most 63 bytes each and 253 in all.
func validName(n string) bool {
	if n == "" || len(n) > 253 {
		return false
	}
	for _, l := range strings.Split(n, ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// nameAllowed returns the ports an entry allows name on (0: any).
func (e *Egress) nameAllowed(name string) (ports []uint16, ok bool) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	for _, r := range e.names {
		if r.wildcard && strings.HasSuffix(name, "."+r.name) || !r.wildcard && name == r.name {
			ports, ok = append(ports, r.port), true
		}
	}
	return ports, ok
}

// Allowed says whether the sandbox may send to a:port, outside itself
// (the caller lets loopback and the stack's own addresses through).
func (e *Egress) Allowed(a netip.Addr, port uint16) bool {
	a = a.Unmap()
	for _, r := range e.nets {
		if r.prefix.Contains(a) && (r.port == 0 || r.port == port) {
			return true
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ports := e.learned[a]
	return ports[0] || ports[port]
}

// Refused counts and logs one refused destination.
func (e *Egress) Refused(what string, a netip.Addr, port uint16) {
	e.refused.Add(1)
	if e.log != nil {
		e.log("net: %s to %s refused: not in %s", what, netip.AddrPortFrom(a.Unmap(), port), EgressAnnotation)
	}
}

// QueryAllowed says whether a DNS query (a UDP payload to port 53) asks
// only for allowed names; it counts and logs a query refused.
func (e *Egress) QueryAllowed(msg []byte) bool {
	names, ok := dnsQuestions(msg)
	if !ok || len(names) == 0 {
		e.refused.Add(1)
		if e.log != nil {
			e.log("net: a DNS query refused: not one the sandbox can read")
		}
		return false
	}
	for _, n := range names {
		if _, ok := e.nameAllowed(n); !ok {
			e.refused.Add(1)
			if e.log != nil {
				e.log("net: DNS query for %s refused: not in %s", n, EgressAnnotation)
			}
			return false
		}
	}
	return true
}

// LearnAnswer takes a DNS response (a UDP payload from an allowed
// resolver's port 53): the A and AAAA records of an answer to an allowed
// name become reachable on that name's ports.
func (e *Egress) LearnAnswer(msg []byte) {
	names, addrs, ok := dnsAnswers(msg)
	if !ok {
		return
	}
	var ports []uint16
	for _, n := range names {
		p, ok := e.nameAllowed(n)
		if !ok {
			return
		}
		ports = append(ports, p...)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, a := range addrs {
		m := e.learned[a]
		if m == nil {
			m = map[uint16]bool{}
			e.learned[a] = m
		}
		for _, p := range ports {
			m[p] = true
		}
	}
}

// dnsQuestions returns the names a DNS message asks about.
func dnsQuestions(msg []byte) ([]string, bool) {
	if len(msg) < 12 {
		return nil, false
	}
	qd := int(binary.BigEndian.Uint16(msg[4:]))
	off := 12
	var names []string
	for i := 0; i < qd; i++ {
		n, next, ok := dnsName(msg, off)
		if !ok || next+4 > len(msg) {
			return nil, false
		}
		names = append(names, n)
		off = next + 4 // type, class
	}
	return names, true
}

// dnsAnswers returns a response's question names and the addresses of
// its A and AAAA answers.
func dnsAnswers(msg []byte) (names []string, addrs []netip.Addr, ok bool) {
	if len(msg) < 12 || msg[2]&0x80 == 0 { // QR: a response
		return nil, nil, false
	}
	qd := int(binary.BigEndian.Uint16(msg[4:]))
	an := int(binary.BigEndian.Uint16(msg[6:]))
	off := 12
	for i := 0; i < qd; i++ {
		n, next, ok := dnsName(msg, off)
		if !ok || next+4 > len(msg) {
			return nil, nil, false
		}
		names = append(names, n)
		off = next + 4
	}
	for i := 0; i < an; i++ {
		_, next, ok := dnsName(msg, off)
		if !ok || next+10 > len(msg) {
			return nil, nil, false
		}
		typ := binary.BigEndian.Uint16(msg[next:])
		rdlen := int(binary.BigEndian.Uint16(msg[next+8:]))
		rdata := next + 10
		if rdata+rdlen > len(msg) {
			return nil, nil, false
		}
		switch {
		case typ == 1 && rdlen == 4: // A
			addrs = append(addrs, netip.AddrFrom4([4]byte(msg[rdata:rdata+4])))
		case typ == 28 && rdlen == 16: // AAAA
			addrs = append(addrs, netip.AddrFrom16([16]byte(msg[rdata:rdata+16])))
		}
		off = rdata + rdlen
	}
	return names, addrs, true
}

// dnsName reads the (possibly compressed) name at off; next is the
// offset after it where it starts.
func dnsName(msg []byte, off int) (name string, next int, ok bool) {
	var labels []string
	next = -1
	for jumps := 0; jumps < 64; jumps++ {
		if off >= len(msg) {
			return "", 0, false
		}
		l := int(msg[off])
		switch {
		case l == 0:
			if next < 0 {
				next = off + 1
			}
			return strings.Join(labels, "."), next, true
		case l&0xc0 == 0xc0:
			if off+1 >= len(msg) {
				return "", 0, false
			}
			if next < 0 {
				next = off + 2
			}
			off = int(binary.BigEndian.Uint16(msg[off:]) & 0x3fff)
		case l&0xc0 != 0:
			return "", 0, false
		default:
			if off+1+l > len(msg) {
				return "", 0, false
			}
			labels = append(labels, string(msg[off+1:off+1+l]))
			off += 1 + l
		}
	}
	return "", 0, false
}

// Reachable says whether the stack's sandbox may send to addr:port over
// transport (unix.IPPROTO_TCP, IPPROTO_UDP; anything else, ICMP and raw,
// only to itself): always without an allowlist, else to loopback, the
// stack's own addresses, and what the allowlist allows.
func (st *Stack) Reachable(addr tcpip.Address, port uint16, transport int) bool {
	e := st.Egress()
	if e == nil || addr.Len() == 0 {
		return true
	}
	a, _ := netip.AddrFromSlice(addr.AsSlice())
	a = a.Unmap()
	if a.IsLoopback() || a.IsUnspecified() {
		return true
	}
	proto := ipv4.ProtocolNumber
	if a.Is6() {
		proto = ipv6.ProtocolNumber
	}
	if st.S.CheckLocalAddress(0, proto, tcpip.AddrFromSlice(a.AsSlice())) != 0 {
		return true
	}
	if transport != unix.IPPROTO_TCP && transport != unix.IPPROTO_UDP {
		return false
	}
	return e.Allowed(a, port)
}
