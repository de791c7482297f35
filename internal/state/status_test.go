package state

import (
	"strings"
	"testing"
)

func TestLifecycleTable(t *testing.T) {
	all := []Status{Creating, Created, Running, Paused, Stopped}
	allowed := map[[2]Status]bool{
		{Creating, Created}: true,
		{Creating, Stopped}: true,
		{Created, Running}:  true,
		{Created, Stopped}:  true,
		{Running, Paused}:   true,
		{Running, Stopped}:  true,
		{Paused, Running}:   true,
		{Paused, Stopped}:   true,
	}
	for _, from := range all {
		for _, to := range all {
			if got, want := from.CanBecome(to), allowed[[2]Status{from, to}]; got != want {
				t.Errorf("%s.CanBecome(%s) = %v, want %v", from, to, got, want)
			}
		}
	}
}

func TestPauseResumeAndExecUseRuncsWords(t *testing.T) {
	for s, want := range map[Status]string{Running: "", Paused: "container not running", Created: "container not running",
		Stopped: "container not running"} {
		checkMessage(t, "CheckPause("+string(s)+")", CheckPause(s), want)
	}
	for s, want := range map[Status]string{Paused: "", Running: "container not paused", Stopped: "container not paused"} {
		checkMessage(t, "CheckResume("+string(s)+")", CheckResume(s), want)
	}
	for s, want := range map[Status]string{Running: "", Created: "", Paused: "cannot exec in a paused container",
		Stopped: "cannot exec in a stopped container"} {
		checkMessage(t, "CheckExec("+string(s)+")", CheckExec(s), want)
	}
	if err := CheckDelete("c1", Paused); err == nil {
		t.Error("CheckDelete of a paused container accepted it")
	}
}

func TestCheckStart(t *testing.T) {
	cases := map[Status]string{
		Created:  "",
		Running:  "cannot start an already running container",
		Stopped:  "cannot start a container that has stopped",
		Creating: "cannot start a container in the creating state",
	}
	for s, want := range cases {
		checkMessage(t, "CheckStart("+string(s)+")", CheckStart(s), want)
	}
}

func TestCheckKill(t *testing.T) {
	cases := map[Status]string{
		Creating: "",
		Created:  "",
		Running:  "",
		Stopped:  "container not running",
	}
	for s, want := range cases {
		checkMessage(t, "CheckKill("+string(s)+")", CheckKill(s), want)
	}
}

func TestCheckDelete(t *testing.T) {
	cases := map[Status]string{
		Creating: "",
		Created:  "",
		Running:  "cannot delete container c1 that is not stopped: running",
		Stopped:  "",
	}
	for s, want := range cases {
		checkMessage(t, "CheckDelete("+string(s)+")", CheckDelete("c1", s), want)
	}
}

func TestRecordFollowsTheTable(t *testing.T) {
	c := &Container{ID: "c1", Recorded: Creating}
	for _, to := range []Status{Created, Running} {
		if err := c.Record(to); err != nil {
			t.Fatalf("Record(%s): %v", to, err)
		}
	}
	for _, to := range []Status{Creating, Created, Running} {
		if err := c.Record(to); err == nil || !strings.Contains(err.Error(), "from running to "+string(to)) {
			t.Errorf("Record(%s) from running = %v, want a refusal", to, err)
		}
	}
}

func checkMessage(t *testing.T, what string, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("%s = %v, want nil", what, err)
	case want != "" && (err == nil || err.Error() != want):
		t.Errorf("%s = %v, want %q", what, err, want)
	}
}
