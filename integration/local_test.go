package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// localRun is one `moat sandbox` run's outcome.
type localRun struct {
	stdout, stderr string
	code           int
}

// localEnv is a caller of `moat sandbox`: a scratch project directory, a
// fake home with a fake SSH key, and a TMPDIR of the test's own, where
// moat's private directory must not outlive a run.
type localEnv struct {
	t                   *testing.T
	moat                string
	dir, home, tmp, key string
	uid, gid            int // the caller: 0, or an unprivileged user
	credential          *syscall.Credential
	extraEnv            []string
	terminal            *os.File // the replica the run gets as stdio, if set
	// netns, if set, is the test network namespace moat runs in, with
	// resolvConf over the host's /etc/resolv.conf in a mount namespace of
	// its own (local_net_test.go).
	netns, resolvConf string
}

const localFakeKey = "-----BEGIN FAKE KEY----- moat-sandbox-test"

func newLocalEnv(t *testing.T, uid, gid int) *localEnv {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the tests run moat sandbox both as root and as an unprivileged user")
	}
	base := t.TempDir()
	if uid != 0 {
		must(t, os.Chmod(filepath.Dir(base), 0o755))
	}
	return newLocalEnvAt(t, base, uid, gid)
}

// newLocalEnvAt is newLocalEnv in base, a new directory whose parents the
// caller may search.
func newLocalEnvAt(t *testing.T, base string, uid, gid int) *localEnv {
	t.Helper()
	e := &localEnv{t: t, uid: uid, gid: gid, dir: filepath.Join(base, "project"), home: filepath.Join(base, "home"), tmp: filepath.Join(base, "tmp")}
	e.key = filepath.Join(e.home, ".ssh", "id_rsa")
	for _, d := range []string{e.dir, filepath.Dir(e.key), e.tmp} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(e.key, []byte(localFakeKey+"\n"), 0o600))
	// The binary, where any user may run it.
	e.moat = filepath.Join(base, "moat")
	data, err := os.ReadFile(moatBinary(t))
	must(t, err)
	must(t, os.WriteFile(e.moat, data, 0o755))
	if uid != 0 {
		must(t, os.Chmod(base, 0o755))
		for _, p := range []string{e.dir, e.home, filepath.Dir(e.key), e.key, e.tmp} {
			must(t, os.Chown(p, uid, gid))
		}
		e.credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
	}
	t.Cleanup(e.checkClean)
	return e
}

// run runs moat sandbox with args in the project directory.
func (e *localEnv) run(args ...string) localRun {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	if e.terminal != nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = e.terminal, e.terminal, e.terminal
		cmd.SysProcAttr.Setsid, cmd.SysProcAttr.Setctty = true, true
	} else {
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
	}
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		e.t.Fatalf("run moat sandbox %q: %v", args, err)
	}
	return localRun{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// command prepares moat sandbox with args in the project directory, as
// the caller, in the test network if e has one.
func (e *localEnv) command(ctx context.Context, args ...string) *exec.Cmd {
	argv := append(append(moatFlags(), "sandbox"), args...)
	cmd := exec.CommandContext(ctx, e.moat, argv...)
	credential := e.credential
	if e.netns != "" {
		// Root enters the namespace and mounts the resolver's address
		// over /etc/resolv.conf; then setpriv becomes the caller.
		wrap := []string{"--net=" + filepath.Join("/run/netns", e.netns), "--", "unshare", "--mount", "--propagation", "private", "--",
			"sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, e.resolvConf}
		if credential != nil {
			wrap = append(wrap, "setpriv", fmt.Sprintf("--reuid=%d", e.uid), fmt.Sprintf("--regid=%d", e.gid), "--clear-groups", "--")
		}
		cmd = exec.CommandContext(ctx, "nsenter", append(append(wrap, e.moat), argv...)...)
		credential = nil
	}
	cmd.Dir = e.dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + e.home, "TMPDIR=" + e.tmp, "LANG=C.UTF-8",
		"GITHUB_TOKEN=moat-test-token"}, e.extraEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: credential}
	return cmd
}

// checkClean fails the test if a run left its private directory behind.
func (e *localEnv) checkClean() {
	entries, _ := os.ReadDir(e.tmp)
	for _, ent := range entries {
		e.t.Errorf("moat sandbox left %s behind in TMPDIR", ent.Name())
	}
}

// localUsers are the callers every acceptance test runs as: root, and
// nobody, rootless, where the host lets an unprivileged user make a user
// namespace.
func localUsers(t *testing.T) map[string][2]int {
	users := map[string][2]int{"root": {0, 0}}
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		t.Log("unprivileged user namespaces are disabled on this host: rootless runs are not tested")
		return users
	}
	users["rootless"] = [2]int{65534, 65534}
	return users
}

