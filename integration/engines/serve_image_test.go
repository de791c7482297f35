package engines

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// envImage is busyboxTar's image with an environment in its config.
const envImage = "localhost/moat-engines-busybox-env:1"

// TestServeRunsSandboxesOnAPodmanImage: moat serve --image base=IMAGE
// makes a template of an image in podman's store: a sandbox created
// through E2B's API runs on the image's root file system, a process
// started through envd gets the environment the image's config sets, and
// the image is unmounted again when the server ends. An image podman does
// not have is a one-line error that names the flag.
func TestServeRunsSandboxesOnAPodmanImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: moat serve creates sandboxes, and podman image mount needs root")
	}
	needPackages(t, "podman", "podman")
	image := envImage
	if r := run(t, "podman", "import", "-q", "--change", "ENV GREETING=hello-from-the-image", busyboxTar(t), image); r.code != 0 {
		t.Fatalf("podman import: %s", r.stderr)
	}
	defer run(t, "podman", "rmi", "-f", image)
	state := filepath.Join(t.TempDir(), "state")

	if r := run(t, moatBinary(t), "serve", "--api-key", "k", "--state", state, "--image", "base=localhost/moat-no-such-image:1"); r.code == 0 ||
		!strings.Contains(r.stderr, "--image base: podman image mount") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Errorf("an image podman lacks: status %d, stderr %q; want a one-line error naming --image", r.code, r.stderr)
	}

	const key = "moat-serve-image-key"
	serve := exec.Command(moatBinary(t), "serve", "--listen", "127.0.0.1:0", "--api-key", key, "--state", state, "--image", "base="+image)
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	defer func() {
		serve.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("moat serve, told to stop: %v", err)
			}
		case <-time.After(2 * time.Minute):
			serve.Process.Kill()
			t.Error("moat serve did not stop within 2 minutes of SIGTERM")
		}
		if mounted := run(t, "podman", "image", "mount").stdout; strings.Contains(mounted, "moat-engines-busybox") {
			t.Errorf("the image is still mounted after the server ended:\n%s", mounted)
		}
	}()
	sc := bufio.NewScanner(stderr)
	addr := ""
	for addr == "" && sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "moat serve: listening on "); ok {
			addr = a
		}
	}
	if addr == "" {
		t.Fatal("moat serve ended without listening")
	}
	go io.Copy(io.Discard, stderr)

	req, err := http.NewRequest("POST", "http://"+addr+"/sandboxes", strings.NewReader(`{"templateID":"base","timeout":60}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var created struct {
		SandboxID string `json:"sandboxID"`
		Token     string `json:"envdAccessToken"`
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &created) != nil || created.SandboxID == "" {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	// The image's /etc/passwd (busyboxTar's), not the host's.
	r := run(t, moatBinary(t), "--root", filepath.Join(state, "run"), "exec", created.SandboxID, "/bin/cat", "/etc/passwd")
	if r.code != 0 || r.stdout != "root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n" {
		t.Errorf("cat /etc/passwd in the sandbox: status %d, stdout %q, stderr %q; want the image's", r.code, r.stdout, r.stderr)
	}
	if out := envdRun(t, addr, created.SandboxID, created.Token, "/bin/sh", "-c", "echo $GREETING"); out != "hello-from-the-image\n" {
		t.Errorf("echo $GREETING through envd printed %q; want the image's environment", out)
	}
}

// envdRun runs a command as root through envd's Process.Start (Connect's
// server streaming, JSON messages in 5-byte envelopes, as the SDKs send
// it) and returns its standard output.
func envdRun(t *testing.T, addr, id, token string, cmd string, args ...string) string {
	t.Helper()
	msg, err := json.Marshal(map[string]any{"process": map[string]any{"cmd": cmd, "args": args}})
	if err != nil {
		t.Fatal(err)
	}
	body := append([]byte{0, 0, 0, 0, 0}, msg...)
	binary.BigEndian.PutUint32(body[1:5], uint32(len(msg)))
	req, err := http.NewRequest("POST", "http://"+addr+"/process.Process/Start", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("E2b-Sandbox-Id", id)
	req.Header.Set("X-Access-Token", token)
	req.SetBasicAuth("root", "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("Process.Start: %d %s", resp.StatusCode, b)
	}
	var stdout []byte
	for {
		var head [5]byte
		if _, err := io.ReadFull(resp.Body, head[:]); err != nil {
			t.Fatalf("Process.Start's stream ended without its end message: %v", err)
		}
		data := make([]byte, binary.BigEndian.Uint32(head[1:]))
		if _, err := io.ReadFull(resp.Body, data); err != nil {
			t.Fatal(err)
		}
		if head[0]&2 != 0 { // the end of the stream
			return string(stdout)
		}
		var m struct {
			Event struct {
				Data *struct {
					Stdout []byte `json:"stdout"`
				} `json:"data"`
			} `json:"event"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("Process.Start message %s: %v", data, err)
		}
		if m.Event.Data != nil {
			stdout = append(stdout, m.Event.Data.Stdout...)
		}
	}
}
