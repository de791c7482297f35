package bench

import (
	"fmt"
	"io"
	"strings"
)

// writeDensityMarkdown writes a density workload's section after its
// heading: per runtime a row per number of sandboxes, then the host
// processes of each runtime's first sandbox at its smallest number.
func writeDensityMarkdown(w io.Writer, rep *Report, wr WorkloadResult) {
	fmt.Fprintf(w, "Each row starts that many sandboxes running %s one after another through the runtime's\n", code(strings.Join(wr.Argv, " ")))
	fmt.Fprintf(w, "create and start (after one untimed sandbox, deleted first), lets them idle for %s, measures\n", densitySettle)
	fmt.Fprintf(w, "them all and deletes them. Start is one sandbox's create+start with those before it running;\n")
	fmt.Fprintf(w, "PSS is /proc/PID/smaps_rollup summed over all of a sandbox's host processes (those in its\n")
	fmt.Fprintf(w, "cgroup and its process's descendants); cgroup is its memory cgroup's usage, which counts\n")
	fmt.Fprintf(w, "page cache it was first to touch and kernel memory, and not the runtime's binary when another\n")
	fmt.Fprintf(w, "cgroup read it first. Medians and p90 by nearest rank; memory in MiB, times in ms.\n\n")
	fmt.Fprintf(w, "| runtime | sandboxes | start p50 | start p90 | PSS median | PSS total | cgroup median | cgroup total | reproduce |\n")
	fmt.Fprintf(w, "|---|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for i, r := range wr.Results {
		if r.Density == nil {
			why := cell(r.reason())
			if rep.Runtimes[i].Status == StatusSkipped {
				why = "skipped (see Runtimes)"
			}
			fmt.Fprintf(w, "| %s | %s | | | | | | | %s |\n", r.Runtime, why, code(r.Reproduce))
			continue
		}
		for j, c := range r.Density {
			reproduce := ""
			if j == 0 {
				reproduce = code(r.Reproduce)
			}
			if c.Status != StatusOK {
				fmt.Fprintf(w, "| %s | %d | %s | | | | | | %s |\n", r.Runtime, c.Sandboxes, cell(c.Status+": "+c.Reason), reproduce)
				continue
			}
			fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | %s | %s |\n", r.Runtime, c.Sandboxes,
				formatValue(c.StartP50), formatValue(c.StartP90), formatValue(c.PSSMedian), formatValue(c.PSSTotal),
				formatValue(c.CgroupMedian), formatValue(c.CgroupTotal), reproduce)
		}
	}
	fmt.Fprintf(w, "\nThe host processes of each runtime's first sandbox in its first row, by name (a program and\n")
	fmt.Fprintf(w, "its subcommand; %s is a process without a command line, a platform's stub), with the anonymous,\n", stubName)
	fmt.Fprintf(w, "file-backed (mostly the runtime's binary) and shared-memory parts of their PSS, in MiB:\n\n")
	fmt.Fprintf(w, "| runtime | sandboxes | process | count | PSS | anon | file | shmem |\n|---|--:|---|--:|--:|--:|--:|--:|\n")
	for _, r := range wr.Results {
		if len(r.Density) == 0 || r.Density[0].Status != StatusOK {
			continue
		}
		c := r.Density[0]
		for _, g := range c.Processes {
			fmt.Fprintf(w, "| %s | %d | %s | %d | %s | %s | %s | %s |\n", r.Runtime, c.Sandboxes, code(g.Name), g.Count,
				formatValue(g.PSSMiB), formatValue(g.AnonMiB), formatValue(g.FileMiB), formatValue(g.ShmemMiB))
		}
	}
	fmt.Fprintln(w)
}

// writeDensitySummary writes a density workload's figures as plain text.
func writeDensitySummary(w io.Writer, rep *Report, wr WorkloadResult) {
	fmt.Fprintf(w, "  %-12s %9s %10s %10s %10s %10s %10s\n", "", "sandboxes", "start p50", "start p90", "PSS med", "PSS total", "cgroup med")
	for i, r := range wr.Results {
		if rep.Runtimes[i].Status == StatusSkipped {
			continue
		}
		if r.Density == nil {
			fmt.Fprintf(w, "  %-12s %s\n", r.Runtime, r.reason())
			continue
		}
		for _, c := range r.Density {
			if c.Status != StatusOK {
				fmt.Fprintf(w, "  %-12s %9d %s: %s\n", r.Runtime, c.Sandboxes, c.Status, c.Reason)
				continue
			}
			fmt.Fprintf(w, "  %-12s %9d %10s %10s %10s %10s %10s\n", r.Runtime, c.Sandboxes, formatValue(c.StartP50),
				formatValue(c.StartP90), formatValue(c.PSSMedian), formatValue(c.PSSTotal), formatValue(c.CgroupMedian))
		}
	}
}
