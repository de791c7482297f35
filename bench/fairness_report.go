package bench

import (
	"fmt"
	"io"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// writeFairnessMarkdown writes a fairness workload's section after its
// heading: per runtime its throughput alone and beside the neighbours,
// then what each neighbour did meanwhile.
func writeFairnessMarkdown(w io.Writer, rep *Report, wr WorkloadResult) {
	fmt.Fprintf(w, "One sandbox runs %s over and over for %d ms a round (workloads/repeat.c: fork, exec, wait), %d rounds,\n",
		code(strings.Join(wr.Argv, " ")), rep.BudgetMS, wr.Runs)
	fmt.Fprintf(w, "each a fresh sandbox: first alone (quiet), then beside three sandboxes of the same runtime started\n")
	fmt.Fprintf(w, "before it (noisy): a memory bomb (1 MiB mmaps, every page touched, until it is killed), a fork bomb\n")
	fmt.Fprintf(w, "(every process forks until fork fails, and again) and a CPU hog (%d spinning threads, as many as\n", rep.Machine.CPUs)
	fmt.Fprintf(w, "the host's CPUs), each restarted by a shell loop whenever it dies. Every sandbox, the measured one too,\n")
	fmt.Fprintf(w, "has these linux.resources: memory %d MiB with memory+swap the same (no swap), pids %d, CPU quota\n", fairnessMemory>>20, fairnessPids)
	fmt.Fprintf(w, "%d us per %d us period (one CPU). The noisy rounds start once the memory bomb has been killed at its\n", fairnessCPUQuota, fairnessPeriod)
	fmt.Fprintf(w, "limit (or its sandbox stopped) and %s have passed; its memory cgroup is watched every %s, and a\n", neighbourSettle, watchInterval)
	fmt.Fprintf(w, "charge %d MiB above the limit aborts the cell. Throughput is runs per second, the median of the\n", memoryAbortSlack>>20)
	fmt.Fprintf(w, "rounds; issue 13 accepts noisy/quiet of at least %s. CPUs is what the measured sandbox's cgroup\n", formatValue(fairnessBar))
	fmt.Fprintf(w, "used, its CPU time over each round's wall time (median of the rounds). Beside counts the neighbours\n")
	fmt.Fprintf(w, "whose sandbox was still running after the noisy rounds: one that died took nothing from them at the end.\n\n")
	fmt.Fprintf(w, "| runtime | quiet runs/s | noisy runs/s | noisy/quiet | at least %s | quiet CPUs | noisy CPUs | beside | reproduce |\n", formatValue(fairnessBar))
	fmt.Fprintf(w, "|---|--:|--:|--:|---|--:|--:|---|---|\n")
	for i, r := range wr.Results {
		switch {
		case r.Fairness == nil:
			why := cell(r.reason())
			if rep.Runtimes[i].Status == StatusSkipped {
				why = "skipped (see Runtimes)"
			}
			fmt.Fprintf(w, "| %s | %s | | | | | | | %s |\n", r.Runtime, why, code(r.Reproduce))
		case r.Fairness.Status != StatusOK:
			fmt.Fprintf(w, "| %s | %s | | | | | | | %s |\n", r.Runtime, cell(r.Fairness.Status+": "+r.Fairness.Reason), code(r.Reproduce))
		default:
			c := r.Fairness
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", r.Runtime, formatValue(c.Quiet), formatValue(c.Noisy),
				formatValue(c.Ratio), meets(c.Meets), formatValue(c.QuietCPUs), formatValue(c.NoisyCPUs), beside(c), code(r.Reproduce))
		}
	}
	fmt.Fprintf(w, "\nWhat each neighbour did: its program's starts (a memory bomb's deaths plus one), the highest its\n")
	fmt.Fprintf(w, "memory (MiB) and pids cgroups were seen at, the CPUs its cgroup used during the noisy rounds, and\n")
	fmt.Fprintf(w, "its container's status after them (with, for one that stopped, the end of its stderr):\n\n")
	fmt.Fprintf(w, "| runtime | neighbour | starts | peak memory | peak pids | CPUs | at the end |\n|---|---|--:|--:|--:|--:|---|\n")
	for _, r := range wr.Results {
		if r.Fairness == nil {
			continue
		}
		for _, n := range r.Fairness.Neighbours {
			end := n.End
			if n.Stderr != "" {
				end += ": " + n.Stderr
			}
			fmt.Fprintf(w, "| %s | %s | %d | %s | %d | %s | %s |\n", r.Runtime, n.Name, n.Starts,
				formatValue(n.PeakMemoryMiB), n.PeakPids, formatValue(n.CPUs), cell(end))
		}
	}
	fmt.Fprintln(w)
}

// beside says how many of the cell's neighbours were running at its end.
func beside(c *FairnessCell) string {
	running := 0
	for _, n := range c.Neighbours {
		if n.End == string(specs.StateRunning) {
			running++
		}
	}
	return fmt.Sprintf("%d of %d", running, len(c.Neighbours))
}

func meets(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

// writeFairnessSummary writes a fairness workload's figures as plain text.
func writeFairnessSummary(w io.Writer, rep *Report, wr WorkloadResult) {
	fmt.Fprintf(w, "  %-12s %10s %10s %11s  (runs/s)\n", "", "quiet", "noisy", "noisy/quiet")
	for i, r := range wr.Results {
		if rep.Runtimes[i].Status == StatusSkipped {
			continue
		}
		switch {
		case r.Fairness == nil:
			fmt.Fprintf(w, "  %-12s %s\n", r.Runtime, r.reason())
		case r.Fairness.Status != StatusOK:
			fmt.Fprintf(w, "  %-12s %s: %s\n", r.Runtime, r.Fairness.Status, r.Fairness.Reason)
		default:
			c := r.Fairness
			fmt.Fprintf(w, "  %-12s %10s %10s %11s  at least %s: %s; beside %s neighbours\n", r.Runtime, formatValue(c.Quiet), formatValue(c.Noisy),
				formatValue(c.Ratio), formatValue(fairnessBar), meets(c.Meets), beside(c))
		}
	}
}
