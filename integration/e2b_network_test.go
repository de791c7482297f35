package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/ocirun"
	"github.com/moat-sandbox/moat/internal/state"
)

// TestE2BNetworkAllowOutReachesWhatItListsAndNothingElse runs moat serve
// in the test network's container namespace (newTestNetwork: nothing
// leaves the two namespaces the test made), with a resolv.conf naming
// the test's resolver, and creates through its API a sandbox whose
// network denies all but allowOut's allowed.test on one port and
// 10.214.0.2 on that port: those are reached (the name through the
// sandbox's resolver), another port, another address and denied.test
// are not. A sandbox with allow_internet_access false reaches nothing
// and comes from the pool; the one with a network is booted for its
// request. Its moat usernet lives as long as its sentry: killing the
// sentry with SIGKILL ends it. One with allow_internet_access true
// reaches every name and address but the server on the host's
// loopback. Once the server stops nothing is left.
func TestE2BNetworkAllowOutReachesWhatItListsAndNothingElse(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: moat serve creates sandboxes")
	}
	if _, err := os.Stat(busybox); err != nil {
		t.Skipf("%s is missing (make test installs busybox-static): no root file system to test with", busybox)
	}
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	for _, d := range []string{"bin", "etc", "tmp"} {
		must(t, os.MkdirAll(filepath.Join(rootfs, d), 0o755))
	}
	data, err := os.ReadFile(busybox)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(rootfs, "bin/busybox"), data, 0o755))
	for _, applet := range []string{"sh", "sleep", "wget", "cat", "echo"} {
		must(t, os.Symlink("busybox", filepath.Join(rootfs, "bin", applet)))
	}

	tn := newE2BNet(t, "e2bn")
	port, otherPort, asked := tn.port, tn.otherPort, tn.asked

	state := filepath.Join(t.TempDir(), "state")
	const key = "moat-e2b-network-key"
	url, stop, log := startServeIn(t, tn.wrap, key, "--state", state, "--pool", "1", "--template", "base="+rootfs)
	defer stop()
	api := &e2bClient{t: t, url: url, key: key, http: netnsHTTPClient(tn.ns)}

	allowed := fmt.Sprintf(`{"templateID":"base","timeout":300,"network":{"denyOut":["0.0.0.0/0"],"allowOut":["allowed.test:%d","10.214.0.2:%d"]}}`, port, port)
	begun := time.Now()
	open := api.create(allowed)
	t.Logf("create with a network (booted for it, no pool): %v from request to answer", time.Since(begun).Round(time.Millisecond))
	// The pool's sandbox may still be booting: wait until it is there.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(api.metrics(), `moat_serve_pool_ready{template="base"} 1`); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not fill within a minute:\n%s", api.metrics())
		}
	}
	begun = time.Now()
	closed := api.create(`{"templateID":"base","timeout":300,"allow_internet_access":false}`)
	t.Logf("create with loopback only: %v from request to answer", time.Since(begun).Round(time.Millisecond))
	if m := api.metrics(); !strings.Contains(m, `moat_serve_creates_total{outcome="pool"} 1`) || !strings.Contains(m, `moat_serve_creates_total{outcome="boot"} 1`) {
		t.Errorf("want the sandbox with a network booted and the one without from the pool:\n%s", m)
	}

	fetch := func(what, host string, port int) string {
		return fmt.Sprintf("wget -q -O - http://%s:%d/ 2>&1; echo %s $?; ", host, port, what)
	}
	moat := &ocirun.Runtime{Name: "moat", Path: moatBinary(t), Flags: moatFlags()}
	root := moat.At(filepath.Join(state, "run"))
	exec := func(id, script string) string {
		out := newOutput(t)
		x := ocirun.Run(context.Background(), root.Command("exec", id, "sh", "-c", script), out.Stdio(),
			ocirun.Limits{Timeout: 2 * time.Minute, Grace: killGrace})
		stdout, stderr, err := out.Read()
		must(t, err)
		if x.Err() != nil {
			t.Errorf("moat exec %s: %v, stderr %q", id, x.Err(), stderr)
		}
		return stdout
	}

	got := exec(open, "cat /etc/resolv.conf; "+fetch("by-name", "allowed.test", port)+fetch("by-address", "10.214.0.2", port)+
		fetch("other-port", "10.214.0.1", otherPort)+fetch("other-address", netServerAddr, port)+fetch("denied-name", "denied.test", port))
	t.Logf("the sandbox with an allowlist:\n%s", got)
	if !strings.HasPrefix(got, "nameserver 10.0.2.3\n") {
		t.Errorf("the sandbox's resolv.conf is not the user-space network's:\n%s", got)
	}
	for _, want := range []string{"from " + netContainerAddr + "\nby-name 0\n", "from " + netContainerAddr + "\nby-address 0\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("allowed destination not reached: want %q in\n%s", want, got)
		}
	}
	for _, what := range []string{"other-port", "other-address", "denied-name"} {
		if !failed(got, what) {
			t.Errorf("%s: reached, want refused:\n%s", what, got)
		}
	}
	for _, q := range drain(asked) {
		if !strings.HasPrefix(q, "allowed.test") {
			t.Errorf("the resolver was asked for %q: a name not allowed left the sandbox", q)
		}
	}
	// Each refusal counts in the server's metrics: two connections and
	// at least one DNS query for denied.test.
	metrics := api.metrics()
	if m := regexp.MustCompile(`(?m)^moat_serve_egress_denied_total (\d+)$`).FindStringSubmatch(metrics); m == nil || atoi(t, m[1]) < 3 {
		t.Errorf("want moat_serve_egress_denied_total at least 3 after three refused destinations:\n%s", metrics)
	}

	got = exec(closed, "cat /proc/net/dev; "+fetch("by-address", "10.214.0.2", port)+fetch("by-name", "allowed.test", port))
	t.Logf("the sandbox without internet access:\n%s", got)
	if strings.Contains(got, "eth0") {
		t.Errorf("allow_internet_access false, yet the sandbox has eth0:\n%s", got)
	}
	for _, what := range []string{"by-address", "by-name"} {
		if !failed(got, what) {
			t.Errorf("allow_internet_access false: %s reached:\n%s", what, got)
		}
	}
	if qs := drain(asked); len(qs) > 0 {
		t.Errorf("allow_internet_access false, yet the resolver was asked for %v", qs)
	}

	// moat usernet ends with the sentry, with nobody to tell it.
	rec := readRecord(t, filepath.Join(state, "run", open))
	if !rec.Usernet.Alive() {
		t.Fatalf("the sandbox with a network has no moat usernet running: %+v", rec.Usernet)
	}
	if closedRec := readRecord(t, filepath.Join(state, "run", closed)); closedRec.Usernet.PID != 0 {
		t.Errorf("the sandbox with loopback only has a moat usernet: %+v", closedRec.Usernet)
	}
	must(t, unix.Kill(rec.Sentry.PID, unix.SIGKILL))
	for deadline := time.Now().Add(20 * time.Second); rec.Usernet.Alive(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("moat usernet (pid %d) still runs 20 s after its sentry was killed", rec.Usernet.PID)
		}
	}
	api.kill(open)
	api.kill(closed)

	// All of the network reaches every name and address, but not the
	// server: its port on the host's loopback, by the gateway, is never
	// dialled.
	_, servePort, err := net.SplitHostPort(strings.TrimPrefix(url, "http://"))
	must(t, err)
	wide := api.create(`{"templateID":"base","timeout":300,"allow_internet_access":true}`)
	got = exec(wide, fetch("other-port", "10.214.0.1", otherPort)+fetch("denied-name", "denied.test", port)+
		fetch("the-server", usernetGateway, atoi(t, servePort)))
	t.Logf("the sandbox with all of the network:\n%s", got)
	for _, want := range []string{"from " + netContainerAddr + "\nother-port 0\n", "from " + netContainerAddr + "\ndenied-name 0\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("all of the network, yet not reached: want %q in\n%s", want, got)
		}
	}
	if !failed(got, "the-server") {
		t.Errorf("a sandbox with all of the network reached moat serve on the host's loopback:\n%s", got)
	}
	api.kill(wide)

	stop()
	serveLog := log()
	t.Logf("moat serve's log:\n%s", serveLog)
	if m := regexp.MustCompile(`allowlist [^ ]+, booted in ([^\s]+)`).FindStringSubmatch(serveLog); m != nil {
		t.Logf("the server's own figure for the boot of the sandbox with a network: %s", m[1])
	} else {
		t.Errorf("the server did not log the sandbox with a network as booted for it")
	}
	checkNothingLeft(t, state)
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", rec.Usernet.PID)); err == nil && rec.Usernet.Alive() {
		t.Errorf("moat usernet (pid %d) outlived the server", rec.Usernet.PID)
	}
}