func TestSandboxWritesLandInTheCurrentDirectoryAloneAndTheKeyStaysUnread(t *testing.T) {
	for name, ids := range localUsers(t) {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t, ids[0], ids[1])
			etcFile := fmt.Sprintf("/etc/moat-sandbox-test-%d", os.Getpid())
			r := e.run("--", "sh", "-c", "echo hi > out.txt; touch "+etcFile+"; echo token=$GITHUB_TOKEN; cat ~/.ssh/id_rsa")
			got, err := os.ReadFile(filepath.Join(e.dir, "out.txt"))
			if err != nil || string(got) != "hi\n" {
				t.Errorf("out.txt = %q, %v; want \"hi\\n\" (stderr %q)", got, err, r.stderr)
			}
			if _, err := os.Lstat(etcFile); !errors.Is(err, fs.ErrNotExist) {
				os.Remove(etcFile)
				t.Errorf("%s reached the host's /etc: %v", etcFile, err)
			}
			if strings.Contains(r.stdout+r.stderr, localFakeKey) {
				t.Errorf("the fake key was read: %q", r.stdout)
			}
			if !strings.Contains(r.stdout, "token=\n") {
				t.Errorf("stdout %q: GITHUB_TOKEN passed without --env", r.stdout)
			}
			// cat failed: its status is the command's.
			if r.code != 1 {
				t.Errorf("exit status %d, want 1 (cat's); stderr %q", r.code, r.stderr)
			}
			if st, err := os.Stat(filepath.Join(e.dir, "out.txt")); err == nil && int(st.Sys().(*syscall.Stat_t).Uid) != e.uid {
				t.Errorf("out.txt is owned by %d on the host, want the caller, %d", st.Sys().(*syscall.Stat_t).Uid, e.uid)
			}
		})
	}
}

func TestSandboxRunsInTheCallersDirectory(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 on this host")
	}
	for name, ids := range localUsers(t) {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t, ids[0], ids[1])
			r := e.run("--", "python3", "-c", "import os; print(os.getcwd()); print(os.getuid())")
			if want := fmt.Sprintf("%s\n%d\n", e.dir, e.uid); r.code != 0 || r.stdout != want {
				t.Errorf("python3 printed %q, status %d (stderr %q); want %q", r.stdout, r.code, r.stderr, want)
			}
		})
	}
}

func TestSandboxGitCommitLandsInTheRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git on this host")
	}
	for name, ids := range localUsers(t) {
		t.Run(name, func(t *testing.T) {
			e := newLocalEnv(t, ids[0], ids[1])
			r := e.run("--", "sh", "-c", "git init -q && echo x > f && git add f && git -c user.name=agent -c user.email=agent@example.com commit -q -m 'from the sandbox'")
			if r.code != 0 {
				t.Fatalf("git in the sandbox: status %d, stderr %q", r.code, r.stderr)
			}
			out, err := exec.Command("git", "-c", "safe.directory=*", "-C", e.dir, "log", "--format=%s %an").CombinedOutput()
			if err != nil || string(out) != "from the sandbox agent\n" {
				t.Errorf("git log on the host: %q, %v; want the sandbox's commit", out, err)
			}
		})
	}
}

func TestSandboxExitsWithTheCommandsStatus(t *testing.T) {
	e := newLocalEnv(t, 0, 0)
	for _, c := range []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 7", 7},
		{"kill -TERM $$", 128 + int(unix.SIGTERM)},
		{"kill -KILL $$", 128 + int(unix.SIGKILL)},
	} {
		if r := e.run("--", "sh", "-c", c.script); r.code != c.want {
			t.Errorf("sh -c %q: status %d, want %d (stderr %q)", c.script, r.code, c.want, r.stderr)
		}
	}
	if r := e.run("--timeout", "1s", "--", "sleep", "60"); r.code != 124 {
		t.Errorf("--timeout 1s of sleep 60: status %d, want 124 (stderr %q)", r.code, r.stderr)
	}
	// As a shell reports a command it cannot run: 127 not found, 126 not
	// executable, each with one line that names it.
	notExec := filepath.Join(e.dir, "not-executable")
	must(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	for _, c := range []struct {
		cmd  string
		want int
	}{
		{"no-such-command-here", 127},
		{"/no/such/path", 127},
		{notExec, 126},
	} {
		r := e.run("--", c.cmd)
		if r.code != c.want || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, c.cmd) {
			t.Errorf("moat sandbox -- %s: status %d, stderr %q; want %d and one line naming it", c.cmd, r.code, r.stderr, c.want)
		}
	}
}

