package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/bundle"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

func TestVersion(t *testing.T) {
	e := newEnv(t)
	want := "moat version " + version + "\nspec: " + specs.Version + "\n"
	for _, flag := range []string{"--version", "-v"} {
		if r := e.ok(flag); r.stdout != want {
			t.Errorf("moat %s printed %q, want %q", flag, r.stdout, want)
		}
	}
}

func TestHelp(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {}} {
		r := e.ok(args...)
		for _, c := range commands {
			if !strings.Contains(r.stdout, "  "+c.name+" ") {
				t.Errorf("moat %q does not list %s", args, c.name)
			}
		}
		if !strings.Contains(r.stdout, "--systemd-cgroup") || !strings.Contains(r.stdout, "slice:prefix:name") {
			t.Errorf("moat %q does not say what --systemd-cgroup does", args)
		}
	}
	for _, c := range commands {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "-h"}, {"help", c.name}} {
			r := e.ok(args...)
			if !strings.HasPrefix(r.stdout, "Usage: moat [global options] "+c.name+" ") {
				t.Errorf("moat %q printed %q", args, r.stdout)
			}
		}
	}
	if r := e.ok("help", "kill"); !strings.Contains(r.stdout, "--all, -a") {
		t.Errorf("kill help does not show --all, -a: %q", r.stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	e := newEnv(t)
	e.failsWith(3, `unknown command "bogus"`, "bogus")
	e.fails("flag provided but not defined: -bogus", "--bogus", "list")
	e.fails("flag provided but not defined: -bogus", "create", "--bogus", "c1")
	e.fails("takes exactly 1 argument(s)", "create")
	e.fails("takes exactly 1 argument(s)", "delete", "a", "b")
	e.fails("takes 1 to 2 arguments", "kill", "a", "b", "c")
	e.fails("takes no arguments", "list", "extra")
	e.fails("invalid log-format: xml", "--log-format", "xml", "list")
	e.ok("--systemd-cgroup", "list")
	e.fails(`unknown --platform "ptrace": moat supports systrap and kvm`, "--platform", "ptrace", "list")
	e.ok("--platform=kvm", "list")
}

func TestLogFile(t *testing.T) {
	e := newEnv(t)
	for _, format := range []string{"text", "json"} {
		logPath := filepath.Join(t.TempDir(), "log")
		e.fails("container does not exist", "--log", logPath, "--log-format", format, "state", "nope")
		data, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		line := string(data)
		if strings.Count(line, "\n") != 1 {
			t.Fatalf("%s log: %q, want one line", format, line)
		}
		if format == "text" {
			if !strings.HasPrefix(line, `time="`) || !strings.HasSuffix(line, "level=error msg=\"container does not exist\"\n") {
				t.Errorf("text log line %q", line)
			}
			continue
		}
		var entry map[string]string
		if err := json.Unmarshal(data, &entry); err != nil {
			t.Fatalf("json log line %q: %v", line, err)
		}
		if entry["level"] != "error" || entry["msg"] != "container does not exist" || entry["time"] == "" || len(entry) != 3 {
			t.Errorf("json log entry %v", entry)
		}
	}
}

func TestLogFileTakesDebugLinesAndTheGofersStderr(t *testing.T) {
	e := newEnv(t)
	logPath := filepath.Join(t.TempDir(), "log")
	bundle := writeBundle(t, "sleep")
	e.ok("--log", logPath, "--debug", "create", "-b", bundle, "c1")
	data, _ := os.ReadFile(logPath)
	for _, want := range []string{"level=debug", "container c1 created", "fake gofer serves " + filepath.Join(bundle, "rootfs")} {
		if !strings.Contains(string(data), want) {
			t.Errorf("log %q does not hold %q", data, want)
		}
	}
	e.ok("delete", "c1")
}

func TestList(t *testing.T) {
	e := newEnv(t)
	if r := e.ok("list"); r.stdout != "ID          PID         STATUS      BUNDLE      CREATED     OWNER\n" {
		t.Errorf("empty list %q", r.stdout)
	}
	if r := e.ok("list", "--format", "json"); r.stdout != "[]\n" {
		t.Errorf("empty json list %q", r.stdout)
	}
	bundle := writeBundle(t, "sleep")
	e.ok("create", "-b", bundle, "b1")
	e.ok("run", "-d", "-b", bundle, "a1")
	r := e.ok("list")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "a1 ") || !strings.Contains(lines[1], " running ") ||
		!strings.Contains(lines[2], " created ") || !strings.Contains(lines[2], bundle) {
		t.Errorf("list:\n%s", r.stdout)
	}
	if r := e.ok("list", "-q"); r.stdout != "a1\nb1\n" {
		t.Errorf("list -q %q", r.stdout)
	}
	var states []ociState
	if err := json.Unmarshal([]byte(e.ok("list", "-f", "json").stdout), &states); err != nil || len(states) != 2 {
		t.Fatalf("list -f json: %v %v", states, err)
	}
	if !reflect.DeepEqual(states[1], e.state("b1")) {
		t.Errorf("list entry %+v differs from state %+v", states[1], e.state("b1"))
	}
	e.fails(`invalid format "yaml"`, "list", "-f", "yaml")
}

