package main

import (
	"context"
	"fmt"
	"io"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// suite is one test suite written elsewhere that moat-suite runs: what it
// is made of, how one container runs it, and how its output is read.
type suite struct {
	name  string // what --suite and the results' file names call it: python, go
	title string // the heading of its section in docs/suites.md
	unit  string // what it is made of: "module", "package"
	units []string
	// perTest and limit are the default time limits of one unit and of
	// the whole run.
	perTest, limit time.Duration
	// prepare builds what the container needs beyond the rootfs, under
	// dir, and returns the mounts that bring it in and the version of
	// what it built with.
	prepare func(ctx context.Context, dir string, units []string) ([]specs.Mount, string, error)
	// command is the container's command line: run units, each bounded
	// by perTest, with extra flags for the suite's runner.
	command func(units []string, perTest time.Duration, extra []string) []string
	// spec finishes the container's configuration: env, cwd, and mounts
	// of the suite's own.
	spec  func(spec *specs.Spec)
	parse func(r io.Reader) map[string]Result
	// about is the paragraph under the heading: where the suite comes
	// from, how it is run, and the reference run's command.
	about func(w io.Writer, ref *Run)
	// columns are the statuses the totals table counts.
	columns []Status
}

// suites are every suite, in the order docs/suites.md shows them.
var suites = []*suite{pythonSuite, goSuite, kselftestSuite}

func findSuite(name string) (*suite, error) {
	for _, s := range suites {
		if s.name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("unknown suite %q (python, go or kselftest)", name)
}
