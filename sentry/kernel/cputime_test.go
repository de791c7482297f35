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
	g := &runningGuest{running: 5 * time.Millisecond}
	task := &Task{ctx: g}
	task.addCPUTime(10*time.Millisecond, time.Millisecond)
	if user, sys := task.CPUTime(); user != 15*time.Millisecond || sys != time.Millisecond {
		t.Fatalf("running: user %v sys %v, want 15ms 1ms", user, sys)
	}
	g.running = 0 // the Switch has returned; its event is not yet counted
	if user, _ := task.CPUTime(); user != 15*time.Millisecond {
		t.Fatalf("between the event and its count: user %v, want 15ms", user)
	}
	task.addCPUTime(3*time.Millisecond, 0) // less than was estimated
	if user, _ := task.CPUTime(); user != 15*time.Millisecond {
		t.Fatalf("after a smaller count: user %v, want 15ms", user)
	}
	task.addCPUTime(4*time.Millisecond, 0)
	if user, _ := task.CPUTime(); user != 17*time.Millisecond {
		t.Fatalf("once the counts pass the estimate: user %v, want 17ms", user)
	}
}
