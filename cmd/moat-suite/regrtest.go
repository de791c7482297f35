package main

import (
	"bufio"
	"io"
	"regexp"
	"strings"
)

// progressLine is regrtest's line for a finished module, as its worker
// processes print it: "0:00:01 load avg: 0.52 [ 3/80/1] test_os failed (2 errors)".
// The elapsed time and load average are optional; the third number counts
// the failures so far.
// duration is how long a slow module took, which regrtest appends to
// its words ("passed (35.2 sec)", "failed (1 error) (1 min 3 sec)"): not
// part of how it ended.
var duration = regexp.MustCompile(` \((?:\d+ hour )?(?:\d+ min)? ?(?:[\d.]+ sec)?\)$`)

var progressLine = regexp.MustCompile(`^(?:\d+:\d\d:\d\d )?(?:load avg: [\d.]+ )?\[\s*\d+/\d+(?:/\d+)?\] (test_[\w.]+) (.*)$`)

// parseRegrtest reads regrtest's output and returns the outcome of each
// module it reported. A module reported twice (a re-run) keeps its last.
func parseRegrtest(r io.Reader) map[string]Result {
	results := map[string]Result{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m := progressLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		// "-- running: test_x (30 sec)" says what still runs, not how this
		// module ended.
		detail, _, _ := strings.Cut(m[2], " -- ")
		detail = duration.ReplaceAllString(strings.TrimSpace(detail), "")
		results[m[1]] = Result{Status: classify(detail), Detail: detail}
	}
	return results
}

// classify maps regrtest's words for a module's end to a Status.
func classify(detail string) Status {
	switch {
	case strings.HasPrefix(detail, "passed"):
		return Passed
	case strings.HasPrefix(detail, "skipped"), strings.HasPrefix(detail, "resource denied"):
		return Skipped
	case strings.Contains(detail, "env changed"):
		return EnvChanged
	case strings.Contains(detail, "timed out"), strings.Contains(detail, "timeout"):
		return TimedOut
	case strings.HasPrefix(detail, "crashed"), strings.Contains(detail, "uncaught exception"), strings.Contains(detail, "exit code"):
		return Crashed
	case strings.HasPrefix(detail, "run no tests"):
		return NoTests
	case strings.HasPrefix(detail, "failed"):
		return Failed
	}
	return Failed
}
