package conformance

import (
	"encoding/json"
	"fmt"
	"os"
)

// Report is the runner's JSON output: every result, grouped by family.
type Report struct {
	Runtime     string   `json:"runtime"`                // "native" when no runtime ran
	RuntimePath string   `json:"runtime_path,omitempty"` // the runtime's binary
	Reference   string   `json:"reference,omitempty"`    // runtime the real programs were compared with
	Passed      int      `json:"passed"`
	Failed      int      `json:"failed"` // FAIL and BROKEN
	Skipped     int      `json:"skipped"`
	Families    []Family `json:"families"`
}

// Family holds the results of one family, in the order they ran.
type Family struct {
	Name    string   `json:"family"`
	Results []Result `json:"results"`
}

// NewReport groups results by family, families in order of first appearance.
// rt and reference may be nil.
func NewReport(rt, reference *Runtime, results []Result) *Report {
	rep := &Report{Runtime: "native", Families: []Family{}}
	if rt != nil {
		rep.Runtime, rep.RuntimePath = rt.Name, rt.Path
	}
	if reference != nil {
		rep.Reference = reference.Name
	}
	index := map[string]int{}
	for _, r := range results {
		switch r.Status {
		case Pass:
			rep.Passed++
		case Skip:
			rep.Skipped++
		default:
			rep.Failed++
		}
		i, ok := index[r.Family()]
		if !ok {
			i = len(rep.Families)
			index[r.Family()] = i
			rep.Families = append(rep.Families, Family{Name: r.Family()})
		}
		rep.Families[i].Results = append(rep.Families[i].Results, r)
	}
	return rep
}

// Summary is the closing line: "N passed, N failed", and ", N skipped"
// when some were.
func (rep *Report) Summary() string {
	s := fmt.Sprintf("%d passed, %d failed", rep.Passed, rep.Failed)
	if rep.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", rep.Skipped)
	}
	return s
}

// WriteJSON writes the report, indented, to file.
func (rep *Report) WriteJSON(file string) error {
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644)
}
