package kernel

import (
	"time"

	"golang.org/x/sys/unix"
)

// CPU clocks: CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID, and
// the clock ids clock_getcpuclockid and pthread_getcpuclockid make for
// any process or thread (include/linux/posix-timers.h): the pid or tid
// complemented, shifted left 3, a bit for a thread's clock and two for
// which time (PROF and SCHED count user and system time, VIRT user time).
const (
	cpuClockPerThread = 4
	cpuClockMask      = 3
	cpuClockVirt      = 1
	cpuClockFD        = 3 // CLOCKFD: the dynamic clocks of devices, which the sandbox has none of
)

// cpuClock is a CPU clock a task reads or a timer counts.
type cpuClock struct {
	task *Task        // a thread's clock
	tg   *ThreadGroup // a process's clock
	virt bool         // user time alone
}

// now reads the clock; ok is false once its thread or process is gone.
func (c cpuClock) now() (d time.Duration, ok bool) {
	var user, sys time.Duration
	if c.task != nil {
		tg := c.task.tg
		tg.settleLongRuns(c.task)
		tg.mu.Lock() // CPUTime reads the context, which exec changes under it
		alive := c.task.inGroupLocked()
		user, sys = c.task.CPUTime()
		tg.mu.Unlock()
		if !alive {
			return 0, false
		}
	} else {
		user, sys = c.tg.CPUTime()
	}
	if c.virt {
		return user, true
	}
	return user + sys, true
}

// reading is the clock in two parts: the CPU time the platform has
// reported (settled), and the guest code its threads are running now
// (running), which the platform may count high until they next stop: a
// thread that has trapped but is not yet back in the sentry still reads
// as running.
func (c cpuClock) reading() (settled, running time.Duration, ok bool) {
	add := func(t *Task) {
		settled += time.Duration(t.userTime.Load())
		if !c.virt {
			settled += time.Duration(t.sysTime.Load())
		}
		if t.ctx != nil {
			running += t.ctx.Running()
		}
	}
	if c.task != nil {
		tg := c.task.tg
		tg.mu.Lock()
		defer tg.mu.Unlock()
		if !c.task.inGroupLocked() {
			return 0, 0, false
		}
		add(c.task)
		return settled, running, true
	}
	tg := c.tg
	tg.mu.Lock()
	defer tg.mu.Unlock()
	settled = tg.exitedUser
	if !c.virt {
		settled += tg.exitedSys
	}
	for _, t := range tg.tasks {
		add(t)
	}
	return settled, running, true
}

// reached reports whether the clock has surely reached target, so that
// what waits for it (a timer, a sleep) never ends early. When only the
// running part takes it there, the threads running guest code are asked
// to stop, so that the platform reports their time; wait is how long to
// wait before looking again.
func (c cpuClock) reached(target time.Duration) (done bool, wait time.Duration, ok bool) {
	settled, running, ok := c.reading()
	switch {
	case !ok:
		return false, 0, false
	case settled >= target:
		return true, 0, true
	case settled+running < target:
		return false, max(target-settled-running, cpuTimerRecheck), true
	}
	c.interruptRunning()
	return false, time.Millisecond, true
}

// interruptRunning makes the clock's threads that run guest code stop and
// report their time.
func (c cpuClock) interruptRunning() {
	tg := c.tg
	if c.task != nil {
		tg = c.task.tg
	}
	tg.mu.Lock()
	defer tg.mu.Unlock()
	for _, t := range tg.tasks {
		if (c.task == nil || t == c.task) && t.ctx != nil && t.ctx.Running() > 0 {
			t.ctx.Interrupt()
		}
	}
}

// inGroupLocked reports whether the task is still one of its process's
// (tg.mu held).
func (t *Task) inGroupLocked() bool {
	for _, x := range t.tg.tasks {
		if x == t {
			return true
		}
	}
	return false
}

