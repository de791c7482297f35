package kernel_test

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// FUTEX_WAKE_OP's operations and comparisons (linux/futex.h).
const (
	futexOpSet        = 0
	futexOpAdd        = 1
	futexOpOr         = 2
	futexOpAndn       = 3
	futexOpXor        = 4
	futexOpOpargShift = 8
	futexOpCmpEq      = 0
	futexOpCmpLt      = 2
	futexOpCmpGt      = 4
)

// futexOp is the FUTEX_OP macro: arguments are 12-bit fields.
func futexOp(op, oparg, cmp, cmparg uint32) uintptr {
	return uintptr((op&0xf)<<28 | (cmp&0xf)<<24 | (oparg&0xfff)<<12 | cmparg&0xfff)
}

const private = linuxabi.FUTEX_PRIVATE_FLAG

func futex(g *fake.Guest, addr uintptr, op int, val uint32, timeout, addr2 uintptr, val3 uint32) (uintptr, unix.Errno) {
	return g.Call(unix.SYS_FUTEX, addr, uintptr(op), uintptr(val), timeout, addr2, uintptr(val3))
}

// waiters starts n threads that each wait on the word at addr (which must
// hold 0) with op and bitset, and returns once all are queued. Each
// thread's errno goes to its slot of errs (-1 until it returns).
func waiters(t *testing.T, s *kerneltest.Sandbox, g *fake.Guest, addr uintptr, n int, op int, bitset uint32) (tidAddrs []uintptr, errs []atomic.Int32) {
	t.Helper()
	errs = make([]atomic.Int32, n)
	before := kernel.FutexWaiters(s.Kernel)
	for i := 0; i < n; i++ {
		errs[i].Store(-1)
		_, tidAddr, errno := g.Thread(func(g *fake.Guest) {
			_, errno := futex(g, addr, op, 0, 0, 0, bitset)
			errs[i].Store(int32(errno))
		})
		if errno != 0 {
			t.Errorf("thread: %v", errno)
		}
		tidAddrs = append(tidAddrs, tidAddr)
		awaitWaiters(t, s, g, before+i+1)
	}
	return tidAddrs, errs
}

// awaitWaiters returns once n tasks wait on futexes.
func awaitWaiters(t *testing.T, s *kerneltest.Sandbox, g *fake.Guest, n int) {
	t.Helper()
	if !within(g, func() bool { return kernel.FutexWaiters(s.Kernel) >= n }) {
		t.Errorf("%d futex waiters, want %d", kernel.FutexWaiters(s.Kernel), n)
	}
}

func joinAll(g *fake.Guest, tidAddrs []uintptr) {
	for _, a := range tidAddrs {
		g.Join(a)
	}
}

func TestFutexWaitIsEAGAINWhenTheWordDiffers(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		w := g.Alloc(4)
		g.WriteU32(w, 3)
		r, errno := futex(g, w, linuxabi.FUTEX_WAIT|private, 2, 0, 0, 0)
		expectErrno(t, "FUTEX_WAIT for 2 on a word holding 3", r, errno, unix.EAGAIN)
		r, errno = futex(g, w, linuxabi.FUTEX_WAIT_BITSET, 2, 0, 0, 1)
		expectErrno(t, "FUTEX_WAIT_BITSET for 2 on a word holding 3", r, errno, unix.EAGAIN)
	})
}

func TestFutexWakeWakesAtMostAsManyAsAsked(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		w := g.Alloc(4)
		tids, errs := waiters(t, s, g, w, 3, linuxabi.FUTEX_WAIT|private, 0)
		r, errno := futex(g, w, linuxabi.FUTEX_WAKE|private, 2, 0, 0, 0)
		expect(t, "FUTEX_WAKE(2) with 3 waiters", r, errno, 2, 0)
		if n := kernel.FutexWaiters(s.Kernel); n != 1 {
			t.Errorf("%d waiters left, want 1", n)
		}
		r, errno = futex(g, w, linuxabi.FUTEX_WAKE|private, 10, 0, 0, 0)
		expect(t, "FUTEX_WAKE(10) with 1 waiter", r, errno, 1, 0)
		joinAll(g, tids)
		for i := range errs {
			if e := errs[i].Load(); e != 0 {
				t.Errorf("woken waiter %d returned %v, want 0", i, unix.Errno(e))
			}
		}
	})
}

