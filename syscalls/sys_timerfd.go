package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/signalfd"
	"github.com/moat-sandbox/moat/sentry/fs/timerfd"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// itimerspec is struct itimerspec.
type itimerspec struct{ Interval, Value unix.Timespec }

// TimerfdCreate implements Linux syscall timerfd_create(2).
func TimerfdCreate(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	clock, flags := a.Int(0), int(a.Int(1))
	switch clock {
	case unix.CLOCK_REALTIME, unix.CLOCK_MONOTONIC, unix.CLOCK_BOOTTIME:
	case unix.CLOCK_REALTIME_ALARM, unix.CLOCK_BOOTTIME_ALARM:
		return 0, unix.EPERM // no CAP_WAKE_ALARM in the sandbox
	default:
		return 0, unix.EINVAL
	}
	if flags&^(unix.TFD_CLOEXEC|unix.TFD_NONBLOCK) != 0 {
		return 0, unix.EINVAL
	}
	k := t.Kernel()
	f := timerfd.New(func() int64 {
		ts, _ := k.ClockGettime(clock, t)
		return ts.Nano()
	})
	return installAnon(t, f, unix.O_RDWR|flags&unix.TFD_NONBLOCK, flags&unix.TFD_CLOEXEC != 0)
}

func timerFile(t *kernel.Task, fd int32) (*timerfd.File, func(), error) {
	f, err := t.FDs().Get(fd)
	if err != nil {
		return nil, nil, err
	}
	tf, ok := f.Impl().(*timerfd.File)
	if !ok {
		f.DecRef()
		return nil, nil, unix.EINVAL
	}
	return tf, f.DecRef, nil
}

// TimerfdSettime implements Linux syscall timerfd_settime(2).
func TimerfdSettime(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := a.Int(1)
	if flags&^(unix.TFD_TIMER_ABSTIME|unix.TFD_TIMER_CANCEL_ON_SET) != 0 {
		return 0, unix.EINVAL
	}
	tf, done, err := timerFile(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer done()
	var nu itimerspec
	if err := copyInStruct(t, a.Ptr(2), &nu); err != nil {
		return 0, err
	}
	if !validTimespec(nu.Value) || !validTimespec(nu.Interval) {
		return 0, unix.EINVAL
	}
	value, interval := tf.Set(timespecDuration(nu.Value), flags&unix.TFD_TIMER_ABSTIME != 0,
		timespecDuration(nu.Interval))
	if a[3] != 0 {
		old := itimerspec{Interval: unix.NsecToTimespec(int64(interval)), Value: unix.NsecToTimespec(int64(value))}
		return 0, copyOutStruct(t, a.Ptr(3), &old)
	}
	return 0, nil
}

// TimerfdGettime implements Linux syscall timerfd_gettime(2).
func TimerfdGettime(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	tf, done, err := timerFile(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer done()
	value, interval := tf.Get()
	cur := itimerspec{Interval: unix.NsecToTimespec(int64(interval)), Value: unix.NsecToTimespec(int64(value))}
	return 0, copyOutStruct(t, a.Ptr(1), &cur)
}

func validTimespec(ts unix.Timespec) bool { return ts.Sec >= 0 && ts.Nsec >= 0 && ts.Nsec < 1e9 }

// Signalfd implements Linux syscall signalfd(2).
func Signalfd(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return makeSignalfd(t, a.Int(0), a.Ptr(1), a[2], 0)
}

// Signalfd4 implements Linux syscall signalfd4(2).
func Signalfd4(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return makeSignalfd(t, a.Int(0), a.Ptr(1), a[2], int(a.Int(3)))
}

func makeSignalfd(t *kernel.Task, fd int32, maskAddr uintptr, size uint64, flags int) (uintptr, error) {
	if size != linuxabi.SizeofSigset || flags&^(unix.SFD_CLOEXEC|unix.SFD_NONBLOCK) != 0 {
		return 0, unix.EINVAL
	}
	var mask uint64
	if err := copyInStruct(t, maskAddr, &mask); err != nil {
		return 0, err
	}
	mask &^= 1<<(unix.SIGKILL-1) | 1<<(unix.SIGSTOP-1)
	if fd != -1 {
		f, err := t.FDs().Get(fd)
		if err != nil {
			return 0, err
		}
		defer f.DecRef()
		sf, ok := f.Impl().(*signalfd.File)
		if !ok {
			return 0, unix.EINVAL
		}
		sf.SetMask(mask)
		return uintptr(fd), nil
	}
	return installAnon(t, signalfd.New(t, mask), unix.O_RDWR|flags&unix.SFD_NONBLOCK, flags&unix.SFD_CLOEXEC != 0)
}
