package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// The test network: the container's namespace and a server's, joined by a
// veth pair; the server's namespace also has an address of its own on lo,
// reached through the container's default route.
const (
	netContainerAddr = "10.213.0.2"
	netServerAddr    = "10.213.0.1"
	netBehindGateway = "10.214.0.1"
)

// testNetwork is a pair of network namespaces the test made.
type testNetwork struct {
	container, server string // their names under /run/netns
}

// newTestNetwork makes the container's and the server's namespaces,
// named after tag, and removes them when the test ends.
func newTestNetwork(t *testing.T, tag string) testNetwork {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces and veth pairs")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip (iproute2) is missing: no way to make the test network")
	}
	n := testNetwork{
		container: fmt.Sprintf("moat-it-%d-%s-c", os.Getpid(), tag),
		server:    fmt.Sprintf("moat-it-%d-%s-s", os.Getpid(), tag),
	}
	ipCmd := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", n.container).Run()
		exec.Command("ip", "netns", "del", n.server).Run()
	})
	ipCmd("netns", "add", n.container)
	ipCmd("netns", "add", n.server)
	// Deleting a namespace deletes the veth end in it, and so the pair.
	ipCmd("link", "add", "eth0", "netns", n.container, "type", "veth", "peer", "name", "veth-s", "netns", n.server)
	ipCmd("-n", n.container, "addr", "add", netContainerAddr+"/24", "dev", "eth0")
	ipCmd("-n", n.container, "link", "set", "lo", "up")
	ipCmd("-n", n.container, "link", "set", "eth0", "up")
	ipCmd("-n", n.container, "route", "add", "default", "via", netServerAddr)
	ipCmd("-n", n.server, "addr", "add", netServerAddr+"/24", "dev", "veth-s")
	ipCmd("-n", n.server, "addr", "add", netBehindGateway+"/32", "dev", "lo")
	ipCmd("-n", n.server, "link", "set", "lo", "up")
	ipCmd("-n", n.server, "link", "set", "veth-s", "up")
	return n
}

// listenIn opens a TCP listener on all addresses of namespace ns (a
// socket stays in the namespace it was made in, whichever thread uses it
// later); it is closed when the test ends.
func listenIn(t *testing.T, ns string) net.Listener {
	t.Helper()
	return inNetns(t, ns, func() (net.Listener, error) { return net.Listen("tcp4", "0.0.0.0:0") })
}

// inNetns makes a socket with open in namespace ns, on a thread that
// enters the namespace and is never used again (a goroutine that ends
// locked takes its thread with it); the socket is closed when the test
// ends.
func inNetns[S io.Closer](t *testing.T, ns string, open func() (S, error)) S {
	t.Helper()
	type result struct {
		s   S
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open(filepath.Join("/run/netns", ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			done <- result{err: err}
			return
		}
		s, err := open()
		done <- result{s, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatalf("socket in %s: %v", ns, r.err)
	}
	t.Cleanup(func() { r.s.Close() })
	return r.s
}

// serveRemoteAddr answers every request on l with the address it came
// from, so the client's source address is seen.
func serveRemoteAddr(l net.Listener) {
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprintf(w, "from %s\n", host)
	}))
}

// netBundle writes a busybox bundle in dir whose network namespace is
// path, running args.
func netBundle(t *testing.T, dir, path string, args []string) {
	t.Helper()
	rootfs := filepath.Join(dir, ocirun.Rootfs)
	for _, d := range []string{"bin", "etc", "dev", "proc", "tmp"} {
		must(t, os.MkdirAll(filepath.Join(rootfs, d), 0o755))
	}
	data, err := os.ReadFile(busybox)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(rootfs, "bin/busybox"), data, 0o755))
	for _, applet := range []string{"sh", "wget", "ip", "cat", "echo"} {
		must(t, os.Symlink("busybox", filepath.Join(rootfs, "bin", applet)))
	}
	spec := ocirun.Spec(args, []string{"PATH=/bin"}, "moat-netns")
	spec.Root = &specs.Root{Path: ocirun.Rootfs, Readonly: true}
	spec.Mounts = []specs.Mount{ocirun.Proc(), ocirun.Tmpfs("/dev", "nosuid", "mode=755", "size=1m")}
	for i, ns := range spec.Linux.Namespaces {
		if ns.Type == specs.NetworkNamespace {
			spec.Linux.Namespaces[i].Path = path
		}
	}
	must(t, ocirun.WriteSpec(dir, spec))
}