func TestFutexWakeOfZeroOrANegativeCountWakesOne(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		w := g.Alloc(4)
		tids, _ := waiters(t, s, g, w, 3, linuxabi.FUTEX_WAIT|private, 0)
		r, errno := futex(g, w, linuxabi.FUTEX_WAKE|private, 0, 0, 0, 0)
		expect(t, "FUTEX_WAKE(0)", r, errno, 1, 0)
		r, errno = futex(g, w, linuxabi.FUTEX_WAKE|private, ^uint32(0), 0, 0, 0)
		expect(t, "FUTEX_WAKE(-1)", r, errno, 1, 0)
		futex(g, w, linuxabi.FUTEX_WAKE|private, 1, 0, 0, 0)
		joinAll(g, tids)
	})
}

func TestFutexWakeBitsetWakesOnlyWaitersWhoseBitsetsMeetIt(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		w := g.Alloc(4)
		a, aErr := waiters(t, s, g, w, 1, linuxabi.FUTEX_WAIT_BITSET|private, 0b01)
		b, bErr := waiters(t, s, g, w, 1, linuxabi.FUTEX_WAIT_BITSET|private, 0b10)
		r, errno := futex(g, w, linuxabi.FUTEX_WAKE_BITSET|private, 10, 0, 0, 0b110)
		expect(t, "FUTEX_WAKE_BITSET(0b110) with waiters of 0b01 and 0b10", r, errno, 1, 0)
		joinAll(g, b)
		if aErr[0].Load() != -1 || bErr[0].Load() != 0 {
			t.Errorf("the 0b01 waiter returned %d, the 0b10 one %d; want only the second woken", aErr[0].Load(), bErr[0].Load())
		}
		// A plain wake matches every bitset.
		r, errno = futex(g, w, linuxabi.FUTEX_WAKE|private, 10, 0, 0, 0)
		expect(t, "FUTEX_WAKE of the 0b01 waiter", r, errno, 1, 0)
		joinAll(g, a)
	})
}

func TestFutexBitsetOfZeroIsEINVAL(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		w := g.Alloc(4)
		r, errno := futex(g, w, linuxabi.FUTEX_WAIT_BITSET|private, 0, 0, 0, 0)
		expectErrno(t, "FUTEX_WAIT_BITSET with bitset 0", r, errno, unix.EINVAL)
		r, errno = futex(g, w, linuxabi.FUTEX_WAKE_BITSET|private, 1, 0, 0, 0)
		expectErrno(t, "FUTEX_WAKE_BITSET with bitset 0", r, errno, unix.EINVAL)
	})
}

func TestFutexRequeueWakesSomeAndMovesOthersToTheSecondWord(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		w1, w2 := g.Alloc(4), g.Alloc(4)
		tids, _ := waiters(t, s, g, w1, 3, linuxabi.FUTEX_WAIT|private, 0)
		// nr_requeue goes where the timeout pointer would.
		r, errno := futex(g, w1, linuxabi.FUTEX_REQUEUE|private, 1, 1, w2, 0)
		expect(t, "FUTEX_REQUEUE(wake 1, move 1)", r, errno, 2, 0)
		r, errno = futex(g, w2, linuxabi.FUTEX_WAKE|private, 10, 0, 0, 0)
		expect(t, "FUTEX_WAKE on the second word", r, errno, 1, 0)
		r, errno = futex(g, w1, linuxabi.FUTEX_WAKE|private, 10, 0, 0, 0)
		expect(t, "FUTEX_WAKE on the first word", r, errno, 1, 0)
		joinAll(g, tids)
	})
}

