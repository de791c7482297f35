package integration

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/ocirun"
	"github.com/moat-sandbox/moat/internal/rootfs"
)

// realTimeout bounds each check: all of them take well under a second in
// runc, python-alarm one second by design.
const realTimeout = 30 * time.Second

// realCheck is one command line run in a container on the Debian rootfs.
// runc must give exactly the expected result; moat must give runc's.
type realCheck struct {
	name    string // the program first, so that -run can pick by program
	args    []string
	exit    int
	stdout  string
	timeout time.Duration // 0: realTimeout
	hangs   bool          // it never ends: it must time out and be killed
	caps    []string      // capabilities the process holds (none when nil)
}

// realChecks are the checks, for the rootfs at dir. Scripts and sources
// travel on the command line, since the rootfs is read-only and shared:
// whatever a check writes goes to its own /tmp.
func realChecks(t *testing.T, dir string) []realCheck {
	return []realCheck{
		{name: "bash-pipeline", args: bash(`seq 1 100000 | sort -rn | head -3`), stdout: "100000\n99999\n99998\n"},
		{name: "bash-background", args: bash(`sleep 0.1 & sleep 0.2 & wait; echo done`), stdout: "done\n"},
		{name: "bash-substitution", args: bash(`x=$(echo hi | tr a-z A-Z); echo $x`), stdout: "HI\n"},
		// <(...) and /dev/stdin reopen a pipe through /proc/self/fd.
		{name: "bash-process-substitution", args: bash(`cat <(echo from a pipe); echo piped | cat /dev/stdin; diff <(seq 3) <(seq 3) && echo same`),
			stdout: "from a pipe\npiped\nsame\n"},
		{name: "bash-find", args: bash(`find /usr -name "*.py" | wc -l`),
			stdout: fmt.Sprintf("%d\n", countNamed(t, filepath.Join(dir, "usr"), "*.py"))},
		{name: "python-print", args: python(`print(1)`), stdout: "1\n"},
		{name: "python-threads", args: python(pythonThreads), stdout: "80000\n"},
		{name: "python-subprocess", args: python(pythonSubprocess), stdout: "b'x\\n'\n"},
		{name: "python-pool", args: python(pythonPool), stdout: "[1, 2, 3]\n"},
		{name: "python-alarm", args: python(pythonAlarm), stdout: "alarm 14\n"},
		{name: "python-fork", args: python(pythonFork), stdout: "child exited 7\n"},
		{name: "gcc-compile", args: bash(gccCompile), stdout: "sum 5050\n"},
		// script(1) runs its command on a new pseudo-terminal (its
		// controlling terminal), whose size is 0x0 with no terminal to
		// copy it from; the pty's ONLCR makes the newlines \r\n.
		{name: "script-pty", args: bash(`script -qc 'tty; stty size' /dev/null`), stdout: "/dev/pts/0\r\n0 0\r\n"},
		{name: "make-twice", args: bash(makeTwice), stdout: makeTwiceOut},
		{name: "git-commit", args: bash(gitCommit), stdout: gitCommitOut},
		// An agent's work, in its bind-mounted workspace.
		{name: "git-clone-workspace", args: bash(gitCloneWorkspace), stdout: gitCloneWorkspaceOut},
		{name: "tar-100m-workspace", args: bash(tarWorkspace), stdout: tarWorkspaceOut, timeout: 2 * time.Minute},
		{name: "python-venv-pip-workspace", args: bash(venvPip), stdout: "from the wheel 42\n", timeout: time.Minute},
		{name: "make-j2-workspace", args: bash(makeParallel), stdout: makeParallelOut, timeout: time.Minute},
		{name: "python-docx-xlsx-workspace", args: python(pythonOffice), stdout: pythonOfficeOut},
		// Processes and System V IPC (realscripts_sys_test.go).
		{name: "ipcs-after-objects", args: bash(ipcsAfterObjects), stdout: ipcsAfterObjectsOut},
		{name: "nice-sh", args: []string{"nice", "-n", "10", "sh", "-c", "nice"}, stdout: "10\n"},
		// A mount namespace of the guest's own (issue 14): the tmpfs is seen
		// inside it alone.
		{name: "unshare-mount", args: bash(`unshare -m sh -c 'mount -t tmpfs t /mnt && touch /mnt/x && ls /mnt'; ls /mnt | wc -l`),
			stdout: "x\n0\n", caps: []string{"CAP_SYS_ADMIN"}},
		// A pid namespace and its own proc: the command is its pid 1, whose
		// parent (unshare) is outside.
		{name: "unshare-pid", args: bash(`unshare -p -f --mount-proc sh -c 'echo $$ $PPID $(cat /proc/1/comm)'`),
			stdout: "1 0 sh\n", caps: []string{"CAP_SYS_ADMIN"}},
		// bubblewrap as root with CAP_SYS_ADMIN (realscripts_sys_test.go).
		{name: "bwrap", args: bash(bwrapNamespaces), stdout: "ok\nok\n2 1 bwrap\nhi\nbox\n2\n", caps: []string{"CAP_SYS_ADMIN"}},
		{name: "python-sched", args: python(pythonSched), stdout: "True True\n{0}\n0 5 5\nTrue 99\n"},
		{name: "python-setitimer", args: python(pythonSetitimer), stdout: "3 (0.0, 0.0)\nTrue\n"},
		{name: "python-shared-memory", args: python(pythonSharedMemory), stdout: "42 0\n"},
		{name: "python-getrusage", args: python(pythonGetrusage), stdout: "True True\nTrue True\n"},
		// ptrace inside the sandbox (realscripts_trace_test.go).
		{name: "strace-fork", args: bash(straceFork), stdout: straceForkOut},
		{name: "gdb-backtrace", args: bash(gdbBacktrace), stdout: gdbBacktraceOut},
		// Not a program but the harness: a container that never ends is
		// killed at its timeout, `run` reports SIGKILL, and it is deleted
		// leaving nothing (run checks that after every check).
		{name: "hung-sleep", args: []string{"sleep", "600"}, timeout: 2 * time.Second, hangs: true,
			exit: 128 + 9},
	}
}

