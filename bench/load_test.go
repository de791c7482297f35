package bench

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestTheLoadRunsItsBusyProcessesUntilStopped starts two busy processes and
// checks that they are the shell loop, alive until stop, and reaped by it.
func TestTheLoadRunsItsBusyProcessesUntilStopped(t *testing.T) {
	if _, err := os.Stat(busyLoop[0]); err != nil {
		t.Skipf("needs %s: %v", busyLoop[0], err)
	}
	l, err := startLoad(2)
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, cmd := range l.cmds {
		pids = append(pids, cmd.Process.Pid)
	}
	if len(pids) != 2 {
		l.stop()
		t.Fatalf("startLoad(2) started %d processes", len(pids))
	}
	for _, pid := range pids {
		cmdline, err := execedCmdline(pid)
		if err != nil {
			t.Errorf("busy process %d is not running: %v", pid, err)
			continue
		}
		if got, want := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00"), busyLoop; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("busy process %d runs %q, want %q", pid, got, want)
		}
	}
	for _, pid := range pids {
		if sid, err := unix.Getsid(pid); err != nil || sid != pid {
			t.Errorf("busy process %d is in session %d (%v), want one of its own", pid, sid, err)
		}
	}
	if err := l.stop(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("busy process %d is still there after stop (stat: %v)", pid, err)
		}
	}
}

// TestOnlyLoadedWorkloadsGetASecondPassAndOnlyWithALoad pins which
// workloads are measured twice.
func TestOnlyLoadedWorkloadsGetASecondPassAndOnlyWithALoad(t *testing.T) {
	marked, unmarked := Workload{Name: "a", Loaded: true}, Workload{Name: "b"}
	for _, c := range []struct {
		load int
		w    Workload
		want int
	}{{0, marked, 1}, {0, unmarked, 1}, {2, marked, 2}, {2, unmarked, 1}} {
		s := &session{cfg: Config{Load: c.load}}
		if got := s.passes(c.w); got != c.want {
			t.Errorf("load %d, workload %s (Loaded %v): %d passes, want %d", c.load, c.w.Name, c.w.Loaded, got, c.want)
		}
	}
}

// TestTheLoadedPassHasItsOwnName checks that a loaded figure cannot be taken
// for the quiet one: another name, and a description that says so.
func TestTheLoadedPassHasItsOwnName(t *testing.T) {
	w := Workload{Name: "getppid", What: "system call round trip"}
	lw := w.loaded(2)
	if lw.Name != "getppid@load2" || lw.Name == w.Name {
		t.Errorf("loaded name %q, want getppid@load2", lw.Name)
	}
	if lw.resultName() != "getppid" || w.resultName() != "getppid" {
		t.Errorf("the loaded pass reads its program's result as %q, the quiet one as %q; want getppid for both", lw.resultName(), w.resultName())
	}
	if !strings.HasPrefix(lw.What, w.What) || !strings.Contains(lw.What, "2 busy processes") {
		t.Errorf("loaded description %q does not extend %q with the load", lw.What, w.What)
	}
}

// execedCmdline is pid's command line once its exec has set it up: Start
// returns when the exec closed the descriptors marked close-on-exec,
// which Linux does before it writes the new program's arguments, so for
// a moment the command line is empty.
func execedCmdline(pid int) ([]byte, error) {
	for i := 0; ; i++ {
		cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil || len(cmdline) > 0 || i == 5000 {
			return cmdline, err
		}
		time.Sleep(time.Millisecond)
	}
}
