package integration

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// e2bSDKVersion is the E2B JavaScript SDK the test installs: the one
// moat serve was checked against, so that a new release cannot change
// what the test means without a commit saying so.
const e2bSDKVersion = "2.51.0"

// e2bScriptTimeout bounds the SDK script, which creates two sandboxes and
// moves 21 MiB through them.
const e2bScriptTimeout = 10 * time.Minute

// TestE2BSDKRunsUnchangedOnMoatServe runs E2B's own JavaScript SDK,
// installed from npm, against `moat serve` on a loopback port: the script
// (testdata/e2b/sdk.mjs) creates sandboxes from the Debian template, runs
// commands with streamed output, moves files both ways, reaches a port
// the sandbox serves (getHost, with --domain), lists by
// metadata, lets a timeout pass and kills, checking every result. A pool
// keeps a sandbox booted ahead. Once the server is told to stop, nothing
// of its sandboxes may be left, those of the pool included.
func TestE2BSDKRunsUnchangedOnMoatServe(t *testing.T) {
	node := sdkNode(t)
	rootfs := debianRootfs(t)
	sdk := installE2BSDK(t)

	state := filepath.Join(t.TempDir(), "state")
	const key = "moat-e2b-test-key"
	url, stop, log := startServe(t, key, "--state", state, "--pool", "1", "--template", "base="+rootfs, "--domain", "moat.test")
	defer stop()
	runSDKScriptIn(t, nil, []string{"E2B_DOMAIN=moat.test"}, node, sdk, "sdk.mjs", url, key)

	checkMetrics(t, url, key)
	stop()
	t.Logf("moat serve's log:\n%s", log())
	checkNothingLeft(t, state)
}

// TestE2BSDKFilesNeedNoToolsInTheImage runs the SDK's file calls
// (testdata/e2b/sdk_bare.mjs) on a template that holds one static
// program, the sandbox's init at /bin/sleep: no shell, no coreutils, no
// /etc/passwd. The sentry does every file operation itself, so they
// work there as on Debian; a command cannot run, and says so. It also
// creates a sandbox whose network denies all and one with an allowlist,
// and is refused one whose denyOut lists some addresses beside internet
// access.
func TestE2BSDKFilesNeedNoToolsInTheImage(t *testing.T) {
	node := sdkNode(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc is not installed (make test installs it): cannot build the image's one program")
	}
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	for _, d := range []string{"bin", "dev", "proc", "tmp"} {
		must(t, os.MkdirAll(filepath.Join(rootfs, d), 0o755))
	}
	src := filepath.Join(t.TempDir(), "sleep.c")
	must(t, os.WriteFile(src, []byte("#include <unistd.h>\nint main(void) { for (;;) pause(); }\n"), 0o644))
	if out, err := exec.Command("gcc", "-static", "-O1", "-o", filepath.Join(rootfs, "bin/sleep"), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	sdk := installE2BSDK(t)

	state := filepath.Join(t.TempDir(), "state")
	const key = "moat-e2b-bare-key"
	url, stop, log := startServe(t, key, "--state", state, "--pool", "0", "--template", "bare="+rootfs)
	defer stop()
	runSDKScript(t, node, sdk, "sdk_bare.mjs", url, key)
	stop()
	t.Logf("moat serve's log:\n%s", log())
	checkNothingLeft(t, state)
}

// sdkNode is the node that runs the SDK, or skips the test: moat serve
// needs root to create sandboxes, and the SDK a recent node.
func sdkNode(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: moat serve creates sandboxes")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (make deps installs nodejs): no SDK to test with")
	}
	if v := nodeVersion(t, node); v[0] < 20 || v[0] == 20 && v[1] < 18 || v[0] == 21 {
		t.Skipf("node %d.%d is installed: the SDK needs 20.18 or later (not 21)", v[0], v[1])
	}
	return node
}

// checkNothingLeft fails the test if a stopped server at state left a
// sandbox or a bundle behind.
func checkNothingLeft(t *testing.T, state string) {
	t.Helper()
	left, err := os.ReadDir(filepath.Join(state, "run"))
	must(t, err)
	for _, e := range left {
		t.Errorf("moat serve left the state of sandbox %s behind", e.Name())
	}
	bundles, err := os.ReadDir(filepath.Join(state, "bundles"))
	must(t, err)
	for _, e := range bundles {
		t.Errorf("moat serve left the bundle of sandbox %s behind", e.Name())
	}
	moat := &ocirun.Runtime{Name: "moat", Path: moatBinary(t), Flags: moatFlags()}
	ids, err := moat.At(filepath.Join(state, "run")).List()
	if err != nil || len(ids) > 0 {
		t.Errorf("moat list after moat serve stopped: %v %v", ids, err)
	}
}

