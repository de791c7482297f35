package syscalls

import (
	"time"

	"golang.org/x/sys/unix"

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
	t.Sleep(time.Duration(ts.Nano()))
	return 0, nil
}

// ClockNanosleep implements Linux syscall clock_nanosleep(2).
func ClockNanosleep(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	clock, flags := a.Int(0), a.Int(1)
	switch clock {
	case unix.CLOCK_REALTIME, unix.CLOCK_MONOTONIC, unix.CLOCK_BOOTTIME, unix.CLOCK_TAI:
	case unix.CLOCK_THREAD_CPUTIME_ID:
		return 0, unix.EINVAL
	case unix.CLOCK_PROCESS_CPUTIME_ID:
		return 0, unix.EOPNOTSUPP
	default:
		return 0, unix.EINVAL
	}
	ts, err := copyInTimespec(t, a.Ptr(2))
	if err != nil {
		return 0, err
	}
	d := time.Duration(ts.Nano())
	if flags&unix.TIMER_ABSTIME != 0 {
		now, _ := t.Kernel().ClockGettime(clock, t)
		d -= time.Duration(now.Nano())
	}
	t.Sleep(d)
	return 0, nil
}

// Times implements Linux syscall times(2).
func Times(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	const ticksPerSec = 100
	if a[0] != 0 {
		ts, _ := t.Kernel().ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, t)
		tms := [4]int64{ts.Nano() / (1e9 / ticksPerSec)} // user, system, children's user and system
		if err := copyOutStruct(t, a.Ptr(0), &tms); err != nil {
			return 0, err
		}
	}
	return uintptr(int64(t.Kernel().Uptime()) / (1e9 / ticksPerSec)), nil
}
