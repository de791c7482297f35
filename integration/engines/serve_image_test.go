package engines

import (
	"bufio"
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

// TestServeRunsSandboxesOnAPodmanImage: moat serve --image base=IMAGE
// makes a template of an image in podman's store: a sandbox created
// through E2B's API runs on the image's root file system, and the image
// is unmounted again when the server ends. An image podman does not have
// is a one-line error that names the flag.
func TestServeRunsSandboxesOnAPodmanImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: moat serve creates sandboxes, and podman image mount needs root")
	}
	needPackages(t, "podman", "podman")
	if r := run(t, "podman", "import", "-q", busyboxTar(t), image); r.code != 0 {
		t.Fatalf("podman import: %s", r.stderr)
	}
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
		addr, _ = strings.CutPrefix(sc.Text(), "moat serve: listening on ")
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
}