func TestStateJSONFieldNames(t *testing.T) {
	e := newEnv(t)
	e.ok("create", "-b", writeBundle(t, "sleep"), "c1")
	var fields map[string]any
	if err := json.Unmarshal([]byte(e.ok("state", "c1").stdout), &fields); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ociVersion", "id", "pid", "status", "bundle", "rootfs", "created", "annotations", "owner"} {
		if _, ok := fields[name]; !ok {
			t.Errorf("state has no %q: %v", name, fields)
		}
	}
	e.ok("delete", "c1")
}

func TestSpec(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	e.ok("spec", "--bundle", dir)
	if err := os.Mkdir(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Load(dir)
	if err != nil {
		t.Fatalf("the default config does not load: %v", err)
	}
	s := b.Spec
	if !reflect.DeepEqual(s.Process.Args, []string{"sh"}) || !s.Process.Terminal || !s.Root.Readonly ||
		s.Root.Path != "rootfs" || len(s.Mounts) != 7 || s.Version != specs.Version {
		t.Errorf("default config %+v", s)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	e.fails("exists: remove it first", "spec", "-b", dir)
	if after, _ := os.ReadFile(filepath.Join(dir, "config.json")); string(after) != string(before) {
		t.Error("spec overwrote an existing config.json")
	}
}

func TestOptionsParse(t *testing.T) {
	cases := []struct {
		args       []string
		bundle     string
		all        bool
		positional []string
	}{
		{[]string{"id"}, ".", false, []string{"id"}},
		{[]string{"-b", "B", "id"}, "B", false, []string{"id"}},
		{[]string{"id", "--bundle", "B", "-a"}, "B", true, []string{"id"}},
		{[]string{"id", "KILL", "--all"}, ".", true, []string{"id", "KILL"}},
		{[]string{"--bundle=B", "--", "-id", "-a"}, "B", false, []string{"-id", "-a"}},
	}
	for _, c := range cases {
		o := newOptions("test")
		bundle, all := ".", false
		o.String(&bundle, "bundle,b", "DIR", ".", "")
		o.Bool(&all, "all,a", "")
		positional, err := o.parse(c.args, false)
		if err != nil || bundle != c.bundle || all != c.all || !reflect.DeepEqual(positional, c.positional) {
			t.Errorf("parse(%q) = %q, bundle %q, all %v, %v; want %q, %q, %v",
				c.args, positional, bundle, all, err, c.positional, c.bundle, c.all)
		}
	}
}

func TestParseSignal(t *testing.T) {
	for in, want := range map[string]unix.Signal{
		"KILL": unix.SIGKILL, "SIGKILL": unix.SIGKILL, "kill": unix.SIGKILL, "sigterm": unix.SIGTERM,
		"9": unix.SIGKILL, "0": 0, "USR1": unix.SIGUSR1, "WINCH": unix.SIGWINCH, "64": 64,
	} {
		if got, err := parseSignal(in); err != nil || got != want {
			t.Errorf("parseSignal(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "FOO", "SIG", "-1", "65", "9x"} {
		if _, err := parseSignal(in); err == nil {
			t.Errorf("parseSignal(%q) accepted", in)
		}
	}
}

func TestGoferArgs(t *testing.T) {
	a, err := parseGoferArgs([]string{"--rootfs", "/r", "--readonly", "--bind", "ro:/data", "--bind", "rw:/etc/hosts"})
	want := []goferTree{{"/data", true}, {"/etc/hosts", false}}
	if err != nil || a.rootfs != "/r" || !a.readonly || len(a.binds) != 2 || a.binds[0] != want[0] || a.binds[1] != want[1] {
		t.Errorf("parseGoferArgs = %+v, %v", a, err)
	}
	for _, args := range [][]string{{}, {"--rootfs", "rel"}, {"--rootfs", "/r", "extra"}, {"--bogus"},
		{"--rootfs", "/r", "--bind", "/data"}, {"--rootfs", "/r", "--bind", "rx:/data"}, {"--rootfs", "/r", "--bind", "ro:data"}} {
		if _, err := parseGoferArgs(args); err == nil {
			t.Errorf("parseGoferArgs(%q) accepted", args)
		}
	}
}
