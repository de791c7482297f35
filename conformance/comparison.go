package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// ReadReport reads a report that WriteJSON wrote.
func ReadReport(file string) (*Report, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return &rep, nil
}

// ComparisonPage is docs/conformance.md: the reports of several runtimes
// side by side, one row per program or check in the order they ran, one
// column per report in the order given. The page holds no figure that is
// not in a report, so it cannot disagree with them.
func ComparisonPage(reports []*Report) string {
	var b strings.Builder
	b.WriteString("# Conformance: moat beside runc and gVisor\n\n")
	b.WriteString("Generated from the reports docs/conformance-RUNTIME.json by `make docs` (and by\n")
	b.WriteString("`make conformance`, which writes a report first); a test fails when it is stale.\n\n")
	b.WriteString("The suite of conformance/ (C programs that assert Linux behaviour, run natively first, then in the\n")
	b.WriteString("runtime; plus busybox programs whose output is compared with runc's), in each runtime on the machine\n")
	b.WriteString("that ran it. Reproduce with:\n\n")
	b.WriteString("    make conformance RUNTIME=runc    # docs/conformance-runc.{txt,json}\n")
	b.WriteString("    make conformance RUNTIME=runsc   # current gVisor on its systrap platform, built by make bench-deps\n")
	b.WriteString("    make conformance RUNTIME=moat\n\n")
	b.WriteString("A program that fails natively is reported BROKEN: the suite would be wrong, not the runtime.\n")
	b.WriteString("A failure is a difference from Linux that the program asserts; the first mismatch of each is shown.\n")
	b.WriteString("A program missing from a report (added after that runtime's last run) shows as not run.\n\n")

	b.WriteString("| program |")
	for _, rep := range reports {
		fmt.Fprintf(&b, " %s |", rep.Runtime)
	}
	b.WriteString("\n|---|")
	for range reports {
		b.WriteString("---|")
	}
	b.WriteString("\n")

	byName := make([]map[string]Result, len(reports))
	var order []string
	seen := map[string]bool{}
	for i, rep := range reports {
		byName[i] = map[string]Result{}
		for _, f := range rep.Families {
			for _, r := range f.Results {
				byName[i][r.Name] = r
				if !seen[r.Name] {
					seen[r.Name] = true
					order = append(order, r.Name)
				}
			}
		}
	}
	for _, name := range order {
		fmt.Fprintf(&b, "| %s |", name)
		for i := range reports {
			fmt.Fprintf(&b, " %s |", cell(byName[i], name))
		}
		b.WriteString("\n")
	}
	b.WriteString("| **passed** |")
	for _, rep := range reports {
		total := rep.Passed + rep.Failed + rep.Skipped
		fmt.Fprintf(&b, " **%d/%d**", rep.Passed, total)
		if rep.Skipped > 0 {
			fmt.Fprintf(&b, " (%d skipped)", rep.Skipped)
		}
		b.WriteString(" |")
	}
	b.WriteString("\n")
	return b.String()
}

// cell is one report's verdict on one program, as a table cell.
func cell(results map[string]Result, name string) string {
	r, ok := results[name]
	switch {
	case !ok:
		return "not run"
	case r.Status == Pass:
		return string(Pass)
	}
	return strings.ReplaceAll(fmt.Sprintf("%s: %s", r.Status, r.Reason), "|", `\|`)
}
