package syscalls

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// The rules of select(2), pselect6 and poll(2): how the fd_sets and the
// pollfd array are read and rewritten, and the timeouts written back.

// fdSet puts an fd_set of FD_SETSIZE bits in new guest memory, with fds set.
func fdSet(g *fake.Guest, fds ...int) uintptr {
	b := make([]byte, unix.FD_SETSIZE/8)
	for _, fd := range fds {
		b[fd/8] |= 1 << (fd % 8)
	}
	addr := g.Alloc(uintptr(len(b)))
	g.Write(addr, b)
	return addr
}

// fdSetMembers reads back the fds set in the fd_set at addr.
func fdSetMembers(g *fake.Guest, addr uintptr) []int {
	b := make([]byte, unix.FD_SETSIZE/8)
	g.Read(addr, b)
	var fds []int
	for fd := range unix.FD_SETSIZE {
		if b[fd/8]&(1<<(fd%8)) != 0 {
			fds = append(fds, fd)
		}
	}
	return fds
}

// timeval and timespec put a timeout in new guest memory; readTimeout
// reads one back (both are two 64-bit words).
func timeval(g *fake.Guest, d time.Duration) uintptr {
	addr := g.Alloc(16)
	g.WriteU64(addr, uint64(d/time.Second))
	g.WriteU64(addr+8, uint64(d%time.Second/time.Microsecond))
	return addr
}

func timespec(g *fake.Guest, d time.Duration) uintptr {
	addr := g.Alloc(16)
	g.WriteU64(addr, uint64(d/time.Second))
	g.WriteU64(addr+8, uint64(d%time.Second))
	return addr
}

func readTimeout(g *fake.Guest, addr uintptr, unit time.Duration) time.Duration {
	return time.Duration(g.ReadU64(addr))*time.Second + time.Duration(g.ReadU64(addr+8))*unit
}

// runWithLimit runs prog as init with RLIMIT_NOFILE at n.
func runWithLimit(t *testing.T, n uint64, prog fake.Program) {
	t.Helper()
	s := kerneltest.New(t, NewTable())
	s.Start(prog, kerneltest.Init{Limits: map[int]kernel.Limit{unix.RLIMIT_NOFILE: {Cur: n, Max: n}}})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

func TestSelectRewritesEachSetToItsReadyFDs(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		r, w := guestPipe(t, g, 0)
		g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
		rd, wr, ex := fdSet(g, int(r), int(w)), fdSet(g, int(r), int(w)), fdSet(g, int(r))
		n, errno := g.Call(unix.SYS_SELECT, w+1, rd, wr, ex, timeval(g, 0))
		expectRet(t, "select of a pipe with data", n, errno, 2, 0)
		if got := fdSetMembers(g, rd); !slices.Equal(got, []int{int(r)}) {
			t.Errorf("readfds after select = %v, want [%d] (the write end is never readable)", got, r)
		}
		if got := fdSetMembers(g, wr); !slices.Equal(got, []int{int(w)}) {
			t.Errorf("writefds after select = %v, want [%d]", got, w)
		}
		if got := fdSetMembers(g, ex); len(got) != 0 {
			t.Errorf("exceptfds after select = %v, want none", got)
		}
		// One fd ready in two sets counts twice.
		rd, wr = fdSet(g, int(r)), fdSet(g, int(w))
		g.Call(unix.SYS_DUP2, w, r+10)
		wr = fdSet(g, int(w), int(r+10))
		n, errno = g.Call(unix.SYS_SELECT, r+11, rd, wr, 0, timeval(g, 0))
		expectRet(t, "select counting each set bit", n, errno, 3, 0)
	})
}

func TestSelectOfAClosedFDIsEBADFAndStillWritesTheTimeoutBack(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		r, _ := guestPipe(t, g, 0)
		g.Call(unix.SYS_CLOSE, r)
		for _, set := range []int{1, 2, 3} {
			sets := [3]uintptr{}
			sets[set-1] = fdSet(g, int(r))
			tv := timeval(g, 5*time.Second)
			n, errno := g.Call(unix.SYS_SELECT, r+1, sets[0], sets[1], sets[2], tv)
			expectErrno(t, "select of a closed fd", n, errno, unix.EBADF)
			if left := readTimeout(g, tv, time.Microsecond); left >= 5*time.Second || left < 4*time.Second {
				t.Errorf("timeout after EBADF = %v, want a little under 5s", left)
			}
		}
	})
}

