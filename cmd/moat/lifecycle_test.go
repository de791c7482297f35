package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/state"
)

func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	bundle := writeBundle(t, "sleep")
	pidFile := filepath.Join(t.TempDir(), "pid")

	if r := e.ok("create", "--bundle", bundle, "--pid-file", pidFile, "c1"); r.stdout != "" || r.stderr != "" {
		t.Errorf("create printed %q %q", r.stdout, r.stderr)
	}
	created := e.expectStatus("c1", "created")
	if data, err := os.ReadFile(pidFile); err != nil || string(data) != strconv.Itoa(created.PID) {
		t.Errorf("pid file holds %q (%v), want %d", data, err, created.PID)
	}
	if !processAlive(created.PID) {
		t.Errorf("pid %d of the created container does not run", created.PID)
	}
	if created.Bundle != bundle || created.Rootfs != filepath.Join(bundle, "rootfs") ||
		created.Annotations["org.example.key"] != "value" || created.OCIVersion == "" ||
		time.Since(created.Created) > time.Minute {
		t.Errorf("state: %+v", created)
	}
	if _, err := os.Stat(filepath.Join(e.root, "c1", "control.sock")); err != nil {
		t.Errorf("control socket: %v", err)
	}

	e.ok("start", "c1")
	running := e.expectStatus("c1", "running")
	if running.PID != created.PID {
		t.Errorf("pid changed on start: %d, then %d", created.PID, running.PID)
	}

	e.ok("kill", "c1", "KILL")
	stopped := e.expectStatus("c1", "stopped")
	if stopped.PID != 0 {
		t.Errorf("stopped container has pid %d, want 0", stopped.PID)
	}
	if processAlive(created.PID) {
		t.Errorf("sentry %d still runs after kill KILL", created.PID)
	}

	e.ok("delete", "c1")
	e.expectNothingLeft()
}

func TestFlagsAfterTheID(t *testing.T) {
	// containerd calls `create --bundle B --pid-file P ID`; runc also takes
	// the options after the id.
	e := newEnv(t)
	bundle := writeBundle(t, "sleep")
	pidFile := filepath.Join(t.TempDir(), "pid")
	e.ok("create", "c1", "--bundle", bundle, "--pid-file", pidFile)
	if _, err := os.Stat(pidFile); err != nil {
		t.Error(err)
	}
	e.ok("kill", "c1", "KILL", "--all")
	e.ok("delete", "c1", "-f")
}

func TestCreateDuplicateID(t *testing.T) {
	e := newEnv(t)
	bundle := writeBundle(t, "sleep")
	e.ok("create", "-b", bundle, "c1")
	before := e.state("c1")
	e.fails("container with id exists: c1", "create", "-b", bundle, "c1")
	after := e.expectStatus("c1", "created")
	if after.PID != before.PID || !processAlive(before.PID) {
		t.Errorf("the existing container changed: %+v, then %+v", before, after)
	}
}

func TestUnknownContainer(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{
		{"start", "nope"}, {"state", "nope"}, {"kill", "nope"}, {"kill", "nope", "KILL"}, {"delete", "nope"},
	} {
		e.fails("container does not exist", args...)
	}
	// As runc: a forced delete of what does not exist succeeds quietly.
	if r := e.ok("delete", "--force", "nope"); r.stderr != "" {
		t.Errorf("delete --force of an unknown id printed %q", r.stderr)
	}
}

func TestInvalidIDCreatesNothing(t *testing.T) {
	e := newEnv(t)
	bundle := writeBundle(t, "sleep")
	for _, id := range []string{"../escape", "a/b", ".."} {
		e.fails("invalid container ID format", "create", "-b", bundle, id)
		e.fails("invalid container ID format", "delete", "--force", id)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.root), "escape")); !os.IsNotExist(err) {
		t.Errorf("an id escaped the root: %v", err)
	}
}

