package kernel

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Interval timers (setitimer, alarm). ITIMER_REAL counts wall time; the
// CPU-time timers ITIMER_VIRTUAL and ITIMER_PROF count it too, since the
// platform does not report guest CPU time: an approximation that fires
// early for a process that sleeps.
const numITimers = 3

// itimer holds a process's three interval timers.
type itimer struct {
	mu     sync.Mutex
	timers [numITimers]itimerSlot
}

type itimerSlot struct {
	timer    *time.Timer
	expires  time.Time // zero when disarmed
	interval time.Duration
}

var itimerSignals = [numITimers]unix.Signal{unix.SIGALRM, unix.SIGVTALRM, unix.SIGPROF}

// SetITimer arms (value > 0) or disarms timer which and returns its old
// remaining time and interval.
func (tg *ThreadGroup) SetITimer(which int, value, interval time.Duration) (time.Duration, time.Duration) {
	it := &tg.itimer
	it.mu.Lock()
	defer it.mu.Unlock()
	s := &it.timers[which]
	oldValue, oldInterval := s.remaining(), s.interval
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	s.expires, s.interval = time.Time{}, 0
	if value > 0 {
		s.expires, s.interval = time.Now().Add(value), interval
		s.timer = time.AfterFunc(value, func() { tg.fireITimer(which) })
	}
	return oldValue, oldInterval
}

// ITimer returns timer which's remaining time and interval.
func (tg *ThreadGroup) ITimer(which int) (time.Duration, time.Duration) {
	it := &tg.itimer
	it.mu.Lock()
	defer it.mu.Unlock()
	s := &it.timers[which]
	return s.remaining(), s.interval
}

func (s *itimerSlot) remaining() time.Duration {
	if s.expires.IsZero() {
		return 0
	}
	return max(time.Until(s.expires), time.Microsecond) // an armed timer never reads zero
}

func (tg *ThreadGroup) fireITimer(which int) {
	it := &tg.itimer
	it.mu.Lock()
	s := &it.timers[which]
	if s.timer == nil {
		it.mu.Unlock()
		return
	}
	if s.interval > 0 {
		s.expires = s.expires.Add(s.interval)
		s.timer = time.AfterFunc(max(time.Until(s.expires), 0), func() { tg.fireITimer(which) })
	} else {
		s.timer, s.expires = nil, time.Time{}
	}
	it.mu.Unlock()
	tg.SendSignal(SigInfo{Signo: int32(itimerSignals[which]), Code: SIKernel})
}

// stop disarms every timer (the process is gone).
func (it *itimer) stop() {
	it.mu.Lock()
	defer it.mu.Unlock()
	for i := range it.timers {
		if it.timers[i].timer != nil {
			it.timers[i].timer.Stop()
		}
		it.timers[i] = itimerSlot{}
	}
}
