package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runMainEnv makes the test binary act as moat-bench, so that the tests
// drive the real command, signals and exit status included, without a
// separate build.
const runMainEnv = "MOAT_BENCH_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(run(os.Args))
	}
	os.Exit(m.Run())
}

// TestInterrupt starts a micro-benchmark that would run for ten minutes,
// sends SIGINT once its process runs, and checks that moat-bench exits
// non-zero, with the workload's processes gone and nothing left in $TMPDIR.
func TestInterrupt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: native runs chroot, and the bundle is not a rootless one")
	}
	for _, tool := range []string{"runc", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s in $PATH", tool)
		}
	}
	for _, rt := range []string{"runc", "native"} {
		t.Run(rt, func(t *testing.T) { testInterrupt(t, rt) })
	}
}

func testInterrupt(t *testing.T, runtime string) {
	tmp := t.TempDir()
	// An iteration count no other process has on its command line: it finds
	// this test's workload among the machine's processes.
	iterations := fmt.Sprint(1_000_000_000_000 + os.Getpid()*10 + len(runtime))
	cmd := exec.Command(os.Args[0], "--runtime", runtime, "--workload", "getppid", "--runs", "1",
		"--iterations", iterations, "--budget", "10m", "--timeout", "15m")
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "TMPDIR="+tmp)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	marker := "/bench/getppid\x00" + iterations + "\x00"
	deadline := time.Now().Add(time.Minute)
	for len(processesWith(marker)) == 0 {
		select {
		case err := <-exited:
			t.Fatalf("moat-bench ended before its workload ran: %v\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the workload did not start within a minute:\n%s", stderr.String())
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-exited:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		t.Fatalf("moat-bench did not exit within a minute of SIGINT:\n%s", stderr.String())
	}
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != exitInterrupted {
		t.Errorf("moat-bench exited with %v, want status %d\n%s", err, exitInterrupted, stderr.String())
	}
	if pids := processesWith(marker); len(pids) > 0 {
		t.Errorf("workload processes %v survived the interrupt", pids)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the interrupted session left %v in $TMPDIR", left)
	}
	// Container ids start moat-bench-<pid>; runc names the cgroups after them.
	for _, pattern := range []string{"/sys/fs/cgroup/moat-bench-%d-*", "/sys/fs/cgroup/*/moat-bench-%d-*"} {
		if left, _ := filepath.Glob(fmt.Sprintf(pattern, cmd.Process.Pid)); len(left) > 0 {
			t.Errorf("the interrupted session left cgroups %v", left)
		}
	}
	if mounts, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(mounts), tmp+"/") {
		t.Errorf("the interrupted session left mounts below %s", tmp)
	}
}

// processesWith returns the pids whose command line contains s, NULs
// separating the arguments.
func processesWith(s string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(s)) {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}

func TestReproducer(t *testing.T) {
	fs := flag.NewFlagSet("moat-bench", flag.ContinueOnError)
	fs.Int("runs", 0, "")
	fs.String("json", "", "")
	fs.String("rootfs", "", "")
	if err := fs.Parse([]string{"--runs", "3", "--json", "out.json", "--rootfs", "/srv/debian root"}); err != nil {
		t.Fatal(err)
	}
	reproduce := reproducer("bin/moat-bench", fs, "runc")
	if got, want := reproduce("moat", "getppid"), "bin/moat-bench --runtime runc,moat --workload getppid --rootfs '/srv/debian root' --runs 3"; got != want {
		t.Errorf("reproduce(moat) = %q, want %q", got, want)
	}
	if got, want := reproduce("runc", "run-true"), "bin/moat-bench --runtime runc --workload run-true --rootfs '/srv/debian root' --runs 3"; got != want {
		t.Errorf("reproduce(runc) = %q, want %q", got, want)
	}
}

func TestDensityCountsArePositiveNumbers(t *testing.T) {
	got, err := parseCounts("1, 10,50")
	if err != nil || fmt.Sprint(got) != "[1 10 50]" {
		t.Errorf("parseCounts(1, 10,50) = %v, %v", got, err)
	}
	if got, err := parseCounts(""); err != nil || got != nil {
		t.Errorf("parseCounts of nothing = %v, %v; want nil for the default", got, err)
	}
	for _, bad := range []string{"0", "-1", "ten", "1,,x"} {
		if _, err := parseCounts(bad); err == nil || !strings.Contains(err.Error(), "--density-counts") {
			t.Errorf("parseCounts(%q): %v, want an error naming the flag", bad, err)
		}
	}
}
