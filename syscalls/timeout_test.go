package syscalls

import (
	"math"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

// A timeout whose seconds overflow 64 bits of nanoseconds is valid, and
// lasts in effect for ever: Linux saturates it at KTIME_MAX
// (timespec64_to_ktime, timespec64_add_safe) instead of letting the
// product wrap to a time already past.

// pastKtimeMax is the first whole second past KTIME_MAX: in nanoseconds
// its product wraps to a negative number.
const pastKtimeMax = uint64(math.MaxInt64/int64(time.Second) + 1)

// hugeTimespec is a valid timespec a second past KTIME_MAX.
func hugeTimespec(g *fake.Guest) uintptr {
	ts := g.Alloc(16)
	g.WriteU64(ts, pastKtimeMax)
	return ts
}

func TestATimeoutTooLongForNanosecondsWaitsAsIfForEver(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		r, w := guestPipe(t, g, 0)
		const delay = 20 * time.Millisecond
		writeLater := func() int {
			pid, _ := g.Fork(func(g *fake.Guest) {
				g.Compute(delay)
				g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
			})
			return pid
		}
		drain := func() { g.Call(unix.SYS_READ, r, g.Alloc(8), 8) }
		for _, c := range []struct {
			name string
			call func() (uintptr, unix.Errno)
		}{
			{"ppoll", func() (uintptr, unix.Errno) {
				return g.Call(unix.SYS_PPOLL, pollfds(g, [2]int{int(r), unix.POLLIN}), 1, hugeTimespec(g), 0, 8)
			}},
			{"pselect6", func() (uintptr, unix.Errno) {
				return g.Call(unix.SYS_PSELECT6, r+1, fdSet(g, int(r)), 0, 0, hugeTimespec(g), 0)
			}},
			{"select", func() (uintptr, unix.Errno) {
				tv := g.Alloc(16)
				g.WriteU64(tv, pastKtimeMax)
				return g.Call(unix.SYS_SELECT, r+1, fdSet(g, int(r)), 0, 0, tv)
			}},
		} {
			start := time.Now()
			pid := writeLater()
			n, errno := c.call()
			if el := time.Since(start); n != 1 || errno != 0 || el < delay {
				t.Errorf("%s with a timeout past KTIME_MAX = %d, %v after %v; want 1 once the write came", c.name, n, errno, el)
			}
			g.Wait(pid, 0)
			drain()
		}
		// A timerfd armed so far ahead is armed, not due.
		fd, _ := g.Call(unix.SYS_TIMERFD_CREATE, unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK)
		spec := g.Alloc(32)
		g.WriteU64(spec, 1<<62) // it_interval
		g.WriteU64(spec+16, 1<<62)
		if _, errno := g.Call(unix.SYS_TIMERFD_SETTIME, fd, 0, spec, 0); errno != 0 {
			t.Errorf("timerfd_settime of 2^62 s: %v", errno)
		}
		if n, errno := g.Call(unix.SYS_READ, fd, g.Alloc(8), 8); errno != unix.EAGAIN {
			t.Errorf("read of a timer 2^62 s away = %d, %v; want EAGAIN", n, errno)
		}
		cur := g.Alloc(32)
		g.Call(unix.SYS_TIMERFD_GETTIME, fd, cur)
		ktimeMax := time.Duration(math.MaxInt64)
		if interval := readTimeout(g, cur, time.Nanosecond); interval != ktimeMax {
			t.Errorf("interval of 2^62 s reads back as %v, want KTIME_MAX (%v)", interval, ktimeMax)
		}
		// Linux saturates the expiry, not the time left: KTIME_MAX less
		// the clock's reading.
		if value := readTimeout(g, cur+16, time.Nanosecond); value < ktimeMax/2 {
			t.Errorf("time left of 2^62 s reads back as %v, want about KTIME_MAX", value)
		}
	})
}