func TestFutexCmpRequeueChecksTheFirstWordFirst(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		w1, w2 := g.Alloc(4), g.Alloc(4)
		tids, _ := waiters(t, s, g, w1, 2, linuxabi.FUTEX_WAIT|private, 0)
		r, errno := futex(g, w1, linuxabi.FUTEX_CMP_REQUEUE|private, 0, 2, w2, 5)
		expectErrno(t, "FUTEX_CMP_REQUEUE expecting 5 on a word holding 0", r, errno, unix.EAGAIN)
		r, errno = futex(g, w1, linuxabi.FUTEX_CMP_REQUEUE|private, ^uint32(0), 2, w2, 0)
		expectErrno(t, "FUTEX_CMP_REQUEUE waking -1", r, errno, unix.EINVAL)
		r, errno = futex(g, w1, linuxabi.FUTEX_CMP_REQUEUE|private, 0, ^uintptr(0), w2, 0)
		expectErrno(t, "FUTEX_CMP_REQUEUE moving -1", r, errno, unix.EINVAL)
		r, errno = futex(g, w2, linuxabi.FUTEX_WAKE|private, 10, 0, 0, 0)
		expect(t, "FUTEX_WAKE on the second word after refused requeues", r, errno, 0, 0)
		r, errno = futex(g, w1, linuxabi.FUTEX_CMP_REQUEUE|private, 0, 2, w2, 0)
		expect(t, "FUTEX_CMP_REQUEUE(wake 0, move 2) with the word matching", r, errno, 2, 0)
		r, errno = futex(g, w2, linuxabi.FUTEX_WAKE|private, 10, 0, 0, 0)
		expect(t, "FUTEX_WAKE on the second word", r, errno, 2, 0)
		joinAll(g, tids)
	})
}

func TestFutexWakeOpChangesTheSecondWordAndWakesOnItsOldValue(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		w1, w2 := g.Alloc(4), g.Alloc(4)
		t1, _ := waiters(t, s, g, w1, 1, linuxabi.FUTEX_WAIT|private, 0)
		t2, _ := waiters(t, s, g, w2, 1, linuxabi.FUTEX_WAIT|private, 0)
		g.WriteU32(w2, 10)
		// The argument is a signed 12-bit number: 0xfff adds -1.
		r, errno := futex(g, w1, linuxabi.FUTEX_WAKE_OP|private, 1, 1, w2, uint32(futexOp(futexOpAdd, 0xfff, futexOpCmpEq, 10)))
		expect(t, "FUTEX_WAKE_OP(ADD -1, old == 10) with a waiter on each word", r, errno, 2, 0)
		if v := g.ReadU32(w2); v != 9 {
			t.Errorf("second word %d after adding 0xfff to 10, want 9", v)
		}
		joinAll(g, append(t1, t2...))

		// So is the comparison's: 0xfff is -1, which 0 exceeds.
		g.WriteU32(w2, 0)
		t2, _ = waiters(t, s, g, w2, 1, linuxabi.FUTEX_WAIT|private, 0)
		r, errno = futex(g, w1, linuxabi.FUTEX_WAKE_OP|private, 1, 1, w2, uint32(futexOp(futexOpSet, 0, futexOpCmpGt, 0xfff)))
		expect(t, "FUTEX_WAKE_OP(old 0 > -1)", r, errno, 1, 0)
		joinAll(g, t2)

		t2, _ = waiters(t, s, g, w2, 1, linuxabi.FUTEX_WAIT|private, 0)
		r, errno = futex(g, w1, linuxabi.FUTEX_WAKE_OP|private, 1, 1, w2, uint32(futexOp(futexOpSet, 0, futexOpCmpLt, 0xfff)))
		expect(t, "FUTEX_WAKE_OP(old 0 < -1)", r, errno, 0, 0)
		futex(g, w2, linuxabi.FUTEX_WAKE|private, 1, 0, 0, 0)
		joinAll(g, t2)

		g.WriteU32(w2, 0)
		t2, _ = waiters(t, s, g, w2, 1, linuxabi.FUTEX_WAIT|private, 0)
		r, errno = futex(g, w1, linuxabi.FUTEX_WAKE_OP|private, 1, 1, w2, uint32(futexOp(futexOpSet, 1, futexOpCmpGt, 0)))
		expect(t, "FUTEX_WAKE_OP(old 0 > 0)", r, errno, 0, 0)
		futex(g, w2, linuxabi.FUTEX_WAKE|private, 1, 0, 0, 0)
		joinAll(g, t2)
	})
}

