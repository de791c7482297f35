package platform

import "time"

// HostCPUBound bounds the guest time a thread is counted by the host's CPU
// clock of the host thread that runs it. A platform measures a run of guest
// code as elapsed time (the TSC's ticks from resume to the next event),
// which counts the time the host ran other threads meanwhile (a time slice
// given away, a CPU quota's throttling). After a run longer than
// RunningVouched the platform reads the host thread's CPU clock, and what
// it counted since the previous reading cannot exceed what the host ran the
// thread meanwhile, which also covers the thread's other work (a stub's
// handler, a vCPU thread's kernel work), so the bound is loose by that. A
// shorter run is taken as measured: the host rarely takes a CPU away for
// less, and when it did, the next bound takes it back.
type HostCPUBound struct {
	mark  uint64        // the thread's host CPU clock (ns) at the last reading; 0 before one
	since time.Duration // guest time counted since that reading
}

// Marked reports whether a first reading has been taken.
func (b *HostCPUBound) Marked() bool { return b.mark != 0 }

// Bound returns what of guest time g, just measured, counts: all of it
// unless the host thread's CPU clock was read (cpu ns, ok) at the event
// that ended the run and the count would exceed the host's. A reading
// without g (0) only marks.
func (b *HostCPUBound) Bound(g time.Duration, cpu uint64, ok bool) time.Duration {
	if !ok {
		b.since += g
		return g
	}
	mark, since := b.mark, b.since
	b.mark, b.since = cpu, 0
	if mark == 0 || cpu < mark {
		return g // no earlier reading to bound by
	}
	return min(g, max(time.Duration(cpu-mark)-since, 0))
}
