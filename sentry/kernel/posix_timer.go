package kernel

import (
	"encoding/binary"
	"math"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// POSIX timers (timer_create and its family): a process's timers, each on
// a clock (wall clocks, or a CPU clock counted as the interval timers
// count theirs, itimer.go) and with a notification (a signal to the
// process or one of its threads, or none). As on Linux, a periodic timer
// whose signal is queued is rearmed when the signal is taken, not before,
// and the expirations it missed meanwhile are its overrun (si_overrun,
// timer_getoverrun). Re-setting or deleting a timer takes its queued
// signal back. exec and the process's end delete them; fork does not
// copy them.

// SigEvent is a struct sigevent: how a timer tells of its expiry.
type SigEvent struct {
	Notify int // SIGEV_SIGNAL, SIGEV_NONE, SIGEV_THREAD or SIGEV_THREAD_ID
	Signo  int
	Value  uint64
	TID    int32 // for SIGEV_THREAD_ID
	// ValueIsID: there was no sigevent, and the value is the timer's id.
	ValueIsID bool
}

// posixTimers are a process's timers. Its mu comes before the process's
// mu (a CPU clock is read, and a signal queued or taken back, under it);
// a timer's signal taken off a queue rearms the timer once the queue's
// lock is released (timerSignalTaken).
type posixTimers struct {
	mu     sync.Mutex
	timers map[int32]*posixTimer
	nextID int32
}

// posixTimer is one timer. Its fields are guarded by its process's
// posixTimers.mu.
type posixTimer struct {
	tg     *ThreadGroup
	id     int32
	clock  int32     // the clock's id, for a wall clock's absolute times
	cpu    *cpuClock // nil for a wall clock
	target *Task     // SIGEV_THREAD_ID's thread
	ev     SigEvent
	uid    uint32 // the user its RLIMIT_SIGPENDING charge is on

	armed    bool
	interval time.Duration
	// next is the expiry: on a wall clock, sentry time; on a CPU clock,
	// the clock's reading at which it expires (cpuNext).
	next    time.Time
	cpuNext time.Duration
	timer   *time.Timer
	// gen tells the signal of one setting from another's (Linux's
	// si_sys_private): a signal queued before the timer was set again
	// rearms nothing.
	gen int32
	// requeue: the signal is queued, and a periodic timer waits for it
	// to be taken to be rearmed.
	requeue bool
	overrun int64
	// overrunLast is the overrun of the last expiry taken.
	overrunLast int64
}

// Notifications: include/uapi/asm-generic/siginfo.h.
const (
	sigevSignal   = 0
	sigevNone     = 1
	sigevThread   = 2
	sigevThreadID = 4
)

// timerClockClass checks clock for timer_create before a timer is made:
// EINVAL for a clock that does not exist, EOPNOTSUPP for one no timer
// runs on (the raw and coarse clocks, a device's clock) or that needs an
// RTC the sandbox does not have (the alarm clocks, as Linux without one).
// A CPU clock (cpu) is resolved once the timer has its id.
func timerClockClass(clock int32) (cpu bool, err error) {
	switch clock {
	case unix.CLOCK_REALTIME, unix.CLOCK_MONOTONIC, unix.CLOCK_BOOTTIME, unix.CLOCK_TAI:
		return false, nil
	case unix.CLOCK_PROCESS_CPUTIME_ID, unix.CLOCK_THREAD_CPUTIME_ID:
		return true, nil
	case unix.CLOCK_MONOTONIC_RAW, unix.CLOCK_REALTIME_COARSE, unix.CLOCK_MONOTONIC_COARSE,
		unix.CLOCK_REALTIME_ALARM, unix.CLOCK_BOOTTIME_ALARM:
		return false, unix.EOPNOTSUPP
	}
	switch {
	case clock >= 0:
		return false, unix.EINVAL
	case isClockFD(clock):
		return false, unix.EOPNOTSUPP
	}
	return true, nil
}

// TimerCreate implements timer_create(2)'s work and returns the timer's
// id: the one after the process's last (ids outlive exec), skipping those
// in use. As on Linux, a timer that fails once it has its id (its
// notification or its CPU clock is wrong) uses the id up, and each timer
// counts against its user's RLIMIT_SIGPENDING, for the signal it keeps
// ready (EAGAIN beyond it).
func (t *Task) TimerCreate(clock int32, ev SigEvent) (int32, error) {
	isCPU, err := timerClockClass(clock)
	if err != nil {
		return 0, err
	}
	pt := &posixTimer{tg: t.tg, clock: clock, ev: ev, overrun: -1}
	// Checked before the timers' lock: looking a task up takes the
	// process tree's, which comes first.
	invalid := t.initTimer(pt, isCPU)
	t.creds.Lock()
	pt.uid = t.creds.UID
	t.creds.Unlock()
	limit := t.Limits().Get(unix.RLIMIT_SIGPENDING).Cur
	ts := &t.tg.ptimers
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.timers == nil {
		ts.timers = make(map[int32]*posixTimer)
	}
	if len(ts.timers) == math.MaxInt32 {
		return 0, unix.EAGAIN
	}
	for {
		pt.id = ts.nextID
		ts.nextID++
		if ts.nextID < 0 {
			ts.nextID = 0
		}
		if _, used := ts.timers[pt.id]; !used {
			break
		}
	}
	if invalid != nil {
		return 0, invalid
	}
	if !t.k.sigCharges.charge(pt.uid, limit) {
		return 0, unix.EAGAIN
	}
	if ev.ValueIsID {
		pt.ev.Value = uint64(pt.id)
	}
	ts.timers[pt.id] = pt
	return pt.id, nil
}

// initTimer checks a new timer's notification and resolves its CPU
// clock.
func (t *Task) initTimer(pt *posixTimer, isCPU bool) error {
	ev := pt.ev
	switch ev.Notify {
	case sigevSignal | sigevThreadID:
		target := t.LookupTask(ev.TID)
		if target == nil || target.tg != t.tg {
			return unix.EINVAL
		}
		pt.target = target
		fallthrough
	case sigevSignal, sigevThread:
		if !ValidSignal(ev.Signo) {
			return unix.EINVAL
		}
	case sigevNone:
	default:
		return unix.EINVAL
	}
	if isCPU {
		c, err := t.resolveCPUClock(pt.clock, false)
		if err != nil {
			return err
		}
		pt.cpu = &c
	}
	return nil
}

// sigCharges counts each user's POSIX timers, which Linux charges to the
// user's pending signals (RLIMIT_SIGPENDING) for the signal each keeps
// ready to queue.
type sigCharges struct {
	mu    sync.Mutex
	byUID map[uint32]uint64
}

// charge counts one more for uid, unless that would pass limit.
func (c *sigCharges) charge(uid uint32, limit uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byUID[uid] >= limit {
		return false
	}
	if c.byUID == nil {
		c.byUID = make(map[uint32]uint64)
	}
	c.byUID[uid]++
	return true
}

func (c *sigCharges) uncharge(uid uint32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byUID[uid]--; c.byUID[uid] == 0 {
		delete(c.byUID, uid)
	}
}

func (tg *ThreadGroup) timerLocked(id int32) (*posixTimer, error) {
	pt, ok := tg.ptimers.timers[id]
	if !ok {
		return nil, unix.EINVAL
	}
	return pt, nil
}

// TimerSettime implements timer_settime(2)'s work: value 0 disarms, an
// absolute value (abs) is a reading of the timer's clock (realtime says
// the clock is CLOCK_REALTIME's). It returns the old setting.
func (t *Task) TimerSettime(id int32, abs bool, value, interval time.Duration) (time.Duration, time.Duration, error) {
	tg := t.tg
	ts := &tg.ptimers
	ts.mu.Lock()
	pt, err := tg.timerLocked(id)
	if err != nil {
		ts.mu.Unlock()
		return 0, 0, err
	}
	oldValue, oldInterval := pt.getLocked()
	pt.stopLocked()
	tg.unqueueTimerSignal(pt)
	if value > 0 {
		pt.armed, pt.interval = true, interval
		if pt.cpu != nil {
			now, _ := pt.cpu.now()
			pt.cpuNext = value
			if !abs {
				pt.cpuNext = now + value
			}
		} else {
			pt.next = time.Now().Add(value)
			if abs {
				now, _ := t.k.ClockGettime(pt.clock, t)
				pt.next = time.Now().Add(value - time.Duration(now.Nano()))
			}
		}
		pt.startLocked()
	}
	ts.mu.Unlock()
	return oldValue, oldInterval, nil
}

// TimerGettime implements timer_gettime(2)'s work.
func (t *Task) TimerGettime(id int32) (time.Duration, time.Duration, error) {
	ts := &t.tg.ptimers
	ts.mu.Lock()
	defer ts.mu.Unlock()
	pt, err := t.tg.timerLocked(id)
	if err != nil {
		return 0, 0, err
	}
	v, i := pt.getLocked()
	return v, i, nil
}

// TimerGetoverrun implements timer_getoverrun(2): the overrun of the last
// expiry whose signal was taken, at most INT_MAX (DELAYTIMER_MAX).
func (t *Task) TimerGetoverrun(id int32) (int, error) {
	ts := &t.tg.ptimers
	ts.mu.Lock()
	defer ts.mu.Unlock()
	pt, err := t.tg.timerLocked(id)
	if err != nil {
		return 0, err
	}
	return int(min(max(pt.overrunLast, 0), math.MaxInt32)), nil
}

// TimerDelete implements timer_delete(2).
func (t *Task) TimerDelete(id int32) error {
	tg := t.tg
	ts := &tg.ptimers
	ts.mu.Lock()
	pt, err := tg.timerLocked(id)
	if err != nil {
		ts.mu.Unlock()
		return err
	}
	pt.stopLocked()
	tg.unqueueTimerSignal(pt)
	delete(ts.timers, id)
	t.k.sigCharges.uncharge(pt.uid)
	ts.mu.Unlock()
	return nil
}

// deleteAllTimers deletes every timer, and takes back the signals they
// queued (exec, and the process's end).
func (tg *ThreadGroup) deleteAllTimers(k *Kernel) {
	ts := &tg.ptimers
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for id, pt := range ts.timers {
		pt.stopLocked()
		tg.unqueueTimerSignal(pt)
		delete(ts.timers, id)
		k.sigCharges.uncharge(pt.uid)
	}
}

// stopLocked disarms the timer; a signal it queued rearms nothing.
func (pt *posixTimer) stopLocked() {
	if pt.timer != nil {
		pt.timer.Stop()
		pt.timer = nil
	}
	pt.armed, pt.requeue, pt.interval = false, false, 0
	pt.gen++
	pt.overrun, pt.overrunLast = -1, 0
}

// remainingLocked is how long the timer has to go on its clock (ok false
// once the thread or process of its CPU clock is gone).
func (pt *posixTimer) remainingLocked() (time.Duration, bool) {
	if pt.cpu != nil {
		now, ok := pt.cpu.now()
		return pt.cpuNext - now, ok
	}
	return time.Until(pt.next), true
}

// forwardLocked moves a periodic timer's expiry on by whole intervals
// until it is in the future, and returns how many (Linux's
// hrtimer_forward).
func (pt *posixTimer) forwardLocked() int64 {
	left, _ := pt.remainingLocked()
	if left > 0 || pt.interval <= 0 {
		return 0
	}
	n := int64(-left/pt.interval) + 1
	step := time.Duration(n) * pt.interval
	if n > math.MaxInt64/int64(pt.interval) {
		n, step = math.MaxInt64, math.MaxInt64
	}
	if pt.cpu != nil {
		pt.cpuNext += step
	} else {
		pt.next = pt.next.Add(step)
	}
	return n
}

// getLocked is timer_gettime's answer. A periodic timer waiting for its
// signal to be taken, or one without notification, is moved forward to
// its next expiry first (which counts as overrun); an armed timer that
// has expired but not yet notified reads 1 ns, an expired one-shot
// timer 0.
func (pt *posixTimer) getLocked() (time.Duration, time.Duration) {
	none := pt.ev.Notify == sigevNone
	if !pt.armed {
		return 0, pt.interval
	}
	if pt.interval > 0 && (pt.requeue || none) {
		pt.overrun += pt.forwardLocked()
	}
	left, ok := pt.remainingLocked()
	switch {
	case !ok:
		return 0, pt.interval
	case left <= 0 && none:
		return 0, pt.interval
	case left <= 0:
		return time.Nanosecond, pt.interval
	}
	return left, pt.interval
}

// startLocked waits for the next expiry; a timer without notification
// has nothing to wait for.
func (pt *posixTimer) startLocked() {
	if pt.ev.Notify == sigevNone {
		return
	}
	left, ok := pt.remainingLocked()
	if !ok {
		return
	}
	if pt.cpu != nil {
		left = max(left, cpuTimerRecheck)
	}
	gen := pt.gen
	pt.timer = time.AfterFunc(max(left, 0), func() { pt.fire(gen) })
}

// fire is the timer's expiry: it queues the signal, once; a CPU-clock
// timer first checks that its clock got there.
func (pt *posixTimer) fire(gen int32) {
	tg := pt.tg
	ts := &tg.ptimers
	ts.mu.Lock()
	if pt.gen != gen || !pt.armed || pt.requeue {
		ts.mu.Unlock()
		return
	}
	if pt.cpu != nil {
		done, wait, ok := pt.cpu.reached(pt.cpuNext)
		if !done {
			if ok {
				pt.timer = time.AfterFunc(wait, func() { pt.fire(gen) })
			}
			ts.mu.Unlock()
			return
		}
	}
	pt.timer = nil
	if pt.interval > 0 {
		pt.requeue = true
	} else {
		pt.armed = false
	}
	// The signal is queued with ts.mu held, so that a timer_settime or
	// timer_delete that follows finds it to take back.
	if !tg.sendTimerSignal(pt.sigInfoLocked(), pt.target) && pt.interval > 0 {
		// Not queued (the signal is ignored): a periodic timer goes on,
		// and counts what it misses.
		pt.requeue = false
		pt.overrun += pt.forwardLocked()
		pt.startLocked()
	}
	ts.mu.Unlock()
}

// sigInfoLocked is the timer's signal: SI_TIMER, with the timer's id,
// the overrun so far, sigev_value and the setting's generation.
func (pt *posixTimer) sigInfoLocked() SigInfo {
	info := SigInfo{Signo: int32(pt.ev.Signo), Code: linuxabi.SI_TIMER}
	binary.LittleEndian.PutUint32(info.Fields[0:], uint32(pt.id))
	info.SetValue(pt.ev.Value)
	binary.LittleEndian.PutUint32(info.Fields[16:], uint32(pt.gen))
	return info
}

// sendTimerSignal queues a timer's signal for the process, or for target,
// unless it would be thrown away (ignored, or the process or the thread
// is going). It reports whether the signal is queued. A timer never has
// two signals queued: it queues one when it expires, and one that expires
// again has been set again, which took the first back.
func (tg *ThreadGroup) sendTimerSignal(info SigInfo, target *Task) bool {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if tg.exiting || tg.ignoredLocked(int(info.Signo)) || (target != nil && !target.inGroupLocked()) {
		return false
	}
	tg.sendLocked(info, target)
	return true
}

func timerIDOf(info *SigInfo) int32  { return int32(binary.LittleEndian.Uint32(info.Fields[0:])) }
func timerGenOf(info *SigInfo) int32 { return int32(binary.LittleEndian.Uint32(info.Fields[16:])) }

// unqueueTimerSignal takes back the signal pt queued, if it is still
// pending (ptimers.mu held): timer_settime and timer_delete do, as Linux
// 6.x does.
func (tg *ThreadGroup) unqueueTimerSignal(pt *posixTimer) {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	queues := []*sigQueue{&tg.pending}
	for _, t := range tg.tasks {
		queues = append(queues, &t.pending)
	}
	for _, q := range queues {
		for sig := range q.infos {
			for i, in := range q.infos[sig] {
				if in.Code == linuxabi.SI_TIMER && timerIDOf(&in) == pt.id {
					q.removeAt(sig, i)
					return
				}
			}
		}
	}
}

// timerSignalTaken is called when a timer's signal has been taken off a
// queue (and the queue's lock released), to be delivered or by sigwait,
// before the guest sees it: a periodic timer is rearmed
// past now, and the expirations it missed since the one that queued the
// signal are the signal's si_overrun and timer_getoverrun's answer.
func (tg *ThreadGroup) timerSignalTaken(info *SigInfo) {
	ts := &tg.ptimers
	ts.mu.Lock()
	defer ts.mu.Unlock()
	pt, ok := ts.timers[timerIDOf(info)]
	if !ok || pt.gen != timerGenOf(info) || !pt.requeue {
		return
	}
	pt.requeue = false
	pt.overrun += pt.forwardLocked()
	pt.overrunLast = pt.overrun
	pt.overrun = -1
	binary.LittleEndian.PutUint32(info.Fields[4:], uint32(min(max(pt.overrunLast, 0), math.MaxInt32)))
	pt.startLocked()
}

// removeAt drops the i-th queued instance of sig.
func (q *sigQueue) removeAt(sig, i int) {
	q.infos[sig] = append(q.infos[sig][:i], q.infos[sig][i+1:]...)
	q.seqs[sig] = append(q.seqs[sig][:i], q.seqs[sig][i+1:]...)
	if len(q.infos[sig]) == 0 {
		q.infos[sig] = nil
		q.seqs[sig] = nil
		q.mask &^= sigBit(sig)
	}
}