func TestSelectWritesTheTimeLeftBack(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		r, w := guestPipe(t, g, 0)
		const wait = 30 * time.Millisecond
		tv := timeval(g, wait)
		start := time.Now()
		n, errno := g.Call(unix.SYS_SELECT, r+1, fdSet(g, int(r)), 0, 0, tv)
		expectRet(t, "select that times out", n, errno, 0, 0)
		if el := time.Since(start); el < wait {
			t.Errorf("select returned after %v, before its %v timeout", el, wait)
		}
		if left := readTimeout(g, tv, time.Microsecond); left != 0 {
			t.Errorf("timeval after a timeout = %v, want 0", left)
		}
		ts := timespec(g, wait)
		n, errno = g.Call(unix.SYS_PSELECT6, r+1, fdSet(g, int(r)), 0, 0, ts, 0)
		expectRet(t, "pselect6 that times out", n, errno, 0, 0)
		if left := readTimeout(g, ts, time.Nanosecond); left != 0 {
			t.Errorf("timespec after a timeout = %v, want 0", left)
		}
		g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
		tv = timeval(g, 10*time.Second)
		n, errno = g.Call(unix.SYS_SELECT, r+1, fdSet(g, int(r)), 0, 0, tv)
		expectRet(t, "select of a readable pipe", n, errno, 1, 0)
		if left := readTimeout(g, tv, time.Microsecond); left >= 10*time.Second || left < 9*time.Second {
			t.Errorf("timeval after an early return = %v, want a little under 10s", left)
		}
		// A timeout in read-only memory is left as it is, and the call
		// still succeeds.
		ro := timespec(g, 10*time.Second) &^ 4095
		g.Call(unix.SYS_MPROTECT, ro, 4096, unix.PROT_READ)
		n, errno = g.Call(unix.SYS_PSELECT6, r+1, fdSet(g, int(r)), 0, 0, ro, 0)
		expectRet(t, "pselect6 with a read-only timeout", n, errno, 1, 0)
		n, errno = g.Call(unix.SYS_SELECT, r+1, fdSet(g, int(r)), 0, 0, ro)
		expectRet(t, "select with a read-only timeout", n, errno, 1, 0)
	})
}

func TestSelectWaitsOnlyForTheEventsOfItsSets(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		// A read end whose writer is gone reports POLLHUP, which counts
		// as readable but not as writable: in writefds alone it never
		// makes select return.
		r, w := guestPipe(t, g, 0)
		g.Call(unix.SYS_CLOSE, w)
		const wait = 30 * time.Millisecond
		tv := timeval(g, wait)
		wr := fdSet(g, int(r))
		start := time.Now()
		n, errno := g.Call(unix.SYS_SELECT, r+1, 0, wr, 0, tv)
		expectRet(t, "select of a hung-up read end in writefds", n, errno, 0, 0)
		if el := time.Since(start); el < wait {
			t.Errorf("select returned after %v with nothing ready, before its %v timeout", el, wait)
		}
		if got := fdSetMembers(g, wr); len(got) != 0 {
			t.Errorf("writefds = %v, want none", got)
		}
		rd := fdSet(g, int(r))
		n, errno = g.Call(unix.SYS_SELECT, r+1, rd, 0, 0, timeval(g, time.Second))
		expectRet(t, "select of a hung-up read end in readfds", n, errno, 1, 0)
	})
}

