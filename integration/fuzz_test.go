package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// fuzzSeeds are the pinned runs of testdata/fuzz_syscalls.c, each with
// fuzzCalls random calls.
var fuzzSeeds = []uint64{1, 7, 12, 19}

const fuzzCalls = 60000

// fuzzTimeout is how long one run may take before it counts as hung.
const fuzzTimeout = 90 * time.Second

// sentryCrash matches what a Go program that dies prints: a panic, a fatal
// runtime error, goroutine traces.
var sentryCrash = regexp.MustCompile(`(?m)panic:|^fatal error:|^goroutine \d+ \[|runtime\.throw|SIGSEGV: segmentation violation`)

// TestGuestSyscallFuzz: no guest can crash the sentry. A guest that fires
// random calls with random arguments (testdata/fuzz_syscalls.c: it says
// what is left out and why) leaves the sentry serving, gets answers Linux
// could give, and a run after it works.
func TestGuestSyscallFuzz(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: moat needs root to run a sandbox")
	}
	if testing.Short() {
		t.Skip("-short: the fuzz run takes about 20 s")
	}
	e := newEnv(t)
	// No stack protector: the workers may move their own TLS, where the
	// canary lives.
	e.buildTestdata("fuzz_syscalls", "-fno-stack-protector")
	for _, seed := range fuzzSeeds {
		start := time.Now()
		e.writeSpec(fuzzSpec("/bin/fuzz_syscalls", strconv.FormatUint(seed, 10), strconv.Itoa(fuzzCalls)))
		id := fmt.Sprintf("fuzz%d", seed)
		stdout, stderr, code, hung := e.runWithTimeout(id, fuzzTimeout)
		log, _ := os.ReadFile(e.log)
		switch {
		case hung:
			t.Fatalf("seed %d: still running after %v: hung (the sentry's goroutines, if it answered SIGQUIT, are in its stderr):\n%s\n%s",
				seed, fuzzTimeout, stdout, tail(stderr, 20000))
		case sentryCrash.MatchString(stderr) || sentryCrash.Match(log):
			t.Fatalf("seed %d: the sentry crashed (exit %d):\nstderr:\n%s\nlog:\n%s", seed, code, tail(stderr, 20000), tail(string(log), 20000))
		case code != 0 || !strings.Contains(stdout, fmt.Sprintf("fuzz: %d calls, ", fuzzCalls)) || !strings.Contains(stdout, " OK\n"):
			t.Fatalf("seed %d: exit %d, want 0 and the OK line\nstdout:\n%s\nstderr:\n%s\nlog:\n%s", seed, code, stdout, tail(stderr, 20000), tail(string(log), 5000))
		}
		t.Logf("seed %d: %v\n%s", seed, time.Since(start).Round(time.Millisecond), stdout)
	}
	// The guest can report what it saw; the sentry's log says what it made
	// of it. A handler error that is not an errno reaches the guest as EIO
	// and is logged as "syscall N: ...": a bug, whichever call it was.
	log, err := os.ReadFile(e.log)
	must(t, err)
	if m := regexp.MustCompile(`msg="sentry: \[\d+\] syscall \d+: [^"]*"`).FindAllString(string(log), 10); len(m) > 0 {
		t.Errorf("handlers failed with errors that are not errnos:\n%s", strings.Join(m, "\n"))
	}
	// Nor may a guest lose its stub: the platform then kills the process,
	// which Linux would not have.
	if m := regexp.MustCompile(`msg="sentry: \[\d+\] platform: [^"]*"`).FindAllString(string(log), 10); len(m) > 0 {
		t.Errorf("guest threads lost by the platform:\n%s", strings.Join(m, "\n"))
	}

	// And the next sandbox works.
	e.writeSpec(fuzzSpec("/bin/echo", "after the fuzz"))
	if out, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "fuzz-after"); code != 0 || out != "after the fuzz\n" {
		t.Fatalf("a run after the fuzz: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// fuzzSpec is the fuzz's container: the busybox image read-only, /proc,
// and a small /tmp for the files the fuzzer makes.
func fuzzSpec(args ...string) specs.Spec {
	return specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{Args: args, Env: []string{"PATH=/bin"}, Cwd: "/"},
		Root:    &specs.Root{Path: "rootfs", Readonly: true},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"size=16m"}},
		},
		Hostname: "moat-fuzz",
	}
}

// TestFuzzFindings: what the fuzz found, once each, as Linux answers it
// (testdata/fuzz_findings.c says what; it passes under runc too). The fuzz
// run's threads make it vary from run to run; this does not.
func TestFuzzFindings(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: moat needs root to run a sandbox")
	}
	e := newEnv(t)
	e.buildTestdata("fuzz_findings", "-pthread")
	e.config("/bin/fuzz_findings")
	out, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "findings")
	if code != 0 || out != "OK\n" {
		t.Fatalf("exit %d (137: init was killed), stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// buildTestdata compiles testdata/<name>.c, static, into the bundle's /bin.
// Never run fuzz_syscalls on the host: it fires random calls at the kernel
// it runs on.
func (e *env) buildTestdata(name string, flags ...string) {
	e.t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		e.t.Skip("gcc is not installed (make test installs it): cannot build the guest program")
	}
	src, err := filepath.Abs(filepath.Join("testdata", name+".c"))
	must(e.t, err)
	out := filepath.Join(e.bundle, "rootfs/bin", name)
	args := append([]string{"-static", "-O1", "-Wall", "-o", out, src}, flags...)
	if b, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
		e.t.Fatalf("gcc: %v\n%s", err, b)
	}
}

// runWithTimeout is `moat run` that gives up after d: it then asks the
// sentry for its goroutines (SIGQUIT makes a Go program print them to its
// stderr, the guest's), kills what is left and deletes the container.
func (e *env) runWithTimeout(id string, d time.Duration) (stdout, stderr string, code int, hung bool) {
	e.t.Helper()
	out := newOutput(e.t)
	cmd := e.moat.Command("run", "--bundle", e.bundle, id)
	var sentries []int
	x := ocirun.Run(context.Background(), cmd, out.Stdio(), ocirun.Limits{
		Timeout: d,
		Stop: func() {
			sentries = childrenNamed(cmd.Process.Pid, "boot")
			for _, pid := range sentries {
				syscall.Kill(pid, syscall.SIGQUIT)
			}
		},
		Grace: 5 * time.Second,
	})
	if x.StartErr != nil {
		e.t.Fatalf("moat run %s: %v", id, x.StartErr)
	}
	if x.Forced {
		// A sentry is in a process group of its own, which the kill of
		// run's did not reach.
		for _, pid := range sentries {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if x.TimedOut {
		e.moat.Delete(id)
	}
	stdout, stderr, err := out.Read()
	must(e.t, err)
	return stdout, stderr, x.Code, x.TimedOut
}

// childrenNamed lists the children of pid that are `moat <role>`.
func childrenNamed(pid int, role string) []int {
	var out []int
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndex(s, ") ")
		if i < 0 {
			continue
		}
		var state string
		var ppid, child int
		fmt.Sscan(s[i+2:], &state, &ppid)
		fmt.Sscan(filepath.Base(filepath.Dir(p)), &child)
		if args := cmdline(child); ppid == pid && len(args) >= 2 && args[1] == role {
			out = append(out, child)
		}
	}
	return out
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
