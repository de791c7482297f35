package bench

import (
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestACommandRuntimeRunsTheWallWorkloadsAlone(t *testing.T) {
	for _, w := range Workloads {
		if w.Kind == Serve || w.Kind == Density || w.Kind == Fairness {
			continue
		}
		if got, want := runsWorkload(KindCommand, false, w.Kind), w.Kind == Wall; got != want {
			t.Errorf("a command runtime runs %s (%s): %v, want %v", w.Name, w.Kind, got, want)
		}
		if !runsWorkload(KindOCI, false, w.Kind) || !runsWorkload(KindNative, false, w.Kind) {
			t.Errorf("an oci or native runtime does not run %s", w.Name)
		}
	}
}

func TestDensityRunsUnderOCIRuntimesAlone(t *testing.T) {
	for _, kind := range []string{KindNative, KindCommand, KindOCI} {
		if got, want := runsWorkload(kind, false, Density), kind == KindOCI; got != want {
			t.Errorf("a %s runtime runs the density workload: %v, want %v", kind, got, want)
		}
	}
}

func TestACommandRuntimeNeedsABinary(t *testing.T) {
	_, err := ParseRuntimes([]byte(`[{"name": "c", "kind": "command", "args": ["--"]}]`))
	if err == nil || !strings.Contains(err.Error(), "needs a binary") {
		t.Errorf("a command runtime without a binary: %v, want an error saying it needs one", err)
	}
}

func TestTheDefaultRuntimesCompareMoatSandboxWithBwrapAndRunscDo(t *testing.T) {
	rts, err := DefaultRuntimes()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"moat-sandbox", "bwrap", "runsc-do"} {
		i := slices.IndexFunc(rts, func(rt Runtime) bool { return rt.Name == name })
		if i < 0 || rts[i].Kind != KindCommand {
			t.Errorf("runtime %s: missing or not a command runtime", name)
		}
	}
}

func TestACommandRuntimeRunsTheArgvAfterItsOwnCommandLine(t *testing.T) {
	in := &instance{Runtime: Runtime{Name: "bwrap", Kind: KindCommand, Args: []string{"--ro-bind", "/", "/"}}, command: "/usr/bin/bwrap", scratch: "/tmp/s"}
	cmd := in.commandLine(&specs.Spec{Process: &specs.Process{Args: []string{"/bin/true"}, Env: []string{"PATH=/bin"}}})
	if want := []string{"/usr/bin/bwrap", "--ro-bind", "/", "/", "/bin/true"}; !slices.Equal(cmd.Args, want) || cmd.Dir != "/tmp/s" {
		t.Errorf("command line %q in %s, want %q in /tmp/s", cmd.Args, cmd.Dir, want)
	}
}

func TestACommandRuntimeStartsBelowItsScratchWhereAContainerStartsBelowData(t *testing.T) {
	in := &instance{Runtime: Runtime{Name: "bwrap", Kind: KindCommand}, command: "/usr/bin/bwrap", scratch: "/tmp/s"}
	for cwd, want := range map[string]string{"/data/repo": "/tmp/s/repo", "/data": "/tmp/s", "/": "/tmp/s", "/database": "/tmp/s"} {
		cmd := in.commandLine(&specs.Spec{Process: &specs.Process{Args: []string{"/bin/true"}, Cwd: cwd}})
		if cmd.Dir != want {
			t.Errorf("container cwd %s: command runs in %s, want %s", cwd, cmd.Dir, want)
		}
	}
}
