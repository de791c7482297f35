package engines

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// pauseSource is the pod's pause container: it holds the pod's
// namespaces and does nothing, ending on SIGTERM or SIGINT.
const pauseSource = `#include <signal.h>
#include <unistd.h>
#include <stdlib.h>
static void done(int sig) { (void)sig; exit(0); }
int main(void) {
	signal(SIGTERM, done);
	signal(SIGINT, done);
	for (;;) pause();
}
`

var (
	crictlOnce sync.Once
	crictlPath string
	crictlErr  error
)

// crictl builds crictl from the module pinned in tools/cri-tools.
func crictl(t *testing.T) string {
	t.Helper()
	crictlOnce.Do(func() {
		dir, err := os.MkdirTemp("", "moat-engines-crictl-")
		if err != nil {
			crictlErr = err
			return
		}
		crictlPath = filepath.Join(dir, "crictl")
		mod, err := filepath.Abs("../../tools/cri-tools")
		if err != nil {
			crictlErr = err
			return
		}
		cmd := exec.Command("go", "build", "-o", crictlPath, "sigs.k8s.io/cri-tools/cmd/crictl")
		cmd.Dir = mod
		if out, err := cmd.CombinedOutput(); err != nil {
			crictlErr = fmt.Errorf("%v: %s", err, out)
		}
	})
	if crictlErr != nil {
		t.Skipf("crictl could not be built: %v", crictlErr)
	}
	return crictlPath
}

// criConfig is containerd's configuration with the CRI plugin: a runtime
// handler for each runtime (the stock shim with BinaryName, as
// docs/engines.md tells a cluster to set it), the locally built pause
// image as every pod's sandbox image, and no CNI (the pods use the host's
// network). restrict_oom_score_adj keeps the pod's oom_score_adj (-998
// for a sandbox) no lower than containerd's own: a root without
// CAP_SYS_RESOURCE, as in a container, may not lower it, and runc's
// create then fails.
const criConfig = `version = 2
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/moat-pause:1"
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.moat]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.moat.options]
      BinaryName = %q
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
      BinaryName = %q
`