// TestMoatServeRestartRemovesWhatACrashedServerLeft kills a server that
// holds a sandbox and a pool with SIGKILL: the sandboxes outlive it, and
// the next server at the same state directory must delete them before it
// listens.
func TestMoatServeRestartRemovesWhatACrashedServerLeft(t *testing.T) {
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
	must(t, os.Symlink("busybox", filepath.Join(rootfs, "bin/sleep")))
	state := filepath.Join(t.TempDir(), "state")
	const key = "moat-e2b-restart-key"
	start := func(pool string) (*exec.Cmd, string, func() string) {
		args := append(append([]string{}, moatFlags()...), "serve", "--listen", "127.0.0.1:0", "--state", state,
			"--template", "base="+rootfs, "--pool", pool)
		cmd := exec.Command(moatBinary(t), args...)
		cmd.Env = append(os.Environ(), "MOAT_API_KEY="+key)
		stderr, err := cmd.StderrPipe()
		must(t, err)
		must(t, cmd.Start())
		addr, log := serverAddress(t, stderr)
		return cmd, "http://" + addr, log
	}
	first, url, log := start("1")
	req, err := http.NewRequest("POST", url+"/v2/sandboxes", strings.NewReader(`{"templateID":"base","timeout":600}`))
	must(t, err)
	req.Header.Set("X-API-Key", key)
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		first.Process.Kill()
		first.Wait()
		t.Fatalf("create: %d\n%s", resp.StatusCode, log())
	}
	first.Process.Kill()
	first.Wait()
	left, err := os.ReadDir(filepath.Join(state, "run"))
	must(t, err)
	if len(left) == 0 {
		t.Fatal("a killed server left no sandbox: the test tests nothing")
	}

	second, _, log2 := start("0")
	defer func() {
		second.Process.Signal(syscall.SIGTERM)
		second.Wait()
	}()
	moat := &ocirun.Runtime{Name: "moat", Path: moatBinary(t), Flags: moatFlags()}
	if ids, err := moat.At(filepath.Join(state, "run")).List(); err != nil || len(ids) > 0 {
		t.Errorf("after a restart, moat list: %v %v (the crashed server left %d)\n%s", ids, err, len(left), log2())
	}
	bundles, err := os.ReadDir(filepath.Join(state, "bundles"))
	must(t, err)
	if len(bundles) > 0 {
		t.Errorf("after a restart, %d bundles are left", len(bundles))
	}
}

// startServe starts moat serve on a loopback port with args and the API
// key, and returns its URL, a function that stops it (SIGTERM, and
// fails the test if it does not stop within two minutes), and one that
// returns its log.
func startServe(t *testing.T, key string, args ...string) (url string, stop func(), log func() string) {
	t.Helper()
	return startServeIn(t, nil, key, args...)
}

// startServeIn is startServe with the server's command line after wrap
// (nsenter and the like), if any.
func startServeIn(t *testing.T, wrap []string, key string, args ...string) (url string, stop func(), log func() string) {
	t.Helper()
	argv := append(append(append([]string{}, wrap...), moatBinary(t)), moatFlags()...)
	argv = append(append(argv, "serve", "--listen", "127.0.0.1:0"), args...)
	serve := exec.Command(argv[0], argv[1:]...)
	serve.Env = append(os.Environ(), "MOAT_API_KEY="+key)
	stderr, err := serve.StderrPipe()
	must(t, err)
	must(t, serve.Start())
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		serve.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("moat serve, told to stop: %v", err)
			}
		case <-time.After(2 * time.Minute):
			serve.Process.Kill()
			<-exited
			t.Error("moat serve did not stop within 2 minutes of SIGTERM; killed")
		}
	}
	addr, log := serverAddress(t, stderr)
	return "http://" + addr, stop, log
}

// runSDKScript runs testdata/e2b/<script> (with checks.mjs, which it
// imports) with node against the server
// at url, from the SDK's directory, and fails the test unless it says
// all its checks passed.
func runSDKScript(t *testing.T, node, sdk, script, url, key string) {
	t.Helper()
	runSDKScriptIn(t, nil, nil, node, sdk, script, url, key)
}

// runSDKScriptIn is runSDKScript with node's command line after wrap
// (nsenter and the like), if any, and env added to its environment.
func runSDKScriptIn(t *testing.T, wrap, env []string, node, sdk, script, url, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2bScriptTimeout)
	defer cancel()
	for _, name := range []string{script, "checks.mjs"} {
		data, err := os.ReadFile(filepath.Join("testdata/e2b", name))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(sdk, name), data, 0o644))
	}
	argv := append(append([]string{}, wrap...), node, filepath.Join(sdk, script))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = sdk
	cmd.Env = append(append(os.Environ(), "E2B_API_URL="+url, "E2B_SANDBOX_URL="+url, "E2B_API_KEY="+key, "E2B_DOMAIN="), env...)
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("SDK script %s:\n%s", script, out)
	if err != nil {
		t.Errorf("the SDK script failed: %v", err)
	} else if !strings.Contains(string(out), "all checks passed") {
		t.Error("the SDK script ended without saying all checks passed")
	}
}