func TestFutexWakeOpOperations(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		w1, w2 := g.Alloc(4), g.Alloc(4)
		for _, tc := range []struct {
			name       string
			op, oparg  uint32
			old, want  uint32
			errnoWant  unix.Errno
			unchanged  bool
			comparison uint32
		}{
			{name: "SET", op: futexOpSet, oparg: 5, old: 1, want: 5},
			{name: "ADD", op: futexOpAdd, oparg: 5, old: 1, want: 6},
			{name: "OR", op: futexOpOr, oparg: 0b100, old: 0b011, want: 0b111},
			{name: "ANDN", op: futexOpAndn, oparg: 0b010, old: 0b111, want: 0b101},
			{name: "XOR", op: futexOpXor, oparg: 0b110, old: 0b011, want: 0b101},
			{name: "SET 1<<4", op: futexOpSet | futexOpOpargShift, oparg: 4, old: 0, want: 1 << 4},
			// Linux takes a shift beyond 31 modulo 32 rather than refusing it.
			{name: "SET 1<<33", op: futexOpSet | futexOpOpargShift, oparg: 33, old: 0, want: 1 << 1},
			{name: "operation 7", op: 7, oparg: 1, old: 3, errnoWant: unix.ENOSYS, unchanged: true},
			// An unknown comparison is found after the operation is done.
			{name: "comparison 7", op: futexOpSet, oparg: 9, old: 3, want: 9, errnoWant: unix.ENOSYS, comparison: 7},
		} {
			g.WriteU32(w2, tc.old)
			_, errno := futex(g, w1, linuxabi.FUTEX_WAKE_OP|private, 1, 1, w2, uint32(futexOp(tc.op, tc.oparg, tc.comparison, 0)))
			if errno != tc.errnoWant {
				t.Errorf("%s: errno %v, want %v", tc.name, errno, tc.errnoWant)
			}
			want := tc.want
			if tc.unchanged {
				want = tc.old
			}
			if v := g.ReadU32(w2); v != want {
				t.Errorf("%s on %#x: %#x, want %#x", tc.name, tc.old, v, want)
			}
		}
	})
}

func TestFutexWakeOpWithAnUnknownComparisonWakesNoOne(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		w1, w2 := g.Alloc(4), g.Alloc(4)
		tids, _ := waiters(t, s, g, w1, 1, linuxabi.FUTEX_WAIT|private, 0)
		r, errno := futex(g, w1, linuxabi.FUTEX_WAKE_OP|private, 1, 1, w2, uint32(futexOp(futexOpSet, 1, 7, 0)))
		expectErrno(t, "FUTEX_WAKE_OP with comparison 7", r, errno, unix.ENOSYS)
		r, errno = futex(g, w1, linuxabi.FUTEX_WAKE|private, 1, 0, 0, 0)
		expect(t, "FUTEX_WAKE of the waiter the failed FUTEX_WAKE_OP left", r, errno, 1, 0)
		joinAll(g, tids)
	})
}