// TestCRIPod runs a pod of two containers through containerd's CRI with
// crictl, as a kubelet would with a RuntimeClass whose handler is moat
// (and runc): runp, create and start, exec and its status, logs, stats,
// stopp, rmp.
func TestCRIPod(t *testing.T) {
	needPackages(t, "containerd", "containerd")
	needPackages(t, "gcc", "gcc", "libc6-dev")
	cli := crictl(t)
	dir := t.TempDir()
	rts := runtimes(t)
	paths := map[string]string{}
	for _, rt := range rts {
		paths[rt.name] = rt.path
	}
	runcPath := paths["runc"]
	if runcPath == "" {
		runcPath = "runc"
	}
	sock := filepath.Join(dir, "containerd.sock")
	config := fmt.Sprintf(criConfig, filepath.Join(dir, "root"), filepath.Join(dir, "state"), sock,
		filepath.Join(dir, "cni-bin"), filepath.Join(dir, "cni-conf"), paths["moat"], runcPath)
	stop := startContainerdWith(t, dir, config)
	defer stop()

	// The images: the pause program alone, and busybox.
	pauseRoot := filepath.Join(dir, "pause-root")
	os.MkdirAll(pauseRoot, 0o755)
	src := filepath.Join(dir, "pause.c")
	os.WriteFile(src, []byte(pauseSource), 0o644)
	if out, err := exec.Command("gcc", "-static", "-O2", "-o", filepath.Join(pauseRoot, "pause"), src).CombinedOutput(); err != nil {
		t.Fatalf("gcc pause: %v: %s", err, out)
	}
	bbRoot := filepath.Join(dir, "bb-root")
	os.MkdirAll(bbRoot, 0o755)
	if out, err := exec.Command("tar", "-C", bbRoot, "-xf", busyboxTar(t)).CombinedOutput(); err != nil {
		t.Fatalf("untar: %v: %s", err, out)
	}
	for ref, img := range map[string]string{
		"localhost/moat-pause:1": ociImageTar(t, pauseRoot, "localhost/moat-pause:1", []string{"/pause"}),
		image:                    ociImageTar(t, bbRoot, image, nil),
	} {
		if r := run(t, "ctr", "-a", sock, "-n", "k8s.io", "images", "import", img); r.code != 0 {
			t.Fatalf("ctr images import %s: %s", ref, r.stderr)
		}
	}

	cri := func(t *testing.T, args ...string) result {
		t.Helper()
		return run(t, cli, append([]string{"--runtime-endpoint", "unix://" + sock, "--image-endpoint", "unix://" + sock,
			"--timeout", "60s"}, args...)...)
	}
	ok := func(t *testing.T, args ...string) string {
		t.Helper()
		r := cri(t, args...)
		if r.code != 0 {
			t.Fatalf("crictl %q: exit %d: %s", args, r.code, r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	writeJSON := func(name string, v any) string {
		p := filepath.Join(dir, name)
		data, _ := json.Marshal(v)
		os.WriteFile(p, data, 0o644)
		return p
	}
	got := map[string]string{}
	for _, rt := range rts {
		t.Run(rt.name, func(t *testing.T) {
			logs := filepath.Join(dir, "logs-"+rt.name)
			os.MkdirAll(logs, 0o755)
			pod := writeJSON("pod-"+rt.name+".json", map[string]any{
				"metadata":      map[string]any{"name": "pod-" + rt.name, "namespace": "default", "uid": "uid-" + rt.name},
				"log_directory": logs,
				"linux":         map[string]any{"security_context": map[string]any{"namespace_options": map[string]any{"network": 2}}},
			})
			podID := ok(t, "runp", "--runtime", rt.name, pod)
			defer func() {
				cri(t, "stopp", podID)
				cri(t, "rmp", podID)
			}()
			var ids []string
			for _, name := range []string{"one", "two"} {
				c := writeJSON("c-"+name+"-"+rt.name+".json", map[string]any{
					"metadata": map[string]any{"name": name},
					"image":    map[string]any{"image": image},
					"command":  []string{"sh", "-c", "echo " + name + "; exec sleep 1000"},
					"log_path": name + ".log",
					"linux":    map[string]any{},
				})
				id := ok(t, "create", podID, c, pod)
				ok(t, "start", id)
				ids = append(ids, id)
			}
			var out []string
			waitFor(t, func() bool { return strings.Contains(cri(t, "logs", ids[1]).stdout, "two") })
			out = append(out, strings.TrimSpace(cri(t, "logs", ids[0]).stdout))
			// crictl exits 1 when the command fails, saying its status.
			r := cri(t, "exec", ids[1], "sh", "-c", "echo in; exit 3")
			out = append(out, strings.TrimSpace(r.stdout)+"|"+execStatus(r))
			states := ok(t, "ps", "--pod", podID, "-o", "json")
			out = append(out, itoa(strings.Count(states, "CONTAINER_RUNNING")))
			out = append(out, boolStr(cri(t, "stats", ids[0]).code == 0))
			ok(t, "stopp", podID)
			ok(t, "rmp", podID)
			out = append(out, itoa(len(strings.Fields(ok(t, "pods", "-q")))))
			got[rt.name] = strings.Join(out, "|")
			if want := "one|in|3|2|true|0"; got[rt.name] != want {
				t.Errorf("%s: %q, want %q", rt.name, got[rt.name], want)
			}
		})
	}
	if r, ok := got["runc"]; ok && r != got["moat"] {
		t.Errorf("moat gave %q, runc %q", got["moat"], r)
	}
}

// execStatus is the status of the command `crictl exec` ran: 0 when it
// succeeded, else the one its error names.
func execStatus(r result) string {
	if r.code == 0 {
		return "0"
	}
	const marker = "command terminated with exit code "
	i := strings.LastIndex(r.stderr, marker)
	if i < 0 {
		return "crictl " + itoa(r.code)
	}
	f := strings.FieldsFunc(r.stderr[i+len(marker):], func(c rune) bool { return c < '0' || c > '9' })
	if len(f) == 0 {
		return "crictl " + itoa(r.code)
	}
	return f[0]
}
