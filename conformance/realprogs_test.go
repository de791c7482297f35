package conformance

import (
	"strings"
	"testing"
	"time"
)

func TestCompareReal(t *testing.T) {
	e := &Env{timeout: time.Second}
	echo := realCheck{name: "echo"}
	exit3 := realCheck{name: "exit", wantExit: 3}
	uname := realCheck{name: "uname", filter: unameStable}
	env := realCheck{name: "env", filter: sortLines}
	out := func(code int, stdout string) *Outcome { return &Outcome{ExitCode: code, Stdout: stdout} }
	for _, tc := range []struct {
		check     realCheck
		got, want *Outcome
		reason    string // prefix; "" means they match
	}{
		{echo, out(0, "a\nb\n"), out(0, "a\nb\n"), ""},
		{echo, out(0, "a\nc\n"), out(0, "a\nb\n"), `stdout differs from runc's: line 2 is "c", want "b"`},
		{echo, out(0, "a\n"), out(0, "a\nb\n"), `stdout differs from runc's: line 2 is "", want "b"`},
		{echo, out(0, "a"), out(0, "a\nb"), `stdout differs from runc's: line 2 "b" missing`},
		{echo, out(0, "a\nb"), out(0, "a"), `stdout differs from runc's: extra line 2 "b"`},
		{echo, out(0, "a\nb\nx"), out(0, "a\nb\n"), `stdout differs from runc's: line 3 is "x", want ""`},
		{echo, &Outcome{Stderr: "oops\n"}, out(0, ""), `stderr differs from runc's: line 1 is "oops", want ""`},
		{echo, out(1, ""), out(0, ""), "exited 1, runc exited 0: exit status 1"},
		{echo, &Outcome{ExitCode: -1, TimedOut: true}, out(0, ""), "exited -1, runc exited 0: timed out after 1s"},
		{echo, out(0, ""), out(2, ""), "reference runc did not exit 0: exit status 2"},
		{exit3, out(3, ""), out(3, ""), ""},
		{exit3, out(0, ""), out(0, ""), "reference runc did not exit 3"},
		{uname,
			out(0, "Linux moat-conformance 4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016 x86_64 GNU/Linux\n"),
			out(0, "Linux moat-conformance 6.18.44 #1 SMP PREEMPT_DYNAMIC @0 x86_64 GNU/Linux\n"), ""},
		{env, out(0, "HOME=/\nPATH=/bin\n"), out(0, "PATH=/bin\nHOME=/\n"), ""},
		{env, out(0, "HOME=/\n"), out(0, "PATH=/bin\nHOME=/\n"), "stdout differs"},
		{uname,
			out(0, "Linux other 4.4.0 #1 SMP x86_64 GNU/Linux\n"),
			out(0, "Linux moat-conformance 6.18.44 #1 SMP x86_64 GNU/Linux\n"), "stdout differs"},
	} {
		reason := e.compareReal(tc.check, tc.got, tc.want, "runc")
		if (tc.reason == "") != (reason == "") || !strings.HasPrefix(reason, tc.reason) {
			t.Errorf("%s: got %+v want %+v: reason %q, want %q...", tc.check.name, tc.got, tc.want, reason, tc.reason)
		}
	}
}
