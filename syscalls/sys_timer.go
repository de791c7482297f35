package syscalls

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// POSIX timers: timer_create, timer_settime, timer_gettime,
// timer_getoverrun, timer_delete (the timers are the kernel's,
// posix_timer.go).

// sizeofSigevent is sizeof(struct sigevent).
const sizeofSigevent = 64

// TimerCreate implements Linux syscall timer_create(2). Without a
// sigevent the timer sends SIGALRM with its own id as the value.
func TimerCreate(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	clock, evAddr, idAddr := a.Int(0), a.Ptr(1), a.Ptr(2)
	ev := kernel.SigEvent{Signo: int(unix.SIGALRM), ValueIsID: true}
	if evAddr != 0 {
		var b [sizeofSigevent]byte
		if _, err := t.CopyIn(evAddr, b[:]); err != nil {
			return 0, err
		}
		le := binary.LittleEndian
		ev = kernel.SigEvent{Value: le.Uint64(b[0:]), Signo: int(int32(le.Uint32(b[8:]))),
			Notify: int(int32(le.Uint32(b[12:]))), TID: int32(le.Uint32(b[16:]))}
	}
	id, err := t.TimerCreate(clock, ev)
	if err != nil {
		return 0, err
	}
	if err := copyOutU32(t, idAddr, uint32(id)); err != nil {
		t.TimerDelete(id)
		return 0, err
	}
	return 0, nil
}

// itimerspec and validTimespec are timerfd's (sys_timerfd.go).

func toItimerspec(value, interval time.Duration) itimerspec {
	return itimerspec{Interval: unix.NsecToTimespec(int64(interval)), Value: unix.NsecToTimespec(int64(value))}
}

// TimerSettime implements Linux syscall timer_settime(2).
func TimerSettime(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	id, flags, newAddr, oldAddr := a.Int(0), a.Int(1), a.Ptr(2), a.Ptr(3)
	if newAddr == 0 {
		return 0, unix.EINVAL
	}
	var spec itimerspec
	if err := copyInStruct(t, newAddr, &spec); err != nil {
		return 0, err
	}
	if !validTimespec(spec.Value) || !validTimespec(spec.Interval) {
		return 0, unix.EINVAL
	}
	oldValue, oldInterval, err := t.TimerSettime(id, flags&unix.TIMER_ABSTIME != 0,
		timespecDuration(spec.Value), timespecDuration(spec.Interval))
	if err != nil {
		return 0, err
	}
	if oldAddr != 0 {
		old := toItimerspec(oldValue, oldInterval)
		return 0, copyOutStruct(t, oldAddr, &old)
	}
	return 0, nil
}

// TimerGettime implements Linux syscall timer_gettime(2).
func TimerGettime(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	value, interval, err := t.TimerGettime(a.Int(0))
	if err != nil {
		return 0, err
	}
	cur := toItimerspec(value, interval)
	return 0, copyOutStruct(t, a.Ptr(1), &cur)
}

// TimerGetoverrun implements Linux syscall timer_getoverrun(2).
func TimerGetoverrun(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	n, err := t.TimerGetoverrun(a.Int(0))
	return retErr(uintptr(n), err)
}

// TimerDelete implements Linux syscall timer_delete(2).
func TimerDelete(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.TimerDelete(a.Int(0))
}
