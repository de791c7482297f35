package state

import (
	"strings"
	"testing"
)

func TestLifecycleTable(t *testing.T) {
	all := []Status{Creating, Created, Running, Stopped}
	allowed := map[[2]Status]bool{
		{Creating, Created}: true,
		{Creating, Stopped}: true,
		{Created, Running}:  true,
		{Created, Stopped}:  true,
		{Running, Stopped}:  true,
	}
	for _, from := range all {
		for _, to := range all {
			if got, want := from.CanBecome(to), allowed[[2]Status{from, to}]; got != want {
				t.Errorf("%s.CanBecome(%s) = %v, want %v", from, to, got, want)
			}
		}
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
