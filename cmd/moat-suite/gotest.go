package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// The lines goTestScript frames each package's output with: goBegin PKG
// before it, goEnd PKG STATUS after it, STATUS being the test binary's
// exit status (137 if timeout's SIGKILL ended it).
const (
	goBegin = "@@@ moat-suite: begin"
	goEnd   = "@@@ moat-suite: end"
)

// framing is the byte -test.v=test2json puts before the testing
// framework's own lines ("--- FAIL: ...", "PASS"), which a test's output
// cannot then be mistaken for.
const framing = "\x16"

// testLine is the framework's line for a finished test or subtest, its
// name being the full one (TestX/sub).
var testLine = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \([\d.]+s\)`)

// runningTest is a line of the list of running tests that the panic of
// -test.timeout prints: "\t\tTestCopyPipeIntoTCP (1m57s)".
var runningTest = regexp.MustCompile(`^\t\t(\S+) \(\S+\)$`)

// goPackage is what parseGoTests has read of one package's output.
type goPackage struct {
	tests     map[string]string // each test's last outcome: PASS, FAIL or SKIP
	noTests   bool              // "testing: warning: no tests to run"
	timedOut  bool              // the binary's -test.timeout fired
	running   []string          // the tests its panic said were running then
	inRunning bool              // the line before was of that list, or its heading
	panicked  bool              // a panic ended the binary
	exitStatus
	lastFrame string // the framework's last line: PASS or FAIL at the end
}

// parseGoTests reads goTestScript's output and returns the outcome of each
// package it began.
func parseGoTests(r io.Reader) map[string]Result {
	return readFramed(r, func() framedItem { return &goPackage{tests: map[string]string{}} })
}

// read takes in one line of a package's output.
func (p *goPackage) read(line string) {
	if framed, ok := strings.CutPrefix(line, framing); ok {
		if m := testLine.FindStringSubmatch(framed); m != nil {
			p.tests[m[2]] = m[1]
		} else if f := strings.TrimSpace(framed); f == "PASS" || f == "FAIL" {
			p.lastFrame = f
		}
		return
	}
	if m := runningTest.FindStringSubmatch(line); m != nil && p.inRunning {
		p.running = append(p.running, m[1])
		return
	}
	p.inRunning = p.timedOut && line == "\trunning tests:"
	switch {
	case strings.HasPrefix(line, "panic: test timed out after"):
		p.timedOut = true
	case strings.HasPrefix(line, "panic: "), strings.HasPrefix(line, "fatal error: "):
		p.panicked = true
	case line == "testing: warning: no tests to run":
		p.noTests = true
	}
}

// result is how the package ended: passed (every test passed or skipped,
// skipped if none passed), failed (the binary said FAIL and exited 1),
// timed out (its -test.timeout, or timeout's SIGKILL), crashed (anything
// else: a panic, a signal, an exit status the framework does not use).
// The detail counts the top-level tests; Failing names the tests that
// failed (and those still running when the timeout fired), subtests
// rather than the tests they are part of.
func (p *goPackage) result() Result {
	var top, failedTop, skippedTop int
	var failing []string
	for name, outcome := range p.tests {
		sub := strings.Contains(name, "/")
		if !sub {
			top++
		}
		switch outcome {
		case "FAIL":
			failing = append(failing, name)
			if !sub {
				failedTop++
			}
		case "SKIP":
			if !sub {
				skippedTop++
			}
		}
	}
	failing = leaves(failing)
	counts := fmt.Sprintf("%d tests, %d skipped", top, skippedTop)
	switch {
	case !p.finished:
		return Result{Status: Crashed, Detail: "never ended (the run stopped first)", Failing: failing}
	case p.timedOut || p.exit == 137:
		return Result{Status: TimedOut, Detail: fmt.Sprintf("timed out (%s)", counts), Failing: leaves(append(failing, p.running...))}
	case p.exit == 0 && p.noTests:
		return Result{Status: NoTests}
	case p.exit == 0 && top > 0 && skippedTop == top:
		return Result{Status: Skipped, Detail: fmt.Sprintf("skipped (%d tests)", top)}
	case p.exit == 0:
		return Result{Status: Passed, Detail: fmt.Sprintf("passed (%s)", counts)}
	case p.exit == 1 && p.lastFrame == "FAIL" && !p.panicked:
		return Result{Status: Failed, Detail: fmt.Sprintf("failed (%d of %d tests)", failedTop, top), Failing: failing}
	}
	why := fmt.Sprintf("exit %d", p.exit)
	if p.panicked {
		why = "panic, " + why
	}
	return Result{Status: Crashed, Detail: fmt.Sprintf("crashed (%s)", why), Failing: failing}
}

// leaves is names, sorted, without the tests whose failure is that of a
// subtest also named.
func leaves(names []string) []string {
	slices.Sort(names)
	var out []string
	for i, n := range names {
		if i+1 < len(names) && strings.HasPrefix(names[i+1], n+"/") {
			continue
		}
		out = append(out, n)
	}
	return out
}