func TestFutexWaitTimesOut(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		w := g.Alloc(4)
		start := time.Now()
		r, errno := futex(g, w, linuxabi.FUTEX_WAIT|private, 0, timespec(g, 20*time.Millisecond), 0, 0)
		expectErrno(t, "FUTEX_WAIT with a 20 ms timeout", r, errno, unix.ETIMEDOUT)
		if d := time.Since(start); d < 20*time.Millisecond {
			t.Errorf("timed out after %v, before its 20 ms", d)
		}
		// FUTEX_WAIT_BITSET's timeout is an absolute CLOCK_MONOTONIC time:
		// one already past gives up at once.
		now := g.Alloc(16)
		g.Call(unix.SYS_CLOCK_GETTIME, unix.CLOCK_MONOTONIC, now)
		past := time.Duration(g.ReadU64(now))*time.Second + time.Duration(g.ReadU64(now+8)) - 10*time.Millisecond
		start = time.Now()
		r, errno = futex(g, w, linuxabi.FUTEX_WAIT_BITSET|private, 0, timespec(g, past), 0, linuxabi.FUTEX_BITSET_MATCH_ANY)
		expectErrno(t, "FUTEX_WAIT_BITSET until a past time", r, errno, unix.ETIMEDOUT)
		if d := time.Since(start); d > time.Second/2 {
			t.Errorf("a wait until a past time took %v", d)
		}
		bad := g.Alloc(16)
		g.WriteU64(bad+8, 1e9)
		r, errno = futex(g, w, linuxabi.FUTEX_WAIT|private, 0, bad, 0, 0)
		expectErrno(t, "FUTEX_WAIT with tv_nsec 1e9", r, errno, unix.EINVAL)
	})
}

func TestFutexWaitInterruptedByAHandler(t *testing.T) {
	for _, tc := range []struct {
		name    string
		flags   uint64
		timeout time.Duration
		want    unix.Errno // 0: restarted, then woken
	}{
		{"SA_RESTART restarts it", linuxabi.SA_RESTART, 0, 0},
		{"without SA_RESTART it is EINTR", 0, 0, unix.EINTR},
		// A timed wait is not restarted with its old timeout.
		{"with a timeout it is EINTR even with SA_RESTART", linuxabi.SA_RESTART, time.Hour, unix.EINTR},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSandbox(t)
			runInit(t, s, func(g *fake.Guest) {
				var handled atomic.Bool
				g.Sigaction(unix.SIGUSR1, fake.SigAction{Handler: s.Platform.Handler(func(*fake.Guest) { handled.Store(true) }),
					Flags: tc.flags})
				w := g.Alloc(4)
				var ret atomic.Int32
				ret.Store(-1)
				var tid atomic.Int32
				_, tidAddr, _ := g.Thread(func(g *fake.Guest) {
					tid.Store(int32(gettid(g)))
					var ts uintptr
					if tc.timeout != 0 {
						ts = timespec(g, tc.timeout)
					}
					_, errno := futex(g, w, linuxabi.FUTEX_WAIT|private, 0, ts, 0, 0)
					ret.Store(int32(errno))
				})
				awaitWaiters(t, s, g, 1)
				g.Call(unix.SYS_TGKILL, uintptr(getpid(g)), uintptr(tid.Load()), uintptr(unix.SIGUSR1))
				if !within(g, handled.Load) {
					t.Errorf("the handler did not run")
				}
				if tc.want == 0 {
					awaitWaiters(t, s, g, 1) // waiting again
					if r := ret.Load(); r != -1 {
						t.Errorf("the wait returned %v, want it restarted", unix.Errno(r))
					}
					futex(g, w, linuxabi.FUTEX_WAKE|private, 1, 0, 0, 0)
				}
				g.Join(tidAddr)
				if r := unix.Errno(ret.Load()); r != tc.want {
					t.Errorf("the wait returned %v, want %v", r, tc.want)
				}
			})
		})
	}
}

// mapShared maps a page of shared anonymous memory.
func mapShared(t *testing.T, g *fake.Guest) uintptr {
	t.Helper()
	addr, errno := g.Call(unix.SYS_MMAP, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
	if errno != 0 {
		t.Errorf("mmap: %v", errno)
	}
	return addr
}

func TestASharedFutexMeetsAcrossProcessesOnSharedMemory(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		w := mapShared(t, g)
		child := fork(t, g, func(g *fake.Guest) {
			if _, errno := futex(g, w, linuxabi.FUTEX_WAIT, 0, 0, 0, 0); errno != 0 {
				t.Errorf("the child's wait: %v", errno)
			}
		})
		awaitWaiters(t, s, g, 1)
		r, errno := futex(g, w, linuxabi.FUTEX_WAKE, 1, 0, 0, 0)
		expect(t, "a shared FUTEX_WAKE of another process's waiter on shared memory", r, errno, 1, 0)
		waitExit(t, g, child, 0)
	})
}

