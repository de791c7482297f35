package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// TestLifecycle drives a guest running `sleep 30` through create, start,
// state, kill and delete, as runc's users do.
func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	e.config("sleep", "30")
	pidFile := filepath.Join(t.TempDir(), "pid")
	if _, errOut, code := e.moatCmd("create", "--bundle", e.bundle, "--pid-file", pidFile, "c1"); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	st := e.state("c1")
	if st.Status != specs.StateCreated {
		t.Fatalf("after create: status %q, want created", st.Status)
	}
	b, err := os.ReadFile(pidFile)
	must(t, err)
	if pid, _ := strconv.Atoi(string(b)); pid != st.Pid || pid == 0 {
		t.Fatalf("pid file says %q, state says %d", b, st.Pid)
	}
	if args := cmdline(st.Pid); len(args) < 2 || args[1] != "boot" {
		t.Fatalf("the container's pid %d is not the sentry: %v", st.Pid, args)
	}

	if _, errOut, code := e.moatCmd("start", "c1"); code != 0 {
		t.Fatalf("start: exit %d: %s", code, errOut)
	}
	if st := e.state("c1"); st.Status != specs.StateRunning {
		t.Fatalf("after start: status %q, want running", st.Status)
	}

	// Init has no handler for SIGTERM: as under runc, it is ignored.
	if _, errOut, code := e.moatCmd("kill", "c1", "TERM"); code != 0 {
		t.Fatalf("kill TERM: exit %d: %s", code, errOut)
	}
	time.Sleep(200 * time.Millisecond)
	if st := e.state("c1"); st.Status != specs.StateRunning {
		t.Fatalf("after SIGTERM: status %q, want running (init ignores it)", st.Status)
	}

	if _, errOut, code := e.moatCmd("kill", "c1", "KILL"); code != 0 {
		t.Fatalf("kill KILL: exit %d: %s", code, errOut)
	}
	if st := e.waitStatus("c1", specs.StateStopped); st.Status != specs.StateStopped {
		t.Fatalf("after SIGKILL: status %q, want stopped", st.Status)
	}
	if _, errOut, code := e.moatCmd("delete", "c1"); code != 0 {
		t.Fatalf("delete: exit %d: %s", code, errOut)
	}
	if _, errOut, code := e.moatCmd("state", "c1"); code == 0 || !strings.Contains(errOut, "does not exist") {
		t.Fatalf("state after delete: exit %d, %q", code, errOut)
	}
}

// TestRunExitStatus: `moat run` exits with the guest's status, 128+N for a
// guest killed by signal N.
func TestRunExitStatus(t *testing.T) {
	e := newEnv(t)
	e.config("sh", "-c", "exit 3")
	if _, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "r1"); code != 3 {
		t.Fatalf("sh -c 'exit 3': exit %d, want 3 (%s)", code, errOut)
	}
	e.config("true")
	if _, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "r2"); code != 0 {
		t.Fatalf("true: exit %d (%s)", code, errOut)
	}
}

// TestRunStdio: the guest reads the caller's stdin and writes its stdout.
func TestRunStdio(t *testing.T) {
	e := newEnv(t)
	e.config("cat")
	cmd := e.moat.Command("run", "--bundle", e.bundle, "io1")
	cmd.Stdin = strings.NewReader("through the sandbox\n")
	out, err := cmd.Output()
	if err != nil || string(out) != "through the sandbox\n" {
		t.Fatalf("cat: %q, %v", out, err)
	}
}

// TestRunStdoutFileShared: stdout redirected to a file is one open file
// description shared by the caller and the guest, as it is for any child
// process: what the guest writes lands after what the caller wrote, and the
// caller's next write lands after the guest's.
func TestRunStdoutFileShared(t *testing.T) {
	e := newEnv(t)
	e.config("echo", "from the guest")
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	must(t, err)
	defer f.Close()
	_, err = f.WriteString("before\n")
	must(t, err)
	cmd := e.moat.Command("run", "--bundle", e.bundle, "io2")
	cmd.Stdout = f
	if err := cmd.Run(); err != nil {
		t.Fatalf("echo: %v", err)
	}
	_, err = f.WriteString("after\n")
	must(t, err)
	got, err := os.ReadFile(f.Name())
	must(t, err)
	if want := "before\nfrom the guest\nafter\n"; string(got) != want {
		t.Fatalf("stdout file holds %q, want %q", got, want)
	}
}
