// Command moat-bench compares OCI runtimes (native, runc, gVisor's runsc,
// moat) on the same workloads and writes the comparison as JSON, Markdown
// and SVG. See package bench for how it measures.
//
//	moat-bench [--runtime native,runc,...] [--workload run-true,getppid,...]
//	           [--runs N] [--load N] [--json FILE] [--markdown FILE] [--svg FILE]
//
// It exits 0 when the session completed (runtimes that were skipped or
// failed are in the reports), 1 on an error, 2 on bad usage and 130 when
// interrupted, after deleting every container it started.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/bench"
)

// Exit statuses.
const (
	exitError       = 1
	exitUsage       = 2
	exitInterrupted = 130 // 128 + SIGINT, as a shell reports it
)

// options are the command line, parsed.
type options struct {
	runtimes, workloads    string
	runs, load             int
	iterations             int64
	budget, timeout        time.Duration
	baseline               string
	runtimesFile           string
	binDir, busybox        string
	rootfs                 string
	densityCounts          string
	jsonOut, mdOut, svgOut string
	list                   bool
}

// figureFlags are the flags that change a figure, and so belong in the
// command that reproduces it.
var figureFlags = []string{"runs", "iterations", "budget", "baseline", "runtimes-file", "bin-dir", "busybox", "rootfs", "load", "density-counts"}

func main() {
	os.Exit(run(os.Args))
}

func run(args []string) int {
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	var o options
	fs.StringVar(&o.runtimes, "runtime", "", "comma-separated runtimes to compare (default: all of the runtime list)")
	fs.StringVar(&o.workloads, "workload", "", "comma-separated workloads to run (default: all)")
	fs.IntVar(&o.runs, "runs", 0, fmt.Sprintf("runs per runtime and workload, after one warm-up (default %d for wall-time workloads, %d for micro-benchmarks)", bench.DefaultWallRuns, bench.DefaultMicroRuns))
	fs.Int64Var(&o.iterations, "iterations", 0, "operations per micro-benchmark run (default: each workload's own)")
	fs.IntVar(&o.load, "load", 0, "also measure the system-call micro-benchmarks beside this many busy processes, reported as NAME@loadN (0: quiet only)")
	fs.DurationVar(&o.budget, "budget", 2*time.Second, "a micro-benchmark run stops early after this long, so that slow runtimes finish")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "a run taking longer fails and is killed")
	fs.StringVar(&o.baseline, "baseline", "runc", "the runtime the ratios are taken to")
	fs.StringVar(&o.runtimesFile, "runtimes-file", "", "a runtime list in the format of bench/runtimes.json (default: the built-in one)")
	fs.StringVar(&o.binDir, "bin-dir", defaultBinDir(), "the directory $BIN stands for in the runtime list")
	fs.StringVar(&o.busybox, "busybox", "/usr/bin/busybox", "the static busybox the rootfs is made of")
	fs.StringVar(&o.rootfs, "rootfs", "", "a rootfs directory to copy instead of the busybox one (workloads run only if it has what they need)")
	fs.StringVar(&o.densityCounts, "density-counts", "", fmt.Sprintf("comma-separated numbers of idle sandboxes the density workload starts side by side (default %s)", joinInts(bench.DefaultDensityCounts)))
	fs.StringVar(&o.jsonOut, "json", "", "write the results as JSON to this file")
	fs.StringVar(&o.mdOut, "markdown", "", "write the results as Markdown to this file")
	fs.StringVar(&o.svgOut, "svg", "", "write a chart of the ratios as SVG to this file")
	fs.BoolVar(&o.list, "list", false, "list the runtimes and workloads, and exit")
	if err := fs.Parse(args[1:]); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "moat-bench: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	cfg, err := o.config()
	if err != nil {
		fmt.Fprintf(os.Stderr, "moat-bench: %v\n", err)
		return exitUsage
	}
	if o.list {
		list(cfg)
		return 0
	}
	cfg.Reproduce = reproducer(args[0], fs, o.baseline)
	cfg.Progress = bench.NewProgress(os.Stderr)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		// From now on a second Ctrl-C kills moat-bench at once, for when a
		// runtime hangs in its clean-up.
		stop()
	}()
	rep, err := bench.Run(ctx, cfg)
	if ctx.Err() != nil {
		fmt.Fprintln(os.Stderr, "moat-bench: interrupted; containers and temporary files removed")
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintf(os.Stderr, "moat-bench: %v\n", err)
		}
		return exitInterrupted
	}
	if rep != nil {
		// Written even when the clean-up after the session failed: the
		// figures are complete, and the error below names what was left.
		err = errors.Join(write(rep, o), err)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "moat-bench: %v\n", err)
		return exitError
	}
	return 0
}

