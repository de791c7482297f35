package integration

import (
	"archive/tar"
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// newKeptEnv is a caller whose home lies outside /tmp (which is the
// sandbox's own tmpfs, and would cover a home there), so that what a kept
// run writes in $HOME is the overlay's. other is a directory of the
// caller's outside the project: the host's root, read-only under the
// overlay, where a kept run's writes and removals must never land.
func newKeptEnv(t *testing.T, uid, gid int) (e *localEnv, other string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the tests run moat sandbox both as root and as an unprivileged user")
	}
	base, err := os.MkdirTemp("/var/tmp", "moat-keep-test-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	e = newLocalEnvAt(t, base, uid, gid)
	other = filepath.Join(base, "other")
	must(t, os.Mkdir(other, 0o755))
	must(t, os.WriteFile(filepath.Join(other, "victim"), []byte("host\n"), 0o644))
	must(t, os.Chown(other, uid, gid))
	must(t, os.Chown(filepath.Join(other, "victim"), uid, gid))
	return e, other
}

// keptStateNames are the names a kept sandbox's state holds.
func keptStateNames(t *testing.T, e *localEnv, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(e.home, ".local", "state", "moat", "sandboxes", name, "state.tar"))
	must(t, err)
	defer f.Close()
	var names []string
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return names
		}
		must(t, err)
		names = append(names, hdr.Name)
	}
}

func TestSandboxKeepCarriesTheOverlayToTheNextRunAndNothingToTheHost(t *testing.T) {
	for user, ids := range localUsers(t) {
		t.Run(user, func(t *testing.T) {
			e, other := newKeptEnv(t, ids[0], ids[1])
			first := fmt.Sprintf("echo one > %[1]s/new && rm %[1]s/victim && ln -s new %[1]s/link && mkdir -p ~/.local/lib && echo kept > ~/.local/lib/m && echo here > out.txt", other)
			then := fmt.Sprintf("cat %[1]s/new; test ! -e %[1]s/victim && echo victim gone; readlink %[1]s/link; cat ~/.local/lib/m", other)
			want := "one\nvictim gone\nnew\nkept\n"
			// Root may change the host's own root too (in the overlay).
			optFile := fmt.Sprintf("/opt/moat-keep-test-%d", os.Getpid())
			_, motdErr := os.Stat("/etc/motd")
			if ids[0] == 0 && motdErr == nil {
				first += " && echo opt > " + optFile + " && rm /etc/motd"
				then += "; cat " + optFile + "; test ! -e /etc/motd && echo motd gone"
				want += "opt\nmotd gone\n"
			}
			r := e.run("--keep", "s1", "--", "sh", "-c", first)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("first kept run: status %d, stderr %q", r.code, r.stderr)
			}
			// The host is as it was, but for the current directory.
			if data, err := os.ReadFile(filepath.Join(other, "victim")); err != nil || string(data) != "host\n" {
				t.Errorf("the host's victim: %q, %v", data, err)
			}
			for _, p := range []string{filepath.Join(other, "new"), filepath.Join(other, "link"), optFile, filepath.Join(e.home, ".local", "lib")} {
				if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
					os.Remove(p)
					t.Errorf("%s reached the host: %v", p, err)
				}
			}
			if motdErr == nil {
				if _, err := os.Stat("/etc/motd"); err != nil {
					t.Errorf("the host's /etc/motd: %v", err)
				}
			}
			if data, err := os.ReadFile(filepath.Join(e.dir, "out.txt")); err != nil || string(data) != "here\n" {
				t.Errorf("out.txt in the current directory: %q, %v", data, err)
			}
			for _, n := range keptStateNames(t, e, "s1") {
				if strings.Contains(n, "out.txt") || strings.Contains(n, ".ssh") {
					t.Errorf("the kept state holds %s: the current directory and the stores are not the overlay's", n)
				}
			}

			r = e.run("--keep", "s1", "--", "sh", "-c", then)
			if r.code != 0 || r.stdout != want {
				t.Errorf("second kept run: status %d, stdout %q (stderr %q); want %q", r.code, r.stdout, r.stderr, want)
			}
			// Without --keep nothing of it is there.
			r = e.run("--", "sh", "-c", fmt.Sprintf("test ! -e %[1]s/new && test -e %[1]s/victim && test ! -e ~/.local/lib/m && test ! -e %[2]s && echo clean", other, optFile))
			if r.stdout != "clean\n" {
				t.Errorf("a run without --keep: stdout %q, stderr %q; want a fresh overlay", r.stdout, r.stderr)
			}

			r = e.run("--list")
			lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
			if r.code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], "NAME") || strings.Fields(lines[1])[0] != "s1" {
				t.Errorf("--list: status %d, stdout %q", r.code, r.stdout)
			}
			if r = e.run("--rm", "s1"); r.code != 0 {
				t.Errorf("--rm s1: status %d, stderr %q", r.code, r.stderr)
			}
			if r = e.run("--list"); strings.Contains(r.stdout, "s1") {
				t.Errorf("--list after --rm: %q", r.stdout)
			}
			r = e.run("--keep", "s1", "--", "sh", "-c", fmt.Sprintf("test -e %s/victim && echo fresh", other))
			if r.stdout != "fresh\n" {
				t.Errorf("--keep s1 after --rm: stdout %q, stderr %q; want it fresh", r.stdout, r.stderr)
			}
		})
	}
}