func bash(script string) []string { return []string{"bash", "-c", script} }

func python(code string) []string { return []string{"python3", "-c", code} }

// countNamed counts what `find root -name pattern` lists, from the host.
func countNamed(t *testing.T, root, pattern string) int {
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if ok, _ := filepath.Match(pattern, d.Name()); ok {
			n++
		}
		return nil
	})
	must(t, err)
	return n
}

// TestRealPrograms runs what agents run (bash, python3, gcc, make, git) in
// runc, against fixed expectations, and in moat, against runc's results.
// The Debian rootfs is built on first use (about a minute) and cached under
// build/. Select by runtime and program: -run 'TestRealPrograms/moat/python'.
func TestRealPrograms(t *testing.T) {
	runc, dir := realSetup(t)
	checks := realChecks(t, dir)
	refs := &references{runner: newRuncRunner(t, runc, dir), got: map[string]outcome{}}

	t.Run("runc", func(t *testing.T) {
		for _, c := range checks {
			t.Run(c.name, func(t *testing.T) {
				o := refs.get(t, c)
				t.Logf("%v, exit %d, stdout %q", o.took.Round(time.Millisecond), o.exit, o.stdout)
				if problem := c.mismatch(o); problem != "" {
					t.Error(problem)
				}
			})
		}
	})

	t.Run("moat", func(t *testing.T) {
		moat := newMoatRunner(t, dir)
		for _, c := range checks {
			t.Run(c.name, func(t *testing.T) {
				want := refs.get(t, c)
				if problem := c.mismatch(want); problem != "" {
					t.Fatalf("runc, the reference, fails: %s", problem)
				}
				got := moat.run(t, c.args, c.limit(), c.caps...)
				t.Logf("%v (runc: %v)", got.took.Round(time.Millisecond), want.took.Round(time.Millisecond))
				if problem := differ(got, want); problem != "" {
					t.Errorf("%s\nmoat's log of the run:\n%s", problem, got.log)
				}
			})
		}
	})
}

