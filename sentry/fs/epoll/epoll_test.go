package epoll_test

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// epoll(7) as guest programs see it through epoll_create1, epoll_ctl and
// epoll_wait: what is reported when, and which operations are refused.

func run(t *testing.T, prog fake.Program) *kerneltest.Sandbox {
	t.Helper()
	s := kerneltest.New(t, syscalls.NewTable())
	s.WriteFile("/tmp/f", 0o666, []byte("data"))
	if st := s.Run(prog); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
	return s
}

func newPipe(t *testing.T, g *fake.Guest) (r, w uintptr) {
	t.Helper()
	fds := g.Alloc(8)
	if _, errno := g.Call(unix.SYS_PIPE2, fds, 0); errno != 0 {
		t.Errorf("pipe2: %v", errno)
	}
	return uintptr(g.ReadU32(fds)), uintptr(g.ReadU32(fds + 4))
}

func newEpoll(t *testing.T, g *fake.Guest) uintptr {
	t.Helper()
	ep, errno := g.Call(unix.SYS_EPOLL_CREATE1, 0)
	if errno != 0 {
		t.Errorf("epoll_create1: %v", errno)
	}
	return ep
}

// ctl is epoll_ctl with a struct epoll_event (packed: events, then data).
func ctl(g *fake.Guest, ep, op, fd uintptr, events uint32, data uint64) unix.Errno {
	ev := g.Alloc(12)
	g.WriteU32(ev, events)
	g.WriteU64(ev+4, data)
	_, errno := g.Call(unix.SYS_EPOLL_CTL, ep, op, fd, ev)
	return errno
}

type event struct {
	events uint32
	data   uint64
}

// wait is epoll_wait for up to max events.
func wait(t *testing.T, g *fake.Guest, ep uintptr, max int, timeout time.Duration) []event {
	t.Helper()
	arr := g.Alloc(uintptr(12 * max))
	ms := int(timeout / time.Millisecond)
	n, errno := g.Call(unix.SYS_EPOLL_WAIT, ep, arr, uintptr(max), uintptr(ms))
	if errno != 0 {
		t.Errorf("epoll_wait: %v", errno)
		return nil
	}
	out := make([]event, n)
	for i := range out {
		out[i] = event{g.ReadU32(arr + uintptr(12*i)), g.ReadU64(arr + uintptr(12*i+4))}
	}
	return out
}

func write(g *fake.Guest, fd uintptr, s string) {
	g.Call(unix.SYS_WRITE, fd, g.CString(s), uintptr(len(s)))
}

func read(g *fake.Guest, fd uintptr, n int) {
	g.Call(unix.SYS_READ, fd, g.Alloc(uintptr(n)), uintptr(n))
}

func TestALevelTriggeredItemIsReportedWhileItsFileIsReady(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g)
		ep := newEpoll(t, g)
		ctl(g, ep, unix.EPOLL_CTL_ADD, r, unix.EPOLLIN, 7)
		if got := wait(t, g, ep, 4, 0); len(got) != 0 {
			t.Errorf("empty pipe: %v, want nothing", got)
		}
		write(g, w, "0123456789")
		for i := range 3 {
			if got := wait(t, g, ep, 4, 0); len(got) != 1 || got[0] != (event{unix.EPOLLIN, 7}) {
				t.Errorf("wait %d on a pipe with data: %v, want EPOLLIN with data 7", i, got)
			}
		}
		read(g, r, 10)
		if got := wait(t, g, ep, 4, 0); len(got) != 0 {
			t.Errorf("drained pipe: %v, want nothing", got)
		}
	})
}

func TestAnEdgeTriggeredItemIsReportedOncePerEventOfInterest(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g)
		ep := newEpoll(t, g)
		ctl(g, ep, unix.EPOLL_CTL_ADD, r, unix.EPOLLIN|unix.EPOLLET, 1)
		write(g, w, "0123456789")
		if got := wait(t, g, ep, 4, 0); len(got) != 1 {
			t.Errorf("first wait after a write: %v, want one event", got)
		}
		if got := wait(t, g, ep, 4, 0); len(got) != 0 {
			t.Errorf("second wait: %v, want nothing (no new edge)", got)
		}
		// A read makes room for writers: that is no news to a reader.
		read(g, r, 5)
		if got := wait(t, g, ep, 4, 0); len(got) != 0 {
			t.Errorf("wait after a partial read: %v, want nothing", got)
		}
		write(g, w, "x")
		if got := wait(t, g, ep, 4, 0); len(got) != 1 {
			t.Errorf("wait after a second write: %v, want one event", got)
		}
		// The write end: writable once, not again after a write.
		ctl(g, ep, unix.EPOLL_CTL_ADD, w, unix.EPOLLOUT|unix.EPOLLET, 2)
		if got := wait(t, g, ep, 4, 0); len(got) != 1 || got[0].data != 2 {
			t.Errorf("first wait on the write end: %v, want its EPOLLOUT", got)
		}
		write(g, w, "y")
		if got := wait(t, g, ep, 4, 0); len(got) != 1 || got[0].data != 1 {
			t.Errorf("wait after writing: %v, want only the read end's EPOLLIN", got)
		}
	})
}