func TestStartOnlyFromCreated(t *testing.T) {
	e := newEnv(t)
	e.ok("create", "-b", writeBundle(t, "sleep"), "c1")
	e.ok("start", "c1")
	e.fails("cannot start an already running container", "start", "c1")
	e.ok("kill", "c1", "9")
	e.fails("cannot start a container that has stopped", "start", "c1")
}

func TestKill(t *testing.T) {
	e := newEnv(t)
	e.ok("create", "-b", writeBundle(t, "sleep"), "c1")
	e.ok("start", "c1")
	e.fails(`unknown signal "FOO"`, "kill", "c1", "FOO")
	e.ok("kill", "c1", "0") // as kill(2): checks, delivers nothing
	e.expectStatus("c1", "running")
	pid := e.state("c1").PID
	e.ok("kill", "c1") // SIGTERM by default: the fake's init dies of it
	waitUntil(t, "the sentry exits", func() bool { return !processAlive(pid) })
	e.expectStatus("c1", "stopped")
	e.fails("container not running", "kill", "c1", "KILL")
	e.ok("delete", "c1")
}

func TestKillACreatedContainer(t *testing.T) {
	e := newEnv(t)
	e.ok("create", "-b", writeBundle(t, "sleep"), "c1")
	e.ok("kill", "c1", "sigkill")
	e.expectStatus("c1", "stopped")
	e.ok("delete", "c1")
}

func TestKillFallsBackToTheHost(t *testing.T) {
	// A sentry that no longer answers on its control socket must still die of
	// kill KILL.
	e := newEnv(t)
	e.ok("create", "-b", writeBundle(t, "sleep"), "c1")
	e.ok("start", "c1")
	pid := e.state("c1").PID
	if err := os.Remove(filepath.Join(e.root, "c1", "control.sock")); err != nil {
		t.Fatal(err)
	}
	e.fails("control socket", "kill", "c1", "TERM")
	e.ok("kill", "c1", "KILL")
	if processAlive(pid) {
		t.Errorf("sentry %d survived kill KILL", pid)
	}
	e.expectStatus("c1", "stopped")
}

func TestDeleteRunningNeedsForce(t *testing.T) {
	e := newEnv(t)
	e.ok("create", "-b", writeBundle(t, "sleep"), "c1")
	e.ok("start", "c1")
	e.fails("cannot delete container c1 that is not stopped: running", "delete", "c1")
	pid := e.expectStatus("c1", "running").PID
	if !processAlive(pid) {
		t.Fatalf("a refused delete stopped the container")
	}
	e.ok("delete", "--force", "c1")
	if processAlive(pid) {
		t.Errorf("sentry %d survived delete --force", pid)
	}
	e.expectNothingLeft()
}

func TestDeleteACreatedContainer(t *testing.T) {
	// runc deletes a created container without --force, killing it first.
	e := newEnv(t)
	e.ok("create", "-b", writeBundle(t, "sleep"), "c1")
	pid := e.state("c1").PID
	e.ok("delete", "c1")
	if processAlive(pid) {
		t.Errorf("sentry %d survived the delete", pid)
	}
	e.expectNothingLeft()
}

func TestDeleteAfterAnInterruptedCreate(t *testing.T) {
	// A create killed while the sentry sets up leaves a creating record that
	// names both processes, so that delete can still clean up.
	e := newEnv(t)
	create := e.command("create", "-b", writeBundle(t, "hang"), "c1")
	if err := create.Start(); err != nil {
		t.Fatal(err)
	}
	// The first record names only the cgroup; the next, both processes.
	waitUntil(t, "create records its processes", func() bool {
		var record state.Container
		data, err := os.ReadFile(filepath.Join(e.root, "c1", "state.json"))
		return err == nil && json.Unmarshal(data, &record) == nil && record.Sentry.PID != 0
	})
	create.Process.Kill()
	create.Wait()
	// The sentry may or may not have read its setup before the CLI died.
	if s := e.state("c1").Status; s != "creating" && s != "stopped" {
		t.Errorf("status after an interrupted create: %s", s)
	}
	var record state.Container
	data, _ := os.ReadFile(filepath.Join(e.root, "c1", "state.json"))
	if err := json.Unmarshal(data, &record); err != nil || !processAlive(record.Gofer.PID) {
		t.Fatalf("the creating record does not name the running gofer: %s, %v", data, err)
	}
	e.ok("delete", "c1")
	e.expectNothingLeft()
}

