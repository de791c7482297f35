package conformance

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var updateDoc = flag.Bool("update", false, "rewrite docs/conformance.md from docs/conformance-*.json")

const comparisonPath = "../docs/conformance.md"

// comparedRuntimes are the reports docs/conformance.md sets side by side:
// the reference first, the runtime under test last.
var comparedRuntimes = []string{"runc", "runsc", "moat"}

// TestConformanceDocUpToDate fails when docs/conformance.md does not match
// the JSON reports beside it; `make docs` rewrites it.
func TestConformanceDocUpToDate(t *testing.T) {
	var reports []*Report
	for _, rt := range comparedRuntimes {
		rep, err := ReadReport("../docs/conformance-" + rt + ".json")
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, rep)
	}
	want := ComparisonPage(reports)
	if *updateDoc {
		if err := os.WriteFile(comparisonPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(comparisonPath)
	if err != nil || string(got) != want {
		t.Fatalf("docs/conformance.md is stale: run `make docs`")
	}
}

func TestComparisonPageTakesEveryFigureFromTheReports(t *testing.T) {
	ref := NewReport(&Runtime{Name: "runc"}, nil, []Result{
		{Name: "file/a", Status: Pass},
	})
	sub := NewReport(&Runtime{Name: "moat"}, nil, []Result{
		{Name: "file/a", Status: Fail, Reason: "a.c:3: expected x | y"},
		{Name: "file/b", Status: Pass},
		{Name: "real/echo", Status: Skip, Reason: "no reference runtime"},
	})
	page := ComparisonPage([]*Report{ref, sub})
	for _, row := range []string{
		"| program | runc | moat |",
		`| file/a | PASS | FAIL: a.c:3: expected x \| y |`,
		"| file/b | not run | PASS |",
		"| real/echo | not run | SKIP: no reference runtime |",
		"| **passed** | **1/1** | **1/3** (1 skipped) |",
	} {
		if !strings.Contains(page, row+"\n") {
			t.Errorf("page lacks the row %q:\n%s", row, page)
		}
	}
	if strings.Index(page, "| file/a |") > strings.Index(page, "| file/b |") {
		t.Errorf("rows are not in the order the programs ran:\n%s", page)
	}
}

func TestReadReportReadsWhatWriteJSONWrote(t *testing.T) {
	rep := NewReport(&Runtime{Name: "moat", Path: "/bin/moat"}, &Runtime{Name: "runc"},
		[]Result{{Name: "file/a", Status: Pass}, {Name: "mm/b", Status: Broken, Reason: "fails natively"}})
	file := t.TempDir() + "/r.json"
	if err := rep.WriteJSON(file); err != nil {
		t.Fatal(err)
	}
	back, err := ReadReport(file)
	if err != nil {
		t.Fatal(err)
	}
	if ComparisonPage([]*Report{back}) != ComparisonPage([]*Report{rep}) {
		t.Errorf("the report read back renders differently:\n%s\nwant\n%s",
			ComparisonPage([]*Report{back}), ComparisonPage([]*Report{rep}))
	}
	if _, err := ReadReport(file + ".missing"); err == nil {
		t.Error("reading a missing report gave no error")
	}
}
