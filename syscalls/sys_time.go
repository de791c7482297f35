package syscalls

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// ClockGettime implements Linux syscall clock_gettime(2).
func ClockGettime(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	ts, err := t.Kernel().ClockGettime(a.Int(0), t)
	if err != nil {
		return 0, err
	}
	return 0, copyOutStruct(t, a.Ptr(1), &ts)
}

// ClockGetres implements Linux syscall clock_getres(2).
func ClockGetres(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	ts, err := kernel.ClockResolution(a.Int(0))
	if id := a.Int(0); id < 0 {
		var res time.Duration
		res, err = t.CPUClockGetres(id)
		ts = unix.NsecToTimespec(int64(res))
	}
	if err != nil || a[1] == 0 {
		return 0, err
	}
	return 0, copyOutStruct(t, a.Ptr(1), &ts)
}

// Gettimeofday implements Linux syscall gettimeofday(2).
func Gettimeofday(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a[0] != 0 {
		ts, _ := t.Kernel().ClockGettime(unix.CLOCK_REALTIME, t)
		tv := unix.Timeval{Sec: ts.Sec, Usec: ts.Nsec / 1000}
		if err := copyOutStruct(t, a.Ptr(0), &tv); err != nil {
			return 0, err
		}
	}
	if a[1] != 0 {
		var tz [2]int32 // UTC: no minutes west, no DST
		return 0, copyOutStruct(t, a.Ptr(1), &tz)
	}
	return 0, nil
}

// Time implements Linux syscall time(2).
func Time(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	ts, _ := t.Kernel().ClockGettime(unix.CLOCK_REALTIME, t)
	if a[0] != 0 {
		if err := copyOutU64(t, a.Ptr(0), uint64(ts.Sec)); err != nil {
			return 0, err
		}
	}
	return uintptr(ts.Sec), nil
}

// Nanosleep implements Linux syscall nanosleep(2).
func Nanosleep(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	ts, err := copyInTimespec(t, a.Ptr(0))
	if err != nil {
		return 0, err
	}
	return 0, sleepFor(t, timespecDuration(ts), a.Ptr(1))
}

// sleepFor sleeps; interrupted by a signal, it writes the time left to rem
// (if given) and fails with EINTR once a handler runs (a restart without a
// handler sleeps the whole time again).
func sleepFor(t *kernel.Task, d time.Duration, rem uintptr) error {
	end := time.Now().Add(d)
	if err := t.Sleep(d); err != nil {
		if rem != 0 {
			left := unix.NsecToTimespec(int64(max(time.Until(end), 0)))
			if err := copyOutStruct(t, rem, &left); err != nil {
				return err
			}
		}
		return kernel.ERESTARTNOHAND
	}
	return nil
}

// ClockNanosleep implements Linux syscall clock_nanosleep(2). The clocks
// that advance with wall time sleep; as in Linux, a clock with no sleep
// (the raw and coarse ones, the calling thread's CPU clock) fails with
// EOPNOTSUPP before the time is read, and the alarm clocks, which need an
// RTC the sandbox does not have, with EOPNOTSUPP after it is checked. An
// unknown clock is EINVAL.
func ClockNanosleep(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	clock, flags := a.Int(0), a.Int(1)
	switch {
	case clock == unix.CLOCK_REALTIME, clock == unix.CLOCK_MONOTONIC, clock == unix.CLOCK_BOOTTIME, clock == unix.CLOCK_TAI:
	case clock == unix.CLOCK_THREAD_CPUTIME_ID, clock == unix.CLOCK_MONOTONIC_RAW,
		clock == unix.CLOCK_REALTIME_COARSE, clock == unix.CLOCK_MONOTONIC_COARSE:
		return 0, unix.EOPNOTSUPP
	case clock == unix.CLOCK_REALTIME_ALARM, clock == unix.CLOCK_BOOTTIME_ALARM:
		if _, err := copyInTimespec(t, a.Ptr(2)); err != nil {
			return 0, err
		}
		return 0, unix.EOPNOTSUPP
	case clock == unix.CLOCK_PROCESS_CPUTIME_ID, clock < 0:
		ts, err := copyInTimespec(t, a.Ptr(2))
		if err != nil {
			return 0, err
		}
		return 0, cpuClockNanosleep(t, clock, flags&unix.TIMER_ABSTIME != 0, ts, a.Ptr(3))
	default:
		return 0, unix.EINVAL
	}
	ts, err := copyInTimespec(t, a.Ptr(2))
	if err != nil {
		return 0, err
	}
	if flags&unix.TIMER_ABSTIME != 0 {
		if err := t.Sleep(time.Until(clockDeadline(t, clock, ts))); err != nil {
			return 0, kernel.ERESTARTNOHAND
		}
		return 0, nil
	}
	return 0, sleepFor(t, timespecDuration(ts), a.Ptr(3))
}