// TestJoinedNetworkNamespaceReachesServersOnItsLinkAndThroughItsGateway:
// a container whose config names a network namespace has that
// namespace's interface, address and routes: it reaches a server on the
// veth's other end, and one behind it through the default route, from its
// own address, under runc and in moat alike.
func TestJoinedNetworkNamespaceReachesServersOnItsLinkAndThroughItsGateway(t *testing.T) {
	if _, err := os.Stat(busybox); err != nil {
		t.Skipf("%s is missing (make test installs busybox-static): no root file system to test with", busybox)
	}
	runc, err := ocirun.LookPath("runc")
	if err != nil {
		t.Skip("runc is not installed (make test installs it): no reference to compare with")
	}
	script := func(port int) []string {
		return []string{"sh", "-c", fmt.Sprintf(
			"ip -o -4 addr show dev eth0 | { read n ifc fam addr rest; echo $ifc $fam $addr; }; "+
				"wget -q -O - http://%s:%d/ && wget -q -O - http://%s:%d/",
			netServerAddr, port, netBehindGateway, port)}
	}
	want := fmt.Sprintf("eth0 inet %s/24\nfrom %s\nfrom %s\n", netContainerAddr, netContainerAddr, netContainerAddr)
	got := map[string]string{}
	for _, rtName := range []string{"runc", "moat"} {
		t.Run(rtName, func(t *testing.T) {
			n := newTestNetwork(t, rtName)
			l := listenIn(t, n.server)
			serveRemoteAddr(l)
			var root ocirun.Root
			var bundle string
			if rtName == "moat" {
				e := newMoatEnv(t)
				root, bundle = e.moat, e.bundle
			} else {
				dir := t.TempDir()
				root, bundle = (&ocirun.Runtime{Name: "runc", Path: runc}).At(filepath.Join(dir, "state")), filepath.Join(dir, "bundle")
				must(t, os.Mkdir(bundle, 0o755))
			}
			netBundle(t, bundle, filepath.Join("/run/netns", n.container), script(l.Addr().(*net.TCPAddr).Port))
			out := newOutput(t)
			id := fmt.Sprintf("netns-%d", os.Getpid())
			x := root.Run(context.Background(), bundle, id, out.Stdio(), ocirun.Limits{Timeout: 60 * time.Second, Grace: killGrace})
			defer root.Delete(id)
			if x.StartErr != nil {
				t.Fatal(x.StartErr)
			}
			stdout, stderr, err := out.Read()
			must(t, err)
			if x.Code != 0 || stdout != want {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 0 and %q", x.Code, stdout, stderr, want)
			}
			got[rtName] = stdout
		})
	}
	if got["runc"] != got["moat"] {
		t.Errorf("moat printed %q, runc %q", got["moat"], got["runc"])
	}
}

// TestNetworkNamespacePathThatDoesNotExistIsOneLine: a config naming a
// network namespace that is not there fails create and run with one line
// naming it, and leaves nothing behind.
func TestNetworkNamespacePathThatDoesNotExistIsOneLine(t *testing.T) {
	if _, err := os.Stat(busybox); err != nil {
		t.Skipf("%s is missing (make test installs busybox-static): no root file system to test with", busybox)
	}
	e := newMoatEnv(t)
	path := "/run/netns/moat-it-no-such-namespace"
	netBundle(t, e.bundle, path, []string{"true"})
	want := "network namespace " + path + ": no such file or directory"
	for _, cmd := range []string{"create", "run"} {
		_, errOut, code := e.moatCmd(cmd, "--bundle", e.bundle, "nonetns")
		if code != 1 || !strings.Contains(errOut, want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line with %q", cmd, code, errOut, want)
		}
	}
}
