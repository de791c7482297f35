package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// The allowlist test's names: the test's DNS server answers each with an
// address of the server's namespace.
var testDNS = map[string][4]byte{
	"allowed.test.": {10, 214, 0, 1},
	"denied.test.":  {10, 214, 0, 2},
}

// udpIn opens a UDP socket at addr in namespace ns, closed when the test
// ends.
func udpIn(t *testing.T, ns, addr string) net.PacketConn {
	t.Helper()
	return inNetns(t, ns, func() (net.PacketConn, error) { return net.ListenPacket("udp4", addr) })
}

// serveDNS answers A queries for testDNS's names with their address,
// other types with no answer, other names with NXDOMAIN; it counts the
// queries it was asked.
func serveDNS(c net.PacketConn, asked chan<- string) {
	buf := make([]byte, 512)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return
		}
		q := buf[:n]
		if len(q) < 12 {
			continue
		}
		off, name := 12, ""
		for off < len(q) && q[off] != 0 {
			l := int(q[off])
			if off+1+l > len(q) {
				break
			}
			name += string(q[off+1:off+1+l]) + "."
			off += 1 + l
		}
		if off+5 > len(q) {
			continue
		}
		qtype := binary.BigEndian.Uint16(q[off+1:])
		end := off + 5
		select {
		case asked <- name:
		default:
		}
		resp := append([]byte(nil), q[:end]...)
		resp[2], resp[3] = 0x85, 0x80 // a response, authoritative, recursion desired and available
		binary.BigEndian.PutUint16(resp[6:], 0)
		binary.BigEndian.PutUint16(resp[8:], 0)
		binary.BigEndian.PutUint16(resp[10:], 0)
		a, known := testDNS[strings.ToLower(name)]
		switch {
		case !known:
			resp[3] |= 3 // NXDOMAIN
		case qtype == 1:
			binary.BigEndian.PutUint16(resp[6:], 1)
			resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4)
			resp = append(resp, a[:]...)
		}
		c.WriteTo(resp, from)
	}
}

// TestEgressAllowlistLetsOutOnlyWhatAnAllowedNameResolvedTo: with
// dev.moat.net-allow naming allowed.test on one port and the resolver,
// an address is refused (ECONNREFUSED) until the resolver answered
// allowed.test with it, then reached on that port alone; a query for
// denied.test never leaves the sandbox, and its address stays refused.
func TestEgressAllowlistLetsOutOnlyWhatAnAllowedNameResolvedTo(t *testing.T) {
	if _, err := os.Stat(busybox); err != nil {
		t.Skipf("%s is missing (make test installs busybox-static): no root file system to test with", busybox)
	}
	n := newTestNetwork(t, "egress")
	if ipOut, err := exec.Command("ip", "-n", n.server, "addr", "add", "10.214.0.2/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip: %v: %s", err, ipOut)
	}
	l := listenIn(t, n.server)
	serveRemoteAddr(l)
	other := listenIn(t, n.server)
	serveRemoteAddr(other)
	asked := make(chan string, 16)
	go serveDNS(udpIn(t, n.server, netServerAddr+":53"), asked)
	port := l.Addr().(*net.TCPAddr).Port
	otherPort := other.Addr().(*net.TCPAddr).Port

	fetch := func(what, addr string, port int) string {
		return fmt.Sprintf("wget -q -O - http://%s:%d/ 2>&1; echo %s $?; ", addr, port, what)
	}
	script := fetch("before", "10.214.0.1", port) +
		"nslookup allowed.test " + netServerAddr + " >/dev/null 2>&1; echo lookup-allowed $?; " +
		fetch("after", "10.214.0.1", port) + fetch("other-port", "10.214.0.1", otherPort) +
		"nslookup denied.test " + netServerAddr + " >/dev/null 2>&1; echo lookup-denied $?; " +
		fetch("denied", "10.214.0.2", port)
	e := newMoatEnv(t)
	netBundle(t, e.bundle, filepath.Join("/run/netns", n.container), []string{"sh", "-c", script})
	spec, err := ocirun.ReadSpec(e.bundle)
	must(t, err)
	spec.Annotations = map[string]string{"dev.moat.net-allow": fmt.Sprintf("allowed.test:%d,%s:53", port, netServerAddr)}
	must(t, ocirun.WriteSpec(e.bundle, spec))

	out := newOutput(t)
	x := e.moat.Run(context.Background(), e.bundle, "egress", out.Stdio(), ocirun.Limits{Timeout: 60 * time.Second, Grace: killGrace})
	defer e.moat.Delete("egress")
	if x.StartErr != nil {
		t.Fatal(x.StartErr)
	}
	stdout, stderr, err := out.Read()
	must(t, err)
	refused := "wget: can't connect to remote host (%s): Connection refused\n"
	want := fmt.Sprintf(refused, "10.214.0.1") + "before 1\n" +
		"lookup-allowed 0\n" +
		"from " + netContainerAddr + "\nafter 0\n" +
		fmt.Sprintf(refused, "10.214.0.1") + "other-port 1\n" +
		"lookup-denied 1\n" +
		fmt.Sprintf(refused, "10.214.0.2") + "denied 1\n"
	if x.Code != 0 || stdout != want {
		t.Errorf("exit %d, stdout\n%s\nstderr %q; want exit 0 and\n%s", x.Code, stdout, stderr, want)
	}
	for drained := false; !drained; {
		select {
		case name := <-asked:
			if !strings.HasPrefix(name, "allowed.test") {
				t.Errorf("the resolver was asked for %q: a query for a name not allowed left the sandbox", name)
			}
		default:
			drained = true
		}
	}
	log, _ := os.ReadFile(e.log)
	for _, line := range []string{"DNS query for denied.test refused", "a connection to 10.214.0.2:" + fmt.Sprint(port) + " refused"} {
		if !strings.Contains(string(log), line) {
			t.Errorf("the log does not say %q:\n%s", line, log)
		}
	}
}

// TestEgressAnnotationMalformedIsOneLine: a malformed allowlist entry
// fails create and run with one line naming the annotation and the
// entry, and leaves nothing behind.
func TestEgressAnnotationMalformedIsOneLine(t *testing.T) {
	e := newEnv(t)
	e.config("true")
	spec, err := ocirun.ReadSpec(e.bundle)
	must(t, err)
	spec.Annotations = map[string]string{"dev.moat.net-allow": "allowed.test,bad name!:80"}
	must(t, ocirun.WriteSpec(e.bundle, spec))
	want := `dev.moat.net-allow: "bad name!:80": not a domain name, address or CIDR`
	for _, cmd := range []string{"create", "run"} {
		_, errOut, code := e.moatCmd(cmd, "--bundle", e.bundle, "badallow")
		if code != 1 || !strings.Contains(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line with %q", cmd, code, errOut, want)
		}
	}
}
