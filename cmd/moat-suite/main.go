// Command moat-suite runs large test suites written elsewhere in OCI
// runtimes on the same bundle, and puts the outcomes side by side in
// docs/suites.md: CPython's regression tests (`python3 -m test`), the Go
// standard library's own tests (each package's test binary, built on the
// host by the machine's Go) and Linux's kernel selftests (built on the host
// from Debian's linux-source-6.1, kselftest.go).
//
// The bundle's rootfs is the integration tests' Debian one with
// libpython3.11-testsuite and netbase installed into a copy of it by
// apt-get in a chroot (internal/rootfs.DebianWith), cached beside it. Each
// runtime runs one container per suite: every unit (module, package)
// bounded by --per-test and the whole run by --limit, in a network
// namespace that holds loopback alone.
//
// Usage:
//
//	moat-suite run --suite python|go|kselftest --runtime runc|moat|PATH [--name NAME] [flags]
//	moat-suite report [--results DIR] [--out FILE] [NAME...]
//
// run writes DIR/SUITE-NAME.json (each unit's outcome) and DIR/SUITE-NAME.out
// (the suite's output); report reads those of the named runtimes (default
// runc and moat, the first being the reference) for every suite that has
// them and writes the Markdown page, keeping the section of a suite with
// no results here as the page had it. Runs are separate commands so that
// a machine shared by others can be given back between them.
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

	specs "github.com/opencontainers/runtime-spec/specs-go"

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

// Run is what one runtime's run of a suite left: written by run, read by
// report.
type Run struct {
	Runtime  string    `json:"runtime"`
	Version  string    `json:"version"`
	Started  time.Time `json:"started"`
	Seconds  float64   `json:"seconds"`
	Exit     int       `json:"exit"`
	TimedOut bool      `json:"timed_out"` // --limit ended the run
	Args     []string  `json:"args"`
	// SuiteVersion is what the suite was built with, if it is built
	// (Go's: the go command's version).
	SuiteVersion string `json:"suite_version,omitempty"`
	// Modules holds every unit asked for (modules, packages); NotRun if
	// never reported. The name is the one the first suite's results used.
	Modules map[string]Result `json:"modules"`
}

func runCommand(args []string) error {
	flags := flag.NewFlagSet("moat-suite run", flag.ContinueOnError)
	suiteName := flags.String("suite", "python", "the suite: python (CPython's regression tests), go (the Go standard library's tests) or kselftest (Linux's selftests)")
	runtime := flags.String("runtime", "runc", "runtime: runc, moat (on PATH) or the path of a runc-compatible binary")
	name := flags.String("name", "", "name of the runtime in the results (default: the binary's base name)")
	var runtimeFlags stringList
	flags.Var(&runtimeFlags, "runtime-flag", "extra global flag for the runtime (repeatable)")
	cache := flags.String("cache", "build/rootfs-debian", "the Debian rootfs cache (as make rootfs-debian builds it)")
	results := flags.String("results", "build/suite", "directory for the results")
	perTest := flags.Duration("per-test", 0, "time limit of each module or package (default: the suite's)")
	limit := flags.Duration("limit", 0, "time limit of the whole run (default: the suite's)")
	only := flags.String("only", "", "comma-separated modules or packages to run instead of the suite's set")
	var extra stringList
	flags.Var(&extra, "test-flag", "extra flag for the suite's runner (regrtest's -v, a test binary's -test.run=X) (repeatable)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	s, err := findSuite(*suiteName)
	if err != nil {
		return err
	}
	units := s.units
	if *only != "" {
		units = strings.Split(*only, ",")
	}
	if *perTest == 0 {
		*perTest = s.perTest
	}
	if *limit == 0 {
		*limit = s.limit
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
	base := filepath.Join(resultsDir, s.name+"-"+rt.Name)
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
	var own []specs.Mount
	var built string
	if s.prepare != nil {
		if own, built, err = s.prepare(ctx, filepath.Join(resultsDir, s.name+"-build"), units); err != nil {
			return err
		}
	}
	run, err := runSuite(ctx, rt, s, fs, base, s.command(units, *perTest, extra), own, *limit)
	if err != nil {
		return err
	}
	run.SuiteVersion = built
	for _, u := range units {
		if _, ok := run.Modules[u]; !ok {
			run.Modules[u] = Result{Status: NotRun}
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
	fmt.Printf("%s: %s: %d %ss in %.0fs: %d passed, %d skipped, %d not good (exit %d%s); %s.json\n",
		rt.Name, s.name, len(run.Modules), s.unit, run.Seconds, counts[Passed], counts[Skipped],
		len(run.Modules)-counts[Passed]-counts[Skipped]-counts[NoTests], run.Exit, map[bool]string{true: ", stopped by --limit"}[run.TimedOut], base)
	return nil
}

// runSuite runs s's command args in one container of rt on a bundle whose
// rootfs is fs, with the suite's own mounts, its output going to base.out,
// and parses what it reported. The container is deleted afterwards however
// the run ended.
func runSuite(ctx context.Context, rt *ocirun.Runtime, s *suite, fs, base string, args []string, own []specs.Mount, limit time.Duration) (*Run, error) {
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
	if err := ocirun.WriteSpec(bundle, containerSpec(s, fs, hosts, args, own)); err != nil {
		return nil, err
	}
	out, err := os.Create(base + ".out")
	if err != nil {
		return nil, err
	}
	defer out.Close()
	root := rt.At(state)
	id := containerID(s, rt.Name, os.Getpid())
	run := &Run{Runtime: rt.Name, Version: rt.Version(ctx), Started: time.Now().UTC(), Args: args}
	fmt.Fprintf(os.Stderr, "moat-suite: %s: %s: %d arguments (output: %s.out)\n", rt.Name, s.name, len(args), base)
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
	run.Modules = s.parse(f)
	return run, errors.Join(sweepErr)
}
