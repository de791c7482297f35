package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// The annotations containerd's CRI plugin gives a pod's containers.
const (
	criTypeAnnotation    = "io.kubernetes.cri.container-type"
	criSandboxAnnotation = "io.kubernetes.cri.sandbox-id"
)

// podBundle makes a bundle of busybox in a directory of the test's, its
// config running args as a container of pod (CRI's annotations; the pod's
// sandbox itself when pod is ""), with a tmpfs at /tmp and the file
// marker in its root.
func podBundle(t *testing.T, pod, marker string, args ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	rootfs := filepath.Join(dir, ocirun.Rootfs)
	for _, d := range []string{"bin", "etc", "dev", "tmp", "proc"} {
		must(t, os.MkdirAll(filepath.Join(rootfs, d), 0o755))
	}
	data, err := os.ReadFile(busybox)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(rootfs, "bin/busybox"), data, 0o755))
	for _, applet := range []string{"sh", "sleep", "cat", "echo", "nc", "ls", "hostname", "test"} {
		must(t, os.Symlink("busybox", filepath.Join(rootfs, "bin", applet)))
	}
	must(t, os.WriteFile(filepath.Join(rootfs, marker), nil, 0o644))
	ann := map[string]string{criTypeAnnotation: "sandbox", criSandboxAnnotation: "pod"}
	if pod != "" {
		ann = map[string]string{criTypeAnnotation: "container", criSandboxAnnotation: pod}
	}
	must(t, ocirun.WriteSpec(dir, &specs.Spec{
		Version:  specs.Version,
		Process:  &specs.Process{Args: args, Env: []string{"PATH=/bin"}, Cwd: "/"},
		Root:     &specs.Root{Path: ocirun.Rootfs, Readonly: true},
		Hostname: "moat-pod",
		Mounts: []specs.Mount{{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs"}},
		Annotations: ann,
	}))
	return dir
}

// TestPodContainersShareTheSandbox creates a pod as a CRI runtime does,
// with plain bundles: the sandbox container, then two containers whose
// annotations name it. They run in its sentry, each in a tree of its
// own, and reach each other on the loopback; each has its own
// lifecycle, and nothing is left once all are deleted.
func TestPodContainersShareTheSandbox(t *testing.T) {
	e := newEnv(t)
	ok := func(args ...string) string {
		t.Helper()
		out, errOut, code := e.moatCmd(args...)
		if code != 0 {
			t.Fatalf("moat %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		return out
	}
	bundles := map[string]string{
		"pod":    podBundle(t, "", "in-pod", "sleep", "1000"),
		"server": podBundle(t, "pod", "in-server", "sh", "-c", "echo served > /tmp/f; while true; do nc -l -p 8123 < /tmp/f; done"),
		"client": podBundle(t, "pod", "in-client", "sleep", "1000"),
		"idle":   podBundle(t, "pod", "in-idle", "sleep", "1000"),
		"shared": podBundle(t, "pod", "in-shared", "sleep", "1000"),
	}
	defer func() {
		for _, id := range []string{"shared", "idle", "client", "server", "pod"} {
			e.moatCmd("delete", "--force", id)
		}
		e.checkPodClean(bundles)
	}()
	ok("create", "--bundle", bundles["pod"], "pod")
	ok("start", "pod")
	podPID := e.waitStatus("pod", specs.StateRunning).Pid
	// shared joins the pod's pid namespace, as a CRI pod that shares
	// one names it.
	spec, err := ocirun.ReadSpec(bundles["shared"])
	must(t, err)
	spec.Linux = &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace, Path: fmt.Sprintf("/proc/%d/ns/pid", podPID)}}}
	must(t, ocirun.WriteSpec(bundles["shared"], spec))
	for _, id := range []string{"server", "client", "idle", "shared"} {
		ok("create", "--bundle", bundles[id], id)
	}
	ok("start", "shared")
	for _, id := range []string{"server", "client"} {
		ok("start", id)
		if st := e.waitStatus(id, specs.StateRunning); st.Pid == podPID || st.Pid == 0 {
			t.Errorf("%s: pid %d, want a process of its own (the pod's sentry is %d)", id, st.Pid, podPID)
		}
	}
	if st := e.state("idle"); st.Status != specs.StateCreated {
		t.Errorf("idle: %s, want created until started", st.Status)
	}
	if args := cmdline(podPID); len(args) < 2 || args[1] != "boot" {
		t.Fatalf("the pod's pid %d is %q, not a sentry", podPID, args)
	}
	sentries := 0
	for _, id := range []string{"server", "client", "idle"} {
		if args := cmdline(e.state(id).Pid); len(args) >= 2 && args[1] == "boot" {
			sentries++
		}
	}
	if sentries != 0 {
		t.Errorf("%d of the pod's containers booted a sentry of their own", sentries)
	}

	// One network stack: the server's port is the client's localhost.
	got := ok("exec", "client", "sh", "-c", "until nc 127.0.0.1 8123 </dev/null; do sleep 0.1; done")
	if strings.TrimSpace(got) != "served" {
		t.Errorf("the client read %q from the server on 127.0.0.1, want served", got)
	}
	// A tree each: its own root, its own /tmp.
	for id, want := range map[string]string{"client": "in-client", "server": "in-server"} {
		out := ok("exec", id, "ls", "/")
		if !strings.Contains(out, want) || strings.Count(out, "in-") != 1 {
			t.Errorf("ls / in %s: %q, want %s alone", id, out, want)
		}
	}
	if _, _, code := e.moatCmd("exec", "client", "test", "-e", "/tmp/f"); code == 0 {
		t.Error("the client sees the server's /tmp/f: their /tmp is one")
	}
	if _, _, code := e.moatCmd("exec", "server", "sh", "-c", "exit 3"); code != 3 {
		t.Errorf("exec in a pod's container: exit %d, want 3", code)
	}
	// One UTS namespace: the pod's name.
	if got := strings.TrimSpace(ok("exec", "client", "hostname")); got != "moat-pod" {
		t.Errorf("hostname in the client: %q, want moat-pod", got)
	}
	// ps lists each container's processes alone.
	if ps := ok("ps", "server"); !strings.Contains(ps, "nc -l") || strings.Contains(ps, "sleep 1000") {
		t.Errorf("ps server:\n%s\nwant its shell and nc, and no sleep", ps)
	}
	if ps := ok("ps", "pod"); !strings.Contains(ps, "sleep 1000") || strings.Contains(ps, "nc") {
		t.Errorf("ps pod:\n%s\nwant its sleep alone", ps)
	}

	// A container's own lifecycle: SIGTERM without a handler leaves its
	// init (as its pid namespace's), SIGKILL stops it and no other.
	ok("kill", "server", "TERM")
	if st := e.state("server"); st.Status != specs.StateRunning {
		t.Errorf("server after SIGTERM: %s, want running", st.Status)
	}
	// Sharing the pod's pid namespace, an init is none: SIGTERM ends it.
	e.waitStatus("shared", specs.StateRunning)
	ok("kill", "shared", "TERM")
	if st := e.waitStatus("shared", specs.StateStopped); st.Status != specs.StateStopped {
		t.Errorf("a container in its pod's pid namespace after SIGTERM: %s, want stopped", st.Status)
	}
	ok("delete", "shared")
	ok("kill", "server", "KILL")
	if st := e.waitStatus("server", specs.StateStopped); st.Status != specs.StateStopped {
		t.Errorf("server after SIGKILL: %s, want stopped", st.Status)
	}
	for _, id := range []string{"pod", "client"} {
		if st := e.state(id); st.Status != specs.StateRunning {
			t.Errorf("%s after the server was killed: %s, want running", id, st.Status)
		}
	}
	ok("delete", "server")
	ok("delete", "idle") // never started
	if _, _, code := e.moatCmd("exec", "server", "true"); code == 0 {
		t.Error("exec in a deleted container succeeded")
	}
	if _, errOut, code := e.moatCmd("pause", "client"); code == 0 || !strings.Contains(errOut, "pod") {
		t.Errorf("pause of one container of a pod: exit %d, %q; want a refusal naming the pod", code, errOut)
	}
	// The pod's end is every container's.
	ok("kill", "pod", "KILL")
	e.waitStatus("pod", specs.StateStopped)
	if st := e.waitStatus("client", specs.StateStopped); st.Status != specs.StateStopped {
		t.Errorf("client after its pod was killed: %s, want stopped", st.Status)
	}
	ok("delete", "client")
	ok("delete", "pod")
}

// checkPodClean is checkClean for the pod's bundles: no gofer serving
// any of them, none of the processes that stood for a container's init
// (the pids the test saw) still there.
func (e *env) checkPodClean(bundles map[string]string) {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		var pid int
		fmt.Sscan(filepath.Base(p), &pid)
		args := cmdline(pid)
		for id, b := range bundles {
			if len(args) >= 2 && args[1] == "gofer" && strings.Contains(strings.Join(args, " "), b) {
				e.t.Errorf("gofer of %s left behind: %v", id, args)
			}
		}
	}
	for _, pid := range e.pids {
		if args := cmdline(pid); len(args) >= 2 && args[1] == "exec-wait" {
			e.t.Errorf("stand-in %d left behind", pid)
		}
	}
}
