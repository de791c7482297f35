package conformance

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// testProgram makes a Program from C source written for one test.
func testProgram(t *testing.T, file, src string) Program {
	t.Helper()
	p, err := parseProgram(file, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// failing fails one check, everywhere.
const failingSource = `/* Fails on purpose. */
// covers: getpid
#include "check.h"
int main(int argc, char **argv)
{
	check_init(argc, argv);
	CHECK_EQ(1 + 1, 3);
	CHECK_ERR(close(-1), ENOENT);
	return check_finish();
}
`

// hanging returns natively but never ends in a container.
const hangingSource = `/* Hangs in a container. */
// covers: nanosleep
#include "check.h"
#include <time.h>
int main(int argc, char **argv)
{
	struct timespec ts = { 1000, 0 };

	check_init(argc, argv);
	while (!check_native)
		nanosleep(&ts, NULL);
	return check_finish();
}
`

func TestFailureLines(t *testing.T) {
	requireGCC(t)
	e := prepare(t, Options{Programs: []Program{testProgram(t, "test_failing.c", failingSource)}})
	results, err := e.RunPrograms(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := results[0]
	want := "test_failing.c:7: expected 1 + 1 == 3, got 2"
	if r.Status != Fail || r.Reason != want {
		t.Errorf("got %s %q, want FAIL %q", r.Status, r.Reason, want)
	}
	lines := strings.Split(strings.TrimSpace(r.Native.Stderr), "\n")
	want = "test_failing.c:8: expected close(-1) to fail with ENOENT, got -1 (EBADF)"
	if len(lines) != 2 || lines[1] != want {
		t.Errorf("stderr %q, want a second line %q", r.Native.Stderr, want)
	}
	if r.Native.ExitCode != 1 {
		t.Errorf("exit status %d, want 1", r.Native.ExitCode)
	}
}

func TestBrokenUnderRuntime(t *testing.T) {
	runc := requireRunc(t)
	e := prepare(t, Options{Programs: []Program{testProgram(t, "test_failing.c", failingSource)}})
	results, err := e.RunPrograms(context.Background(), runc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := results[0]; r.Status != Broken || !strings.HasPrefix(r.Reason, "fails natively: test_failing.c:7:") {
		t.Errorf("got %s", r.Line())
	}
}

// runningContainer polls the runtime's state root until a container is
// running and returns its init's host pid, or 0 if none runs within 10 s.
// It runs beside RunPrograms, so it reports instead of failing the test.
func runningContainer(e *Env, rt *Runtime) int {
	r := rt.At(e.state)
	for range 500 {
		ids, _ := r.List()
		for _, id := range ids {
			if st, err := r.State(id); err == nil && st.Status == specs.StateRunning && st.Pid > 0 {
				return st.Pid
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0
}

// expectNothingLeft checks that no container is listed and that pid, the
// container's init seen while it ran, is gone.
func expectNothingLeft(t *testing.T, e *Env, rt *Runtime, pid int) {
	t.Helper()
	if pid == 0 {
		t.Fatal("the container was never seen running")
	}
	if ids, err := rt.At(e.state).List(); err != nil || len(ids) > 0 {
		t.Errorf("runtime still lists containers: %q (%v)", ids, err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("container process %d still exists (kill 0: %v)", pid, err)
	}
}

func TestTimeoutKillsContainer(t *testing.T) {
	runc := requireRunc(t)
	e := prepare(t, Options{
		Programs: []Program{testProgram(t, "test_hanging.c", hangingSource)},
		Timeout:  2 * time.Second,
	})
	pids := make(chan int, 1)
	go func() { pids <- runningContainer(e, runc) }()
	results, err := e.RunPrograms(context.Background(), runc, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := results[0]; r.Status != Fail || r.Reason != "timed out after 2s" {
		t.Errorf("got %s", r.Line())
	}
	expectNothingLeft(t, e, runc, <-pids)
}

func TestCancelKillsContainer(t *testing.T) {
	runc := requireRunc(t)
	e := prepare(t, Options{Programs: []Program{testProgram(t, "test_hanging.c", hangingSource)}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pids := make(chan int, 1)
	go func() {
		pid := runningContainer(e, runc)
		cancel()
		pids <- pid
	}()
	results, err := e.RunPrograms(ctx, runc, nil)
	if !errors.Is(err, context.Canceled) || len(results) != 0 {
		t.Fatalf("got %d results and error %v, want none and context.Canceled", len(results), err)
	}
	expectNothingLeft(t, e, runc, <-pids)
}

func TestVerdict(t *testing.T) {
	e := &Env{timeout: time.Second}
	pass := &Outcome{}
	fail := &Outcome{ExitCode: 1, Stderr: "x.c:1: expected a\nx.c:2: expected b\n"}
	crash := &Outcome{ExitCode: -1, Signal: "segmentation fault"}
	hang := &Outcome{ExitCode: -1, TimedOut: true, Stderr: "x.c:1: expected a\n"}
	for _, tc := range []struct {
		native, runtime *Outcome
		status          Status
		reason          string
	}{
		{pass, nil, Pass, ""},
		{fail, nil, Fail, "x.c:1: expected a"},
		{pass, pass, Pass, ""},
		{pass, fail, Fail, "x.c:1: expected a"},
		{pass, crash, Fail, "killed by signal: segmentation fault"},
		{pass, hang, Fail, "timed out after 1s"},
		{fail, pass, Broken, "fails natively: x.c:1: expected a"},
		{&Outcome{ExitCode: 3}, pass, Broken, "fails natively: exit status 3"},
		{pass, &Outcome{ExitCode: 139}, Fail, "exit status 139 (signal: segmentation fault?)"},
	} {
		status, reason := e.verdict(tc.native, tc.runtime)
		if status != tc.status || reason != tc.reason {
			t.Errorf("verdict(%+v, %+v) = %s %q, want %s %q", tc.native, tc.runtime, status, reason, tc.status, tc.reason)
		}
	}
}

// TestRuntimeNotFound checks that a runtime that is not there is an error
// up front, not a FAIL per program.
func TestRuntimeNotFound(t *testing.T) {
	for _, name := range []string{"/nonexistent/runtime", "no-such-runtime-binary"} {
		if _, err := ResolveRuntime(name, "", nil); err == nil {
			t.Errorf("ResolveRuntime(%q) succeeded", name)
		}
	}
	if _, err := exec.LookPath("runsc"); err != nil {
		if _, err := ResolveRuntime("runsc", "", nil); err == nil {
			t.Error("ResolveRuntime(runsc) succeeded without runsc on PATH")
		}
	}
	rt, err := ResolveRuntime("runsc", "/bin/true", []string{"--debug"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(rt.Flags, " ") != "--network=none --debug" {
		t.Errorf("runsc flags %q", rt.Flags)
	}
}
