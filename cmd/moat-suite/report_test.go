package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestReportListsModulesGoodInTheReferenceAndNotElsewhereFirst(t *testing.T) {
	runc := &Run{Runtime: "runc", Modules: map[string]Result{
		"test_os": {Status: Passed}, "test_pty": {Status: Skipped}, "test_ssl": {Status: Failed, Detail: "failed (3 errors)"},
		"test_time": {Status: Passed},
	}}
	moat := &Run{Runtime: "moat", Modules: map[string]Result{
		"test_os": {Status: Failed, Detail: "failed (1 failure)"}, "test_pty": {Status: TimedOut}, "test_ssl": {Status: Failed},
		"test_time": {Status: Passed},
	}}
	var b strings.Builder
	writeReport(&b, map[*suite][]*Run{pythonSuite: {runc, moat}}, nil)
	out := b.String()
	// The section ends where the next begins.
	section, _, _ := strings.Cut(out[strings.Index(out, "### Good in runc"):], "\n### ")
	for _, want := range []string{"(2)", "| test_os | passed | failed (1 failure) |", "| test_pty | skipped | timed out |"} {
		if !strings.Contains(section, want) {
			t.Errorf("the moat-only section lacks %q:\n%s", want, section)
		}
	}
	for _, not := range []string{"test_ssl", "test_time"} {
		if strings.Contains(section, not) {
			t.Errorf("the moat-only section lists %s, which is no worse in moat:\n%s", not, section)
		}
	}
	if !strings.Contains(out, "Not good in either, ending differently in moat (1)") || !strings.Contains(out, "| test_ssl | failed (3 errors) | failed |") {
		t.Errorf("test_ssl, failing in both runtimes differently, is not listed as such:\n%s", out)
	}
	if !strings.Contains(out, "| moat |  | 4 | 1 | 0 | 2 | 0 | 1 | 0 | 0 |") {
		t.Errorf("moat's totals are wrong:\n%s", out)
	}
}

func TestReportKeepsTheSectionOfASuiteWithoutResults(t *testing.T) {
	old := "# Suites written elsewhere\n\nGenerated.\n\n## CPython's regression tests\n\nold python table\n\n### Every module\n\n| test_os | passed |\n"
	runc := &Run{Runtime: "runc", Args: goTestScript([]string{"os"}, time.Minute, nil),
		Modules: map[string]Result{"os": {Status: Passed, Detail: "passed (3 tests, 0 skipped)"}}}
	var b strings.Builder
	writeReport(&b, map[*suite][]*Run{goSuite: {runc}}, sections(old))
	out := b.String()
	python, goPart, ok := strings.Cut(out, "## The Go standard library's tests")
	if !ok {
		t.Fatalf("no Go section:\n%s", out)
	}
	if !strings.Contains(python, "## CPython's regression tests\n\nold python table\n\n### Every module\n\n| test_os | passed |\n") {
		t.Errorf("the CPython section, which has no results here, is not the page's:\n%s", out)
	}
	if !strings.Contains(goPart, "| os | passed (3 tests, 0 skipped) |") || !strings.Contains(goPart, "-test.timeout=60s") {
		t.Errorf("the Go section lacks its package or its command:\n%s", goPart)
	}
}

func TestReportNamesTheTestsThatFailedInTheOtherRuntimeAlone(t *testing.T) {
	runc := &Run{Runtime: "runc", Modules: map[string]Result{
		"net":  {Status: Failed, Detail: "failed (1 of 9 tests)", Failing: []string{"TestA"}},
		"time": {Status: Passed},
	}}
	moat := &Run{Runtime: "moat", Modules: map[string]Result{
		"net":  {Status: Failed, Detail: "failed (2 of 9 tests)", Failing: []string{"TestA", "TestB/sub"}},
		"time": {Status: Failed, Detail: "failed (1 of 4 tests)", Failing: []string{"TestSleep"}},
	}}
	var b strings.Builder
	writeReport(&b, map[*suite][]*Run{goSuite: {runc, moat}}, nil)
	out := b.String()
	for _, want := range []string{
		"| package | runc | moat | failing in moat alone |",
		"| time | passed | failed (1 of 4 tests) | TestSleep |",
		"| net | failed (1 of 9 tests) | failed (2 of 9 tests) | TestB/sub |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}

func TestReportNamesAtMostADozenFailingTestsOfAUnit(t *testing.T) {
	var many []string
	for i := range 20 {
		many = append(many, fmt.Sprintf("T%02d", i))
	}
	runc := &Run{Runtime: "runc", Modules: map[string]Result{"net": {Status: Passed}}}
	moat := &Run{Runtime: "moat", Modules: map[string]Result{"net": {Status: Failed, Failing: many}}}
	var b strings.Builder
	writeReport(&b, map[*suite][]*Run{goSuite: {runc, moat}}, nil)
	if out := b.String(); !strings.Contains(out, "T11, and 8 more |") || strings.Contains(out, "T12") {
		t.Errorf("the failing tests are not cut after a dozen:\n%s", out)
	}
}
