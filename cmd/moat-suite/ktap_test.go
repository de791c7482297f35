package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseKselftestsCountsTAPCasesAtAnyDepth(t *testing.T) {
	out := strings.Join([]string{
		"@@@ moat-suite: begin seccomp:seccomp_bpf",
		"TAP version 13",
		"1..4",
		"# Starting 4 tests from 1 test cases.",
		"ok 1 global.kcmp",
		"not ok 2 global.user_notification_sync",
		"ok 3 global.tsync # SKIP no threads",
		"# ok 4 a line a test printed, not its own",
		"@@@ moat-suite: end seccomp:seccomp_bpf 1",
		"@@@ moat-suite: begin futex:run.sh",
		"# TAP version 13",
		"# # ok 1 futex_wait private",
		"# # not ok 2 futex_wait shared # FAIL",
		"# ok 1 futex_requeue_pi # XFAIL",
		"@@@ moat-suite: end futex:run.sh 0",
		"@@@ moat-suite: begin sync:sync_test",
		"ok 1 # SKIP Sync Framework not supported by kernel",
		"@@@ moat-suite: end sync:sync_test 4",
		"@@@ moat-suite: begin vm:mremap_test",
		"not built",
		"@@@ moat-suite: end vm:mremap_test 127",
		"@@@ moat-suite: begin timers:nsleep-lat",
		"ok 1 CLOCK_REALTIME",
		"nsleep latency CLOCK_BOOTTIME   @@@ moat-suite: end timers:nsleep-lat 124",
		"@@@ moat-suite: begin x86:sigreturn_64",
		"@@@ moat-suite: end x86:sigreturn_64 139",
		"@@@ moat-suite: begin proc:read",
	}, "\n")
	got := parseKselftests(strings.NewReader(out))
	want := map[string]struct {
		status Status
		cases  Cases
	}{
		// The "# ok 4" line is the output of a program the test ran,
		// nested one level: counted as the harness prints nested TAP.
		"seccomp:seccomp_bpf": {Failed, Cases{OK: 2, NotOK: 1, Skip: 1}},
		// run.sh ends 0 whatever its programs said.
		"futex:run.sh":      {Failed, Cases{OK: 2, NotOK: 1}},
		"sync:sync_test":    {Skipped, Cases{Skip: 1}},
		"timers:nsleep-lat": {TimedOut, Cases{OK: 1}},
		"x86:sigreturn_64":  {Crashed, Cases{}},
	}
	for name, w := range want {
		r, ok := got[name]
		if !ok {
			t.Errorf("%s: no result", name)
			continue
		}
		if r.Status != w.status || r.Cases == nil || *r.Cases != w.cases {
			t.Errorf("%s: %s %+v, want %s %+v (%s)", name, r.Status, r.Cases, w.status, w.cases, r.Detail)
		}
	}
	if f := got["seccomp:seccomp_bpf"].Failing; !slices.Equal(f, []string{"global.user_notification_sync"}) {
		t.Errorf("seccomp_bpf's failing cases: %q", f)
	}
	if f := got["futex:run.sh"].Failing; !slices.Equal(f, []string{"futex_wait shared"}) {
		t.Errorf("futex's failing cases: %q", f)
	}
	if r := got["vm:mremap_test"]; r.Status != NotRun || r.Detail != "not built" {
		t.Errorf("a program not built: %s (%s)", r.Status, r.Detail)
	}
	if r := got["proc:read"]; r.Status != Crashed {
		t.Errorf("a program that never ended: %s", r.Status)
	}
}

func TestReportTotalsTheKselftestCases(t *testing.T) {
	runc := &Run{Runtime: "runc", SuiteVersion: "linux-source-6.1_6.1.172-1",
		Args: kselftestScript([]string{"core:close_range_test"}, time.Minute, nil),
		Modules: map[string]Result{
			"core:close_range_test": {Status: Passed, Detail: "passed (7 ok, 0 not ok, 0 skip)", Cases: &Cases{OK: 7}},
			"seccomp:seccomp_bpf":   {Status: Passed, Detail: "passed (80 ok, 0 not ok, 2 skip)", Cases: &Cases{OK: 80, Skip: 2}},
		}}
	moat := &Run{Runtime: "moat", Modules: map[string]Result{
		"core:close_range_test": {Status: Passed, Cases: &Cases{OK: 7}},
		"seccomp:seccomp_bpf":   {Status: Failed, Detail: "failed (78 ok, 2 not ok, 2 skip)", Cases: &Cases{OK: 78, NotOK: 2, Skip: 2}, Failing: []string{"TSYNC.two", "global.kcmp"}},
	}}
	var b strings.Builder
	writeReport(&b, map[*suite][]*Run{kselftestSuite: {runc, moat}}, nil)
	out := b.String()
	for _, want := range []string{
		"| runc | 87 | 0 | 2 |",
		"| moat | 85 | 2 | 2 |",
		"| seccomp:seccomp_bpf | passed (80 ok, 0 not ok, 2 skip) | failed (78 ok, 2 not ok, 2 skip) | TSYNC.two, global.kcmp |",
		"timeout -k 10 60 ./PROGRAM",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}
