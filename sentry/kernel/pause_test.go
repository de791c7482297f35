package kernel_test

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// spinner is a guest that counts as it computes, in two threads, until
// stop is set.
func spinner(t *testing.T, count *atomic.Int64, stop *atomic.Bool) fake.Program {
	return func(g *fake.Guest) {
		loop := func(g *fake.Guest) {
			for !stop.Load() {
				count.Add(1)
				g.Compute(100 * time.Microsecond)
			}
		}
		_, tidAddr, _ := g.Thread(loop)
		loop(g)
		g.Join(tidAddr)
	}
}

func settled(count *atomic.Int64) bool {
	a := count.Load()
	time.Sleep(50 * time.Millisecond)
	return count.Load() == a
}

func TestFreezeStopsEveryGuestThreadUntilThaw(t *testing.T) {
	s := newSandbox(t)
	var count atomic.Int64
	var stop atomic.Bool
	s.Start(spinner(t, &count, &stop), kerneltest.Init{})
	for count.Load() < 10 {
		time.Sleep(time.Millisecond)
	}
	s.Kernel.Freeze()
	if !s.Kernel.Frozen() {
		t.Error("Frozen() = false after Freeze")
	}
	// A thread may finish the step it was in: then nothing moves.
	time.Sleep(20 * time.Millisecond)
	if !settled(&count) {
		t.Fatal("guest threads ran while the sandbox was frozen")
	}
	s.Kernel.Thaw()
	before := count.Load()
	deadline := time.Now().Add(5 * time.Second)
	for count.Load() < before+10 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if count.Load() < before+10 {
		t.Error("guest threads did not run again after Thaw")
	}
	stop.Store(true)
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v", st)
	}
}

func TestAFrozenSandboxStillDiesOfSIGKILL(t *testing.T) {
	s := newSandbox(t)
	var count atomic.Int64
	var stop atomic.Bool
	s.Start(spinner(t, &count, &stop), kerneltest.Init{})
	for count.Load() < 10 {
		time.Sleep(time.Millisecond)
	}
	s.Kernel.Freeze()
	s.Kernel.Kill(int(unix.SIGKILL))
	if st := s.Wait(); st != (kernel.ExitStatus{Signo: int(unix.SIGKILL)}) {
		t.Errorf("a frozen sandbox killed with SIGKILL ended with %+v", st)
	}
}

func TestAThreadCreatedWhileFrozenDoesNotRun(t *testing.T) {
	s := newSandbox(t)
	var ran atomic.Bool
	var parked atomic.Bool
	cloned := make(chan struct{})
	s.Start(func(g *fake.Guest) {
		// Blocked in the sentry while the freeze comes, then clones as
		// its call returns: the child must wait for the thaw too.
		for !parked.Load() {
			sleep(g, time.Millisecond)
		}
		_, tidAddr, _ := g.Thread(func(g *fake.Guest) { ran.Store(true) })
		close(cloned)
		g.Join(tidAddr)
	}, kerneltest.Init{})
	time.Sleep(10 * time.Millisecond)
	s.Kernel.Freeze()
	parked.Store(true)
	select {
	case <-cloned:
		t.Fatal("init ran guest code while frozen")
	case <-time.After(100 * time.Millisecond):
	}
	if ran.Load() {
		t.Error("a thread ran while frozen")
	}
	s.Kernel.Thaw()
	if st := s.Wait(); st != (kernel.ExitStatus{}) || !ran.Load() {
		t.Errorf("after the thaw: init %+v, thread ran %v", st, ran.Load())
	}
}
