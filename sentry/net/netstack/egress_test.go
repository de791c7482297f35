package netstack

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
)

// dnsMsg builds a DNS message asking for name, with A answers if response.
func dnsMsg(name string, response bool, answers ...netip.Addr) []byte {
	m := make([]byte, 12)
	binary.BigEndian.PutUint16(m, 0x1234)
	if response {
		m[2] = 0x81
	}
	binary.BigEndian.PutUint16(m[4:], 1)
	binary.BigEndian.PutUint16(m[6:], uint16(len(answers)))
	for _, l := range strings.Split(name, ".") {
		m = append(append(m, byte(len(l))), l...)
	}
	m = append(m, 0, 0, 1, 0, 1)
	for _, a := range answers {
		m = append(m, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4) // the question's name, compressed
		m = append(m, a.AsSlice()...)
	}
	return m
}

func TestEgressAllowsAnAddressOnlyOnceAnAllowedNameResolvedToIt(t *testing.T) {
	e, err := ParseEgress("allowed.test:80, *.pkg.test, 10.1.0.0/16:443, [fd00::1]:53", nil)
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr("10.214.0.1")
	if e.Allowed(a, 80) {
		t.Fatal("an address no answer gave is allowed")
	}
	// An answer for a name not on the list teaches nothing.
	e.LearnAnswer(dnsMsg("denied.test", true, a))
	if e.Allowed(a, 80) {
		t.Fatal("an answer for denied.test made its address reachable")
	}
	// A query alone teaches nothing either.
	e.LearnAnswer(dnsMsg("allowed.test", false, a))
	if e.Allowed(a, 80) {
		t.Fatal("a query made an address reachable")
	}
	e.LearnAnswer(dnsMsg("allowed.test", true, a))
	if !e.Allowed(a, 80) || e.Allowed(a, 443) {
		t.Errorf("after allowed.test's answer: port 80 %v, 443 %v; want the entry's port alone", e.Allowed(a, 80), e.Allowed(a, 443))
	}
	b := netip.MustParseAddr("10.214.0.9")
	e.LearnAnswer(dnsMsg("files.pkg.test", true, b))
	if !e.Allowed(b, 8443) {
		t.Error("a subdomain of *.pkg.test, any port, is not allowed")
	}
	if !e.Allowed(netip.MustParseAddr("10.1.200.3"), 443) || e.Allowed(netip.MustParseAddr("10.1.200.3"), 80) ||
		e.Allowed(netip.MustParseAddr("10.2.0.1"), 443) {
		t.Error("the CIDR entry does not allow exactly its net on its port")
	}
	if !e.Allowed(netip.MustParseAddr("fd00::1"), 53) {
		t.Error("the IPv6 entry with a port is not allowed")
	}
}

func TestEgressQueriesAreAllowedForListedNamesOnly(t *testing.T) {
	e, err := ParseEgress("allowed.test,*.pkg.test", nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"allowed.test": true, "ALLOWED.test": true, "a.pkg.test": true,
		"pkg.test": false, "denied.test": false, "allowed.test.evil": false} {
		if got := e.QueryAllowed(dnsMsg(name, false)); got != want {
			t.Errorf("query for %s: allowed %v, want %v", name, got, want)
		}
	}
	if e.QueryAllowed([]byte{1, 2, 3}) {
		t.Error("a datagram that is no DNS query goes to the resolver")
	}
	// Three names refused and the datagram that is no query: moat serve's
	// denied-egress metric counts each.
	if got := e.RefusedCount(); got != 4 {
		t.Errorf("refusals counted: %d, want 4", got)
	}
	e.Refused("a connection", netip.MustParseAddr("10.9.9.9"), 443)
	if got := e.RefusedCount(); got != 5 {
		t.Errorf("after a refused connection: %d refusals counted, want 5", got)
	}
}

func TestEgressAnnotationErrorsNameTheEntry(t *testing.T) {
	for _, v := range []string{"", "a.test,,b.test", "bad_name!", "a.test:0", "a.test:70000", "10.0.0.0/33", "[fd00::1", "-a.test"} {
		_, err := ParseEgress(v, nil)
		if err == nil || !strings.HasPrefix(err.Error(), EgressAnnotation+": ") {
			t.Errorf("%q: %v, want an error naming the annotation", v, err)
		}
	}
}

// An allowlist replaced while the sandbox runs judges what follows by the
// new list, learns names anew, and the refusals of the old one still
// count.
func TestSetEgressReplacesTheListAndKeepsItsRefusals(t *testing.T) {
	st := &Stack{}
	old, err := ParseEgress("10.1.0.1:80", nil)
	if err != nil {
		t.Fatal(err)
	}
	st.SetEgress(old)
	a, b := netip.MustParseAddr("10.1.0.1"), netip.MustParseAddr("10.2.0.2")
	if !st.Egress().Allowed(a, 80) || st.Egress().Allowed(b, 80) {
		t.Fatal("the first list does not judge as it says")
	}
	st.Egress().Refused("a connection", b, 80)
	st.SetEgress(EmptyEgress(nil))
	if st.Egress().Allowed(a, 80) || st.Egress().Allowed(b, 80) {
		t.Error("an empty list lets something out")
	}
	st.Egress().Refused("a connection", a, 80)
	if got := st.refusedBefore.Load() + st.Egress().RefusedCount(); got != 2 {
		t.Errorf("%d refusals counted, want 2 (one per list)", got)
	}
	st.SetEgress(nil)
	if st.Egress() != nil || st.refusedBefore.Load() != 2 {
		t.Errorf("without a list: egress %v, %d refusals kept", st.Egress(), st.refusedBefore.Load())
	}
}
