package bench

import (
	"fmt"
	"io"
)

// WriteSummary writes the medians of rep as plain text, for a terminal.
// Runtimes skipped for the whole session are named once, at the top.
func WriteSummary(w io.Writer, rep *Report) error {
	for _, rt := range rep.Runtimes {
		if rt.Status == StatusSkipped {
			fmt.Fprintf(w, "%s: skipped: %s\n", rt.Name, rt.Reason)
		}
	}
	for _, wr := range rep.Workloads {
		fmt.Fprintf(w, "%s (%s)\n", wr.Name, wr.Unit)
		if wr.Status != StatusOK {
			fmt.Fprintf(w, "  %s: %s\n", wr.Status, wr.Reason)
			continue
		}
		switch wr.Kind {
		case Serve:
			writeServeSummary(w, rep, wr)
			continue
		case Density:
			writeDensitySummary(w, rep, wr)
			continue
		case Fairness:
			writeFairnessSummary(w, rep, wr)
			continue
		}
		fmt.Fprintf(w, "  %-12s %10s %10s %10s\n", "", "median", "min", "max")
		for i, r := range wr.Results {
			if rep.Runtimes[i].Status == StatusSkipped {
				continue
			}
			if r.Summary == nil {
				fmt.Fprintf(w, "  %-12s %s\n", r.Runtime, r.reason())
				continue
			}
			fmt.Fprintf(w, "  %-12s %10s %10s %10s  %s\n", r.Runtime, formatValue(r.Median), formatValue(r.Min), formatValue(r.Max), r.Reading)
		}
	}
	_, err := fmt.Fprintln(w)
	return err
}
