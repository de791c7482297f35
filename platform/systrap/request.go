package systrap

import (
	"errors"
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// op is one request to a stub's syscall thread.
type op struct {
	kind uint32
	nr   uint64
	args [6]uint64
}

// errStubDead reports a stub process that is gone.
var errStubDead = errors.New("stub process died")

// prewake wakes the stub's syscall thread if it sleeps, without a request:
// it spins again, ready for the request the sentry is about to make, while
// the sentry finishes what it is doing. A wake-up takes tens of
// microseconds, which the sentry would otherwise wait through.
func (s *stubProcess) prewake() {
	res := s.unit + 4096
	if atomic.LoadUint32(s.p.ctl.u32(res+resStubSleeping)) != 0 {
		futexWake(s.p.ctl.u32(s.unit + reqSeq))
	}
}

// urgency says how the two sides of a request wait. A request a guest
// thread waits for is urgent: the sentry spins for the answer, and the
// syscall thread spins afterwards for the next one (an ld.so maps a library
// in a burst of calls). Work done ahead of need (pooled stubs, spare
// threads) is not: both sides sleep at once. On a machine with few CPUs
// every spinning thread takes CPU time from the guest threads running
// meanwhile: the pool's spinners held one of two CPUs through most of each
// fork+exec, and made it slower (docs/SPECIFICATION.md).
type urgency int

const (
	urgent urgency = iota
	aheadOfNeed
)

// call has the stub's syscall thread execute ops in order, stopping at the
// first that fails, and returns the last result.
func (s *stubProcess) call(u urgency, ops ...op) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.callLocked(u, ops)
}

func (s *stubProcess) callLocked(u urgency, ops []op) (uint64, error) {
	if len(ops) == 0 {
		return 0, nil
	}
	if len(ops) > maxOps {
		return 0, fmt.Errorf("systrap: %d ops in one request, at most %d", len(ops), maxOps)
	}
	if s.dead.Load() {
		return 0, errStubDead
	}
	c := s.p.ctl
	req, res := s.unit, s.unit+4096
	for i := range ops {
		o := req + reqOps + uint64(i)*opSize
		*c.u32(o + opKind) = ops[i].kind
		*c.u64(o + opNr) = ops[i].nr
		for j, a := range ops[i].args {
			*c.u64(o + opArgs + uint64(j)*8) = a
		}
	}
	*c.u32(req + reqNOps) = uint32(len(ops))
	spin, idle := requestSpinIters, uint32(0)
	if u == aheadOfNeed || !s.p.spin.spinning() {
		spin, idle = 0, 1
	}
	atomic.StoreUint32(c.u32(req+reqIdle), idle)
	s.seq++
	publish(c.u32(req+reqSeq), s.seq, c.u32(res+resStubSleeping))
	if !waitFor(c.u32(res+resAck), s.seq, c.u32(res+resSentrySleeping), &s.dead, spin) {
		return 0, errStubDead
	}
	n := atomic.LoadUint32(c.u32(res + resNDone))
	if n == 0 || n > uint32(len(ops)) {
		return 0, fmt.Errorf("systrap: stub reported %d of %d ops done", n, len(ops))
	}
	last := *c.u64(res + resResults + uint64(n-1)*8)
	if errno := -int64(last); errno > 0 && errno < 4096 {
		return 0, fmt.Errorf("systrap: stub op %d (nr %d): %w", n-1, ops[n-1].nr, unix.Errno(errno))
	}
	if n != uint32(len(ops)) {
		return 0, fmt.Errorf("systrap: stub stopped after %d of %d ops", n, len(ops))
	}
	return last, nil
}
