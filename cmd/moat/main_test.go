package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cliEnv makes the test binary, run as a child of a test, be the moat CLI.
const cliEnv = "MOAT_TEST_CLI"

// TestMain lets the test binary be each process of a sandbox: re-executed
// by the CLI as `boot` or `gofer` (with nothing in the environment) it is
// the fake sentry or gofer; run by a test with cliEnv set, it is the CLI.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "boot":
			os.Exit(fakeSentry())
		case "gofer":
			os.Exit(fakeGofer(os.Args[2:]))
		}
	}
	if os.Getenv(cliEnv) == "1" {
		os.Exit(moatMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// testEnv is one test's state root, whose containers are force-deleted when
// the test ends; then nothing may be left under the root, nor any process
// of this binary but the test itself.
type testEnv struct {
	t    *testing.T
	root string
}

func newEnv(t *testing.T) *testEnv {
	e := &testEnv{t: t, root: filepath.Join(t.TempDir(), "root")}
	t.Cleanup(func() {
		entries, _ := os.ReadDir(e.root)
		for _, entry := range entries {
			e.moat("delete", "--force", entry.Name())
		}
		e.expectNothingLeft()
	})
	return e
}

type result struct {
	stdout, stderr string
	code           int
}

// moat runs the CLI with --root set to the test's root and waits for it.
func (e *testEnv) moat(args ...string) result {
	e.t.Helper()
	cmd := e.command(args...)
	// Files, not pipes: a sentry inherits the CLI's stdio and outlives it,
	// and a pipe would keep the test waiting for the sentry.
	stdout, stderr := e.tempFile(), e.tempFile()
	cmd.Stdout, cmd.Stderr = stdout, stderr
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		e.t.Fatalf("moat %q: %v", args, err)
	}
	return result{stdout: readAll(e.t, stdout), stderr: readAll(e.t, stderr), code: code}
}

// command prepares the CLI without running it.
func (e *testEnv) command(args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	e.t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, os.Args[0], append([]string{"--root", e.root}, args...)...)
	cmd.Env = append(os.Environ(), cliEnv+"=1")
	return cmd
}

func (e *testEnv) tempFile() *os.File {
	f, err := os.CreateTemp(e.t.TempDir(), "out")
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { f.Close() })
	return f
}

func readAll(t *testing.T, f *os.File) string {
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// ok runs the CLI and fails the test unless it succeeds.
func (e *testEnv) ok(args ...string) result {
	e.t.Helper()
	r := e.moat(args...)
	if r.code != 0 {
		e.t.Fatalf("moat %q: exit %d, stderr %q", args, r.code, r.stderr)
	}
	return r
}

// fails runs the CLI and expects exit status 1 with stderr holding exactly
// one line that contains want.
func (e *testEnv) fails(want string, args ...string) result {
	e.t.Helper()
	return e.failsWith(1, want, args...)
}

// failsWith is fails for a command that exits with status code, as runc
// does for an unknown command (3) or a failed exec (255).
func (e *testEnv) failsWith(code int, want string, args ...string) result {
	e.t.Helper()
	r := e.moat(args...)
	if r.code != code {
		e.t.Fatalf("moat %q: exit %d (stderr %q), want %d", args, r.code, r.stderr, code)
	}
	if !strings.HasPrefix(r.stderr, "moat: ") || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, want) {
		e.t.Fatalf("moat %q: stderr %q, want one line `moat: ...` containing %q", args, r.stderr, want)
	}
	return r
}

// state returns the runtime-spec state the CLI prints for id.
func (e *testEnv) state(id string) ociState {
	e.t.Helper()
	var s ociState
	if err := json.Unmarshal([]byte(e.ok("state", id).stdout), &s); err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *testEnv) expectStatus(id, want string) ociState {
	e.t.Helper()
	s := e.state(id)
	if string(s.Status) != want {
		e.t.Fatalf("state %s: status %s, want %s", id, s.Status, want)
	}
	return s
}

// expectNothingLeft checks that the root holds no container and that no
// fake sentry or gofer (a process of this binary) still runs.
func (e *testEnv) expectNothingLeft() {
	e.t.Helper()
	if entries, _ := os.ReadDir(e.root); len(entries) != 0 {
		e.t.Errorf("left under --root: %v", entries)
	}
	if pids := strayProcesses(e.t); len(pids) != 0 {
		e.t.Errorf("processes left behind: %v", pids)
	}
}

// strayProcesses lists the live processes running this test binary other
// than the test itself, with their command lines.
func strayProcesses(t *testing.T) []string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir("/proc")
	var stray []string
	for _, entry := range entries {
		pid, err := strconv.Atoi(entry.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, err := os.Readlink("/proc/" + entry.Name() + "/exe")
		if err != nil || exe != self {
			continue // gone, a kernel thread, someone else's, or a zombie (no exe)
		}
		cmdline, _ := os.ReadFile("/proc/" + entry.Name() + "/cmdline")
		stray = append(stray, entry.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
	return stray
}

// writeBundle makes a bundle whose program is args (see fakeSentry).
func writeBundle(t *testing.T, args ...string) string {
	return writeBundleConfig(t, bundleConfig(args...))
}

func bundleConfig(args ...string) string {
	quoted, _ := json.Marshal(args)
	return `{"ociVersion": "1.2.0", "process": {"args": ` + string(quoted) + `, "cwd": "/"},
		"root": {"path": "rootfs", "readonly": true}, "annotations": {"org.example.key": "value"}}`
}

func writeBundleConfig(t *testing.T, config string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.MkdirAll(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitUntil polls cond for up to 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// processAlive reports whether pid runs and is not a zombie.
func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	after := s[strings.LastIndexByte(s, ')')+1:]
	return !strings.HasPrefix(after, " Z") && !strings.HasPrefix(after, " X")
}
