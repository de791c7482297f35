package main

import (
	"strings"
	"testing"
)

func TestParseRegrtestTakesEachModulesLastReportedEnd(t *testing.T) {
	out := `0:00:00 load avg: 7.52 Run tests in parallel using 2 child processes (timeout: 1 min, worker timeout: 1 min 30 sec)
0:00:01 load avg: 7.52 [1/7] test_grp passed
0:00:01 load avg: 7.52 [2/7] test_pwd passed -- running: test_ssl (31.0 sec)
0:00:01 load avg: 7.52 [3/7] test_curses skipped (resource denied)
test_curses skipped -- Use of the 'curses' resource not enabled
0:00:02 load avg: 7.52 [4/7/1] test_nosuchmod failed (uncaught exception)
[ 5/7/1] test_wait3 passed (35.2 sec)
0:00:10 load avg: 7.88 [6/7/2] test_ssl failed (82 errors)
0:00:11 load avg: 7.88 [7/7/3] test_os failed (env changed) (1 min 3 sec)
0:01:40 load avg: 7.88 [7/7/4] test_signal timed out (1 min 30 sec)
0:01:41 load avg: 7.88 [7/7/4] test_signal failed (1 failure)
    test_nosuchmod test_ssl
`
	got := parseRegrtest(strings.NewReader(out))
	want := map[string]Status{
		"test_grp": Passed, "test_pwd": Passed, "test_curses": Skipped, "test_nosuchmod": Crashed,
		"test_wait3": Passed, "test_ssl": Failed, "test_os": EnvChanged, "test_signal": Failed,
	}
	if len(got) != len(want) {
		t.Errorf("parsed %d modules, want %d: %v", len(got), len(want), got)
	}
	for mod, st := range want {
		if got[mod].Status != st {
			t.Errorf("%s: %q (%q), want %q", mod, got[mod].Status, got[mod].Detail, st)
		}
	}
	if d := got["test_pwd"].Detail; d != "passed" {
		t.Errorf("test_pwd's detail %q keeps what still runs", d)
	}
	for mod, want := range map[string]string{"test_wait3": "passed", "test_os": "failed (env changed)", "test_ssl": "failed (82 errors)"} {
		if d := got[mod].Detail; d != want {
			t.Errorf("%s's detail %q, want %q: the duration is not how it ended", mod, d, want)
		}
	}
}

func TestStatusGoodHoldsPassesAndSkipsOnly(t *testing.T) {
	for _, s := range []Status{Passed, Skipped, NoTests} {
		if !s.Good() {
			t.Errorf("%q is not good", s)
		}
	}
	for _, s := range []Status{Failed, EnvChanged, TimedOut, Crashed, NotRun} {
		if s.Good() {
			t.Errorf("%q is good", s)
		}
	}
}
