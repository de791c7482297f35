package engines

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
// (and runc): runp, create and start, one container serving on
// 127.0.0.1 and the other reaching it there (in its command, and by
// exec), exec and its status, logs, stats, stopp, rmp, and nothing of the
// pod left once it is removed. Under moat the pod's containers run in its
// sandbox's sentry. crictl's containers share the pod's pid namespace
// (the CRI's default) but a fourth, which asks for one of its own
// (CONTAINER), as a kubelet asks for every container of a pod without
// shareProcessNamespace: its init is pid 1 there and its /proc, through
// which an exec looks, shows none of the other containers' processes.
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
			// One serves on the loopback, the other reaches it there: they
			// share the pod's network.
			port := freePort(t)
			// Bounded: ten seconds of tries, as the server listens anew
			// after each connection.
			reach := "i=0; until nc 127.0.0.1 " + port + " </dev/null; do i=$((i+1)); [ $i -gt 100 ] && break; sleep 0.1; done"
			commands := map[string]string{
				"one":   "echo one; while true; do echo served | nc -l -p " + port + "; done",
				"two":   "echo two; " + reach + "; exec sleep 1000",
				"three": "echo three; exit 7",
				"four":  "echo four $$; exec sleep 1000",
			}
			var ids []string
			for _, name := range []string{"one", "two", "three", "four"} {
				linux := map[string]any{}
				if name == "four" {
					linux["security_context"] = map[string]any{"namespace_options": map[string]any{"network": 2, "pid": 1}}
				}
				c := writeJSON("c-"+name+"-"+rt.name+".json", map[string]any{
					"metadata": map[string]any{"name": name},
					"image":    map[string]any{"image": image},
					"command":  []string{"sh", "-c", commands[name]},
					"log_path": name + ".log",
					"linux":    linux,
				})
				id := ok(t, "create", podID, c, pod)
				ok(t, "start", id)
				ids = append(ids, id)
			}
			left := leftovers{ids: append([]string{podID}, ids...)}
			left.note(t, ok(t, "inspectp", podID))
			for _, id := range ids {
				left.note(t, ok(t, "inspect", id))
			}
			if rt.name == "moat" {
				// One sentry for the pod: the containers' pids stand for
				// their inits in it.
				for _, pid := range left.pids[1:] {
					if args := cmdline(pid); len(args) >= 2 && args[1] == "boot" {
						t.Errorf("a container of the pod has a sentry of its own (pid %d)", pid)
					}
				}
			}
			var out []string
			waitFor(t, func() bool { return strings.Contains(cri(t, "logs", ids[1]).stdout, "served") })
			out = append(out, strings.TrimSpace(cri(t, "logs", ids[0]).stdout))
			out = append(out, strings.Join(strings.Fields(cri(t, "logs", ids[1]).stdout), " "))
			// crictl exits 1 when the command fails, saying its status.
			r := cri(t, "exec", ids[1], "sh", "-c", "echo in; exit 3")
			out = append(out, strings.TrimSpace(r.stdout)+"|"+execStatus(r))
			r = cri(t, "exec", ids[1], "sh", "-c", reach)
			out = append(out, strings.TrimSpace(r.stdout))
			// Who is pid 1, how many pause processes (the pod sandbox's)
			// the /proc shows, and whether the exec'd shell is in it by its
			// own pid: the pod's shared namespace, then the fourth's own.
			look := "echo $(cat /proc/1/comm) $(cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^pause$') $([ -d /proc/$$ ] && echo self)"
			for _, id := range []string{ids[1], ids[3]} {
				out = append(out, strings.TrimSpace(ok(t, "exec", id, "sh", "-c", look)))
			}
			waitFor(t, func() bool { return strings.Contains(cri(t, "logs", ids[3]).stdout, "four") })
			out = append(out, strings.TrimSpace(cri(t, "logs", ids[3]).stdout))
			// An init's exit status is the container's.
			waitFor(t, func() bool { return containerState(t, ok(t, "inspect", ids[2])).State == "CONTAINER_EXITED" })
			out = append(out, itoa(containerState(t, ok(t, "inspect", ids[2])).ExitCode))
			states := ok(t, "ps", "--pod", podID, "-o", "json")
			out = append(out, itoa(strings.Count(states, "CONTAINER_RUNNING")))
			out = append(out, boolStr(cri(t, "stats", ids[0]).code == 0))
			// One container stopped, its pod's others still running: in
			// a pod that shares its pid namespace, the shell takes SIGTERM.
			ok(t, "stop", "--timeout", "5", ids[0])
			out = append(out, itoa(containerState(t, ok(t, "inspect", ids[0])).ExitCode))
			out = append(out, containerState(t, ok(t, "inspect", ids[1])).State)
			ok(t, "stopp", podID)
			ok(t, "rmp", podID)
			out = append(out, itoa(len(strings.Fields(ok(t, "pods", "-q")))))
			got[rt.name] = strings.Join(out, "|")
			if want := "one|two served|in|3|served|pause 1 self|sleep 0 self|four 1|7|3|true|143|CONTAINER_RUNNING|0"; got[rt.name] != want {
				t.Errorf("%s: %q, want %q", rt.name, got[rt.name], want)
			}
			left.check(t)
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

