package engines

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPodmanDefaultNetworkReachesTheBridge: a container on podman's
// default network (netavark makes its namespace, a veth into podman's
// bridge, an address and a default route) has eth0 with its address, and
// reaches a server on the host's side of the bridge from that address,
// under runc and in moat alike.
func TestPodmanDefaultNetworkReachesTheBridge(t *testing.T) {
	needPackages(t, "podman", "podman")
	tarball := busyboxTar(t)
	if r := run(t, "podman", "import", "-q", tarball, image); r.code != 0 {
		t.Fatalf("podman import: %s", r.stderr)
	}
	r := run(t, "podman", "network", "inspect", "podman", "--format", "{{range .Subnets}}{{.Subnet}} {{.Gateway}}{{end}}")
	fields := strings.Fields(r.stdout)
	if r.code != 0 || len(fields) != 2 {
		t.Skipf("podman's default network has no IPv4 subnet and gateway (%q, %s): nothing to test", r.stdout, r.stderr)
	}
	subnet, err1 := netip.ParsePrefix(fields[0])
	gateway, err2 := netip.ParseAddr(fields[1])
	if err1 != nil || err2 != nil {
		t.Fatalf("podman network inspect: %q", r.stdout)
	}
	// The gateway is on the bridge, which netavark makes with the first
	// container: IP_FREEBIND binds to it before it exists.
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_FREEBIND, 1) })
		if err != nil {
			return err
		}
		return serr
	}}
	l, err := lc.Listen(context.Background(), "tcp4", netip.AddrPortFrom(gateway, 0).String())
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var mu sync.Mutex
	var clients []string
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		host, _, _ := net.SplitHostPort(req.RemoteAddr)
		mu.Lock()
		clients = append(clients, host)
		mu.Unlock()
		fmt.Fprintln(w, "hello from the host")
	}))
	port := l.Addr().(*net.TCPAddr).Port
	script := fmt.Sprintf("ip -o -4 addr show dev eth0 | { read n ifc fam addr rest; echo $ifc $fam ${addr#*/}; }; "+
		"wget -q -O - http://%s:%d/", gateway, port)
	want := fmt.Sprintf("eth0 inet %d\nhello from the host\n", subnet.Bits())
	got := map[string]string{}
	for _, rt := range runtimes(t) {
		p := client{t: t, rt: rt, argv: []string{"podman", "--runtime", rt.path}}
		mu.Lock()
		clients = nil
		mu.Unlock()
		got[rt.name] = p.ok("run", "--rm", image, "sh", "-c", script)
		if got[rt.name] != want {
			t.Errorf("%s: %q, want %q", rt.name, got[rt.name], want)
		}
		mu.Lock()
		for _, c := range clients {
			if a, err := netip.ParseAddr(c); err != nil || !subnet.Contains(a) {
				t.Errorf("%s: the server was reached from %s, outside %s", rt.name, c, subnet)
			}
		}
		mu.Unlock()
	}
	if g, ok := got["runc"]; ok && g != got["moat"] {
		t.Errorf("moat gave %q, runc %q", got["moat"], g)
	}
}
