package main

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The exit statuses of kselftest.h (KSFT_PASS, KSFT_FAIL, KSFT_XFAIL,
// KSFT_XPASS, KSFT_SKIP), and timeout's for a program it had to kill
// (124 for SIGTERM, 137 for the SIGKILL after it).
const (
	ksftPass, ksftFail, ksftXfail, ksftXpass, ksftSkip = 0, 1, 2, 3, 4
	timeoutTerm, timeoutKill                           = 124, 137
	notBuilt                                           = 127
)

// tapCase is a TAP test line, at any depth of nesting (kselftest's
// scripts prefix the output of the programs they run with "# "): "ok 3
// name", "not ok 4 name # reason", "ok 5 name # SKIP reason".
var tapCase = regexp.MustCompile(`^(?:#\s*)*(not ok|ok) \d+\b\s*(?:- )?([^#]*?)\s*(?:#\s*(\w+)\b.*)?$`)

// kselftestProgram is what parseKselftests has read of one program's output.
type kselftestProgram struct {
	cases    Cases
	failing  []string
	notBuilt bool
	exitStatus
}

// parseKselftests reads kselftestScript's output and returns the outcome
// of each program it began.
func parseKselftests(r io.Reader) map[string]Result {
	return readFramed(r, func() framedItem { return &kselftestProgram{} })
}

// read takes in one line of a program's output.
func (p *kselftestProgram) read(line string) {
	if line == "not built" {
		p.notBuilt = true
		return
	}
	m := tapCase.FindStringSubmatch(line)
	if m == nil {
		return
	}
	directive := strings.ToUpper(m[3])
	switch {
	case directive == "SKIP":
		p.cases.Skip++
	case m[1] == "ok", directive == "XFAIL", directive == "TODO":
		p.cases.OK++
	default:
		p.cases.NotOK++
		desc := m[2]
		if desc == "" {
			desc = "#" + strconv.Itoa(p.cases.OK+p.cases.NotOK+p.cases.Skip)
		}
		if !slices.Contains(p.failing, desc) {
			p.failing = append(p.failing, desc)
		}
	}
}

// result is how the program ended, by its exit status (kselftest's
// meaning of it) and its TAP cases (failed if any is not ok), which the
// detail counts.
func (p *kselftestProgram) result() Result {
	c := p.cases
	counts := fmt.Sprintf("%d ok, %d not ok, %d skip", c.OK, c.NotOK, c.Skip)
	res := Result{Cases: &c, Failing: p.failing}
	switch {
	case !p.finished:
		res.Status, res.Detail = Crashed, "never ended (the run stopped first)"
	case p.notBuilt || p.exit == notBuilt:
		res.Status, res.Detail, res.Cases = NotRun, "not built", nil
	case p.exit == timeoutTerm || p.exit == timeoutKill:
		res.Status, res.Detail = TimedOut, "timed out ("+counts+")"
	case p.exit == ksftSkip, p.exit == ksftPass && c.Skip > 0 && c.OK+c.NotOK == 0:
		res.Status, res.Detail = Skipped, "skipped ("+counts+")"
	case (p.exit == ksftPass || p.exit == ksftXfail) && c.NotOK > 0:
		// A script that runs programs (futex's run.sh) ends 0 whatever
		// they reported: their cases say.
		res.Status, res.Detail = Failed, fmt.Sprintf("failed (exit %d; %s)", p.exit, counts)
	case p.exit == ksftPass, p.exit == ksftXfail:
		res.Status, res.Detail = Passed, "passed ("+counts+")"
	case p.exit == ksftFail, p.exit == ksftXpass:
		res.Status, res.Detail = Failed, "failed ("+counts+")"
	case p.exit > 128:
		res.Status, res.Detail = Crashed, fmt.Sprintf("crashed (signal %d; %s)", p.exit-128, counts)
	default:
		res.Status, res.Detail = Failed, fmt.Sprintf("failed (exit %d; %s)", p.exit, counts)
	}
	return res
}
