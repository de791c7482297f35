package bench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// WriteMarkdown writes rep as a Markdown page to path: the machine and the
// method first, then one table per workload with, for every figure, the
// command that measures it again. When svgPath is not empty the page shows
// that chart, linked relative to the page.
func WriteMarkdown(path string, rep *Report, svgPath string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	chart := ""
	if svgPath != "" {
		if chart, err = filepath.Rel(filepath.Dir(path), svgPath); err != nil {
			chart = svgPath
		}
	}
	writeMarkdown(f, rep, chart)
	return f.Close()
}

func writeMarkdown(w io.Writer, rep *Report, chart string) {
	m := rep.Machine
	fmt.Fprintf(w, "# Benchmarks\n\n")
	fmt.Fprintf(w, "<!-- Written by moat-bench (`make bench`). Change bench/, not this file. -->\n\n")
	fmt.Fprintf(w, "Measured %s on %s (%d CPUs), Linux %s; load average %s before and %s after.\n",
		rep.Date.Format("2006-01-02 15:04 MST"), m.CPU, m.CPUs, m.Kernel, m.LoadBefore, m.LoadAfter)
	fmt.Fprintf(w, "Rootfs: %s, read-only.\n\n", rep.Rootfs)
	fmt.Fprintf(w, "Each figure is the median of the runs of one runtime, after one warm-up run, with the runs\n")
	fmt.Fprintf(w, "of all runtimes interleaved (A B C A B C ...); min and max show the spread. Lower is better\n")
	fmt.Fprintf(w, "everywhere. Ratios divide by %s's median. Micro-benchmarks time themselves inside the\n", rep.Baseline)
	fmt.Fprintf(w, "container and stop early after %d ms of work, so a slow runtime gives fewer operations, not\n", rep.BudgetMS)
	fmt.Fprintf(w, "another figure. Each row's command measures its figure again; `make bench` rewrites this page.\n")
	fmt.Fprintf(w, "What the figures mean, where they are not plain, is written by hand in benchmarks-analysis.md.\n\n")
	if chart != "" {
		fmt.Fprintf(w, "![Medians relative to %s, log scale](%s)\n\n", rep.Baseline, chart)
	}

	fmt.Fprintf(w, "## Runtimes\n\n| runtime | version | invoked as | what it stands for |\n|---|---|---|---|\n")
	for _, rt := range rep.Runtimes {
		invoked := code(rt.Command)
		if rt.Status != StatusOK {
			invoked = cell(rt.Status + ": " + rt.Reason)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", rt.Name, cell(rt.Version), invoked, cell(rt.Note))
	}
	fmt.Fprintln(w)

	for _, wr := range rep.Workloads {
		fmt.Fprintf(w, "## %s\n\n%s.\n", wr.Name, capitalize(wr.What))
		if wr.Status != StatusOK {
			fmt.Fprintf(w, "\n%s: %s.\n\n", capitalize(wr.Status), wr.Reason)
			continue
		}
		switch wr.Kind {
		case Serve:
			writeServeMarkdown(w, rep, wr)
			continue
		case Density:
			writeDensityMarkdown(w, rep, wr)
			continue
		case Fairness:
			writeFairnessMarkdown(w, rep, wr)
			continue
		}
		fmt.Fprintf(w, "The container runs %s; %d runs per runtime; unit: %s.\n\n", code(strings.Join(wr.Argv, " ")), wr.Runs, wr.Unit)
		fmt.Fprintf(w, "| runtime | median | min | max | vs %s | reproduce |\n|---|--:|--:|--:|---|---|\n", rep.Baseline)
		for i, r := range wr.Results {
			if r.Summary == nil {
				why := cell(r.reason())
				if rep.Runtimes[i].Status == StatusSkipped {
					why = "skipped (see Runtimes)" // the reason is there, once
				}
				fmt.Fprintf(w, "| %s | %s | | | | %s |\n", r.Runtime, why, code(r.Reproduce))
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r.Runtime,
				formatValue(r.Median), formatValue(r.Min), formatValue(r.Max), r.Reading, code(r.Reproduce))
		}
		fmt.Fprintln(w)
	}
}

// cell makes s safe inside a table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// code sets s as inline code in a table cell, or nothing when s is empty.
func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + cell(s) + "`"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