// e2bNet is the test network a moat serve runs in (newTestNetwork:
// nothing leaves the two namespaces the test made): one HTTP server on
// all the server namespace's addresses on port, another on otherPort,
// each answering with the client's address, and a resolver answering
// allowed.test (10.214.0.1) and denied.test (10.214.0.2), which names
// the queries it gets on asked.
type e2bNet struct {
	ns              string   // the namespace moat serve runs in
	wrap            []string // runs a command there, with resolv.conf naming the test's resolver
	port, otherPort int
	asked           chan string
}

func newE2BNet(t *testing.T, tag string) *e2bNet {
	t.Helper()
	for _, tool := range []string{"nsenter", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s (util-linux) is missing: no way to run moat serve in the test network", tool)
		}
	}
	n := newTestNetwork(t, tag)
	if out, err := exec.Command("ip", "-n", n.server, "addr", "add", "10.214.0.2/32", "dev", "lo").CombinedOutput(); err != nil {
		t.Fatalf("ip: %v: %s", err, out)
	}
	l := listenIn(t, n.server)
	serveRemoteAddr(l)
	other := listenIn(t, n.server)
	serveRemoteAddr(other)
	tn := &e2bNet{ns: n.container, port: l.Addr().(*net.TCPAddr).Port, otherPort: other.Addr().(*net.TCPAddr).Port,
		asked: make(chan string, 64)}
	go serveDNS(udpIn(t, n.server, netServerAddr+":53"), tn.asked)
	resolvConf := filepath.Join(t.TempDir(), "resolv.conf")
	must(t, os.WriteFile(resolvConf, []byte("nameserver "+netServerAddr+"\n"), 0o644))
	tn.wrap = []string{"nsenter", "--net=" + filepath.Join("/run/netns", n.container), "--",
		"unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, resolvConf}
	return tn
}