func TestAOneShotItemIsSilentUntilRearmedByMOD(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g)
		ep := newEpoll(t, g)
		ctl(g, ep, unix.EPOLL_CTL_ADD, r, unix.EPOLLIN|unix.EPOLLONESHOT, 1)
		write(g, w, "x")
		if got := wait(t, g, ep, 4, 0); len(got) != 1 {
			t.Errorf("first wait: %v, want one event", got)
		}
		if got := wait(t, g, ep, 4, 0); len(got) != 0 {
			t.Errorf("second wait: %v, want nothing", got)
		}
		write(g, w, "y")
		if got := wait(t, g, ep, 4, 0); len(got) != 0 {
			t.Errorf("wait after a new write: %v, want nothing until EPOLL_CTL_MOD", got)
		}
		if errno := ctl(g, ep, unix.EPOLL_CTL_MOD, r, unix.EPOLLIN, 9); errno != 0 {
			t.Errorf("EPOLL_CTL_MOD of a fired one-shot item: %v", errno)
		}
		if got := wait(t, g, ep, 4, 0); len(got) != 1 || got[0] != (event{unix.EPOLLIN, 9}) {
			t.Errorf("wait after MOD: %v, want EPOLLIN with the new data 9", got)
		}
	})
}

func TestHangupsAndErrorsAreReportedWithoutBeingAskedFor(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g)
		ep := newEpoll(t, g)
		ctl(g, ep, unix.EPOLL_CTL_ADD, r, 0, 1)
		g.Call(unix.SYS_CLOSE, w)
		if got := wait(t, g, ep, 4, 0); len(got) != 1 || got[0].events != unix.EPOLLHUP {
			t.Errorf("hung-up read end asked for nothing: %v, want EPOLLHUP", got)
		}
		r2, w2 := newPipe(t, g)
		ep2 := newEpoll(t, g)
		ctl(g, ep2, unix.EPOLL_CTL_ADD, w2, unix.EPOLLIN, 2)
		g.Call(unix.SYS_CLOSE, r2)
		if got := wait(t, g, ep2, 4, 0); len(got) != 1 || got[0].events != unix.EPOLLERR {
			t.Errorf("write end with no reader, asked for EPOLLIN: %v, want EPOLLERR", got)
		}
	})
}

