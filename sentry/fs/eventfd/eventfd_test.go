package eventfd_test

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// eventfd(2) as guest programs see it: an 8-byte counter that writes add
// to and reads take.

const maxCount = 1<<64 - 2 // the largest value the counter holds

func run(t *testing.T, prog fake.Program) {
	t.Helper()
	s := kerneltest.New(t, syscalls.NewTable())
	if st := s.Run(prog); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

func newEventfd(t *testing.T, g *fake.Guest, initval uint, flags int) uintptr {
	t.Helper()
	fd, errno := g.Call(unix.SYS_EVENTFD2, uintptr(initval), uintptr(flags))
	if errno != 0 {
		t.Errorf("eventfd2: %v", errno)
	}
	return fd
}

// add writes v; take reads the counter.
func add(g *fake.Guest, fd uintptr, v uint64) (uintptr, unix.Errno) {
	buf := g.Alloc(8)
	g.WriteU64(buf, v)
	return g.Call(unix.SYS_WRITE, fd, buf, 8)
}

func take(g *fake.Guest, fd uintptr) (uint64, unix.Errno) {
	buf := g.Alloc(8)
	if _, errno := g.Call(unix.SYS_READ, fd, buf, 8); errno != 0 {
		return 0, errno
	}
	return g.ReadU64(buf), 0
}

func TestAReadTakesTheWholeCountAndResetsIt(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newEventfd(t, g, 2, unix.EFD_NONBLOCK)
		add(g, fd, 3)
		add(g, fd, 4)
		if v, errno := take(g, fd); v != 9 || errno != 0 {
			t.Errorf("read = %d, %v; want 9 (2+3+4)", v, errno)
		}
		if v, errno := take(g, fd); errno != unix.EAGAIN {
			t.Errorf("read of a zero counter = %d, %v; want EAGAIN", v, errno)
		}
		// A write of 0 is a write, but wakes no reader and sets nothing.
		if n, errno := add(g, fd, 0); n != 8 || errno != 0 {
			t.Errorf("write of 0 = %d, %v; want 8", n, errno)
		}
		if v, errno := take(g, fd); errno != unix.EAGAIN {
			t.Errorf("read after adding 0 = %d, %v; want EAGAIN", v, errno)
		}
	})
}

func TestASemaphoreEventfdIsTakenOneAtATime(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newEventfd(t, g, 3, unix.EFD_NONBLOCK|unix.EFD_SEMAPHORE)
		for i := range 3 {
			if v, errno := take(g, fd); v != 1 || errno != 0 {
				t.Errorf("read %d of a semaphore at %d = %d, %v; want 1", i, 3-i, v, errno)
			}
		}
		if v, errno := take(g, fd); errno != unix.EAGAIN {
			t.Errorf("read of an empty semaphore = %d, %v; want EAGAIN", v, errno)
		}
	})
}

func TestAWriteThatWouldOverflowWaitsOrIsEAGAIN(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newEventfd(t, g, 0, unix.EFD_NONBLOCK)
		if n, errno := add(g, fd, 1<<64-1); errno != unix.EINVAL {
			t.Errorf("write of 2^64-1 = %d, %v; want EINVAL", n, errno)
		}
		if n, errno := add(g, fd, maxCount); n != 8 || errno != 0 {
			t.Errorf("write of the largest count = %d, %v", n, errno)
		}
		if n, errno := add(g, fd, 1); errno != unix.EAGAIN {
			t.Errorf("non-blocking write past the largest count = %d, %v; want EAGAIN", n, errno)
		}
		// Blocking: the write waits until a reader makes room.
		blocking := newEventfd(t, g, 0, 0)
		add(g, blocking, maxCount)
		const delay = 20 * time.Millisecond
		start := time.Now() // before the child can start its delay
		pid, _ := g.Fork(func(g *fake.Guest) {
			g.Compute(delay)
			if v, _ := take(g, blocking); v != maxCount {
				t.Errorf("reader took %d, want the largest count", v)
			}
		})
		if n, errno := add(g, blocking, 5); n != 8 || errno != 0 {
			t.Errorf("blocking write past the largest count = %d, %v", n, errno)
		}
		if el := time.Since(start); el < delay {
			t.Errorf("the overflowing write returned after %v, before the reader read", el)
		}
		g.Wait(pid, 0)
		if v, _ := take(g, blocking); v != 5 {
			t.Errorf("count after the blocked write = %d, want 5", v)
		}
	})
}

