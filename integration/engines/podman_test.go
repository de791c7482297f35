package engines

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// image is the tag the cases run, imported into each engine.
const image = "localhost/moat-engines-busybox:latest"

// Every podman run says --pull never (nothing is ever pulled) and sets
// RLIMIT_NOFILE and RLIMIT_NPROC: podman's defaults may be above the
// host's hard limits, which runc, the reference, cannot raise.

// podman is podman driving one OCI runtime.
type podman struct {
	t  *testing.T
	rt runtimeUnderTest
}

func (p podman) cmd(args ...string) result {
	p.t.Helper()
	return run(p.t, "podman", append([]string{"--runtime", p.rt.path}, args...)...)
}

// ok runs args and fails the test unless they succeed.
func (p podman) ok(args ...string) string {
	p.t.Helper()
	r := p.cmd(args...)
	if r.code != 0 {
		p.t.Fatalf("%s: podman %q: exit %d, stderr %q", p.rt.name, args, r.code, r.stderr)
	}
	return r.stdout
}

func TestPodman(t *testing.T) {
	needPackages(t, "podman", "podman")
	tarball := busyboxTar(t)
	if r := run(t, "podman", "import", "-q", tarball, image); r.code != 0 {
		t.Fatalf("podman import: %s", r.stderr)
	}
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
		run  func(p podman) string
		want string
	}{
		{"run", func(p podman) string {
			return p.ok("run", "--rm", "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", image, "echo", "hello")
		}, "hello\n"},
		{"exit status", func(p podman) string {
			r := p.cmd("run", "--rm", "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", image, "sh", "-c", "exit 7")
			return itoa(r.code)
		}, "7"},
		{"bind mount read-only", func(p podman) string {
			return p.ok("run", "--rm", "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", "-v", host+":/data:ro", image, "sh", "-c",
				"cat /data/f; touch /data/g 2>/dev/null; echo $?")
		}, "from the host\n1\n"},
		{"read-only root with a tmpfs", func(p podman) string {
			return p.ok("run", "--rm", "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", "--read-only", "--tmpfs", "/scratch", image, "sh", "-c",
				"touch /x 2>/dev/null; echo $?; touch /scratch/x && echo tmpfs-ok")
		}, "1\ntmpfs-ok\n"},
		{"user", func(p podman) string {
			return p.ok("run", "--rm", "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", "--user", "65534:65534", image, "id")
		}, "uid=65534(nobody) gid=65534(nogroup) groups=65534(nogroup)\n"},
		{"cap-drop", func(p podman) string {
			return p.ok("run", "--rm", "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", "--cap-drop", "ALL", image, "grep", "CapEff", "/proc/self/status")
		}, "CapEff:\t0000000000000000\n"},
		{"limits and seccomp profile accepted", func(p podman) string {
			return p.ok("run", "--rm", "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", "--memory", "64m", "--pids-limit", "50",
				"--security-opt", "seccomp="+profile, image, "echo", "ok")
		}, "ok\n"},
		{"detached life", podmanDetached, "started\n|in\n3|paused|running|137|removed"},
		{"exec -it", func(p podman) string {
			name := "moat-engines-it-" + p.rt.name
			p.cmd("rm", "-f", "-t", "0", name)
			p.ok("run", "-d", "--name", name, "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", image, "sleep", "1000")
			defer p.cmd("rm", "-f", "-t", "0", name)
			shown, code := interact(p.t, "# ", "echo $((6*7))\rexit 3\r",
				"podman", "--runtime", p.rt.path, "exec", "-it", name, "sh")
			return boolStr(strings.Contains(shown, "42")) + "|" + itoa(code)
		}, "true|3"},
		{"run -it", func(p podman) string {
			shown, code := interact(p.t, "# ", "tty\rexit 4\r",
				"podman", "--runtime", p.rt.path, "run", "-it", "--rm", "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", image, "sh")
			return boolStr(strings.Contains(shown, "/dev/pts/0")) + "|" + itoa(code)
		}, "true|4"},
	}
	rts := runtimes(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := map[string]string{}
			for _, rt := range rts {
				got[rt.name] = c.run(podman{t, rt})
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

// podmanDetached runs a container in the background through its life:
// exec and its status, logs, pause and unpause, stop (SIGTERM, which
// init ignores, then SIGKILL), rm.
func podmanDetached(p podman) string {
	name := "moat-engines-d-" + p.rt.name
	p.cmd("rm", "-f", "-t", "0", name)
	p.ok("run", "-d", "--name", name, "--pull", "never", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", image, "sh", "-c", "echo started; exec sleep 1000")
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
