package engines

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// image is the tag the cases run, imported into each engine.
const image = "localhost/moat-engines-busybox:latest"

// client is an engine's command line driving one OCI runtime.
type client struct {
	t    *testing.T
	rt   runtimeUnderTest
	argv []string // the engine's command and the flags that pick rt
	// extraRun are the engine's own flags for every run (Docker's
	// --network none: its test daemon has no bridge).
	extraRun []string
}

// runFlags go with every `run`: nothing is ever pulled, and RLIMIT_NOFILE
// and RLIMIT_NPROC are set, since the engines' defaults may be above the
// host's hard limits, which runc, the reference, cannot raise.
var runFlags = []string{"--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"}

// line is the engine's command line for args, with runFlags (and the
// engine's own, extra) after a leading "run".
func (p client) line(args []string) []string {
	out := append([]string(nil), p.argv...)
	if len(args) > 0 && args[0] == "run" {
		out = append(append(append(out, "run"), runFlags...), p.extraRun...)
		args = args[1:]
	}
	return append(out, args...)
}

func (p client) cmd(args ...string) result {
	p.t.Helper()
	l := p.line(args)
	return run(p.t, l[0], l[1:]...)
}

// ok runs args and fails the test unless they succeed.
func (p client) ok(args ...string) string {
	p.t.Helper()
	r := p.cmd(args...)
	if r.code != 0 {
		p.t.Fatalf("%s: %q: exit %d, stderr %q", p.rt.name, append(p.argv, args...), r.code, r.stderr)
	}
	return r.stdout
}

// interact runs args on a terminal (see interact).
func (p client) interact(prompt, input string, args ...string) (string, int) {
	p.t.Helper()
	l := p.line(args)
	return interact(p.t, prompt, input, l[0], l[1:]...)
}

func TestPodman(t *testing.T) {
	needPackages(t, "podman", "podman")
	tarball := busyboxTar(t)
	if r := run(t, "podman", "import", "-q", tarball, image); r.code != 0 {
		t.Fatalf("podman import: %s", r.stderr)
	}
	runCases(t, func(rt runtimeUnderTest) client {
		return client{t: t, rt: rt, argv: []string{"podman", "--runtime", rt.path}}
	})
}

// runCases runs every case under each runtime through the engine whose
// command line argv gives, and compares.
func runCases(t *testing.T, clientOf func(runtimeUnderTest) client) {
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "f"), []byte("from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(t.TempDir(), "seccomp.json")
	os.WriteFile(profile, []byte(`{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[]}`), 0o644)

	// Each case gives what it saw: equal under runc and moat, and as
	// want says.
	cases := []struct {
		name string
		run  func(p client) string
		want string
	}{
		{"run", func(p client) string {
			return p.ok("run", "--rm", image, "echo", "hello")
		}, "hello\n"},
		{"exit status", func(p client) string {
			r := p.cmd("run", "--rm", image, "sh", "-c", "exit 7")
			return itoa(r.code)
		}, "7"},
		{"bind mount read-only", func(p client) string {
			return p.ok("run", "--rm", "-v", host+":/data:ro", image, "sh", "-c",
				"cat /data/f; touch /data/g 2>/dev/null; echo $?")
		}, "from the host\n1\n"},
		{"read-only root with a tmpfs", func(p client) string {
			return p.ok("run", "--rm", "--read-only", "--tmpfs", "/scratch", image, "sh", "-c",
				"touch /x 2>/dev/null; echo $?; touch /scratch/x && echo tmpfs-ok")
		}, "1\ntmpfs-ok\n"},
		{"user", func(p client) string {
			return p.ok("run", "--rm", "--user", "65534:65534", image, "id")
		}, "uid=65534(nobody) gid=65534(nogroup) groups=65534(nogroup)\n"},
		{"cap-drop", func(p client) string {
			return p.ok("run", "--rm", "--cap-drop", "ALL", image, "grep", "CapEff", "/proc/self/status")
		}, "CapEff:\t0000000000000000\n"},
		{"limits and seccomp profile accepted", func(p client) string {
			return p.ok("run", "--rm", "--memory", "64m", "--pids-limit", "50",
				"--security-opt", "seccomp="+profile, image, "echo", "ok")
		}, "ok\n"},
		{"detached life", detachedLife, "started\n|in\n3|paused|running|137|removed"},
		{"stop reaches a SIGTERM handler", func(p client) string {
			name := "moat-engines-term-" + p.rt.name
			p.cmd("rm", "-f", "-t", "0", name)
			p.ok("run", "-d", "--name", name, image, "sh", "-c",
				`trap "echo got TERM; exit 7" TERM; echo ready; while true; do sleep 0.1; done`)
			defer p.cmd("rm", "-f", "-t", "0", name)
			waitFor(p.t, func() bool { return p.cmd("logs", name).stdout == "ready\n" })
			p.ok("stop", "-t", "20", name)
			return p.ok("logs", name) + strings.TrimSpace(p.ok("inspect", "-f", "{{.State.ExitCode}}", name))
		}, "ready\ngot TERM\n7"},
		{"exec -it", func(p client) string {
			name := "moat-engines-it-" + p.rt.name
			p.cmd("rm", "-f", "-t", "0", name)
			p.ok("run", "-d", "--name", name, image, "sleep", "1000")
			defer p.cmd("rm", "-f", "-t", "0", name)
			shown, code := p.interact("# ", "echo $((6*7))\rexit 3\r", "exec", "-it", name, "sh")
			return boolStr(strings.Contains(shown, "42")) + "|" + itoa(code)
		}, "true|3"},
		{"run -it", func(p client) string {
			shown, code := p.interact("# ", "tty\rexit 4\r", "run", "-it", "--rm", image, "sh")
			return boolStr(strings.Contains(shown, "/dev/pts/0")) + "|" + itoa(code)
		}, "true|4"},
	}
	rts := runtimes(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{}
			for _, rt := range rts {
				cl := clientOf(rt)
				cl.t = t
				got[rt.name] = c.run(cl)
				if got[rt.name] != c.want {
					t.Errorf("%s: %q, want %q", rt.name, got[rt.name], c.want)
				}
			}
			if r, ok := got["runc"]; ok && r != got["moat"] {
				t.Errorf("moat gave %q, runc %q", got["moat"], r)
			}
		})
	}
}

