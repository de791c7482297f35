package ocirun

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunReportsExitStatusAndSignal(t *testing.T) {
	x := Run(context.Background(), exec.Command("sh", "-c", "exit 3"), Stdio{}, Limits{})
	if x.Code != 3 || x.Signal != 0 || x.Err() == nil || x.Err().Error() != "exit status 3" {
		t.Errorf("exit 3: %+v, Err %v", x, x.Err())
	}
	x = Run(context.Background(), exec.Command("sh", "-c", "kill -SEGV $$"), Stdio{}, Limits{})
	if x.Code != -1 || x.Signal != syscall.SIGSEGV || x.Err() == nil || !strings.HasPrefix(x.Err().Error(), "signal: segmentation fault") {
		t.Errorf("SIGSEGV: %+v, Err %v", x, x.Err())
	}
	x = Run(context.Background(), exec.Command("true"), Stdio{}, Limits{Timeout: time.Minute})
	if x.Code != 0 || x.Err() != nil || x.TimedOut || x.Took <= 0 {
		t.Errorf("true: %+v, Err %v", x, x.Err())
	}
}

func TestRunThatCannotStartSaysWhy(t *testing.T) {
	x := Run(context.Background(), exec.Command(filepath.Join(t.TempDir(), "none")), Stdio{}, Limits{})
	if x.StartErr == nil || x.Err() != x.StartErr || x.Code != -1 {
		t.Errorf("Run of a missing binary = %+v", x)
	}
}

func TestRunFeedsStdinAndWriters(t *testing.T) {
	var out, errOut strings.Builder
	x := Run(context.Background(), exec.Command("sh", "-c", "cat; echo oops >&2"),
		Stdio{Stdin: strings.NewReader("in\n"), Stdout: &out, Stderr: &errOut}, Limits{})
	if x.Err() != nil || out.String() != "in\n" || errOut.String() != "oops\n" {
		t.Errorf("got %v, stdout %q, stderr %q", x.Err(), out.String(), errOut.String())
	}
}

// groupScript starts a child in the background, records both pids, and
// waits; TERM reaches the shell alone and is ignored.
const groupScript = `trap '' TERM; sleep 600 & echo $$ $! > "$0"; wait`

// startedPids reads the pids groupScript recorded in file.
func startedPids(t *testing.T, file string) []int {
	t.Helper()
	for range 500 {
		if data, err := os.ReadFile(file); err == nil && strings.HasSuffix(string(data), "\n") {
			var pids []int
			for _, f := range strings.Fields(string(data)) {
				pid, err := strconv.Atoi(f)
				if err != nil {
					t.Fatal(err)
				}
				pids = append(pids, pid)
			}
			return pids
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the script never started")
	return nil
}

// expectGone checks that pids end: each is killed or a zombie (an orphan
// waits for its new parent to reap it) within a second.
func expectGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		deadline := time.Now().Add(time.Second)
		for Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if Alive(pid) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("process %d outlived the run", pid)
		}
	}
}

func TestRunTimeoutCallsStopThenKillsTheProcessGroup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pids")
	var cmd *exec.Cmd
	stops := 0
	cmd = exec.Command("sh", "-c", groupScript, file)
	x := Run(context.Background(), cmd, Stdio{}, Limits{
		Timeout: 300 * time.Millisecond,
		Stop:    func() { stops++; cmd.Process.Signal(syscall.SIGTERM) },
		Grace:   100 * time.Millisecond,
	})
	if stops != 1 || !x.TimedOut || !x.Forced || x.Signal != syscall.SIGKILL {
		t.Errorf("Run = %+v after %d stops; want one Stop, then forced with SIGKILL", x, stops)
	}
	expectGone(t, startedPids(t, file))
}

func TestRunWithoutStopKillsTheGroupAtOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pids")
	start := time.Now()
	x := Run(context.Background(), exec.Command("sh", "-c", groupScript, file), Stdio{}, Limits{Timeout: 300 * time.Millisecond})
	if !x.TimedOut || !x.Forced || time.Since(start) > 10*time.Second {
		t.Errorf("Run = %+v after %v", x, time.Since(start))
	}
	expectGone(t, startedPids(t, file))
}