func TestRunExitStatus(t *testing.T) {
	e := newEnv(t)
	if r := e.moat("run", "-b", writeBundle(t, "exit", "7"), "c1"); r.code != 7 || r.stderr != "" {
		t.Errorf("run of a program exiting 7: exit %d, stderr %q", r.code, r.stderr)
	}
	e.expectNothingLeft()
	if r := e.moat("run", "-b", writeBundle(t, "seccompkill"), "c2"); r.code != 128+int(syscall.SIGSYS) ||
		!strings.Contains(r.stderr, "seccomp") {
		t.Errorf("run of a sentry killed by its seccomp filter: exit %d, stderr %q; want %d and a word of seccomp",
			r.code, r.stderr, 128+int(syscall.SIGSYS))
	}
	e.expectNothingLeft()
	if r := e.moat("run", "-b", writeBundle(t, "echo", "hello", "world"), "c3"); r.code != 0 || r.stdout != "hello world\n" {
		t.Errorf("run echo: exit %d, stdout %q", r.code, r.stdout)
	}
	e.expectNothingLeft()
}

func TestRunKeep(t *testing.T) {
	e := newEnv(t)
	if r := e.moat("run", "--keep", "-b", writeBundle(t, "exit", "3"), "c1"); r.code != 3 {
		t.Fatalf("run --keep: exit %d, stderr %q", r.code, r.stderr)
	}
	e.expectStatus("c1", "stopped")
	e.ok("delete", "c1")
}

func TestRunDetached(t *testing.T) {
	e := newEnv(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	e.ok("run", "-d", "--pid-file", pidFile, "-b", writeBundle(t, "sleep"), "c1")
	s := e.expectStatus("c1", "running")
	if data, _ := os.ReadFile(pidFile); string(data) != strconv.Itoa(s.PID) {
		t.Errorf("pid file %q, want %d", data, s.PID)
	}
	e.ok("delete", "-f", "c1")
}

func TestRunForwardsSignals(t *testing.T) {
	e := newEnv(t)
	run := e.command("run", "-b", writeBundle(t, "sleep"), "c1")
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the container runs", func() bool {
		r := e.moat("state", "c1")
		return r.code == 0 && e.state("c1").Status == "running"
	})
	// run holds no lock while it waits: others can inspect the container.
	run.Process.Signal(syscall.SIGUSR1)
	err := run.Wait()
	if code := run.ProcessState.ExitCode(); code != 128+int(syscall.SIGUSR1) {
		t.Errorf("run after SIGUSR1: %v, exit %d, want %d", err, code, 128+int(syscall.SIGUSR1))
	}
	e.expectNothingLeft()
}

func TestRunRefusesAConsoleSocketInTheForeground(t *testing.T) {
	e := newEnv(t)
	e.fails("cannot use console socket if moat will not detach or allocate tty",
		"run", "--console-socket", "/nonexistent", "-b", writeBundle(t, "sleep"), "c1")
}

func TestRunServesTheTerminal(t *testing.T) {
	// In the foreground with terminal:true, run gives the sentry a terminal
	// and copies its output to the CLI's stdout, here a file.
	e := newEnv(t)
	bundle := writeBundleConfig(t, strings.Replace(bundleConfig("echo", "hello"), `"cwd"`, `"terminal": true, "cwd"`, 1))
	r := e.moat("run", "-b", bundle, "c1")
	if r.code != 0 || r.stdout != "hello\r\n" {
		t.Errorf("run with a terminal: exit %d, stdout %q, stderr %q; want hello\\r\\n from the terminal", r.code, r.stdout, r.stderr)
	}
	e.expectNothingLeft()
}