// criState is a container's state as `crictl inspect` reports it.
type criState struct {
	State    string `json:"state"`
	ExitCode int    `json:"exitCode"`
}

func containerState(t *testing.T, inspect string) criState {
	t.Helper()
	var v struct {
		Status criState `json:"status"`
	}
	if err := json.Unmarshal([]byte(inspect), &v); err != nil {
		t.Fatalf("inspect: %v: %s", err, inspect)
	}
	return v.Status
}

// freePort is a TCP port on 127.0.0.1 that nothing listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return itoa(l.Addr().(*net.TCPAddr).Port)
}

// leftovers are what a pod's sandbox and containers hold on the host, as
// `crictl inspect` and `inspectp` report them: none may remain after
// rmp.
type leftovers struct {
	ids     []string // the pod's sandbox's and containers' ids
	pids    []int
	cgroups []string
}

// note takes the pid and cgroup from an inspect's JSON.
func (l *leftovers) note(t *testing.T, inspect string) {
	t.Helper()
	var v struct {
		Info struct {
			Pid         int `json:"pid"`
			RuntimeSpec struct {
				Annotations map[string]string `json:"annotations"`
				Linux       struct {
					CgroupsPath string            `json:"cgroupsPath"`
					Namespaces  []json.RawMessage `json:"namespaces"`
				} `json:"linux"`
			} `json:"runtimeSpec"`
		} `json:"info"`
	}
	if err := json.Unmarshal([]byte(inspect), &v); err != nil {
		t.Fatalf("inspect: %v: %s", err, inspect)
	}
	// What the CRI plugin passes the runtime (docs/engines.md).
	spec := v.Info.RuntimeSpec
	t.Logf("pid %d: annotations %v, namespaces %s, cgroupsPath %q", v.Info.Pid, spec.Annotations, spec.Linux.Namespaces, spec.Linux.CgroupsPath)
	l.pids = append(l.pids, v.Info.Pid)
	l.cgroups = append(l.cgroups, v.Info.RuntimeSpec.Linux.CgroupsPath)
}

// check fails the test for a process (the ones noted, or any whose
// arguments name one of the ids: a gofer serving its rootfs), a mount or a
// cgroup left behind.
func (l *leftovers) check(t *testing.T) {
	t.Helper()
	for _, pid := range l.pids {
		if args := cmdline(pid); args != nil {
			t.Errorf("pid %d left behind: %q", pid, args)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(p))
		line := strings.Join(cmdline(pid), " ")
		for _, id := range l.ids {
			if strings.Contains(line, id) {
				t.Errorf("process %d left behind: %s", pid, line)
			}
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, m := range strings.Split(string(mounts), "\n") {
		for _, id := range l.ids {
			if strings.Contains(m, id) {
				t.Errorf("mount left behind: %s", m)
			}
		}
	}
	for _, cg := range l.cgroups {
		if cg == "" || strings.Contains(cg, ":") {
			continue // none, or a systemd slice:scope name
		}
		for _, hierarchy := range []string{"", "pids"} { // v2, or v1's pids
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", hierarchy, cg)); err == nil {
				t.Errorf("cgroup %s left behind", filepath.Join(hierarchy, cg))
			}
		}
	}
}

// cmdline is a process's arguments, nil once it is gone.
func cmdline(pid int) []string {
	b, err := os.ReadFile("/proc/" + itoa(pid) + "/cmdline")
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}