func TestEpollCtlRefusesAsLinuxDoes(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g)
		ep := newEpoll(t, g)
		file, _ := g.Call(unix.SYS_OPENAT, atFDCWD(), g.CString("/tmp/f"), unix.O_RDONLY)
		for _, tc := range []struct {
			name   string
			ep, op uintptr
			fd     uintptr
			events uint32
			want   unix.Errno
		}{
			{"ADD", ep, unix.EPOLL_CTL_ADD, r, unix.EPOLLIN, 0},
			{"ADD again", ep, unix.EPOLL_CTL_ADD, r, unix.EPOLLIN, unix.EEXIST},
			{"MOD of a file not added", ep, unix.EPOLL_CTL_MOD, w, unix.EPOLLOUT, unix.ENOENT},
			{"DEL of a file not added", ep, unix.EPOLL_CTL_DEL, w, 0, unix.ENOENT},
			{"ADD of a regular file", ep, unix.EPOLL_CTL_ADD, file, unix.EPOLLIN, unix.EPERM},
			{"ADD of the epoll to itself", ep, unix.EPOLL_CTL_ADD, ep, unix.EPOLLIN, unix.EINVAL},
			{"ADD to a pipe", r, unix.EPOLL_CTL_ADD, w, unix.EPOLLIN, unix.EINVAL},
			{"ADD of a closed fd", ep, unix.EPOLL_CTL_ADD, 99, unix.EPOLLIN, unix.EBADF},
			{"ADD to a closed fd", 99, unix.EPOLL_CTL_ADD, w, unix.EPOLLIN, unix.EBADF},
			{"an undefined op", ep, 99, r, unix.EPOLLIN, unix.EINVAL},
			{"MOD with EPOLLEXCLUSIVE", ep, unix.EPOLL_CTL_MOD, r, unix.EPOLLIN | unix.EPOLLEXCLUSIVE, unix.EINVAL},
			{"ADD with EPOLLEXCLUSIVE|EPOLLONESHOT", ep, unix.EPOLL_CTL_ADD, w, unix.EPOLLOUT | unix.EPOLLEXCLUSIVE | unix.EPOLLONESHOT, unix.EINVAL},
			{"ADD with EPOLLEXCLUSIVE", ep, unix.EPOLL_CTL_ADD, w, unix.EPOLLOUT | unix.EPOLLEXCLUSIVE, 0},
			{"MOD of an EPOLLEXCLUSIVE item", ep, unix.EPOLL_CTL_MOD, w, unix.EPOLLOUT, unix.EINVAL},
			{"DEL", ep, unix.EPOLL_CTL_DEL, r, 0, 0},
			{"DEL again", ep, unix.EPOLL_CTL_DEL, r, 0, unix.ENOENT},
		} {
			if errno := ctl(g, tc.ep, tc.op, tc.fd, tc.events, 0); errno != tc.want {
				t.Errorf("epoll_ctl %s: %v, want %v", tc.name, errno, tc.want)
			}
		}
		inner := newEpoll(t, g)
		if errno := ctl(g, ep, unix.EPOLL_CTL_ADD, inner, unix.EPOLLIN|unix.EPOLLEXCLUSIVE, 0); errno != unix.EINVAL {
			t.Errorf("epoll_ctl ADD of an epoll with EPOLLEXCLUSIVE: %v, want EINVAL", errno)
		}
	})
}

func TestEpollLoopsAndNestingDeeperThanFourAreELOOP(t *testing.T) {
	run(t, func(g *fake.Guest) {
		e1, e2 := newEpoll(t, g), newEpoll(t, g)
		if errno := ctl(g, e2, unix.EPOLL_CTL_ADD, e1, unix.EPOLLIN, 0); errno != 0 {
			t.Errorf("e1 into e2: %v", errno)
		}
		if errno := ctl(g, e1, unix.EPOLL_CTL_ADD, e2, unix.EPOLLIN, 0); errno != unix.ELOOP {
			t.Errorf("e2 into e1, which it holds: %v, want ELOOP", errno)
		}
		// A chain c0 > c1 > c2 > c3 > c4 is four levels deep: the most.
		var c [6]uintptr
		for i := range c {
			c[i] = newEpoll(t, g)
		}
		for i := 1; i <= 4; i++ {
			if errno := ctl(g, c[i-1], unix.EPOLL_CTL_ADD, c[i], unix.EPOLLIN, 0); errno != 0 {
				t.Errorf("c%d into c%d: %v", i, i-1, errno)
			}
		}
		if errno := ctl(g, c[4], unix.EPOLL_CTL_ADD, c[5], unix.EPOLLIN, 0); errno != unix.ELOOP {
			t.Errorf("a fifth level below the chain's top: %v, want ELOOP", errno)
		}
		if errno := ctl(g, c[5], unix.EPOLL_CTL_ADD, c[0], unix.EPOLLIN, 0); errno != unix.ELOOP {
			t.Errorf("a fifth level above the chain's top: %v, want ELOOP", errno)
		}
		// Two short chains joined by their ends: y0 > y1 > x0 > x1 > x2.
		x0, x1, x2, y0, y1 := newEpoll(t, g), newEpoll(t, g), newEpoll(t, g), newEpoll(t, g), newEpoll(t, g)
		ctl(g, x0, unix.EPOLL_CTL_ADD, x1, unix.EPOLLIN, 0)
		ctl(g, x1, unix.EPOLL_CTL_ADD, x2, unix.EPOLLIN, 0)
		ctl(g, y0, unix.EPOLL_CTL_ADD, y1, unix.EPOLLIN, 0)
		if errno := ctl(g, y1, unix.EPOLL_CTL_ADD, x0, unix.EPOLLIN, 0); errno != 0 {
			t.Errorf("joining chains into four levels: %v", errno)
		}
		// Closing an epoll of the chain cuts it: the levels are free again.
		g.Call(unix.SYS_CLOSE, c[2])
		if errno := ctl(g, c[4], unix.EPOLL_CTL_ADD, c[5], unix.EPOLLIN, 0); errno != 0 {
			t.Errorf("c5 into c4 after the chain above was cut: %v", errno)
		}
		// What was refused left no loop behind: an event in e1 reaches e2
		// once.
		r, w := newPipe(t, g)
		ctl(g, e1, unix.EPOLL_CTL_ADD, r, unix.EPOLLIN, 0)
		write(g, w, "x")
		if got := wait(t, g, e2, 4, 0); len(got) != 1 {
			t.Errorf("e2 holding e1 holding a ready pipe: %v, want one event", got)
		}
	})
}

