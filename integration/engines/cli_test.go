package engines

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// ociRuntime is a runtime's command line at a state root of the test's.
type ociRuntime struct {
	runtimeUnderTest
	root string
}

func (r ociRuntime) cmd(t *testing.T, args ...string) result {
	t.Helper()
	return run(t, r.path, append([]string{"--root", r.root}, args...)...)
}

// bundle writes a busybox bundle whose process is args.
func bundle(t *testing.T, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	rootfs := filepath.Join(dir, "rootfs")
	os.Mkdir(rootfs, 0o755)
	if out, err := exec.Command("tar", "-C", rootfs, "-xf", busyboxTar(t)).CombinedOutput(); err != nil {
		t.Fatalf("untar: %v: %s", err, out)
	}
	spec := specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{Args: args, Env: []string{"PATH=/bin"}, Cwd: "/",
			Rlimits: []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}}},
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "cli",
		Mounts:   []specs.Mount{{Destination: "/proc", Type: "proc", Source: "proc"}},
		Linux: &specs.Linux{Namespaces: []specs.LinuxNamespace{{Type: specs.PIDNamespace},
			{Type: specs.MountNamespace}, {Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}}},
	}
	data, _ := json.Marshal(spec)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestTheRestOfRuncsCommandLine runs exec, ps, pause and resume, and the
// errors of each, under runc and moat, and compares what each prints and
// exits with.
func TestTheRestOfRuncsCommandLine(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: runs containers")
	}
	b := bundle(t, "sleep", "1000")
	got := map[string][]string{}
	for _, rt := range runtimes(t) {
		r := ociRuntime{rt, t.TempDir()}
		id := "cli-" + rt.name
		var seen []string
		note := func(what string, res result) {
			seen = append(seen, what+"="+itoa(res.code))
			if res.code != 0 && strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 {
				t.Errorf("%s: %s: error of more than one line: %q", rt.name, what, res.stderr)
			}
		}
		note("exec unknown", r.cmd(t, "exec", "nosuch", "true"))
		note("pause unknown", r.cmd(t, "pause", "nosuch"))
		note("ps unknown", r.cmd(t, "ps", "nosuch"))
		note("exec bad flag", r.cmd(t, "exec", "--bogus", "nosuch", "true"))
		note("unknown command", r.cmd(t, "bogus"))
		if res := r.cmd(t, "run", "-d", "--bundle", b, id); res.code != 0 {
			t.Fatalf("%s run -d: %s", rt.name, res.stderr)
		}
		res := r.cmd(t, "exec", id, "sh", "-c", "echo in; exit 3")
		note("exec status", res)
		seen = append(seen, "exec out="+res.stdout)
		note("exec by signal", r.cmd(t, "exec", id, "sh", "-c", "kill -TERM $$"))
		seen = append(seen, "exec ppid="+r.cmd(t, "exec", id, "sh", "-c", "echo $PPID").stdout)
		note("exec no args", r.cmd(t, "exec", id))
		note("exec missing program", r.cmd(t, "exec", id, "nosuch"))
		note("exec bad user", r.cmd(t, "exec", "-u", "abc", id, "true"))
		pidFile := filepath.Join(t.TempDir(), "pid")
		note("exec -d", r.cmd(t, "exec", "-d", "--pid-file", pidFile, id, "sleep", "1000"))
		if data, err := os.ReadFile(pidFile); err != nil {
			t.Errorf("%s: exec -d wrote no pid file: %v", rt.name, err)
		} else if pid, err := strconv.Atoi(string(data)); err != nil || !alive(pid) {
			t.Errorf("%s: exec -d's pid file holds %q, no living process", rt.name, data)
		}
		var pids []int
		ps := r.cmd(t, "ps", "--format", "json", id)
		note("ps json", ps)
		if err := json.Unmarshal([]byte(ps.stdout), &pids); err != nil {
			t.Errorf("%s: ps --format json printed %q: %v", rt.name, ps.stdout, err)
		}
		// runc's list is its cgroup's, which may still hold a runc of its
		// own for a moment; moat's is one stub per guest process.
		seen = append(seen, "ps lists both="+boolStr(len(pids) >= 2))
		if rt.name == "moat" && len(pids) != 2 {
			t.Errorf("moat ps --format json = %v, want the pids of init and of the exec'd process", pids)
		}
		note("ps bad format", r.cmd(t, "ps", "--format", "yaml", id))
		note("resume running", r.cmd(t, "resume", id))
		note("pause", r.cmd(t, "pause", id))
		seen = append(seen, "state="+stateOf(t, r, id))
		note("pause paused", r.cmd(t, "pause", id))
		note("exec paused", r.cmd(t, "exec", id, "true"))
		note("resume", r.cmd(t, "resume", id))
		seen = append(seen, "state="+stateOf(t, r, id))
		note("kill", r.cmd(t, "kill", id, "KILL"))
		waitFor(t, func() bool { return stateOf(t, r, id) == "stopped" })
		note("exec stopped", r.cmd(t, "exec", id, "true"))
		note("pause stopped", r.cmd(t, "pause", id))
		note("delete", r.cmd(t, "delete", id))
		if entries, _ := os.ReadDir(r.root); len(entries) != 0 {
			t.Errorf("%s: the state root still holds %d entries after delete", rt.name, len(entries))
		}
		got[rt.name] = seen
	}
	want := []string{"exec unknown=255", "pause unknown=1", "ps unknown=1", "exec bad flag=1", "unknown command=3",
		"exec status=3", "exec out=in\n", "exec by signal=143", "exec ppid=0\n", "exec no args=255",
		"exec missing program=255", "exec bad user=255", "exec -d=0", "ps json=0", "ps lists both=true", "ps bad format=1",
		"resume running=1", "pause=0", "state=paused", "pause paused=1", "exec paused=255", "resume=0",
		"state=running", "kill=0", "exec stopped=255", "pause stopped=1", "delete=0"}
	for name, seen := range got {
		if strings.Join(seen, "|") != strings.Join(want, "|") {
			t.Errorf("%s:\n got %q\nwant %q", name, seen, want)
		}
	}
}

func stateOf(t *testing.T, r ociRuntime, id string) string {
	t.Helper()
	var st struct {
		Status string `json:"status"`
	}
	json.Unmarshal([]byte(r.cmd(t, "state", id).stdout), &st)
	return st.Status
}

func alive(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return pid > 0 && err == nil
}