func TestFutexesOfDifferentProcessesDoNotMeetUnlessSharedOnSharedMemory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		private bool // the futex operations'
		shared  bool // the mapping's
	}{
		{"private operations on shared memory", true, true},
		{"shared operations on private memory", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSandbox(t)
			runInit(t, s, func(g *fake.Guest) {
				w := g.Alloc(4)
				if tc.shared {
					w = mapShared(t, g)
				}
				op := 0
				if tc.private {
					op = private
				}
				child := fork(t, g, func(g *fake.Guest) {
					futex(g, w, linuxabi.FUTEX_WAIT|op, 0, 0, 0, 0)
					t.Errorf("the child's wait returned")
				})
				awaitWaiters(t, s, g, 1)
				r, errno := futex(g, w, linuxabi.FUTEX_WAKE|op, 1, 0, 0, 0)
				expect(t, "FUTEX_WAKE of another process's waiter", r, errno, 0, 0)
				kill(g, child, unix.SIGKILL)
				waitSignaled(t, g, child, unix.SIGKILL)
			})
		})
	}
}

func TestFutexAddressesMustBeAlignedAndMapped(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		w := g.Alloc(8)
		r, errno := futex(g, w+1, linuxabi.FUTEX_WAKE|private, 1, 0, 0, 0)
		expectErrno(t, "FUTEX_WAKE on an unaligned word", r, errno, unix.EINVAL)
		r, errno = futex(g, w+2, linuxabi.FUTEX_WAIT|private, 0, 0, 0, 0)
		expectErrno(t, "FUTEX_WAIT on an unaligned word", r, errno, unix.EINVAL)
		r, errno = futex(g, 0x10000, linuxabi.FUTEX_WAIT|private, 0, 0, 0, 0)
		expectErrno(t, "FUTEX_WAIT on an unmapped word", r, errno, unix.EFAULT)
		r, errno = futex(g, 0x10000, linuxabi.FUTEX_WAKE, 1, 0, 0, 0)
		expectErrno(t, "a shared FUTEX_WAKE on an unmapped word", r, errno, unix.EFAULT)
		r, errno = futex(g, w, 2 /* FUTEX_FD, gone since 2.6.26 */, 0, 0, 0, 0)
		expectErrno(t, "FUTEX_FD", r, errno, unix.ENOSYS)
	})
}

func TestAThreadsExitClearsAndWakesItsChildTIDWord(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		release := g.Alloc(4)
		var woken atomic.Int32
		woken.Store(-1)
		tid, tidAddr, _ := g.Thread(func(g *fake.Guest) {
			futex(g, release, linuxabi.FUTEX_WAIT|private, 0, 0, 0, 0)
		})
		awaitWaiters(t, s, g, 1)
		if v := g.ReadU32(tidAddr); v != uint32(tid) {
			t.Errorf("tid word %d, want the thread's tid %d (CLONE_PARENT_SETTID)", v, tid)
		}
		// pthread_join: wait on the tid word (shared, as glibc's is).
		_, joinAddr, _ := g.Thread(func(g *fake.Guest) {
			_, errno := futex(g, tidAddr, linuxabi.FUTEX_WAIT, uint32(tid), 0, 0, 0)
			woken.Store(int32(errno))
		})
		awaitWaiters(t, s, g, 2)
		futex(g, release, linuxabi.FUTEX_WAKE|private, 1, 0, 0, 0)
		g.Join(joinAddr)
		if v := g.ReadU32(tidAddr); v != 0 || woken.Load() != 0 {
			t.Errorf("tid word %d after the exit, the joiner's wait %d; want 0 and woken", v, woken.Load())
		}
	})
}