// cpuClockNanosleep is clock_nanosleep on a CPU clock: it waits for the
// clock (the time other threads run), not for wall time. Interrupted, a
// relative sleep writes what the clock still lacks to rem.
func cpuClockNanosleep(t *kernel.Task, clock int32, abs bool, ts unix.Timespec, rem uintptr) error {
	left, err := t.WaitCPUClock(clock, timespecDuration(ts), !abs)
	if err != kernel.ERESTARTSYS {
		return err
	}
	if !abs && rem != 0 {
		r := unix.NsecToTimespec(int64(left))
		if err := copyOutStruct(t, rem, &r); err != nil {
			return err
		}
	}
	return kernel.ERESTARTNOHAND
}

// itimerval is struct itimerval.
type itimerval struct{ Interval, Value unix.Timeval }

// Setitimer implements Linux syscall setitimer(2).
func Setitimer(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	which := int(a.Int(0))
	if which < 0 || which > 2 {
		return 0, unix.EINVAL
	}
	var nu itimerval
	if a[1] != 0 {
		if err := copyInStruct(t, a.Ptr(1), &nu); err != nil {
			return 0, err
		}
		if !validTimeval(nu.Value) || !validTimeval(nu.Interval) {
			return 0, unix.EINVAL
		}
	}
	value, interval := t.ThreadGroup().SetITimer(which, timevalDuration(nu.Value), timevalDuration(nu.Interval))
	if a[2] != 0 {
		old := itimerval{Interval: unix.NsecToTimeval(int64(interval)), Value: unix.NsecToTimeval(int64(value))}
		return 0, copyOutStruct(t, a.Ptr(2), &old)
	}
	return 0, nil
}

// Getitimer implements Linux syscall getitimer(2).
func Getitimer(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	which := int(a.Int(0))
	if which < 0 || which > 2 {
		return 0, unix.EINVAL
	}
	value, interval := t.ThreadGroup().ITimer(which)
	cur := itimerval{Interval: unix.NsecToTimeval(int64(interval)), Value: unix.NsecToTimeval(int64(value))}
	return 0, copyOutStruct(t, a.Ptr(1), &cur)
}

// Alarm implements Linux syscall alarm(2).
func Alarm(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	old, _ := t.ThreadGroup().SetITimer(0, time.Duration(a.Uint(0))*time.Second, 0)
	secs := (old + time.Second/2) / time.Second
	if old > 0 && secs == 0 {
		secs = 1 // a pending alarm never reads zero
	}
	return uintptr(secs), nil
}

func validTimeval(tv unix.Timeval) bool { return tv.Sec >= 0 && tv.Usec >= 0 && tv.Usec < 1e6 }

// timevalDuration is tv as a duration, saturating as timespecDuration.
func timevalDuration(tv unix.Timeval) time.Duration {
	return timespecDuration(unix.Timespec{Sec: tv.Sec, Nsec: tv.Usec * 1000})
}

