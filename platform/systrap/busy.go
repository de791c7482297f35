package systrap

import (
	"runtime"
	"sync/atomic"
)

// A guest thread waiting in the stub's handler for the sentry's answer may
// sched_yield while it spins, which lets a sentry or syscall thread that was
// woken on its CPU run at once: on two CPUs fork+exec+wait is much slower
// without the yields (docs/SPECIFICATION.md). But when guest threads
// keep every CPU busy (64 threads spinning), a yield sends the waiting
// thread behind all of them, a whole round of the host's run queue, and a
// timer's wake-up came hundreds of milliseconds late. So the handlers yield
// only while fewer guest threads are running guest code than there are
// CPUs; the sentry keeps the count and tells the stubs through the
// parameters page (parGuestBusy).
type busyGauge struct {
	running atomic.Int32 // guest threads between resume and trap
	flag    *uint32      // parGuestBusy in the parameters page
	cpus    int32        // at this many running threads the CPUs are busy
	_       [40]byte     // running is written at every hand-off: a line of its own
}

func newBusyGauge(flag *uint32) *busyGauge {
	return &busyGauge{flag: flag, cpus: int32(runtime.NumCPU())}
}

// enter counts a guest thread about to run guest code.
func (g *busyGauge) enter() {
	if g.running.Add(1) == g.cpus {
		g.update()
	}
}

// leave counts a guest thread back in the sentry's hands.
func (g *busyGauge) leave() {
	if g.running.Add(-1) == g.cpus-1 {
		g.update()
	}
}

// update sets the flag from the count. Two threads crossing the threshold
// in opposite directions may store out of order; each re-reads the count
// after its store, so the flag ends up matching it.
func (g *busyGauge) update() {
	for {
		n := g.running.Load()
		busy := uint32(0)
		if n >= g.cpus {
			busy = 1
		}
		atomic.StoreUint32(g.flag, busy)
		if g.running.Load() == n {
			return
		}
	}
}
