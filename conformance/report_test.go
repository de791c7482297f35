package conformance

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestReport(t *testing.T) {
	results := []Result{
		{Name: "file/a", Status: Pass, Native: &Outcome{}, Runtime: &Outcome{DurationMS: 12.4}},
		{Name: "mm/b", Status: Broken, Reason: "fails natively: x"},
		{Name: "file/c", Status: Fail, Reason: "c.c:3: expected y"},
		{Name: "real/echo", Status: Skip, Reason: "no reference runtime"},
	}
	rep := NewReport(&Runtime{Name: "moat", Path: "/bin/moat"}, nil, results)
	if got, want := rep.Summary(), "1 passed, 2 failed, 1 skipped"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	file := filepath.Join(t.TempDir(), "r.json")
	if err := rep.WriteJSON(file); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		Runtime  string
		Failed   int
		Families []struct {
			Family  string
			Results []struct{ Name, Status string }
		}
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, f := range back.Families {
		for _, r := range f.Results {
			order = append(order, f.Family+":"+r.Name+":"+r.Status)
		}
	}
	want := []string{"file:file/a:PASS", "file:file/c:FAIL", "mm:mm/b:BROKEN", "real:real/echo:SKIP"}
	if back.Runtime != "moat" || back.Failed != 2 || len(order) != len(want) {
		t.Fatalf("report %s", data)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Errorf("result %d is %s, want %s", i, order[i], want[i])
		}
	}

	lines := map[string]string{
		"PASS file/a  12ms":                    results[0].Line(),
		"BROKEN mm/b: fails natively: x":       results[1].Line(),
		"FAIL file/c: c.c:3: expected y":       results[2].Line(),
		"SKIP real/echo: no reference runtime": results[3].Line(),
	}
	for want, got := range lines {
		if got != want {
			t.Errorf("line %q, want %q", got, want)
		}
	}
	if got := NewReport(nil, nil, nil).Summary(); got != "0 passed, 0 failed" {
		t.Errorf("empty summary %q", got)
	}
}
