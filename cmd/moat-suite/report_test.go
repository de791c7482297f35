package main

import (
	"strings"
	"testing"
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
	writeReport(&b, []*Run{runc, moat})
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