func TestSandboxKeepErrorsAreOneLineAndStatus125(t *testing.T) {
	e, _ := newKeptEnv(t, 0, 0)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--keep", "../x", "--", "true"}, "--keep"},
		{[]string{"--keep", "a/b", "--", "true"}, "--keep"},
		{[]string{"--keep", "..", "--", "true"}, "--keep"},
		{[]string{"--keep", "", "--", "true"}, "--keep"},
		{[]string{"--rm", "never-kept"}, "never-kept"},
		{[]string{"--rm", "../x"}, "--rm"},
		{[]string{"--list", "--rm", "x"}, "--list"},
		{[]string{"--list", "--", "true"}, "--list"},
		{[]string{"--rm", "x", "--keep", "x", "--", "true"}, "--rm"},
	} {
		r := e.run(c.args...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if r.code != 125 || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("moat sandbox %q: status %d, stderr %q; want 125 and one line naming %q", c.args, r.code, r.stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(e.home, ".local", "state", "moat", "sandboxes", "x")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused run left a kept sandbox: %v", err)
	}
}

// A second run of a kept sandbox fails at once while one runs; the first,
// ended by SIGINT (^C without a terminal) or SIGTERM, still saves.
func TestSandboxKeepIsOneRunAtATimeAndASignalledRunSaves(t *testing.T) {
	for user, ids := range localUsers(t) {
		for _, sig := range []unix.Signal{unix.SIGINT, unix.SIGTERM} {
			t.Run(fmt.Sprintf("%s/%v", user, sig), func(t *testing.T) {
				e, other := newKeptEnv(t, ids[0], ids[1])
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				cmd := e.command(ctx, "--keep", "busy", "--", "sh", "-c", fmt.Sprintf("echo saved > %s/term && echo started && exec sleep 60", other))
				stdout, err := cmd.StdoutPipe()
				must(t, err)
				var stderr strings.Builder
				cmd.Stderr = &stderr
				must(t, cmd.Start())
				line := make([]byte, len("started\n"))
				if _, err := io.ReadFull(stdout, line); err != nil || string(line) != "started\n" {
					cmd.Process.Kill()
					t.Fatalf("first output %q, %v", line, err)
				}
				r := e.run("--keep", "busy", "--", "true")
				if r.code != 125 || !strings.Contains(r.stderr, "in use") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
					t.Errorf("a second run while one runs: status %d, stderr %q; want 125, one line, in use", r.code, r.stderr)
				}
				must(t, cmd.Process.Signal(sig))
				cmd.Wait()
				if got := cmd.ProcessState.ExitCode(); got != 128+int(sig) || stderr.String() != "" {
					t.Errorf("after %v: status %d, stderr %q; want %d and nothing", sig, got, stderr.String(), 128+int(sig))
				}
				r = e.run("--keep", "busy", "--", "cat", filepath.Join(other, "term"))
				if r.code != 0 || r.stdout != "saved\n" {
					t.Errorf("after the run %v ended: status %d, stdout %q, stderr %q; want what it wrote", sig, r.code, r.stdout, r.stderr)
				}
			})
		}
	}
}

