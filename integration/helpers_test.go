package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// moatBinary is the moat under test.
var moatBinary = ocirun.MoatBinary

// moatFlags are global flags for every moat command, from $MOAT_FLAGS
// (e.g. --platform=kvm): make test runs the tests once on each platform.
func moatFlags() []string { return strings.Fields(os.Getenv("MOAT_FLAGS")) }

// onKVM reports whether $MOAT_FLAGS put moat on its KVM platform, where
// guest code runs in the sentry's own threads (no stub processes).
func onKVM() bool {
	f := moatFlags()
	for i, a := range f {
		if a == "--platform=kvm" || a == "--platform" && i+1 < len(f) && f[i+1] == "kvm" {
			return true
		}
	}
	return false
}

// busybox is Debian's static busybox, which test bundles are made of.
const busybox = "/usr/bin/busybox"

// env is one test's moat: a state root and a bundle.
type env struct {
	t      *testing.T
	moat   ocirun.Root // the binary under test, logging to log, at the test's --root
	bundle string
	log    string // --log
	pids   []int  // sentry pids this test saw
}

func newEnv(t *testing.T) *env {
	t.Helper()
	if _, err := os.Stat(busybox); err != nil {
		t.Skipf("%s is missing (make test installs busybox-static): no root file system to test with", busybox)
	}
	e := newMoatEnv(t)
	rootfs := filepath.Join(e.bundle, ocirun.Rootfs)
	for _, d := range []string{"bin", "etc", "dev", "tmp"} {
		must(t, os.MkdirAll(filepath.Join(rootfs, d), 0o755))
	}
	data, err := os.ReadFile(busybox)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(rootfs, "bin/busybox"), data, 0o755))
	for _, applet := range []string{"sh", "sleep", "cat", "echo", "true"} {
		must(t, os.Symlink("busybox", filepath.Join(rootfs, "bin", applet)))
	}
	must(t, os.WriteFile(filepath.Join(rootfs, "etc/passwd"), []byte("root:x:0:0:root:/:/bin/sh\n"), 0o644))
	return e
}

// newMoatEnv is an env whose bundle holds nothing yet; whatever the test
// leaves of moat fails it.
func newMoatEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, bundle: filepath.Join(dir, "bundle"), log: filepath.Join(dir, "moat.log")}
	moat := &ocirun.Runtime{Name: "moat", Path: moatBinary(t), Flags: append([]string{"--log", e.log}, moatFlags()...)}
	e.moat = moat.At(filepath.Join(dir, "state"))
	must(t, os.Mkdir(e.bundle, 0o755))
	t.Cleanup(e.checkClean)
	return e
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// config writes the bundle's config.json for args.
func (e *env) config(args ...string) {
	e.writeSpec(specs.Spec{
		Version:  specs.Version,
		Process:  &specs.Process{Args: args, Env: []string{"PATH=/bin"}, Cwd: "/"},
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "moat-integration",
	})
}

// setCwd changes the process's working directory in config.json.
func (e *env) setCwd(cwd string) {
	spec, err := ocirun.ReadSpec(e.bundle)
	must(e.t, err)
	spec.Process.Cwd = cwd
	e.writeSpec(*spec)
}

func (e *env) writeSpec(spec specs.Spec) {
	must(e.t, ocirun.WriteSpec(e.bundle, &spec))
}

// moatCmd runs moat with the env's global flags; stdin is empty. Output
// goes through files (ocirun.Output): a created container's sentry keeps
// the CLI's stdout and stderr as the guest's, so pipes would not see EOF.
func (e *env) moatCmd(args ...string) (stdout, stderr string, code int) {
	e.t.Helper()
	out := newOutput(e.t)
	x := ocirun.Run(context.Background(), e.moat.Command(args...), out.Stdio(), ocirun.Limits{})
	if x.StartErr != nil {
		e.t.Fatalf("run moat %v: %v", args, x.StartErr)
	}
	stdout, stderr, err := out.Read()
	must(e.t, err)
	return stdout, stderr, x.Code
}

// newOutput is an ocirun.Output in a directory of the test's, closed when
// the test ends.
func newOutput(t *testing.T) *ocirun.Output {
	t.Helper()
	out, err := ocirun.NewOutput(t.TempDir())
	must(t, err)
	t.Cleanup(func() { out.Close() })
	return out
}

// state returns `moat state id` parsed.
func (e *env) state(id string) specs.State {
	e.t.Helper()
	st, err := e.moat.State(id)
	if err != nil {
		e.t.Fatal(err)
	}
	if st.Pid != 0 {
		e.pids = append(e.pids, st.Pid)
	}
	return st
}

// waitStatus polls until id reaches status or the deadline passes.
func (e *env) waitStatus(id string, want specs.ContainerState) specs.State {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := e.state(id)
		if st.Status == want || time.Now().After(deadline) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runSleeper starts container c detached, its process sleeping 30 s,
// kills and deletes it when the test ends, and returns its sentry's pid
// once it runs.
func (e *env) runSleeper() int {
	e.t.Helper()
	e.config("sleep", "30")
	if _, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "--detach", "c"); code != 0 {
		e.t.Fatalf("run --detach: exit %d: %s", code, errOut)
	}
	e.t.Cleanup(func() {
		e.moatCmd("kill", "c", "KILL")
		e.waitStatus("c", specs.StateStopped)
		e.moatCmd("delete", "c")
	})
	return e.waitStatus("c", specs.StateRunning).Pid
}

// checkClean asserts that nothing of moat is left: no state, no sentry this
// test saw, no gofer serving its bundle.
func (e *env) checkClean() {
	entries, _ := os.ReadDir(e.moat.Dir)
	for _, ent := range entries {
		e.t.Errorf("left behind under --root: %s", ent.Name())
	}
	for _, pid := range e.pids {
		if args := cmdline(pid); len(args) >= 2 && args[1] == "boot" {
			e.t.Errorf("sentry %d left behind", pid)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		var pid int
		fmt.Sscan(filepath.Base(p), &pid)
		args := cmdline(pid)
		if len(args) >= 2 && args[1] == "gofer" && strings.Contains(strings.Join(args, " "), e.bundle) {
			e.t.Errorf("gofer %d left behind: %v", pid, args)
		}
	}
}

// cmdline returns a process's arguments, or nil if it is gone.
func cmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}
