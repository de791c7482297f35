package kernel

import (
	"testing"
	"time"

	"github.com/moat-sandbox/moat/platform"
)

// runningGuest is a platform context that is only ever asked how long its
// guest code has been running.
type runningGuest struct {
	platform.Context
	running time.Duration
}

func (g *runningGuest) Running() time.Duration { return g.running }

// A thread's CPU clock never goes back, though the platform's estimate of
// the guest code running now is more than what it reports for it once the
// event comes, and neither counts it in between.
func TestCPUTimeNeverGoesBack(t *testing.T) {
	const us = time.Microsecond
	g := &runningGuest{running: 150 * us}
	task := &Task{ctx: g}
	task.addCPUTime(10*time.Millisecond, time.Millisecond)
	if user, sys := task.CPUTime(); user != 10150*us || sys != time.Millisecond {
		t.Fatalf("running: user %v sys %v, want 10.15ms 1ms", user, sys)
	}
	g.running = 0 // the Switch has returned; its event is not yet counted
	if user, _ := task.CPUTime(); user != 10150*us {
		t.Fatalf("between the event and its count: user %v, want 10.15ms", user)
	}
	task.addCPUTime(100*us, 0) // less than was estimated
	if user, _ := task.CPUTime(); user != 10150*us {
		t.Fatalf("after a smaller count: user %v, want 10.15ms", user)
	}
	task.addCPUTime(100*us, 0)
	if user, _ := task.CPUTime(); user != 10200*us {
		t.Fatalf("once the counts pass the estimate: user %v, want 10.2ms", user)
	}
}

// Of a run of guest code that has gone on for long, only what the
// platform vouches for counts before its event: the host may have run
// other threads for the rest.
func TestCPUTimeCountsALongRunOnlyAsFarAsVouched(t *testing.T) {
	task := &Task{ctx: &runningGuest{running: 2 * time.Second}}
	task.addCPUTime(time.Millisecond, 0)
	if user, _ := task.CPUTime(); user != time.Millisecond+platform.RunningVouched {
		t.Fatalf("user %v, want 1ms + %v", user, platform.RunningVouched)
	}
}