// sentryOf is the pid of the sentry (moat boot) that the moat CLI pid
// started, its child.
func sentryOf(t *testing.T, pid int) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	must(t, err)
	for _, f := range strings.Fields(string(data)) {
		var child int
		fmt.Sscan(f, &child)
		if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", child)); err == nil && strings.HasPrefix(string(cmdline), "moat\x00boot") {
			return child
		}
	}
	t.Fatalf("no sentry among the children of %d: %q", pid, data)
	return 0
}

// A run whose sentry dies saves nothing, says so, and leaves the
// previous state as it was.
func TestSandboxKeepOfARunWhoseSentryDiedIsThePreviousOne(t *testing.T) {
	e, other := newKeptEnv(t, 0, 0)
	if r := e.run("--keep", "d", "--", "sh", "-c", "echo one > "+other+"/first"); r.code != 0 {
		t.Fatalf("first run: status %d, stderr %q", r.code, r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, "--keep", "d", "--", "sh", "-c", fmt.Sprintf("echo two > %s/second && echo started && exec sleep 60", other))
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	line := make([]byte, len("started\n"))
	if _, err := io.ReadFull(stdout, line); err != nil || string(line) != "started\n" {
		cmd.Process.Kill()
		t.Fatalf("first output %q, %v", line, err)
	}
	must(t, unix.Kill(sentryOf(t, cmd.Process.Pid), unix.SIGKILL))
	cmd.Wait()
	if !strings.Contains(stderr.String(), "--keep d: not saved") || !strings.Contains(stderr.String(), "the previous state stays") {
		t.Errorf("a run whose sentry was killed: stderr %q; want it to say it was not saved", stderr.String())
	}
	r := e.run("--keep", "d", "--", "sh", "-c", fmt.Sprintf("cat %[1]s/first; test ! -e %[1]s/second && echo no second", other))
	if r.stdout != "one\nno second\n" {
		t.Errorf("after the killed run: stdout %q, stderr %q; want the first run's state alone", r.stdout, r.stderr)
	}
}

// An agent's session: a module installed for the user (pip install
// --user puts it in the user's site-packages, under the hidden $HOME) in
// one call imports in the next.
func TestSandboxKeepKeepsAUserInstalledPythonModule(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 on this host")
	}
	for user, ids := range localUsers(t) {
		t.Run(user, func(t *testing.T) {
			e, _ := newKeptEnv(t, ids[0], ids[1])
			install := `import os, site; d = site.getusersitepackages(); os.makedirs(d); open(os.path.join(d, "keptmod.py"), "w").write("X = 42\n")`
			if r := e.run("--keep", "py", "--", "python3", "-c", install); r.code != 0 {
				t.Fatalf("install: status %d, stderr %q", r.code, r.stderr)
			}
			r := e.run("--keep", "py", "--", "python3", "-c", "import keptmod; print(keptmod.X)")
			if r.code != 0 || r.stdout != "42\n" {
				t.Errorf("import in the next kept run: status %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
			}
			if r := e.run("--", "python3", "-c", "import keptmod"); r.code == 0 {
				t.Errorf("a run without --keep imported the kept module")
			}
			if _, err := os.Stat(filepath.Join(e.home, ".local", "lib")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the module reached the host's home: %v", err)
			}
		})
	}
}
