package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the command: with this variable set it runs
// main, so that tests can signal a real runner process.
const runMainEnv = "MOAT_CONFORMANCE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// fakeRuntime is a runtime whose containers never end by themselves: `run`
// records its pid and sleeps; `kill` kills it only if KILL_WORKS is yes,
// standing in for a runtime that hangs. Every call is logged.
const fakeRuntime = `#!/bin/sh
echo "$*" >> "$DIR/log"
case "$3" in
run)
	echo $$ > "$DIR/pid.tmp" && mv "$DIR/pid.tmp" "$DIR/pid"
	exec sleep 600 ;;
kill)
	[ "$KILL_WORKS" = yes ] && kill -9 "$(cat "$DIR/pid")" ;;
esac
exit 0
`

// TestInterruptCleansUp sends SIGINT while a container runs and checks
// that the runner kills and deletes it, removes its temporary files and
// exits 128+SIGINT, also when the runtime ignores the kill.
func TestInterruptCleansUp(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("the conformance programs are built with gcc, which is not on PATH")
	}
	for name, killWorks := range map[string]string{"kill_honoured": "yes", "kill_ignored": "no"} {
		// No '=' in the subtest name: it would end up in TMPDIR, and
		// gcc's linker plugin then loses track of its temporary files.
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tmp := filepath.Join(dir, "tmp")
			if err := os.Mkdir(tmp, 0o755); err != nil {
				t.Fatal(err)
			}
			script := filepath.Join(dir, "fake-runtime")
			if err := os.WriteFile(script, []byte(strings.ReplaceAll(fakeRuntime, "$DIR", dir)), 0o755); err != nil {
				t.Fatal(err)
			}

			// One program is enough (the runner is interrupted in its
			// first), and building the whole suite takes most of the test.
			cmd := exec.Command(os.Args[0], "--runtime", script, "--reference", "none", "--run", "^proc/ids$")
			cmd.Env = append(os.Environ(), runMainEnv+"=1", "TMPDIR="+tmp, "KILL_WORKS="+killWorks)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := waitForPid(t, filepath.Join(dir, "pid"))
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Fatal("the runner did not exit after SIGINT")
			}

			if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGINT) {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, 128+int(syscall.SIGINT), stderr.String())
			}
			if !strings.Contains(stderr.String(), "interrupted") {
				t.Errorf("stderr does not say the run was interrupted:\n%s", stderr.String())
			}
			if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Errorf("the container process %d survived (kill 0: %v)", pid, err)
			}
			checkLog(t, filepath.Join(dir, "log"))
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Errorf("temporary files left behind: %v", left)
			}
		})
	}
}

// waitForPid waits for the fake runtime to record the pid of its container.
func waitForPid(t *testing.T, file string) int {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(file); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no container was started")
	return 0
}

// checkLog checks that the container that was run was then killed and
// deleted.
func checkLog(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.Fields(line); len(f) == 6 && f[2] == "run" {
			id = f[5]
		}
	}
	log := string(data)
	if id == "" || !strings.Contains(log, " kill "+id+" KILL\n") || !strings.Contains(log, " delete --force "+id+"\n") {
		t.Errorf("runtime calls do not run, kill and delete one container:\n%s", log)
	}
}
