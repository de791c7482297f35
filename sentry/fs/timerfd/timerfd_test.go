package timerfd_test

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// timerfd_create(2), timerfd_settime and timerfd_gettime as guest
// programs see them: expirations counted and read as 8 bytes.

func run(t *testing.T, prog fake.Program) {
	t.Helper()
	s := kerneltest.New(t, syscalls.NewTable())
	if st := s.Run(prog); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

func newTimer(t *testing.T, g *fake.Guest, flags int) uintptr {
	t.Helper()
	fd, errno := g.Call(unix.SYS_TIMERFD_CREATE, unix.CLOCK_MONOTONIC, uintptr(flags))
	if errno != 0 {
		t.Errorf("timerfd_create: %v", errno)
	}
	return fd
}

// spec is a struct itimerspec: it_interval, then it_value.
type spec struct{ interval, value time.Duration }

func putSpec(g *fake.Guest, s spec) uintptr {
	addr := g.Alloc(32)
	for i, d := range []time.Duration{s.interval, s.value} {
		g.WriteU64(addr+uintptr(16*i), uint64(d/time.Second))
		g.WriteU64(addr+uintptr(16*i+8), uint64(d%time.Second))
	}
	return addr
}

func getSpec(g *fake.Guest, addr uintptr) spec {
	d := func(off uintptr) time.Duration {
		return time.Duration(g.ReadU64(addr+off))*time.Second + time.Duration(g.ReadU64(addr+off+8))
	}
	return spec{d(0), d(16)}
}

// settime arms fd and returns the old setting.
func settime(t *testing.T, g *fake.Guest, fd uintptr, flags int, s spec) spec {
	t.Helper()
	old := g.Alloc(32)
	if _, errno := g.Call(unix.SYS_TIMERFD_SETTIME, fd, uintptr(flags), putSpec(g, s), old); errno != 0 {
		t.Errorf("timerfd_settime: %v", errno)
	}
	return getSpec(g, old)
}

func gettime(t *testing.T, g *fake.Guest, fd uintptr) spec {
	t.Helper()
	cur := g.Alloc(32)
	if _, errno := g.Call(unix.SYS_TIMERFD_GETTIME, fd, cur); errno != 0 {
		t.Errorf("timerfd_gettime: %v", errno)
	}
	return getSpec(g, cur)
}

// expirations reads fd's count.
func expirations(g *fake.Guest, fd uintptr) (uint64, unix.Errno) {
	buf := g.Alloc(8)
	if _, errno := g.Call(unix.SYS_READ, fd, buf, 8); errno != 0 {
		return 0, errno
	}
	return g.ReadU64(buf), 0
}

func monotonic(g *fake.Guest) time.Duration {
	ts := g.Alloc(16)
	g.Call(unix.SYS_CLOCK_GETTIME, unix.CLOCK_MONOTONIC, ts)
	return time.Duration(g.ReadU64(ts))*time.Second + time.Duration(g.ReadU64(ts+8))
}

func TestANewTimerIsDisarmed(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newTimer(t, g, unix.TFD_NONBLOCK)
		if got := gettime(t, g, fd); got != (spec{}) {
			t.Errorf("gettime of a new timer = %+v, want zero", got)
		}
		if v, errno := expirations(g, fd); errno != unix.EAGAIN {
			t.Errorf("read of a disarmed timer = %d, %v; want EAGAIN", v, errno)
		}
	})
}

func TestAOneShotTimerExpiresOnce(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newTimer(t, g, 0)
		const value = 20 * time.Millisecond
		start := time.Now()
		settime(t, g, fd, 0, spec{value: value})
		if left := gettime(t, g, fd).value; left <= 0 || left > value {
			t.Errorf("time left just after arming = %v, want in (0, %v]", left, value)
		}
		// A blocking read waits for the expiration.
		if v, errno := expirations(g, fd); v != 1 || errno != 0 {
			t.Errorf("read = %d, %v; want 1", v, errno)
		}
		if el := time.Since(start); el < value {
			t.Errorf("the read returned after %v, before the timer's %v", el, value)
		}
		if got := gettime(t, g, fd); got != (spec{}) {
			t.Errorf("gettime of an expired one-shot timer = %+v, want zero", got)
		}
		g.Call(unix.SYS_FCNTL, fd, unix.F_SETFL, unix.O_NONBLOCK)
		if v, errno := expirations(g, fd); errno != unix.EAGAIN {
			t.Errorf("second read = %d, %v; want EAGAIN", v, errno)
		}
	})
}

func TestAPeriodicTimerCountsEveryExpirationSinceTheLastRead(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newTimer(t, g, unix.TFD_NONBLOCK)
		const period = 10 * time.Millisecond
		start := time.Now()
		settime(t, g, fd, 0, spec{interval: period, value: period})
		g.Compute(55 * time.Millisecond)
		v, errno := expirations(g, fd)
		if most := uint64(time.Since(start) / period); errno != 0 || v < 5 || v > most {
			t.Errorf("read after 55ms of a 10ms timer = %d, %v; want from 5 to %d", v, errno, most)
		}
		if got := gettime(t, g, fd); got.interval != period || got.value <= 0 || got.value > period {
			t.Errorf("gettime of a periodic timer = %+v, want its interval and under one left", got)
		}
		// Arming again clears the count.
		settime(t, g, fd, 0, spec{value: time.Hour})
		if v, errno := expirations(g, fd); errno != unix.EAGAIN {
			t.Errorf("read after re-arming = %d, %v; want EAGAIN", v, errno)
		}
	})
}

