// Command moat-suite runs a large test suite written elsewhere, CPython's
// regression tests (`python3 -m test`), in OCI runtimes on the same bundle,
// and puts the outcomes side by side in docs/suites.md.
//
// The bundle's rootfs is the integration tests' Debian one with
// libpython3.11-testsuite installed into a copy of it by apt-get in a
// chroot (internal/rootfs.DebianWith), cached beside it. Each runtime runs
// one container: regrtest on the modules of pythonModules, two workers,
// every module bounded by --per-test and the whole run by --limit, in a
// network namespace that holds loopback alone.
//
// Usage:
//
//	moat-suite run --runtime runc|moat|PATH [--name NAME] [flags]
//	moat-suite report [--results DIR] [--out FILE] [NAME...]
//
// run writes DIR/python-NAME.json (each module's outcome) and
// DIR/python-NAME.out (regrtest's output); report reads those of the named
// runtimes (default runc and moat, the first being the reference) and
// writes the Markdown table. Runs are separate commands so that a machine
// shared by others can be given back between them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/internal/ocirun"
	"github.com/moat-sandbox/moat/internal/rootfs"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: moat-suite run|report [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCommand(os.Args[2:])
	case "report":
		err = reportCommand(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (run or report)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "moat-suite:", err)
		os.Exit(1)
	}
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// Run is what one runtime's run of the suite left: written by run, read by
// report.
type Run struct {
	Runtime  string            `json:"runtime"`
	Version  string            `json:"version"`
	Started  time.Time         `json:"started"`
	Seconds  float64           `json:"seconds"`
	Exit     int               `json:"exit"`
	TimedOut bool              `json:"timed_out"` // --limit ended the run
	Args     []string          `json:"args"`
	Modules  map[string]Result `json:"modules"` // every module asked for; NotRun if never reported
}

func runCommand(args []string) error {
	flags := flag.NewFlagSet("moat-suite run", flag.ContinueOnError)
	runtime := flags.String("runtime", "runc", "runtime: runc, moat (on PATH) or the path of a runc-compatible binary")
	name := flags.String("name", "", "name of the runtime in the results (default: the binary's base name)")
	var runtimeFlags stringList
	flags.Var(&runtimeFlags, "runtime-flag", "extra global flag for the runtime (repeatable)")
	cache := flags.String("cache", "build/rootfs-debian", "the Debian rootfs cache (as make rootfs-debian builds it)")
	results := flags.String("results", "build/suite", "directory for the results")
	jobs := flags.Int("jobs", 2, "regrtest worker processes")
	perTest := flags.Duration("per-test", 5*time.Minute, "time limit of each test module")
	limit := flags.Duration("limit", 35*time.Minute, "time limit of the whole run")
	modules := flags.String("modules", "", "comma-separated modules to run instead of the default set")
	var extra stringList
	flags.Var(&extra, "regrtest-flag", "extra regrtest flag, -v say, to see why modules fail (repeatable)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	mods := pythonModules
	if *modules != "" {
		mods = strings.Split(*modules, ",")
	}
	rt, err := ocirun.Find(*runtime)
	if err != nil {
		return err
	}
	if *name != "" {
		rt.Name = *name
	}
	if err := os.MkdirAll(*results, 0o755); err != nil {
		return err
	}
	resultsDir, err := filepath.Abs(*results)
	if err != nil {
		return err
	}
	base := filepath.Join(resultsDir, "python-"+rt.Name)
	rt.Flags = append([]string{"--log", base + ".runtime.log"}, runtimeFlags...)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cacheDir, err := filepath.Abs(*cache)
	if err != nil {
		return err
	}
	fs, err := rootfs.DebianWith(ctx, cacheDir, suitePackages...)
	if err != nil {
		return err
	}
	run, err := runSuite(ctx, rt, fs, base, regrtestArgs(mods, *jobs, *perTest, extra...), *limit)
	if err != nil {
		return err
	}
	for _, m := range mods {
		if _, ok := run.Modules[m]; !ok {
			run.Modules[m] = Result{Status: NotRun}
		}
	}
	data, err := json.MarshalIndent(run, "", "\t")
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".json", append(data, '\n'), 0o644); err != nil {
		return err
	}
	counts := map[Status]int{}
	for _, r := range run.Modules {
		counts[r.Status]++
	}
	fmt.Printf("%s: %d modules in %.0fs: %d passed, %d skipped, %d not good (exit %d%s); %s.json\n",
		rt.Name, len(run.Modules), run.Seconds, counts[Passed], counts[Skipped],
		len(run.Modules)-counts[Passed]-counts[Skipped]-counts[NoTests], run.Exit, map[bool]string{true: ", stopped by --limit"}[run.TimedOut], base)
	return nil
}

// runSuite runs regrtest in one container of rt on a bundle whose rootfs is
// fs, its output going to base.out, and parses what it reported. The
// container is deleted afterwards however the run ended.
func runSuite(ctx context.Context, rt *ocirun.Runtime, fs, base string, args []string, limit time.Duration) (*Run, error) {
	work, err := os.MkdirTemp("", "moat-suite-")
	if err != nil {
		return nil, err
	}
	defer ocirun.RemoveAll(work)
	bundle, state := filepath.Join(work, "bundle"), filepath.Join(work, "state")
	if err := os.Mkdir(bundle, 0o755); err != nil {
		return nil, err
	}
	hosts := filepath.Join(work, "hosts")
	if err := os.WriteFile(hosts, []byte(hostsFile), 0o644); err != nil {
		return nil, err
	}
	if err := ocirun.WriteSpec(bundle, suiteSpec(fs, hosts, args)); err != nil {
		return nil, err
	}
	out, err := os.Create(base + ".out")
	if err != nil {
		return nil, err
	}
	defer out.Close()
	root := rt.At(state)
	id := containerID(rt.Name, os.Getpid())
	run := &Run{Runtime: rt.Name, Version: rt.Version(ctx), Started: time.Now().UTC(), Args: args}
	fmt.Fprintf(os.Stderr, "moat-suite: %s: %s (output: %s.out)\n", rt.Name, strings.Join(args[:5], " "), base)
	x := root.Run(ctx, bundle, id, ocirun.Stdio{Stdout: out, Stderr: out}, ocirun.Limits{
		Timeout: limit,
		Grace:   10 * time.Second,
	})
	root.Delete(id)
	sweepErr := root.Sweep()
	if x.StartErr != nil {
		return nil, fmt.Errorf("%s run: %w", rt.Name, x.StartErr)
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	run.Seconds, run.Exit, run.TimedOut = x.Took.Seconds(), x.Code, x.TimedOut
	f, err := os.Open(base + ".out")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	run.Modules = parseRegrtest(f)
	return run, errors.Join(sweepErr)
}