// isClockFD reports whether a negative clock id names a device's clock
// (a file descriptor's) rather than a CPU clock.
func isClockFD(id int32) bool { return id&(cpuClockPerThread|cpuClockMask) == cpuClockFD }

// resolveCPUClock returns CPU clock id as t sees it, or EINVAL: a
// thread's clock must be of t's process; a process's must name a process
// (its leader), except that clock_gettime (gettime) takes the caller's
// own thread id for its process.
func (t *Task) resolveCPUClock(id int32, gettime bool) (cpuClock, error) {
	switch id {
	case unix.CLOCK_PROCESS_CPUTIME_ID:
		return cpuClock{tg: t.tg}, nil
	case unix.CLOCK_THREAD_CPUTIME_ID:
		return cpuClock{task: t}, nil
	}
	if id >= 0 || id&cpuClockMask == cpuClockFD {
		return cpuClock{}, unix.EINVAL
	}
	pid := ^(id >> 3)
	thread := id&cpuClockPerThread != 0
	virt := id&cpuClockMask == cpuClockVirt
	if pid == 0 {
		if thread {
			return cpuClock{task: t, virt: virt}, nil
		}
		return cpuClock{tg: t.tg, virt: virt}, nil
	}
	target := t.LookupTask(pid)
	switch {
	case thread && (target == nil || target.tg != t.tg):
		return cpuClock{}, unix.EINVAL
	case thread:
		return cpuClock{task: target, virt: virt}, nil
	case gettime && target == t:
		return cpuClock{tg: t.tg, virt: virt}, nil
	}
	// A process until it is reaped: a zombie's clock reads its total.
	tg := t.LookupProcess(pid)
	if tg == nil {
		return cpuClock{}, unix.EINVAL
	}
	return cpuClock{tg: tg, virt: virt}, nil
}

// CPUClockGettime reads a dynamic CPU clock (a negative id) for t.
func (t *Task) CPUClockGettime(id int32) (time.Duration, error) {
	c, err := t.resolveCPUClock(id, true)
	if err != nil {
		return 0, err
	}
	d, ok := c.now()
	if !ok {
		return 0, unix.EINVAL
	}
	return d, nil
}

// CPUClockGetres is clock_getres on a dynamic CPU clock (a negative id):
// the clocks count in nanoseconds; one that does not name a process or a
// thread of the caller's (as clock_gettime's exception does not apply
// here) is EINVAL.
func (t *Task) CPUClockGetres(id int32) (time.Duration, error) {
	if _, err := t.resolveCPUClock(id, false); err != nil {
		return 0, err
	}
	return time.Nanosecond, nil
}

// WaitCPUClock sleeps until CPU clock id reaches target, or has gone
// on by target (relative) (clock_nanosleep on a CPU clock): the clock
// is looked at when as much wall time has passed as it lacks, since a
// process's CPU time grows no faster than wall time while one thread
// runs (cpuTimerRecheck at the least: a sleeping process uses none), and
// the sleep ends only once it has surely got there (reached). A thread
// cannot sleep on its own clock (EINVAL), nor on a device's
// (EOPNOTSUPP). Interrupted, it gives ERESTARTSYS and the time the clock
// still lacks.
func (t *Task) WaitCPUClock(id int32, target time.Duration, relative bool) (time.Duration, error) {
	if id < 0 && isClockFD(id) {
		return 0, unix.EOPNOTSUPP
	}
	c, err := t.resolveCPUClock(id, false)
	if err != nil {
		return 0, err
	}
	if c.task == t {
		return 0, unix.EINVAL
	}
	if relative {
		now, ok := c.now()
		if !ok {
			return 0, unix.EINVAL
		}
		target += now
	}
	for {
		done, wait, ok := c.reached(target)
		switch {
		case !ok:
			return 0, unix.EINVAL
		case done:
			return 0, nil
		}
		if err := t.Sleep(wait); err != nil {
			now, _ := c.now()
			return max(target-now, 0), err
		}
	}
}
