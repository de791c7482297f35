package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// recordingHook is a hook that appends its name to dir/order and keeps
// the state it read on stdin in dir/<name>.json.
func recordingHook(dir, name string) specs.Hook {
	return specs.Hook{Path: "/bin/sh", Args: []string{"sh", "-c",
		"cat > " + filepath.Join(dir, name+".json") + " && echo " + name + " >> " + filepath.Join(dir, "order")}}
}

func (e *env) setHooks(h *specs.Hooks) {
	spec, err := ocirun.ReadSpec(e.bundle)
	must(e.t, err)
	spec.Hooks = h
	e.writeSpec(*spec)
}

func readHookState(t *testing.T, dir, name string) specs.State {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatalf("hook %s: %v", name, err)
	}
	var st specs.State
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatalf("hook %s read %q: %v", name, data, err)
	}
	return st
}

func TestHooksRunInTheirOrderWithTheContainersState(t *testing.T) {
	e := newEnv(t)
	e.config("true")
	out := t.TempDir()
	e.setHooks(&specs.Hooks{
		Prestart:        []specs.Hook{recordingHook(out, "prestart")},
		CreateRuntime:   []specs.Hook{recordingHook(out, "createRuntime")},
		CreateContainer: []specs.Hook{recordingHook(out, "createContainer")},
		Poststart:       []specs.Hook{recordingHook(out, "poststart")},
		Poststop:        []specs.Hook{recordingHook(out, "poststop")},
	})
	if _, errOut, code := e.moatCmd("create", "--bundle", e.bundle, "h1"); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	pid := e.state("h1").Pid
	if _, errOut, code := e.moatCmd("start", "h1"); code != 0 {
		t.Fatalf("start: exit %d: %s", code, errOut)
	}
	e.waitStatus("h1", specs.StateStopped)
	if _, errOut, code := e.moatCmd("delete", "h1"); code != 0 {
		t.Fatalf("delete: exit %d: %s", code, errOut)
	}
	order, err := os.ReadFile(filepath.Join(out, "order"))
	must(t, err)
	if got, want := strings.Fields(string(order)), []string{"prestart", "createRuntime", "createContainer", "poststart", "poststop"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("hooks ran as %v, want %v", got, want)
	}
	for name, want := range map[string]struct {
		status specs.ContainerState
		pid    int
	}{
		"prestart": {"creating", pid}, "createRuntime": {"creating", pid}, "createContainer": {"creating", pid},
		"poststart": {specs.StateRunning, pid}, "poststop": {specs.StateStopped, 0},
	} {
		st := readHookState(t, out, name)
		if st.ID != "h1" || st.Bundle != e.bundle || st.Status != want.status || st.Pid != want.pid {
			t.Errorf("%s hook read id %q bundle %q status %q pid %d; want h1 %s %s %d",
				name, st.ID, st.Bundle, st.Status, st.Pid, e.bundle, want.status, want.pid)
		}
	}
}

func TestAFailingCreateRuntimeHookFailsCreateAndLeavesNothing(t *testing.T) {
	e := newEnv(t)
	e.config("true")
	e.setHooks(&specs.Hooks{CreateRuntime: []specs.Hook{
		{Path: "/bin/true"},
		{Path: "/bin/sh", Args: []string{"sh", "-c", "echo no network >&2; exit 3"}},
	}})
	_, errOut, code := e.moatCmd("create", "--bundle", e.bundle, "h2")
	if code == 0 {
		t.Fatal("create succeeded with a failing createRuntime hook")
	}
	if !strings.Contains(errOut, "createRuntime hook #1") || !strings.Contains(errOut, "no network") {
		t.Errorf("create's error %q does not name the hook and quote its stderr", errOut)
	}
	if _, _, code := e.moatCmd("state", "h2"); code == 0 {
		t.Error("the container exists after a failed create")
	}
}

func TestAHookPastItsTimeoutIsKilledAndFailsCreate(t *testing.T) {
	e := newEnv(t)
	e.config("true")
	one := 1
	e.setHooks(&specs.Hooks{Prestart: []specs.Hook{{Path: "/bin/sleep", Args: []string{"sleep", "30"}, Timeout: &one}}})
	_, errOut, code := e.moatCmd("create", "--bundle", e.bundle, "h3")
	if code == 0 || !strings.Contains(errOut, "timeout") {
		t.Fatalf("create with a hook past its timeout: exit %d, %q; want a failure naming the timeout", code, errOut)
	}
}

func TestAFailingPoststopHookOnlyWarns(t *testing.T) {
	e := newEnv(t)
	e.config("true")
	e.setHooks(&specs.Hooks{Poststop: []specs.Hook{{Path: "/bin/false"}}})
	_, errOut, code := e.moatCmd("run", "--bundle", e.bundle, "h4")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "warning") || !strings.Contains(errOut, "poststop hook #0") {
		t.Errorf("run's stderr %q does not warn of the failed poststop hook", errOut)
	}
}

func TestAFailingPoststartHookKillsTheContainerAndFailsStart(t *testing.T) {
	e := newEnv(t)
	e.config("sleep", "30")
	e.setHooks(&specs.Hooks{Poststart: []specs.Hook{{Path: "/bin/false"}}})
	if _, errOut, code := e.moatCmd("create", "--bundle", e.bundle, "h5"); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}
	_, errOut, code := e.moatCmd("start", "h5")
	if code == 0 || !strings.Contains(errOut, "poststart hook #0") {
		t.Errorf("start with a failing poststart hook: exit %d, %q; want a failure naming the hook", code, errOut)
	}
	if st := e.waitStatus("h5", specs.StateStopped); st.Status != specs.StateStopped {
		t.Errorf("after the failed poststart hook the container is %s, want stopped", st.Status)
	}
	e.moatCmd("delete", "h5")
}
