// Command moat-conformance runs moat's conformance suite against Linux and
// an OCI runtime.
//
// It builds the C programs of package conformance, runs each natively and
// then in the runtime named by --runtime (runc, runsc, moat, or the path of
// any runc-compatible binary), compares busybox runs between that runtime
// and the --reference runtime, prints one line per program and check and a
// closing "N passed, N failed" line, and exits 1 if anything failed. On
// SIGINT or SIGTERM it kills and deletes the running container, removes its
// temporary bundle and state root, and exits 128+signal.
//
// Usage:
//
//	moat-conformance [--runtime native|runc|runsc|moat|PATH] [--json FILE] [flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/moat-sandbox/moat/conformance"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, " ") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// signalled is the cancellation cause when a signal interrupts the suite.
type signalled struct{ sig syscall.Signal }

func (s signalled) Error() string {
	if s.sig == syscall.SIGTERM {
		return "interrupted by SIGTERM"
	}
	return "interrupted by SIGINT"
}

// run is the command with its exit status: 0 all passed, 1 something
// failed, 2 the suite could not run, 128+N interrupted by signal N.
func run(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("moat-conformance", flag.ContinueOnError)
	flags.SetOutput(stderr)
	runtimeName := flags.String("runtime", "native", "runtime to measure: native (programs on the host only), runc, runsc, moat, or a path")
	runscPath := flags.String("runsc", "", "runsc binary (default: runsc on PATH)")
	var runtimeFlags stringList
	flags.Var(&runtimeFlags, "runtime-flag", "extra global flag for the runtime (repeatable)")
	referenceName := flags.String("reference", "runc", "runtime the real program checks compare against, or none")
	timeout := flags.Duration("timeout", conformance.DefaultTimeout, "time limit for each run of a program")
	buildDir := flags.String("build-dir", "", "keep the compiled programs here (default: a temporary directory)")
	busybox := flags.String("busybox", conformance.DefaultBusybox, "static busybox for the real program checks")
	jsonFile := flags.String("json", "", "write the results as JSON to this file")
	filter := flags.String("run", "", "run only programs and checks whose name matches this regexp")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	if flags.NArg() != 0 {
		fmt.Fprintf(stderr, "moat-conformance: unexpected argument %q\n", flags.Arg(0))
		return 2
	}
	opts := conformance.Options{BuildDir: *buildDir, Busybox: *busybox, Timeout: *timeout}
	if *filter != "" {
		re, err := regexp.Compile(*filter)
		if err != nil {
			fmt.Fprintf(stderr, "moat-conformance: --run: %v\n", err)
			return 2
		}
		opts.Filter = re
	}

	var rt, reference *conformance.Runtime
	if *runtimeName != "native" {
		var err error
		if rt, err = conformance.ResolveRuntime(*runtimeName, *runscPath, runtimeFlags); err != nil {
			fmt.Fprintf(stderr, "moat-conformance: %v\n", err)
			return 2
		}
		if *referenceName != "none" {
			if reference, err = conformance.ResolveRuntime(*referenceName, *runscPath, nil); err != nil {
				fmt.Fprintf(stderr, "moat-conformance: %v; real program checks skipped\n", err)
			}
		}
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		if s, ok := (<-sigs).(syscall.Signal); ok {
			cancel(signalled{s})
		}
	}()

	env, err := conformance.Prepare(ctx, opts)
	if err != nil {
		return failed(ctx, stderr, err)
	}
	progress := func(r conformance.Result) { fmt.Fprintln(stdout, r.Line()) }
	results, err := env.RunPrograms(ctx, rt, progress)
	if err == nil && rt != nil {
		var real []conformance.Result
		real, err = env.CompareRealPrograms(ctx, rt, reference, progress)
		results = append(results, real...)
	}
	// The suite's methods have stopped and deleted any container they
	// started by the time they return, so this is the last trace of it.
	if closeErr := env.Close(); closeErr != nil {
		fmt.Fprintf(stderr, "moat-conformance: removing temporary files: %v\n", closeErr)
	}
	if err != nil {
		return failed(ctx, stderr, err)
	}

	rep := conformance.NewReport(rt, reference, results)
	fmt.Fprintln(stdout, rep.Summary())
	if *jsonFile != "" {
		if err := rep.WriteJSON(*jsonFile); err != nil {
			fmt.Fprintf(stderr, "moat-conformance: %v\n", err)
			return 2
		}
	}
	if rep.Failed > 0 {
		return 1
	}
	return 0
}

// failed reports an error that stopped the suite, after everything it
// created is gone, and picks the exit status.
func failed(ctx context.Context, stderr io.Writer, err error) int {
	var sig signalled
	if errors.As(context.Cause(ctx), &sig) {
		fmt.Fprintf(stderr, "moat-conformance: %v; containers and temporary files removed\n", sig)
		return 128 + int(sig.sig)
	}
	fmt.Fprintf(stderr, "moat-conformance: %v\n", err)
	return 2
}