func TestABlockingReadWaitsForAWrite(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newEventfd(t, g, 0, 0)
		const delay = 20 * time.Millisecond
		start := time.Now() // before the child can start its delay
		pid, _ := g.Fork(func(g *fake.Guest) {
			g.Compute(delay)
			add(g, fd, 42)
		})
		if v, errno := take(g, fd); v != 42 || errno != 0 {
			t.Errorf("read = %d, %v; want 42", v, errno)
		}
		if el := time.Since(start); el < delay {
			t.Errorf("read returned after %v, before the write", el)
		}
		g.Wait(pid, 0)
	})
}

func TestEventfdReadsAndWritesAreOfEightBytes(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newEventfd(t, g, 1, unix.EFD_NONBLOCK)
		buf := g.Alloc(16)
		for _, n := range []uintptr{0, 4, 7} {
			if got, errno := g.Call(unix.SYS_READ, fd, buf, n); errno != unix.EINVAL {
				t.Errorf("read of %d bytes = %d, %v; want EINVAL", n, got, errno)
			}
			if got, errno := g.Call(unix.SYS_WRITE, fd, buf, n); errno != unix.EINVAL {
				t.Errorf("write of %d bytes = %d, %v; want EINVAL", n, got, errno)
			}
		}
		if got, errno := g.Call(unix.SYS_READ, fd, buf, 16); got != 8 || errno != 0 {
			t.Errorf("read of 16 bytes = %d, %v; want 8", got, errno)
		}
		g.WriteU64(buf, 3)
		if got, errno := g.Call(unix.SYS_WRITE, fd, buf, 16); got != 8 || errno != 0 {
			t.Errorf("write of 16 bytes = %d, %v; want 8", got, errno)
		}
		if v, _ := take(g, fd); v != 3 {
			t.Errorf("count after a 16-byte write = %d, want 3 (its first 8 bytes)", v)
		}
	})
}

func TestPollSeesAnEventfdAsLinuxDoes(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newEventfd(t, g, 0, unix.EFD_NONBLOCK)
		pfd := g.Alloc(8)
		revents := func() uint16 {
			g.WriteU32(pfd, uint32(fd))
			g.WriteU32(pfd+4, unix.POLLIN|unix.POLLOUT)
			g.Call(unix.SYS_POLL, pfd, 1, 0)
			return uint16(g.ReadU32(pfd+4) >> 16)
		}
		if got := revents(); got != unix.POLLOUT {
			t.Errorf("zero counter: %#x, want POLLOUT", got)
		}
		add(g, fd, 1)
		if got := revents(); got != unix.POLLIN|unix.POLLOUT {
			t.Errorf("counter 1: %#x, want POLLIN|POLLOUT", got)
		}
		add(g, fd, maxCount-1)
		if got := revents(); got != unix.POLLIN {
			t.Errorf("counter at its largest: %#x, want POLLIN only", got)
		}
	})
}

func TestEventfdFlagsAreItsOwn(t *testing.T) {
	run(t, func(g *fake.Guest) {
		fd := newEventfd(t, g, 0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		if fl, _ := g.Call(unix.SYS_FCNTL, fd, unix.F_GETFL); fl&unix.O_NONBLOCK == 0 || fl&unix.O_ACCMODE != unix.O_RDWR {
			t.Errorf("F_GETFL = %#x, want O_RDWR|O_NONBLOCK", fl)
		}
		if fl, _ := g.Call(unix.SYS_FCNTL, fd, unix.F_GETFD); fl != unix.FD_CLOEXEC {
			t.Errorf("F_GETFD = %#x, want FD_CLOEXEC", fl)
		}
		// eventfd(2), the old call, takes no flags and starts at its count.
		old, errno := g.Call(unix.SYS_EVENTFD, 5)
		if errno != 0 {
			t.Errorf("eventfd: %v", errno)
		}
		if fl, _ := g.Call(unix.SYS_FCNTL, old, unix.F_GETFL); fl&unix.O_NONBLOCK != 0 {
			t.Errorf("eventfd(5) is non-blocking: F_GETFL = %#x", fl)
		}
		if v, _ := take(g, old); v != 5 {
			t.Errorf("eventfd(5) read = %d, want 5", v)
		}
	})
}
