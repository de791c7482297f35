package systrap

import "sync/atomic"

// Spinning makes a hand-off cheap only while the thread handed to runs at
// once on another CPU. When the host's CPUs are oversubscribed (other
// sandboxes, a build beside them), the spinner holds a CPU that a host
// process, or the very thread it waits for, is queued for: the host
// preempts the spinner after its slice, and each hand-off waits that long.
// Both sides then do better sleeping on the futex at once, so the host
// runs whoever is ready.
//
// The sentry learns that the CPUs are wanted elsewhere from its own spins:
// a spin that was preempted (a gap in the time-stamp counter between two
// polls) or whose sched_yield gave the CPU away for long. When enough of a
// window of one guest thread's waits saw that, hand-offs stop spinning on both sides for a
// number of windows, then spinning is tried again for one window. The
// number of windows doubles each time the trial finds the CPUs still
// contended, up to a bound, and shrinks when a trial finds them free: a
// loaded host costs one window of spinning every so often, a quiet one
// goes back to spinning within a few windows of the load ending.
type spinPolicy struct {
	state atomic.Uint64 // a policyState, packed
}

// spinWindowCount is one guest thread's count of its waits in its current
// window: owned by the goroutine running the thread (Switch), so that a
// hand-off writes no memory that other threads' hand-offs write too.
type spinWindowCount struct {
	waits, contended uint32
}

// add counts one wait and reports whether the window is full; take then
// returns its contended count and starts the next.
func (w *spinWindowCount) add(o spinOutcome) bool {
	if o == spinContended {
		w.contended++
	}
	w.waits++
	return w.waits >= spinWindow
}

func (w *spinWindowCount) take() uint32 {
	c := w.contended
	*w = spinWindowCount{}
	return c
}

// The policy's constants: a window of spinWindow waits; spinning stops when
// at least one in contendedShare of them was contended; it stays off for
// 1<<exp windows, exp < maxBackoffExp.
const (
	spinWindow     = 64
	contendedShare = 4
	maxBackoffExp  = 7
)

// spinOutcome is what one wait's spin found.
type spinOutcome int

const (
	spinHit       spinOutcome = iota // the word changed while spinning, or no spin was made
	spinMiss                         // the spin ran out undisturbed: the other side took long
	spinContended                    // the spin was preempted, or a yield gave the CPU away for long
)

// policyState is the decision in force: whether hand-offs sleep at once,
// for how many more windows, and the backoff exponent of the next period
// of sleeping.
type policyState struct {
	sleep bool
	left  uint32 // windows of sleeping still to go
	exp   uint32
}

func (s policyState) pack() uint64 {
	v := uint64(s.left)<<8 | uint64(s.exp)<<1
	if s.sleep {
		v |= 1
	}
	return v
}

func unpackPolicy(v uint64) policyState {
	return policyState{sleep: v&1 != 0, exp: uint32(v>>1) & 0x7f, left: uint32(v >> 8)}
}

// nextPolicy is the decision at the end of a window of spinWindow waits, of
// which contended were contended.
func nextPolicy(s policyState, contended uint32) policyState {
	if s.sleep {
		if s.left > 1 {
			s.left--
			return s
		}
		// A trial window of spinning.
		return policyState{exp: s.exp}
	}
	if contended*contendedShare >= spinWindow {
		return policyState{sleep: true, left: 1 << s.exp, exp: min(s.exp+1, maxBackoffExp-1)}
	}
	if s.exp > 0 {
		s.exp--
	}
	return s
}

// spinning reports whether hand-offs spin now: one atomic load.
func (p *spinPolicy) spinning() bool {
	return p.state.Load()&1 == 0
}

// endWindow decides at the end of a thread's window of spinWindow waits, of
// which contended were contended. Threads' windows end in any order, each
// deciding from the state the others left.
func (p *spinPolicy) endWindow(contended uint32) {
	for {
		old := p.state.Load()
		if p.state.CompareAndSwap(old, nextPolicy(unpackPolicy(old), contended).pack()) {
			return
		}
	}
}