// Times implements Linux syscall times(2).
func Times(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a[0] != 0 {
		user, sys := t.ThreadGroup().CPUTime()
		children := t.ThreadGroup().ChildUsage()
		tick := time.Second / linuxabi.USER_HZ
		// user, system, and the reaped children's user and system
		tms := [4]int64{int64(user / tick), int64(sys / tick), int64(children.User / tick), int64(children.Sys / tick)}
		if err := copyOutStruct(t, a.Ptr(0), &tms); err != nil {
			return 0, err
		}
	}
	return uintptr(int64(t.Kernel().Uptime()) / (1e9 / linuxabi.USER_HZ)), nil
}

// The adjtimex modes the sentry reads (Linux's <linux/timex.h>, where
// ADJ_ADJTIME and ADJ_OFFSET_READONLY are the kernel's halves of the
// user-space ADJ_OFFSET_SINGLESHOT and ADJ_OFFSET_SS_READ).
const (
	adjOffsetSingleshot = 0x0001
	adjOffsetReadonly   = 0x2000
	adjAdjtime          = 0x8000
	userHZ              = 100
)

// Adjtimex implements Linux syscall adjtimex(2), reading only.
func Adjtimex(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return adjtimex(t, a.Ptr(0))
}

// ClockAdjtime implements Linux syscall clock_adjtime(2): CLOCK_REALTIME
// is adjtimex's clock; the other clocks cannot be adjusted (EOPNOTSUPP),
// and a clock file descriptor names no PTP clock in the sandbox (EINVAL).
func ClockAdjtime(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	id, addr := a.Int(0), a.Ptr(1)
	var tx unix.Timex
	if err := copyInStruct(t, addr, &tx); err != nil {
		return 0, err // Linux reads the request before it looks at the clock
	}
	switch {
	case id == unix.CLOCK_REALTIME:
		return adjtimex(t, addr)
	case id < 0 && id&7 == 3: // CLOCKFD: a posix-clock device's descriptor
		return 0, unix.EINVAL
	case id < 0: // a CPU clock
		return 0, unix.EOPNOTSUPP
	case id <= unix.CLOCK_TAI && id != 10: // 10 was CLOCK_SGI_CYCLE
		return 0, unix.EOPNOTSUPP
	}
	return 0, unix.EINVAL
}

// adjtimex answers the adjtimex request at addr. The guest's realtime
// clock is the host's, which nothing in the sandbox disciplines: the state
// is that of a Linux clock no NTP daemon has synchronised (as at boot):
// STA_UNSYNC, the phase limit as error bounds, no offset or frequency
// correction, TIME_ERROR as the result. Only reading modes are accepted;
// the others need CAP_SYS_TIME over the host's clock, which the sandbox
// never grants (EPERM), after Linux's own checks of the request.
func adjtimex(t *kernel.Task, addr uintptr) (uintptr, error) {
	var tx unix.Timex
	if err := copyInStruct(t, addr, &tx); err != nil {
		return 0, err
	}
	if tx.Modes&adjAdjtime != 0 {
		if tx.Modes&adjOffsetSingleshot == 0 {
			return 0, unix.EINVAL
		}
		if tx.Modes&adjOffsetReadonly == 0 {
			return 0, unix.EPERM
		}
	} else if tx.Modes != 0 {
		return 0, unix.EPERM
	}
	const phaseLimit = 16000000 // NTP_PHASE_LIMIT, µs: the error bound of an unsynchronised clock
	now, _ := t.Kernel().ClockGettime(unix.CLOCK_REALTIME, t)
	out := unix.Timex{
		Modes:     tx.Modes,
		Maxerror:  phaseLimit,
		Esterror:  phaseLimit,
		Status:    unix.STA_UNSYNC,
		Constant:  2,         // Linux's initial time_constant
		Precision: 1,         // µs
		Tolerance: 500 << 16, // MAXFREQ_SCALED: 500 ppm, scaled by 2^16
		Time:      unix.Timeval{Sec: now.Sec, Usec: now.Nsec / 1000},
		Tick:      1000000 / userHZ,
	}
	if err := copyOutStruct(t, addr, &out); err != nil {
		return 0, err
	}
	return unix.TIME_ERROR, nil
}
