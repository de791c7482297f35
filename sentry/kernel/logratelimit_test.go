package kernel

import (
	"fmt"
	"testing"
	"time"
)

// The kernel's log passes a burst per interval, then says how many lines
// it left out once the next interval begins.
func TestKernelLogIsRateLimited(t *testing.T) {
	var lines []string
	clock := time.Unix(0, 0)
	l := &logLimiter{out: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }, now: func() time.Time { return clock }}
	l.start = clock
	for i := 0; i < logBurst+25; i++ {
		l.log("line %d", i)
	}
	if len(lines) != logBurst || lines[logBurst-1] != fmt.Sprintf("line %d", logBurst-1) {
		t.Fatalf("in one interval: %d lines passed (last %q), want the first %d", len(lines), lines[len(lines)-1], logBurst)
	}
	clock = clock.Add(logInterval)
	l.log("after")
	want := []string{fmt.Sprintf("25 more lines were not logged (at most %d per %v)", logBurst, logInterval), "after"}
	if got := lines[logBurst:]; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("next interval: %q, want %q", got, want)
	}
}