func TestAnAbsoluteTimeInThePastExpiresAtOnceWithItsOverruns(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newTimer(t, g, unix.TFD_NONBLOCK)
		now := monotonic(g)
		settime(t, g, fd, unix.TFD_TIMER_ABSTIME, spec{value: now - time.Second})
		if v, errno := expirations(g, fd); v != 1 || errno != 0 {
			t.Errorf("one-shot, a second ago: %d, %v; want 1", v, errno)
		}
		// Periodic: one for the start, one per interval gone by since.
		settime(t, g, fd, unix.TFD_TIMER_ABSTIME, spec{interval: 100 * time.Millisecond, value: now - time.Second})
		if v, errno := expirations(g, fd); v != 11 || errno != 0 {
			t.Errorf("every 100ms from a second ago: %d, %v; want 11", v, errno)
		}
		// In the future, an absolute time is a deadline on the clock.
		settime(t, g, fd, unix.TFD_TIMER_ABSTIME, spec{value: monotonic(g) + time.Hour})
		if left := gettime(t, g, fd).value; left < 59*time.Minute || left > time.Hour {
			t.Errorf("time left to an hour from now = %v", left)
		}
	})
}

func TestBillionsOfOverrunsAreCountedAtOnce(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newTimer(t, g, unix.TFD_NONBLOCK)
		// Every nanosecond since the clock's first: as many expirations as
		// the clock reads.
		before := monotonic(g)
		settime(t, g, fd, unix.TFD_TIMER_ABSTIME, spec{interval: time.Nanosecond, value: time.Nanosecond})
		v, errno := expirations(g, fd)
		after := monotonic(g)
		if errno != 0 || v < uint64(before) || v > uint64(after) {
			t.Errorf("expirations of a 1ns timer from 1ns = %d, %v; want the clock's reading, in [%d, %d]", v, errno, before, after)
		}
		settime(t, g, fd, 0, spec{})
	})
}

func TestSettimeReturnsTheOldSettingAndAZeroValueDisarms(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newTimer(t, g, unix.TFD_NONBLOCK)
		settime(t, g, fd, 0, spec{interval: time.Second, value: time.Hour})
		old := settime(t, g, fd, 0, spec{interval: 5 * time.Nanosecond})
		if old.interval != time.Second || old.value <= 59*time.Minute || old.value > time.Hour {
			t.Errorf("old setting = %+v, want an hour's value and a second's interval", old)
		}
		// Disarmed, it keeps the interval it was given.
		if got := gettime(t, g, fd); got != (spec{interval: 5 * time.Nanosecond}) {
			t.Errorf("gettime of a timer disarmed with an interval = %+v, want the interval alone", got)
		}
		if v, errno := expirations(g, fd); errno != unix.EAGAIN {
			t.Errorf("read of a disarmed timer = %d, %v; want EAGAIN", v, errno)
		}
	})
}

func TestTimerfdRefusesBadValuesAndBuffers(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newTimer(t, g, unix.TFD_NONBLOCK)
		for _, bad := range [][4]int64{{0, 0, 0, 1_000_000_000}, {0, 0, -1, 0}, {0, -1, 0, 1}, {-1, 0, 0, 1}} {
			addr := g.Alloc(32)
			for i, v := range bad {
				g.WriteU64(addr+uintptr(8*i), uint64(v))
			}
			if n, errno := g.Call(unix.SYS_TIMERFD_SETTIME, fd, 0, addr, 0); errno != unix.EINVAL {
				t.Errorf("timerfd_settime of %v = %d, %v; want EINVAL", bad, n, errno)
			}
		}
		settime(t, g, fd, 0, spec{value: time.Nanosecond})
		g.Compute(time.Millisecond)
		buf := g.Alloc(16)
		if n, errno := g.Call(unix.SYS_READ, fd, buf, 7); errno != unix.EINVAL {
			t.Errorf("read of 7 bytes = %d, %v; want EINVAL", n, errno)
		}
		if n, errno := g.Call(unix.SYS_READ, fd, buf, 16); n != 8 || errno != 0 {
			t.Errorf("read of 16 bytes = %d, %v; want 8", n, errno)
		}
		if n, errno := g.Call(unix.SYS_TIMERFD_GETTIME, 99, buf); errno != unix.EBADF {
			t.Errorf("timerfd_gettime of a closed fd = %d, %v; want EBADF", n, errno)
		}
		efd, _ := g.Call(unix.SYS_EVENTFD2, 0, 0)
		if n, errno := g.Call(unix.SYS_TIMERFD_GETTIME, efd, buf); errno != unix.EINVAL {
			t.Errorf("timerfd_gettime of an eventfd = %d, %v; want EINVAL", n, errno)
		}
	})
}

func TestATimerfdIsReadableOnceItExpired(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newTimer(t, g, unix.TFD_NONBLOCK)
		pfd := g.Alloc(8)
		revents := func(timeout int) uint16 {
			g.WriteU32(pfd, uint32(fd))
			g.WriteU32(pfd+4, unix.POLLIN|unix.POLLOUT)
			g.Call(unix.SYS_POLL, pfd, 1, uintptr(timeout))
			return uint16(g.ReadU32(pfd+4) >> 16)
		}
		settime(t, g, fd, 0, spec{value: 20 * time.Millisecond})
		if got := revents(0); got != 0 {
			t.Errorf("armed, not expired: %#x, want nothing (never POLLOUT)", got)
		}
		if got := revents(5000); got != unix.POLLIN {
			t.Errorf("poll until it expires: %#x, want POLLIN", got)
		}
		expirations(g, fd)
		if got := revents(0); got != 0 {
			t.Errorf("after the read: %#x, want nothing", got)
		}
	})
}