// realSetup returns runc and the Debian rootfs, or skips the test when
// they cannot be had: runc needs root, and the rootfs needs the network
// the first time.
func realSetup(t *testing.T) (runc, rootfs string) {
	if os.Geteuid() != 0 {
		t.Skip("not root: runc needs root to create containers")
	}
	runc, err := ocirun.LookPath("runc")
	if err != nil {
		t.Skip("runc is not installed (make test installs it): no reference to compare with")
	}
	return runc, debianRootfs(t)
}

// debianRootfs returns the cached Debian rootfs, building it first if need
// be. Without network there is none: the test is skipped.
func debianRootfs(t *testing.T) string {
	// Tests run in the package directory; `make rootfs-debian` builds into
	// the same place.
	cache, err := filepath.Abs("../build/rootfs-debian")
	must(t, err)
	start := time.Now()
	dir, err := rootfs.Debian(t.Context(), cache)
	if errors.Is(err, rootfs.ErrMirrorUnreachable) {
		t.Skip(err)
	}
	must(t, err)
	if took := time.Since(start); took > time.Second {
		t.Logf("built %s in %v", dir, took.Round(time.Second))
	}
	return dir
}

// references holds runc's outcome of each check. The runc subtests fill it;
// the moat subtests reuse it, or run runc themselves when -run left the
// runc subtests out.
type references struct {
	runner *realRunner
	got    map[string]outcome
}

func (r *references) get(t *testing.T, c realCheck) outcome {
	t.Helper()
	o, ok := r.got[c.name]
	if !ok {
		o = r.runner.run(t, c.args, c.limit(), c.caps...)
		r.got[c.name] = o
	}
	return o
}

func (c realCheck) limit() time.Duration {
	if c.timeout == 0 {
		return realTimeout
	}
	return c.timeout
}

// mismatch says how o differs from what c expects, or returns "". Every
// check expects an empty stderr.
func (c realCheck) mismatch(o outcome) string {
	switch {
	case o.timedOut && !c.hangs:
		return fmt.Sprintf("timed out after %v; stdout %q, stderr %q", c.limit(), o.stdout, o.stderr)
	case c.hangs && !o.timedOut:
		return fmt.Sprintf("ended (exit %d) before its %v timeout", o.exit, c.limit())
	case o.exit != c.exit:
		return fmt.Sprintf("exit %d, want %d; stderr %q", o.exit, c.exit, o.stderr)
	case o.stdout != c.stdout:
		return fmt.Sprintf("stdout %q, want %q; stderr %q", o.stdout, c.stdout, o.stderr)
	case o.stderr != "":
		return fmt.Sprintf("stderr %q, want none", o.stderr)
	}
	return ""
}

// differ says how moat's outcome got differs from runc's, want, or
// returns "".
func differ(got, want outcome) string {
	switch {
	case got.timedOut != want.timedOut:
		return fmt.Sprintf("timed out: %v, runc: %v; stdout %q, stderr %q", got.timedOut, want.timedOut, got.stdout, got.stderr)
	case got.exit != want.exit:
		return fmt.Sprintf("exit %d, runc %d; stderr %q", got.exit, want.exit, got.stderr)
	case got.stdout != want.stdout:
		return fmt.Sprintf("stdout %q, runc %q; stderr %q", got.stdout, want.stdout, got.stderr)
	case got.stderr != want.stderr:
		return fmt.Sprintf("stderr %q, runc %q", got.stderr, want.stderr)
	}
	return ""
}