func TestSelectTakesMoreFDsThanRLIMITNOFILEAndIgnoresBitsPastTheTable(t *testing.T) {
	// Linux bounds nfds by the size of the fd table, not by the limit:
	// select(FD_SETSIZE, ...) works under a low ulimit -n.
	runWithLimit(t, 64, func(g *fake.Guest) {
		r, w := guestPipe(t, g, 0)
		g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
		rd := fdSet(g, int(r))
		n, errno := g.Call(unix.SYS_SELECT, unix.FD_SETSIZE, rd, 0, 0, timeval(g, 0))
		expectRet(t, "select(FD_SETSIZE) under RLIMIT_NOFILE 64", n, errno, 1, 0)
		// A bit for an fd far past any the table holds is not looked at,
		// and not cleared.
		far := fdSet(g, 800)
		n, errno = g.Call(unix.SYS_SELECT, unix.FD_SETSIZE, far, 0, 0, timeval(g, 0))
		expectRet(t, "select of a bit past the fd table", n, errno, 0, 0)
		if got := fdSetMembers(g, far); !slices.Equal(got, []int{800}) {
			t.Errorf("readfds after select = %v, want [800] left alone", got)
		}
		n, errno = g.Call(unix.SYS_SELECT, ^uintptr(0), 0, 0, 0, timeval(g, 0))
		expectErrno(t, "select with nfds -1", n, errno, unix.EINVAL)
	})
}

func TestSelectRefusesBadPointersAndTimeouts(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		r, _ := guestPipe(t, g, 0)
		for i := range 3 {
			sets := [3]uintptr{}
			sets[i] = unmappedAddr
			n, errno := g.Call(unix.SYS_SELECT, r+1, sets[0], sets[1], sets[2], timeval(g, 0))
			expectErrno(t, "select of an unmapped fd_set", n, errno, unix.EFAULT)
		}
		n, errno := g.Call(unix.SYS_SELECT, r+1, fdSet(g, int(r)), 0, 0, unmappedAddr)
		expectErrno(t, "select of an unmapped timeval", n, errno, unix.EFAULT)
		for _, tv := range [][2]int64{{0, 1_000_000}, {0, -1}, {-1, 0}} {
			addr := g.Alloc(16)
			g.WriteU64(addr, uint64(tv[0]))
			g.WriteU64(addr+8, uint64(tv[1]))
			n, errno := g.Call(unix.SYS_SELECT, r+1, fdSet(g, int(r)), 0, 0, addr)
			expectErrno(t, fmt.Sprintf("select with timeval %v", tv), n, errno, unix.EINVAL)
		}
		ts := g.Alloc(16)
		g.WriteU64(ts, 0)
		g.WriteU64(ts+8, 1_000_000_000)
		n, errno = g.Call(unix.SYS_PSELECT6, r+1, fdSet(g, int(r)), 0, 0, ts, 0)
		expectErrno(t, "pselect6 with tv_nsec 1e9", n, errno, unix.EINVAL)
	})
}

func TestPselect6TakesOnlyAnEightByteSigset(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		r, w := guestPipe(t, g, 0)
		g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
		mask := g.Alloc(8)
		sigArg := func(ptr uintptr, size uint64) uintptr {
			a := g.Alloc(16)
			g.WriteU64(a, uint64(ptr))
			g.WriteU64(a+8, size)
			return a
		}
		for _, tc := range []struct {
			name string
			arg  uintptr
			want unix.Errno
		}{
			{"sigset size 8", sigArg(mask, 8), 0},
			{"sigset size 4", sigArg(mask, 4), unix.EINVAL},
			{"sigset size 16", sigArg(mask, 16), unix.EINVAL},
			{"no sigset, any size", sigArg(0, 3), 0},
			{"unmapped sigset", sigArg(unmappedAddr, 8), unix.EFAULT},
			{"unmapped sigset argument", unmappedAddr, unix.EFAULT},
		} {
			n, errno := g.Call(unix.SYS_PSELECT6, r+1, fdSet(g, int(r)), 0, 0, timespec(g, 0), tc.arg)
			expectRet(t, "pselect6 with "+tc.name, n, errno, 1, tc.want)
		}
	})
}

// pollfds writes an array of struct pollfd; revents reads entry i's.
func pollfds(g *fake.Guest, fds ...[2]int) uintptr {
	addr := g.Alloc(uintptr(8 * len(fds)))
	for i, p := range fds {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(int32(p[0])))
		binary.LittleEndian.PutUint16(b[4:], uint16(p[1]))
		binary.LittleEndian.PutUint16(b[6:], 0xffff) // revents: garbage the call replaces
		g.Write(addr+uintptr(8*i), b)
	}
	return addr
}

func revents(g *fake.Guest, arr uintptr, i int) int {
	b := make([]byte, 2)
	g.Read(arr+uintptr(8*i+6), b)
	return int(binary.LittleEndian.Uint16(b))
}

