package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParseGoTestsTellsHowEachPackageEnded(t *testing.T) {
	f := framing
	out := strings.Join([]string{
		goBegin + " io",
		f + "=== RUN   TestCopy",
		f + "--- PASS: TestCopy (0.00s)",
		f + "=== RUN   TestPipe",
		f + "--- SKIP: TestPipe (0.00s)",
		f + "PASS",
		goEnd + " io 0",
		goBegin + " os",
		f + "=== RUN   TestChmod",
		"--- FAIL: TestPrinted (0.00s)", // a test's own output, not the framework's
		f + "    --- FAIL: TestChmod/dir (0.01s)",
		f + "--- FAIL: TestChmod (0.01s)",
		f + "--- FAIL: TestOpen (0.01s)",
		f + "--- PASS: TestRead (0.01s)",
		f + "FAIL",
		goEnd + " os 1",
		goBegin + " net",
		f + "--- PASS: TestDial (0.20s)",
		"panic: test timed out after 3m0s",
		"\trunning tests:",
		"\t\tTestCopyPipeIntoTCP (1m57s)",
		"",
		"\t\tTestNotAList (1s)", // a goroutine's line, after the list
		goEnd + " net 2",
		goBegin + " time",
		f + "--- FAIL: TestSleep (0.00s)",
		"panic: runtime error: index out of range [recovered]",
		goEnd + " time 2",
		goBegin + " sync",
		f + "--- SKIP: TestMutex (0.00s)",
		f + "PASS",
		goEnd + " sync 0",
		goBegin + " embed",
		"testing: warning: no tests to run",
		f + "PASS",
		goEnd + " embed 0",
		goBegin + " bufio",
		f + "--- PASS: TestReader (0.00s)",
		goEnd + " bufio 137",
		goBegin + " syscall",
		f + "--- PASS: TestExec (0.00s)",
	}, "\n")
	got := parseGoTests(strings.NewReader(out))
	want := map[string]Result{
		"io":      {Status: Passed, Detail: "passed (2 tests, 1 skipped)"},
		"os":      {Status: Failed, Detail: "failed (2 of 3 tests)", Failing: []string{"TestChmod/dir", "TestOpen"}},
		"net":     {Status: TimedOut, Detail: "timed out (1 tests, 0 skipped)", Failing: []string{"TestCopyPipeIntoTCP"}},
		"time":    {Status: Crashed, Detail: "crashed (panic, exit 2)", Failing: []string{"TestSleep"}},
		"sync":    {Status: Skipped, Detail: "skipped (1 tests)"},
		"embed":   {Status: NoTests},
		"bufio":   {Status: TimedOut, Detail: "timed out (1 tests, 0 skipped)"},
		"syscall": {Status: Crashed, Detail: "never ended (the run stopped first)"},
	}
	if len(got) != len(want) {
		t.Errorf("parsed %d packages, want %d: %v", len(got), len(want), got)
	}
	for pkg, w := range want {
		g := got[pkg]
		if g.Status != w.Status || g.Detail != w.Detail || !slices.Equal(g.Failing, w.Failing) {
			t.Errorf("%s: %+v, want %+v", pkg, g, w)
		}
	}
}

func TestGoTestScriptNamesEachPackagesBinaryAndItsFlags(t *testing.T) {
	args := goTestScript([]string{"os/exec", "io"}, 90e9, []string{"-test.run=TestX"})
	if args[0] != "bash" || args[4] != "90" || args[5] != "1" || args[6] != "-test.run=TestX" || !slices.Equal(args[7:], []string{"os/exec", "io"}) {
		t.Errorf("script arguments %q", args[3:])
	}
	if got := goCommandLine(args); got != "pkg.test -test.short -test.v=test2json -test.timeout=90s -test.run=TestX" {
		t.Errorf("command line %q", got)
	}
	if goTestBinary("os/exec") != "os_exec.test" {
		t.Errorf("os/exec's binary is %q", goTestBinary("os/exec"))
	}
}