func TestAnEpollIsReadableWhenAnItemIsReady(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g)
		inner, outer := newEpoll(t, g), newEpoll(t, g)
		ctl(g, inner, unix.EPOLL_CTL_ADD, r, unix.EPOLLIN, 1)
		ctl(g, outer, unix.EPOLL_CTL_ADD, inner, unix.EPOLLIN, 3)
		pfd := g.Alloc(8)
		poll := func() uint16 {
			g.WriteU32(pfd, uint32(inner))
			g.WriteU32(pfd+4, unix.POLLIN|unix.POLLOUT)
			g.Call(unix.SYS_POLL, pfd, 1, 0)
			return uint16(g.ReadU32(pfd+4) >> 16)
		}
		if got := poll(); got != 0 {
			t.Errorf("poll of an epoll with nothing ready: %#x, want 0", got)
		}
		if got := wait(t, g, outer, 4, 0); len(got) != 0 {
			t.Errorf("outer epoll with nothing ready: %v", got)
		}
		write(g, w, "x")
		if got := poll(); got != unix.POLLIN {
			t.Errorf("poll of an epoll with an item ready: %#x, want POLLIN", got)
		}
		if got := wait(t, g, outer, 4, 0); len(got) != 1 || got[0] != (event{unix.EPOLLIN, 3}) {
			t.Errorf("outer epoll: %v, want EPOLLIN with data 3", got)
		}
		if n, errno := g.Call(unix.SYS_READ, inner, g.Alloc(8), 8); errno != unix.EINVAL {
			t.Errorf("read of an epoll = %d, %v; want EINVAL", n, errno)
		}
	})
}

func TestAClosedFileLeavesTheInterestListOnlyWithItsLastFD(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g)
		ep := newEpoll(t, g)
		ctl(g, ep, unix.EPOLL_CTL_ADD, r, unix.EPOLLIN, 1)
		write(g, w, "x")
		dup, _ := g.Call(unix.SYS_DUP, r)
		g.Call(unix.SYS_CLOSE, r)
		if got := wait(t, g, ep, 4, 0); len(got) != 1 {
			t.Errorf("the fd closed but its file still open: %v, want it still reported", got)
		}
		g.Call(unix.SYS_CLOSE, dup)
		if got := wait(t, g, ep, 4, 0); len(got) != 0 {
			t.Errorf("the file closed: %v, want nothing", got)
		}
		if errno := ctl(g, ep, unix.EPOLL_CTL_DEL, r, 0, 0); errno != unix.EBADF {
			t.Errorf("EPOLL_CTL_DEL of a closed fd: %v, want EBADF", errno)
		}
	})
}

func TestEpollWaitTakesAtMostMaxeventsAndGoesRoundTheReadyItems(t *testing.T) {
	run(t, func(g *fake.Guest) {
		ep := newEpoll(t, g)
		for i := range 2 {
			r, w := newPipe(t, g)
			write(g, w, "x")
			ctl(g, ep, unix.EPOLL_CTL_ADD, r, unix.EPOLLIN, uint64(i+1))
		}
		var seen []uint64
		for range 4 {
			got := wait(t, g, ep, 1, 0)
			if len(got) != 1 {
				t.Errorf("epoll_wait with maxevents 1: %v", got)
				return
			}
			seen = append(seen, got[0].data)
		}
		if seen[0] == seen[1] || seen[1] == seen[2] || seen[2] == seen[3] {
			t.Errorf("items reported one at a time: %v, want them in turn", seen)
		}
		if got := wait(t, g, ep, 8, 0); len(got) != 2 {
			t.Errorf("epoll_wait with room for all: %v, want both", got)
		}
	})
}

