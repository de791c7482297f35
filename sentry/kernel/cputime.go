package kernel

import (
	"time"

	"github.com/moat-sandbox/moat/platform"
)

// CPU time. The platform reports, with each event, how long the thread ran
// guest code before it (user time) and how long the kernel worked on the
// event before (system time, up to the thread's next Switch or until it
// blocked). A process's time is that of its living threads plus that of
// those that have exited.

// addCPUTime adds what the platform reported with an event.
func (t *Task) addCPUTime(user, sys time.Duration) {
	t.userTime.Add(int64(user))
	t.sysTime.Add(int64(sys))
}

// CPUTime returns the task's user and system time so far, counting guest
// code it is running now. Another task calls it with t's process's mu held
// (exec changes t.ctx under it).
//
// A CPU clock never goes back, yet the two parts of a reading do not
// always add up to what the platform reports later: a thread's running
// guest code is an estimate until its event is counted, and between the
// end of its Switch and addCPUTime it is in neither part. So a reading is
// never less than one returned before it; the thread's later events catch
// up with it.
//
// Of guest code running now, only platform.RunningVouched counts: the host
// may have run other threads for the rest, which the thread's next event
// says (settleLongRuns brings that event about).
func (t *Task) CPUTime() (user, sys time.Duration) {
	u := t.userTime.Load()
	if t.ctx != nil {
		u += int64(min(t.ctx.Running(), platform.RunningVouched))
	}
	for {
		shown := t.userShown.Load()
		if u <= shown {
			u = shown
			break
		}
		if t.userShown.CompareAndSwap(shown, u) {
			break
		}
	}
	return time.Duration(u), time.Duration(t.sysTime.Load())
}

// CPUTime returns the process's user and system time so far.
func (tg *ThreadGroup) CPUTime() (user, sys time.Duration) {
	tg.settleLongRuns(nil)
	tg.mu.Lock()
	defer tg.mu.Unlock()
	user, sys = tg.exitedUser, tg.exitedSys
	for _, t := range tg.tasks {
		u, s := t.CPUTime()
		user, sys = user+u, sys+s
	}
	return user, sys
}

// retireCPUTimeLocked moves an exiting task's time to its process
// (tg.mu held).
func (tg *ThreadGroup) retireCPUTimeLocked(t *Task) {
	u, s := t.CPUTime()
	tg.exitedUser += u
	tg.exitedSys += s
}

// settleWait bounds how long a reading of CPU time waits for long-running
// threads to count their time: a thread the host does not run (a CPU
// quota's throttling) may not trap before it.
const settleWait = 5 * time.Millisecond

// settleLongRuns makes tg's threads (or thread only) that have run guest
// code for longer than platform.RunningVouched stop and count it, so that a
// reading that follows counts the CPU time the host gave them, neither the
// elapsed time nor nothing: a thread that spins in guest code may not trap
// for seconds. It waits for each to count an event (every event adds system
// time), at most settleWait in all. tg.mu must not be held.
func (tg *ThreadGroup) settleLongRuns(only *Task) {
	type pending struct {
		t   *Task
		sys int64
	}
	var waits []pending
	tg.mu.Lock()
	for _, t := range tg.tasks {
		if (only == nil || t == only) && t.ctx != nil && t.ctx.Running() > platform.RunningVouched {
			waits = append(waits, pending{t, t.sysTime.Load()})
			t.ctx.Interrupt()
		}
	}
	tg.mu.Unlock()
	if waits == nil {
		return
	}
	deadline := time.Now().Add(settleWait)
	for _, w := range waits {
		for w.t.sysTime.Load() == w.sys && time.Now().Before(deadline) {
			time.Sleep(20 * time.Microsecond)
		}
	}
}