// detachedLife runs a container in the background through its life:
// exec and its status, logs, pause and unpause, stop (SIGTERM, which
// init ignores, then SIGKILL), rm.
func detachedLife(p client) string {
	name := "moat-engines-d-" + p.rt.name
	p.cmd("rm", "-f", "-t", "0", name)
	p.ok("run", "-d", "--name", name, image, "sh", "-c", "echo started; exec sleep 1000")
	defer p.cmd("rm", "-f", "-t", "0", name)
	var out []string
	waitFor(p.t, func() bool { return p.cmd("logs", name).stdout == "started\n" })
	out = append(out, p.ok("logs", name))
	r := p.cmd("exec", name, "sh", "-c", "echo in; exit 3")
	out = append(out, r.stdout+itoa(r.code))
	p.ok("pause", name)
	out = append(out, strings.TrimSpace(p.ok("inspect", "-f", "{{.State.Status}}", name)))
	p.ok("unpause", name)
	out = append(out, strings.TrimSpace(p.ok("inspect", "-f", "{{.State.Status}}", name)))
	p.ok("stop", "-t", "1", name)
	out = append(out, strings.TrimSpace(p.ok("inspect", "-f", "{{.State.ExitCode}}", name)))
	p.ok("rm", name)
	if p.cmd("inspect", name).code != 0 {
		out = append(out, "removed")
	}
	return strings.Join(out, "|")
}

// TestPodmanTopAndStats: `podman top CTR -ef` (ps(1)'s options, which podman
// runs as the image's ps inside the container) lists the guest's processes
// and nothing else, as under runc; `podman stats` shows the container's
// memory in use and its pids.
func TestPodmanTopAndStats(t *testing.T) {
	needPackages(t, "podman", "podman")
	if r := run(t, "podman", "import", "-q", busyboxTar(t), image); r.code != 0 {
		t.Fatalf("podman import: %s", r.stderr)
	}
	got := map[string]string{}
	for _, rt := range runtimes(t) {
		p := client{t: t, rt: rt, argv: []string{"podman", "--runtime", rt.path}}
		name := "moat-engines-top-" + rt.name
		p.cmd("rm", "-f", "-t", "0", name)
		p.ok("run", "-d", "--name", name, image, "sh", "-c", "sleep 1000 & sleep 2000")
		waitFor(t, func() bool { return strings.Count(p.cmd("top", name, "-ef").stdout, "sleep") == 2 })
		var commands []string
		for _, line := range strings.Split(strings.TrimSpace(p.ok("top", name, "-ef")), "\n")[1:] {
			// PID USER COMMAND, as podman shows busybox's ps -ef.
			if f := strings.Fields(line); len(f) >= 3 {
				commands = append(commands, strings.Join(f[2:], " "))
			}
		}
		sort.Strings(commands)
		got[rt.name] = strings.Join(commands, ",")
		if want := "sleep 1000,sleep 2000"; got[rt.name] != want {
			t.Errorf("%s: podman top -ef lists %q, want %q", rt.name, got[rt.name], want)
		}
		stats := strings.Fields(p.ok("stats", "--no-stream", "--format", "{{.MemUsage}} {{.PIDs}}", name))
		if len(stats) < 2 || strings.HasPrefix(stats[0], "0B") || stats[len(stats)-1] == "0" {
			t.Errorf("%s: podman stats shows %q: want memory in use and pids", rt.name, stats)
		}
		p.cmd("rm", "-f", "-t", "0", name)
	}
}