func TestEpollWaitBlocksUntilAnEventOrItsTimeout(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g)
		ep := newEpoll(t, g)
		ctl(g, ep, unix.EPOLL_CTL_ADD, r, unix.EPOLLIN, 1)
		const timeout = 30 * time.Millisecond
		start := time.Now()
		if got := wait(t, g, ep, 4, timeout); len(got) != 0 {
			t.Errorf("wait with nothing ready: %v", got)
		}
		if el := time.Since(start); el < timeout {
			t.Errorf("epoll_wait returned after %v, before its %v timeout", el, timeout)
		}
		pid, _ := g.Fork(func(g *fake.Guest) {
			g.Compute(20 * time.Millisecond)
			write(g, w, "x")
		})
		if got := wait(t, g, ep, 4, 10*time.Second); len(got) != 1 {
			t.Errorf("wait for a writer: %v, want one event", got)
		}
		g.Wait(pid, 0)
	})
}

func TestASignalHandlerInterruptsEpollWaitWithEINTR(t *testing.T) {
	s := kerneltest.New(t, syscalls.NewTable())
	s.Start(func(g *fake.Guest) {
		g.Sigaction(unix.SIGALRM, fake.SigAction{Handler: s.Platform.Handler(func(*fake.Guest) {}), Flags: linuxabi.SA_RESTART})
		r, _ := newPipe(t, g)
		ep := newEpoll(t, g)
		ctl(g, ep, unix.EPOLL_CTL_ADD, r, unix.EPOLLIN, 1)
		// SIGALRM every 10ms, so that one comes while epoll_wait waits
		// however late the call starts.
		it := g.Alloc(32) // struct itimerval: it_interval, it_value
		g.WriteU64(it+8, 10000)
		g.WriteU64(it+24, 10000)
		g.Call(unix.SYS_SETITIMER, 0 /* ITIMER_REAL */, it, 0)
		// Never restarted, SA_RESTART or not (signal(7)).
		if n, errno := g.Call(unix.SYS_EPOLL_WAIT, ep, g.Alloc(12), 1, ^uintptr(0)); errno != unix.EINTR {
			t.Errorf("epoll_wait interrupted by a handler = %d, %v; want EINTR", n, errno)
		}
		g.Call(unix.SYS_SETITIMER, 0, g.Alloc(32), 0)
	}, kerneltest.Init{})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

func atFDCWD() uintptr {
	v := unix.AT_FDCWD
	return uintptr(v)
}

// TestAddingAReadyFileWakesAThreadInEpollWait: EPOLL_CTL_ADD (and
// EPOLL_CTL_MOD) of a file that is ready already wakes a thread waiting
// in epoll_wait, as Linux's ep_insert does. Go's netpoller waits so while
// another thread adds a socket whose loopback connect has completed; the
// wait slept through the event until its timeout and Go's net tests hung.
func TestAddingAReadyFileWakesAThreadInEpollWait(t *testing.T) {
	run(t, func(g *fake.Guest) {
		ep := newEpoll(t, g)
		for _, op := range []uintptr{unix.EPOLL_CTL_ADD, unix.EPOLL_CTL_MOD} {
			name := map[uintptr]string{unix.EPOLL_CTL_ADD: "EPOLL_CTL_ADD", unix.EPOLL_CTL_MOD: "EPOLL_CTL_MOD"}[op]
			r, w := newPipe(t, g)
			write(g, w, "x")
			if op == unix.EPOLL_CTL_MOD {
				ctl(g, ep, unix.EPOLL_CTL_ADD, r, unix.EPOLLOUT, 7) // a read end is never writable
			}
			waited := make(chan time.Duration, 1)
			_, tidAddr, errno := g.Thread(func(g *fake.Guest) {
				start := time.Now()
				got := wait(t, g, ep, 4, 2*time.Second)
				if len(got) != 1 || got[0].data != 7 {
					t.Errorf("%s: epoll_wait woken with %v, want the pipe's event", name, got)
				}
				waited <- time.Since(start)
			})
			if errno != 0 {
				t.Fatalf("clone: %v", errno)
			}
			// Let the thread go to sleep in epoll_wait first.
			g.Compute(50 * time.Millisecond)
			if errno := ctl(g, ep, op, r, unix.EPOLLIN, 7); errno != 0 {
				t.Errorf("%s: %v", name, errno)
			}
			g.Join(tidAddr)
			if d := <-waited; d > time.Second {
				t.Errorf("%s: epoll_wait slept %v after the ready file was added; want a prompt wake-up", name, d)
			}
			ctl(g, ep, unix.EPOLL_CTL_DEL, r, 0, 0)
			g.Call(unix.SYS_CLOSE, r)
			g.Call(unix.SYS_CLOSE, w)
		}
	})
}
