package bench

import (
	"fmt"
	"io"
)

// writeServeMarkdown writes a serve workload's section after its heading:
// per runtime that serves, a row per cell.
func writeServeMarkdown(w io.Writer, rep *Report, wr WorkloadResult) {
	fmt.Fprintf(w, "Each row is a `moat serve` of its own, the session's rootfs its template, with a pool of at most\n")
	fmt.Fprintf(w, "a burst, which the untimed burst's demand fills (warm), or none (cold);\n")
	fmt.Fprintf(w, "%d timed creates per row, after one untimed burst, in bursts of\n", wr.Runs)
	fmt.Fprintf(w, "the row's concurrency, each burst's sandboxes killed before the next and, warm, the pool full\n")
	fmt.Fprintf(w, "again. Percentiles by nearest rank, in %s; the pool's hits and misses are the server's count.\n\n", wr.Unit)
	fmt.Fprintf(w, "| runtime | pool | at once | creates | p50 | p95 | p99 | max | from the pool | reproduce |\n")
	fmt.Fprintf(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for i, r := range wr.Results {
		if r.Cells == nil {
			why := cell(r.reason())
			if rep.Runtimes[i].Status == StatusSkipped {
				why = "skipped (see Runtimes)"
			}
			fmt.Fprintf(w, "| %s | %s | | | | | | | | %s |\n", r.Runtime, why, code(r.Reproduce))
			continue
		}
		for j, c := range r.Cells {
			// One command measures every cell of the runtime again.
			reproduce := ""
			if j == 0 {
				reproduce = code(r.Reproduce)
			}
			if c.Status != StatusOK {
				fmt.Fprintf(w, "| %s | %s | %d | %s | | | | | | %s |\n", r.Runtime, c.Pool, c.Concurrency,
					cell(c.Status+": "+c.Reason), reproduce)
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %s | %s | %s | %d of %d | %s |\n", r.Runtime, c.Pool, c.Concurrency,
				len(c.Samples), formatValue(c.P50), formatValue(c.P95), formatValue(c.P99), formatValue(c.Max),
				c.PoolHits, c.PoolHits+c.PoolMisses, reproduce)
		}
	}
	fmt.Fprintln(w)
}

// writeServeSummary writes a serve workload's percentiles as plain text.
func writeServeSummary(w io.Writer, rep *Report, wr WorkloadResult) {
	fmt.Fprintf(w, "  %-12s %-4s %7s %10s %10s %10s %10s\n", "", "pool", "at once", "p50", "p95", "p99", "max")
	for i, r := range wr.Results {
		if rep.Runtimes[i].Status == StatusSkipped {
			continue
		}
		if r.Cells == nil {
			fmt.Fprintf(w, "  %-12s %s\n", r.Runtime, r.reason())
			continue
		}
		for _, c := range r.Cells {
			if c.Status != StatusOK {
				fmt.Fprintf(w, "  %-12s %-4s %7d %s: %s\n", r.Runtime, c.Pool, c.Concurrency, c.Status, c.Reason)
				continue
			}
			fmt.Fprintf(w, "  %-12s %-4s %7d %10s %10s %10s %10s  %d of %d from the pool\n", r.Runtime, c.Pool, c.Concurrency,
				formatValue(c.P50), formatValue(c.P95), formatValue(c.P99), formatValue(c.Max), c.PoolHits, c.PoolHits+c.PoolMisses)
		}
	}
}