// config turns the options into a session configuration.
func (o options) config() (bench.Config, error) {
	all, err := bench.DefaultRuntimes()
	if o.runtimesFile != "" {
		var data []byte
		if data, err = os.ReadFile(o.runtimesFile); err == nil {
			all, err = bench.ParseRuntimes(data)
		}
	}
	if err != nil {
		return bench.Config{}, err
	}
	runtimes, err := bench.SelectRuntimes(all, splitList(o.runtimes))
	if err != nil {
		return bench.Config{}, err
	}
	workloads, err := bench.SelectWorkloads(splitList(o.workloads))
	if err != nil {
		return bench.Config{}, err
	}
	if o.runs < 0 || o.iterations < 0 || o.load < 0 || o.budget < time.Millisecond || o.timeout <= 0 {
		return bench.Config{}, errors.New("--runs, --iterations and --load must not be negative, --budget at least 1ms, --timeout positive")
	}
	counts, err := parseCounts(o.densityCounts)
	if err != nil {
		return bench.Config{}, err
	}
	return bench.Config{
		Runtimes: runtimes, Workloads: workloads, Baseline: o.baseline,
		Runs: o.runs, Iterations: o.iterations, Budget: o.budget, Timeout: o.timeout, Load: o.load,
		BinDir: o.binDir, Busybox: o.busybox, Rootfs: o.rootfs, DensityCounts: counts,
	}, nil
}

// parseCounts reads --density-counts: positive numbers, comma-separated;
// nil for none given.
func parseCounts(s string) ([]int, error) {
	var counts []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--density-counts: %q is not a positive number of sandboxes", f)
		}
		counts = append(counts, n)
	}
	return counts, nil
}

func joinInts(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s, ",")
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// defaultBinDir is the directory moat-bench itself is in: `make` puts
// bin/moat and the current runsc beside it.
func defaultBinDir() string {
	exe, err := os.Executable()
	if err != nil {
		return "bin"
	}
	return filepath.Dir(exe)
}

func write(rep *bench.Report, o options) error {
	if o.jsonOut != "" {
		if err := bench.WriteJSON(o.jsonOut, rep); err != nil {
			return err
		}
	}
	if o.mdOut != "" {
		if err := bench.WriteMarkdown(o.mdOut, rep, o.svgOut); err != nil {
			return err
		}
	}
	if o.svgOut != "" {
		if err := bench.WriteSVG(o.svgOut, rep); err != nil {
			return err
		}
	}
	return bench.WriteSummary(os.Stdout, rep)
}

func list(cfg bench.Config) {
	fmt.Println("runtimes:")
	for _, rt := range cfg.Runtimes {
		line := fmt.Sprintf("  %-12s %-6s %s %s", rt.Name, rt.Kind, rt.Binary, strings.Join(rt.Flags(), " "))
		if rt.Skip != "" {
			line += " (skipped by default: " + rt.Skip + ")"
		}
		fmt.Println(strings.TrimRight(line, " "))
	}
	fmt.Println("workloads:")
	for _, w := range cfg.Workloads {
		fmt.Printf("  %-14s %-5s %-7s %s\n", w.Name, w.Kind, w.Unit, w.What)
	}
}