func TestSandboxOwnErrorsAreOneLineAndStatus125(t *testing.T) {
	e := newLocalEnv(t, 0, 0)
	settings := filepath.Join(e.home, "bad.toml")
	must(t, os.WriteFile(settings, []byte("rw = [\"x\"]\nnet = maybe\n"), 0o644))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rw", "/does/not/exist", "--", "true"}, "--rw"},
		{[]string{"--ro", "missing", "--", "true"}, "--ro"},
		{[]string{"--net", "--net-allow", "pypi.org", "--", "true"}, "--net"},
		{[]string{"--net-allow", "pypi.org,bad name!", "--", "true"}, "--net-allow"},
		{[]string{"--settings", settings, "--", "true"}, "line 2"},
		{[]string{"--no-such-flag", "--", "true"}, "no-such-flag"},
	} {
		r := e.run(c.args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 125 || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("moat sandbox %q: status %d, stderr %q; want 125 and one line naming %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// openTerminal opens a pseudo-terminal pair from the host's /dev/ptmx.
func openTerminal(t *testing.T) (master, replica *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	must(t, err)
	n, err := unix.IoctlGetUint32(int(master.Fd()), unix.TIOCGPTN)
	must(t, err)
	must(t, unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0))
	replica, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	must(t, err)
	t.Cleanup(func() { master.Close(); replica.Close() })
	return master, replica
}

func TestSandboxCtrlCThroughATerminalEndsTheCommand(t *testing.T) {
	e := newLocalEnv(t, 0, 0)
	master, replica := openTerminal(t)
	e.terminal = replica
	// The command says it is ready once its terminal is set up, then
	// waits; ^C must end it (sh dies of SIGINT: 130).
	ready := make(chan struct{})
	output := make(chan string, 1)
	go func() {
		var seen bytes.Buffer
		buf := make([]byte, 4096)
		signalled := false
		for {
			n, err := master.Read(buf)
			seen.Write(buf[:n])
			if !signalled && strings.Contains(seen.String(), "ready-for-ctrl-c") {
				signalled = true
				close(ready)
			}
			if err != nil {
				output <- seen.String()
				return
			}
		}
	}()
	done := make(chan localRun, 1)
	go func() {
		done <- e.run("--", "sh", "-c", "test -t 0 && test -t 1 && stty -a >/dev/null && echo ready-for-ctrl-c; sleep 60; echo not-interrupted")
	}()
	select {
	case <-ready:
	case r := <-done:
		t.Fatalf("the sandbox ended before it was ready: status %d", r.code)
	case <-time.After(90 * time.Second):
		t.Fatal("the sandbox did not say it was ready")
	}
	if _, err := master.Write([]byte{0x03}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.code != 128+int(unix.SIGINT) {
			t.Errorf("after ^C: status %d, want %d", r.code, 128+int(unix.SIGINT))
		}
	case <-time.After(90 * time.Second):
		t.Fatal("^C did not end the sandbox")
	}
	// The master reads end-of-file once no one holds the replica.
	replica.Close()
	select {
	case out := <-output:
		if strings.Contains(out, "not-interrupted") {
			t.Errorf("the command went on after ^C: %q", out)
		}
	case <-time.After(30 * time.Second):
		t.Error("the terminal stayed open after the sandbox ended")
	}
}

func TestSandboxPassesSIGTERMToTheCommand(t *testing.T) {
	e := newLocalEnv(t, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.moat, append(append(moatFlags(), "sandbox", "--"), "sh", "-c", "echo started; exec sleep 60")...)
	cmd.Dir = e.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + e.home, "TMPDIR=" + e.tmp}
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	line := make([]byte, len("started\n"))
	if _, err := io.ReadFull(stdout, line); err != nil || string(line) != "started\n" {
		t.Fatalf("first output %q, %v", line, err)
	}
	must(t, cmd.Process.Signal(unix.SIGTERM))
	cmd.Wait()
	if got := cmd.ProcessState.ExitCode(); got != 128+int(unix.SIGTERM) {
		t.Errorf("after SIGTERM: status %d, want %d", got, 128+int(unix.SIGTERM))
	}
}

func TestSandboxCannotReachAHostUnixSocket(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 on this host")
	}
	e := newLocalEnv(t, 0, 0)
	path := filepath.Join(e.dir, "host.sock")
	l, err := net.Listen("unix", path)
	must(t, err)
	defer l.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			accepted <- struct{}{}
			c.Close()
		}
	}()
	r := e.run("--", "python3", "-c", "import socket; s = socket.socket(socket.AF_UNIX)\ntry:\n s.connect('host.sock'); print('connected')\nexcept OSError as e: print(e.errno)")
	if strings.Contains(r.stdout, "connected") || r.code != 0 {
		t.Errorf("connect from the sandbox to a host socket in the shared directory: %q, status %d (stderr %q); want it refused", r.stdout, r.code, r.stderr)
	}
	select {
	case <-accepted:
		t.Error("the host's listener accepted a connection from the sandbox")
	default:
	}
}