func TestRunEndsWithItsContext(t *testing.T) {
	file := filepath.Join(t.TempDir(), "pids")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		startedPids(t, file)
		cancel()
	}()
	x := Run(ctx, exec.Command("sh", "-c", groupScript, file), Stdio{}, Limits{Timeout: time.Minute})
	if x.TimedOut || !x.Forced || x.Signal != syscall.SIGKILL {
		t.Errorf("Run = %+v, want it killed, not timed out", x)
	}
	expectGone(t, startedPids(t, file))
}

func TestRunGoesOnOnceTheStoppedProcessExits(t *testing.T) {
	var cmd *exec.Cmd
	cmd = exec.Command("sleep", "600")
	start := time.Now()
	x := Run(context.Background(), cmd, Stdio{}, Limits{
		Timeout: 100 * time.Millisecond,
		Stop:    func() { cmd.Process.Signal(syscall.SIGTERM) },
		Grace:   time.Minute,
	})
	if !x.TimedOut || x.Forced || x.Signal != syscall.SIGTERM || time.Since(start) > 30*time.Second {
		t.Errorf("Run = %+v after %v; want it ended by Stop's SIGTERM, without the grace", x, time.Since(start))
	}
}

func TestRunKeepsTheCallersProcessAttributes(t *testing.T) {
	cmd := exec.Command("sh", "-c", `kill -0 "$PPID"`)
	// Pdeathsig is one attribute Run has no reason to touch.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	Run(context.Background(), cmd, Stdio{}, Limits{})
	if cmd.SysProcAttr.Pdeathsig != syscall.SIGKILL || !cmd.SysProcAttr.Setpgid {
		t.Errorf("SysProcAttr = %+v, want Pdeathsig kept and Setpgid set", cmd.SysProcAttr)
	}
}

func TestRunPutsTheProcessInAGroupOfItsOwn(t *testing.T) {
	var out strings.Builder
	// Field 5 of stat(5) is the process group; cat's is its shell's.
	x := Run(context.Background(), exec.Command("sh", "-c", `echo $$; cat /proc/self/stat`), Stdio{Stdout: &out}, Limits{})
	lines := strings.Split(out.String(), "\n")
	if x.Err() != nil || len(lines) < 2 {
		t.Fatalf("%v: %q", x.Err(), out.String())
	}
	stat := lines[1][strings.LastIndex(lines[1], ")")+2:]
	if f := strings.Fields(stat); len(f) < 3 || f[2] != lines[0] {
		t.Errorf("the shell %s runs in process group %q", lines[0], f[2])
	}
}

func TestRunPassesStdioAndNothingElse(t *testing.T) {
	// Opened without close-on-exec, as a descriptor inherited from a
	// parent is.
	fd, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	script := fmt.Sprintf(`[ -e /proc/$$/fd/%d ] && exit 1; [ -e /proc/$$/fd/2 ]`, fd)
	if x := Run(context.Background(), exec.Command("sh", "-c", script), Stdio{Stderr: io.Discard}, Limits{}); x.Code != 0 {
		t.Errorf("the process got descriptor %d, or lost its stdio: %v", fd, x.Err())
	}
}

func TestOutputResetEmptiesBothFiles(t *testing.T) {
	out, err := NewOutput(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	for _, run := range []string{"echo first; echo first >&2", "echo 2nd; echo 2nd >&2"} {
		if err := out.Reset(); err != nil {
			t.Fatal(err)
		}
		if x := Run(context.Background(), exec.Command("sh", "-c", run), out.Stdio(), Limits{}); x.Err() != nil {
			t.Fatal(x.Err())
		}
	}
	if stdout, stderr, err := out.Read(); err != nil || stdout != "2nd\n" || stderr != "2nd\n" {
		t.Errorf("after two runs: %q, %q, %v; want the second run's alone", stdout, stderr, err)
	}
}

func TestAliveIsFalseForAZombie(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Not waited for: once it has exited it is a zombie until Wait.
	deadline := time.Now().Add(10 * time.Second)
	for Alive(cmd.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if Alive(cmd.Process.Pid) {
		t.Errorf("exited process %d, not yet reaped, counts as alive", cmd.Process.Pid)
	}
	cmd.Wait()
	if Alive(cmd.Process.Pid) {
		t.Errorf("reaped process %d counts as alive", cmd.Process.Pid)
	}
}