// serverAddress reads the server's stderr until it says where it
// listens, and returns that address and a function that returns all the
// server wrote on stderr so far.
func serverAddress(t *testing.T, stderr io.Reader) (string, func() string) {
	t.Helper()
	lines := make(chan string, 1024)
	logged := make(chan string, 1)
	go func() {
		var all strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
		logged <- all.String()
	}()
	log := func() string {
		select {
		case s := <-logged:
			logged <- s
			return s
		case <-time.After(10 * time.Second):
			return "(the server's stderr is still open)"
		}
	}
	deadline := time.After(time.Minute)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("moat serve ended before it listened:\n%s", log())
			}
			if a, found := strings.CutPrefix(line, "moat serve: listening on "); found {
				return a, log
			}
		case <-deadline:
			t.Fatal("moat serve did not say where it listens within a minute")
		}
	}
}

// installE2BSDK installs the SDK from npm into the build cache, once, and
// returns the directory that holds its node_modules. Without the
// registry there is no SDK: the test is skipped.
func installE2BSDK(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../build/e2b-sdk-" + e2bSDKVersion)
	must(t, err)
	if installedVersion(dir) == e2bSDKVersion {
		return dir
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed (make deps installs it): no way to get the SDK")
	}
	must(t, os.MkdirAll(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"moat-e2b-test","private":true}`+"\n"), 0o644))
	// A module of its own, as the rootfs cache is: go vet ./... and go
	// test ./... must not take a Go file in node_modules for moat's.
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module e2bsdkcache\n"), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "e2b@"+e2bSDKVersion)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		for _, sign := range []string{"ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ENETUNREACH", "network"} {
			if strings.Contains(string(out), sign) {
				t.Skipf("the npm registry cannot be reached (%s): no SDK to test with", sign)
			}
		}
		t.Fatalf("npm install e2b@%s: %v\n%s", e2bSDKVersion, err, out)
	}
	if v := installedVersion(dir); v != e2bSDKVersion {
		t.Fatalf("npm installed e2b %q, not %s", v, e2bSDKVersion)
	}
	return dir
}

func installedVersion(dir string) string {
	data, err := os.ReadFile(filepath.Join(dir, "node_modules/e2b/package.json"))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	var pkg struct {
		Version string `json:"version"`
	}
	json.Unmarshal(data, &pkg)
	return pkg.Version
}

// nodeVersion is node's major and minor version.
func nodeVersion(t *testing.T, node string) [2]int {
	out, err := exec.Command(node, "--version").Output()
	must(t, err)
	var v [2]int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "v%d.%d", &v[0], &v[1]); err != nil {
		t.Fatalf("node --version said %q", out)
	}
	return v
}

// checkMetrics reads the server's metrics once the script is done: its
// two sandboxes created and none running, and the key required.
func checkMetrics(t *testing.T, url, key string) {
	t.Helper()
	get := func(key string) (int, string) {
		req, err := http.NewRequest("GET", url+"/metrics", nil)
		must(t, err)
		req.Header.Set("X-API-Key", key)
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		must(t, err)
		return resp.StatusCode, string(body)
	}
	if code, _ := get("wrong"); code != http.StatusUnauthorized {
		t.Errorf("/metrics with a wrong key: %d, want 401", code)
	}
	code, body := get(key)
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", code, body)
	}
	var pool, boot, running int
	for _, line := range strings.Split(body, "\n") {
		fmt.Sscanf(line, `moat_serve_creates_total{outcome="pool"} %d`, &pool)
		fmt.Sscanf(line, `moat_serve_creates_total{outcome="boot"} %d`, &boot)
		fmt.Sscanf(line, "moat_serve_sandboxes_running %d", &running)
	}
	if pool+boot != 2 || running != 0 {
		t.Errorf("metrics: %d creates from the pool and %d booted (want 2 in all), %d running (want 0):\n%s", pool, boot, running, body)
	}
}

// TestE2BSDKOverHTTPS runs the SDK against moat serve with --tls-cert and
// --tls-key: a certificate for 127.0.0.1 the test makes, which node trusts
// through NODE_EXTRA_CA_CERTS, as a user would add their own CA. Plain
// HTTP to the same port gets no answer of the API.
func TestE2BSDKOverHTTPS(t *testing.T) {
	node := sdkNode(t)
	rootfs := debianRootfs(t)
	sdk := installE2BSDK(t)
	cert, key := selfSignedCert(t)
	state := filepath.Join(t.TempDir(), "state")
	const apiKey = "moat-e2b-tls-key"
	url, stop, log := startServe(t, apiKey, "--state", state, "--template", "base="+rootfs, "--tls-cert", cert, "--tls-key", key)
	defer stop()
	httpsURL := "https://" + strings.TrimPrefix(url, "http://")
	if resp, err := http.Get(url + "/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
			t.Errorf("plain HTTP to the HTTPS server got %s", resp.Status)
		}
	}
	runSDKScriptIn(t, nil, []string{"NODE_EXTRA_CA_CERTS=" + cert}, node, sdk, "sdk_tls.mjs", httpsURL, apiKey)
	stop()
	t.Logf("moat serve's log:\n%s", log())
	checkNothingLeft(t, state)
}

// selfSignedCert writes a self-signed certificate for 127.0.0.1 and its
// key, PEM, and returns their paths.
func selfSignedCert(t *testing.T) (cert, key string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "moat serve test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	must(t, err)
	keyDER, err := x509.MarshalECPrivateKey(priv)
	must(t, err)
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	must(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	must(t, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return cert, key
}
