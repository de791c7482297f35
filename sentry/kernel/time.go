package kernel

import (
	"golang.org/x/sys/unix"
)

// Clocks. The guest's monotonic and boot-time clocks start near zero when
// the sandbox boots, so host uptime does not leak into the sandbox.
const bootClockOffset = int64(1e9) // a booted system never reads zero

func hostMonotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// ClockGettime reads guest clock id. The realtime and monotonic families
// read the line the vDSO reads, so a trapped call never answers a time
// earlier than one the vDSO gave.
func (k *Kernel) ClockGettime(id int32, t *Task) (unix.Timespec, error) {
	var ts unix.Timespec
	switch id {
	case unix.CLOCK_REALTIME, unix.CLOCK_REALTIME_COARSE:
		_, real := k.vdso.params.Now()
		return unix.NsecToTimespec(real), nil
	case unix.CLOCK_TAI:
		unix.ClockGettime(id, &ts)
		return ts, nil
	case unix.CLOCK_MONOTONIC, unix.CLOCK_MONOTONIC_COARSE, unix.CLOCK_MONOTONIC_RAW, unix.CLOCK_BOOTTIME:
		mono, _ := k.vdso.params.Now()
		return unix.NsecToTimespec(mono), nil
	case unix.CLOCK_PROCESS_CPUTIME_ID:
		user, sys := t.tg.CPUTime()
		return unix.NsecToTimespec(int64(user + sys)), nil
	case unix.CLOCK_THREAD_CPUTIME_ID:
		user, sys := t.CPUTime()
		return unix.NsecToTimespec(int64(user + sys)), nil
	}
	if id < 0 && t != nil {
		// Another process's or thread's CPU clock (cpuclock.go).
		d, err := t.CPUClockGettime(id)
		return unix.NsecToTimespec(int64(d)), err
	}
	return ts, unix.EINVAL
}

// ClockResolution answers clock_getres for id.
func ClockResolution(id int32) (unix.Timespec, error) {
	switch id {
	case unix.CLOCK_REALTIME, unix.CLOCK_MONOTONIC, unix.CLOCK_MONOTONIC_RAW, unix.CLOCK_BOOTTIME,
		unix.CLOCK_TAI, unix.CLOCK_PROCESS_CPUTIME_ID, unix.CLOCK_THREAD_CPUTIME_ID:
		return unix.Timespec{Nsec: 1}, nil
	case unix.CLOCK_REALTIME_COARSE, unix.CLOCK_MONOTONIC_COARSE:
		return unix.Timespec{Nsec: 4000000}, nil
	}
	return unix.Timespec{}, unix.EINVAL
}