func TestPollReportsPOLLNVALForAClosedFDAndNothingForANegativeOne(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		_, w := guestPipe(t, g, 0)
		arr := pollfds(g, [2]int{50, unix.POLLIN}, [2]int{-1, unix.POLLIN}, [2]int{int(w), unix.POLLOUT})
		n, errno := g.Call(unix.SYS_POLL, arr, 3, 0)
		expectRet(t, "poll", n, errno, 2, 0)
		if got := revents(g, arr, 0); got != unix.POLLNVAL {
			t.Errorf("revents of a closed fd = %#x, want POLLNVAL", got)
		}
		if got := revents(g, arr, 1); got != 0 {
			t.Errorf("revents of fd -1 = %#x, want 0", got)
		}
		if got := revents(g, arr, 2); got != unix.POLLOUT {
			t.Errorf("revents of an empty pipe's write end = %#x, want POLLOUT", got)
		}
	})
}

func TestPollAlwaysReportsPOLLHUPAndPOLLERR(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		r, w := guestPipe(t, g, 0)
		g.Call(unix.SYS_CLOSE, w)
		arr := pollfds(g, [2]int{int(r), 0})
		n, errno := g.Call(unix.SYS_POLL, arr, 1, 0)
		expectRet(t, "poll of a hung-up read end, no events asked", n, errno, 1, 0)
		if got := revents(g, arr, 0); got != unix.POLLHUP {
			t.Errorf("revents = %#x, want POLLHUP", got)
		}
		r, w = guestPipe(t, g, 0)
		g.Call(unix.SYS_CLOSE, r)
		arr = pollfds(g, [2]int{int(w), unix.POLLIN})
		n, errno = g.Call(unix.SYS_POLL, arr, 1, 0)
		expectRet(t, "poll of a write end with no reader", n, errno, 1, 0)
		if got := revents(g, arr, 0); got != unix.POLLERR {
			t.Errorf("revents = %#x, want POLLERR", got)
		}
	})
}

func TestPollRefusesMoreFDsThanRLIMITNOFILE(t *testing.T) {
	runWithLimit(t, 64, func(g *fake.Guest) {
		arr := g.Alloc(8 * 65)
		for i := range 65 {
			g.WriteU32(arr+uintptr(8*i), ^uint32(0)) // fd -1
		}
		n, errno := g.Call(unix.SYS_POLL, arr, 64, 0)
		expectRet(t, "poll of RLIMIT_NOFILE entries", n, errno, 0, 0)
		n, errno = g.Call(unix.SYS_POLL, arr, 65, 0)
		expectErrno(t, "poll of RLIMIT_NOFILE+1 entries", n, errno, unix.EINVAL)
		n, errno = g.Call(unix.SYS_POLL, unmappedAddr, 1, 0)
		expectErrno(t, "poll of an unmapped array", n, errno, unix.EFAULT)
	})
}

func TestPpollWritesTheTimeLeftBackAndTakesOnlyAnEightByteSigset(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		r, _ := guestPipe(t, g, 0)
		ts := timespec(g, 20*time.Millisecond)
		n, errno := g.Call(unix.SYS_PPOLL, pollfds(g, [2]int{int(r), unix.POLLIN}), 1, ts, 0, 8)
		expectRet(t, "ppoll that times out", n, errno, 0, 0)
		if left := readTimeout(g, ts, time.Nanosecond); left != 0 {
			t.Errorf("timespec after a timeout = %v, want 0", left)
		}
		mask := g.Alloc(8)
		for _, size := range []uintptr{0, 4, 16} {
			n, errno = g.Call(unix.SYS_PPOLL, pollfds(g, [2]int{int(r), unix.POLLIN}), 1, timespec(g, 0), mask, size)
			expectErrno(t, "ppoll with a sigset of the wrong size", n, errno, unix.EINVAL)
		}
		n, errno = g.Call(unix.SYS_PPOLL, pollfds(g, [2]int{int(r), unix.POLLIN}), 1, timespec(g, 0), unmappedAddr, 8)
		expectErrno(t, "ppoll with an unmapped sigset", n, errno, unix.EFAULT)
	})
}