// TestE2BSDKNetworkOptionsOnMoatServe runs testdata/e2b/sdk_network.mjs,
// the JavaScript SDK's allowOut, denyOut and allowInternetAccess on the
// Debian template, with moat serve and node in the test network.
func TestE2BSDKNetworkOptionsOnMoatServe(t *testing.T) {
	node := sdkNode(t)
	rootfs := debianRootfs(t)
	sdk := installE2BSDK(t)
	tn := newE2BNet(t, "e2bs")
	state := filepath.Join(t.TempDir(), "state")
	const key = "moat-e2b-sdk-network-key"
	url, stop, log := startServeIn(t, tn.wrap, key, "--state", state, "--template", "base="+rootfs)
	defer stop()
	runSDKScriptIn(t, tn.wrap, []string{fmt.Sprintf("MOAT_TEST_PORT=%d", tn.port), fmt.Sprintf("MOAT_TEST_OTHER_PORT=%d", tn.otherPort),
		"MOAT_TEST_SOURCE=" + netContainerAddr}, node, sdk, "sdk_network.mjs", url, key)
	for _, q := range drain(tn.asked) {
		if !strings.HasPrefix(q, "allowed.test") {
			t.Errorf("the resolver was asked for %q: a name not allowed left the sandbox", q)
		}
	}
	stop()
	t.Logf("moat serve's log:\n%s", log())
	checkNothingLeft(t, state)
}

// usernetGateway is the user-space network's gateway, the host as the
// guest sees it.
const usernetGateway = "10.0.2.2"

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// readRecord is a sandbox's state.json.
func readRecord(t *testing.T, dir string) state.Container {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "state.json"))
	must(t, err)
	var c state.Container
	must(t, json.Unmarshal(data, &c))
	return c
}

// e2bClient makes control-plane calls to a moat serve.
type e2bClient struct {
	t        *testing.T
	url, key string
	http     *http.Client
}

// create makes a sandbox with body and returns its id, failing the test
// unless the answer is 201.
func (c *e2bClient) create(body string) string {
	c.t.Helper()
	code, answer := c.call("POST", "/v2/sandboxes", body)
	var sb struct {
		SandboxID string `json:"sandboxID"`
	}
	json.Unmarshal([]byte(answer), &sb)
	if code != http.StatusCreated || sb.SandboxID == "" {
		c.t.Fatalf("create %s: %d %s", body, code, answer)
	}
	return sb.SandboxID
}

func (c *e2bClient) kill(id string) {
	c.t.Helper()
	if code, answer := c.call("DELETE", "/sandboxes/"+id, ""); code != http.StatusNoContent {
		c.t.Errorf("kill %s: %d %s", id, code, answer)
	}
}

// metrics is the server's /metrics.
func (c *e2bClient) metrics() string {
	c.t.Helper()
	code, answer := c.call("GET", "/metrics", "")
	if code != http.StatusOK {
		c.t.Fatalf("/metrics: %d %s", code, answer)
	}
	return answer
}

func (c *e2bClient) call(method, path, body string) (int, string) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.url+path, strings.NewReader(body))
	must(c.t, err)
	req.Header.Set("X-API-Key", c.key)
	resp, err := c.http.Do(req)
	must(c.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	must(c.t, err)
	return resp.StatusCode, string(data)
}

// netnsHTTPClient is an HTTP client whose connections are made in
// network namespace ns, so that it reaches a server on that namespace's
// loopback.
func netnsHTTPClient(ns string) *http.Client {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		type result struct {
			c   net.Conn
			err error
		}
		done := make(chan result, 1)
		go func() {
			// The thread enters the namespace and is never used again: a
			// goroutine that ends locked takes its thread with it.
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
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			done <- result{c, err}
		}()
		r := <-done
		return r.c, r.err
	}
	return &http.Client{Transport: &http.Transport{DialContext: dial}, Timeout: 5 * time.Minute}
}
