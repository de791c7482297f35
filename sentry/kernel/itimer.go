package kernel

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// Interval timers (setitimer, alarm). ITIMER_REAL counts wall time;
// ITIMER_VIRTUAL the process's user time and ITIMER_PROF its user and
// system time. A CPU-time timer waits on a wall-clock timer first, since a
// process's CPU time grows no faster than wall time while one thread
// runs, then checks the CPU time and waits again for what is left (at
// least cpuTimerRecheck: a process that sleeps uses none). With several
// threads running it fires late, by the time they ran in parallel.
const numITimers = 3

// cpuTimerRecheck is the least a CPU-time timer waits before it looks
// again (about Linux's tick).
const cpuTimerRecheck = 4 * time.Millisecond

// itimer holds a process's three interval timers.
type itimer struct {
	mu     sync.Mutex
	timers [numITimers]itimerSlot
}

type itimerSlot struct {
	timer    *time.Timer
	expires  time.Time     // ITIMER_REAL: when it fires; zero when disarmed
	cpuDue   time.Duration // CPU-time timers: the CPU time at which it fires
	armed    bool
	interval time.Duration
}

var itimerSignals = [numITimers]unix.Signal{unix.SIGALRM, unix.SIGVTALRM, unix.SIGPROF}

// itimerClock is what timer which counts, now.
func (tg *ThreadGroup) itimerClock(which int) time.Duration {
	user, sys := tg.CPUTime()
	switch which {
	case unix.ITIMER_VIRTUAL:
		return user
	case unix.ITIMER_PROF:
		return user + sys
	}
	return 0
}

// SetITimer arms (value > 0) or disarms timer which and returns its old
// remaining time and interval.
func (tg *ThreadGroup) SetITimer(which int, value, interval time.Duration) (time.Duration, time.Duration) {
	it := &tg.itimer
	it.mu.Lock()
	defer it.mu.Unlock()
	s := &it.timers[which]
	oldValue, oldInterval := tg.remainingLocked(which), s.interval
	if s.timer != nil {
		s.timer.Stop()
	}
	*s = itimerSlot{}
	if value > 0 {
		s.armed, s.interval = true, interval
		if which == unix.ITIMER_REAL {
			s.expires = time.Now().Add(value)
		} else {
			s.cpuDue = tg.itimerClock(which) + value
		}
		s.timer = time.AfterFunc(value, func() { tg.fireITimer(which) })
	}
	return oldValue, oldInterval
}

// ITimer returns timer which's remaining time and interval.
func (tg *ThreadGroup) ITimer(which int) (time.Duration, time.Duration) {
	it := &tg.itimer
	it.mu.Lock()
	defer it.mu.Unlock()
	return tg.remainingLocked(which), it.timers[which].interval
}

// remainingLocked is how long timer which has to go (it.mu held); an armed
// timer never reads zero.
func (tg *ThreadGroup) remainingLocked(which int) time.Duration {
	s := &tg.itimer.timers[which]
	switch {
	case !s.armed:
		return 0
	case which == unix.ITIMER_REAL:
		return max(time.Until(s.expires), time.Microsecond)
	}
	return max(s.cpuDue-tg.itimerClock(which), time.Microsecond)
}

func (tg *ThreadGroup) fireITimer(which int) {
	it := &tg.itimer
	it.mu.Lock()
	s := &it.timers[which]
	if !s.armed {
		it.mu.Unlock()
		return
	}
	var wait time.Duration
	if which == unix.ITIMER_REAL {
		if s.interval > 0 {
			s.expires = s.expires.Add(s.interval)
			wait = max(time.Until(s.expires), 0)
		}
	} else {
		now := tg.itimerClock(which)
		if left := s.cpuDue - now; left > 0 {
			s.timer = time.AfterFunc(max(left, cpuTimerRecheck), func() { tg.fireITimer(which) })
			it.mu.Unlock()
			return
		}
		if s.interval > 0 {
			s.cpuDue += s.interval
			wait = max(s.cpuDue-now, cpuTimerRecheck)
		}
	}
	if s.interval > 0 {
		s.timer = time.AfterFunc(wait, func() { tg.fireITimer(which) })
	} else {
		*s = itimerSlot{}
	}
	it.mu.Unlock()
	tg.SendSignal(SigInfo{Signo: int32(itimerSignals[which]), Code: linuxabi.SI_KERNEL})
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
