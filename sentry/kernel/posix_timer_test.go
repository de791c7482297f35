package kernel_test

import (
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// The rules of POSIX timers and CPU clocks: how a timer tells of its
// expiry, what it counts, what ends it, and whose clocks a task may use.

// Notifications (include/uapi/asm-generic/siginfo.h).
const (
	sigevSignal   = 0
	sigevNone     = 1
	sigevThreadID = 4
)

// sigevent is a struct sigevent in guest memory.
func sigevent(g *fake.Guest, notify int, sig unix.Signal, value uint64, tid int) uintptr {
	ev := g.Alloc(64)
	g.WriteU64(ev, value)
	g.WriteU32(ev+8, uint32(sig))
	g.WriteU32(ev+12, uint32(notify))
	g.WriteU32(ev+16, uint32(tid))
	return ev
}

// timerCreate is timer_create(clock, ev) (ev 0: no sigevent).
func timerCreate(g *fake.Guest, clock int32, ev uintptr) (int, unix.Errno) {
	id := g.Alloc(4)
	_, errno := g.Call(unix.SYS_TIMER_CREATE, uintptr(clock), ev, id)
	return int(int32(g.ReadU32(id))), errno
}

// mustTimer is timerCreate that fails the test when the call does.
func mustTimer(t *testing.T, g *fake.Guest, clock int32, ev uintptr) int {
	t.Helper()
	id, errno := timerCreate(g, clock, ev)
	if errno != 0 {
		t.Errorf("timer_create(%d): %v", clock, errno)
	}
	return id
}

// timerSet is timer_settime(id, flags, {interval, value}).
func timerSet(g *fake.Guest, id, flags int, value, interval time.Duration) unix.Errno {
	spec := g.Alloc(32)
	g.WriteU64(spec, uint64(interval/time.Second))
	g.WriteU64(spec+8, uint64(interval%time.Second))
	g.WriteU64(spec+16, uint64(value/time.Second))
	g.WriteU64(spec+24, uint64(value%time.Second))
	_, errno := g.Call(unix.SYS_TIMER_SETTIME, uintptr(id), uintptr(flags), spec, 0)
	return errno
}

// timerGet is timer_gettime(id): the time left and the interval.
func timerGet(g *fake.Guest, id int) (value, interval time.Duration, errno unix.Errno) {
	spec := g.Alloc(32)
	_, errno = g.Call(unix.SYS_TIMER_GETTIME, uintptr(id), spec)
	ns := func(a uintptr) time.Duration {
		return time.Duration(g.ReadU64(a))*time.Second + time.Duration(g.ReadU64(a+8))
	}
	return ns(spec + 16), ns(spec), errno
}

func timerDelete(g *fake.Guest, id int) unix.Errno {
	_, errno := g.Call(unix.SYS_TIMER_DELETE, uintptr(id))
	return errno
}

// timerInfo is what a timer's siginfo carries.
type timerInfo struct {
	signo, code     int32
	id, overrun     int32
	value           uint64
	errno           unix.Errno
	tookSomethingOf unix.Signal
}

// sigwait is rt_sigtimedwait(set, timeout) read as a timer's siginfo.
func sigwait(g *fake.Guest, set uint64, timeout time.Duration) timerInfo {
	mask, info := g.Alloc(8), g.Alloc(128)
	g.WriteU64(mask, set)
	sig, errno := g.Call(unix.SYS_RT_SIGTIMEDWAIT, mask, info, timespec(g, timeout), 8)
	b := make([]byte, 32)
	g.Read(info, b)
	le := binary.LittleEndian
	return timerInfo{signo: int32(le.Uint32(b[0:])), code: int32(le.Uint32(b[8:])), id: int32(le.Uint32(b[16:])),
		overrun: int32(le.Uint32(b[20:])), value: le.Uint64(b[24:]), errno: errno, tookSomethingOf: unix.Signal(sig)}
}

// cpuClockNs reads clock, or returns -1 with the error.
func cpuClockNs(g *fake.Guest, clock int32) (time.Duration, unix.Errno) {
	ts := g.Alloc(16)
	if _, errno := g.Call(unix.SYS_CLOCK_GETTIME, uintptr(clock), ts); errno != 0 {
		return -1, errno
	}
	return time.Duration(g.ReadU64(ts))*time.Second + time.Duration(g.ReadU64(ts+8)), 0
}

// processClock and threadClock are the CPU clocks of a process and of a
// thread by id (CPUCLOCK_SCHED), as clock_getcpuclockid and
// pthread_getcpuclockid make them.
func processClock(pid int) int32 { return ^int32(pid)<<3 | 2 }
func threadClock(tid int) int32  { return ^int32(tid)<<3 | 4 | 2 }

func TestAOneShotTimerSignalsOnceWithItsIDValueAndNoOverrun(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGUSR1))
		id := mustTimer(t, g, unix.CLOCK_MONOTONIC, sigevent(g, sigevSignal, unix.SIGUSR1, 42, 0))
		start := time.Now()
		timerSet(g, id, 0, 20*time.Millisecond, 0)
		got := sigwait(g, sigset(unix.SIGUSR1), 5*time.Second)
		if elapsed := time.Since(start); elapsed < 20*time.Millisecond {
			t.Errorf("the signal came after %v, before the timer's 20ms", elapsed)
		}
		if got.tookSomethingOf != unix.SIGUSR1 || got.code != linuxabi.SI_TIMER || got.id != int32(id) || got.value != 42 || got.overrun != 0 {
			t.Errorf("siginfo %+v; want SIGUSR1, SI_TIMER, id %d, value 42, overrun 0", got, id)
		}
		if v, _, _ := timerGet(g, id); v != 0 {
			t.Errorf("an expired one-shot timer reads %v, want 0", v)
		}
		if got := sigwait(g, sigset(unix.SIGUSR1), 30*time.Millisecond); got.errno != unix.EAGAIN {
			t.Errorf("a second signal from a one-shot timer: %+v", got)
		}
	})
}

func TestATimerWithoutASigeventSendsSIGALRMWithItsIDAsTheValue(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGALRM))
		mustTimer(t, g, unix.CLOCK_REALTIME, 0)
		id := mustTimer(t, g, unix.CLOCK_REALTIME, 0)
		timerSet(g, id, 0, time.Millisecond, 0)
		got := sigwait(g, sigset(unix.SIGALRM), 5*time.Second)
		if got.tookSomethingOf != unix.SIGALRM || got.code != linuxabi.SI_TIMER || got.value != uint64(id) {
			t.Errorf("siginfo %+v; want SIGALRM, SI_TIMER, value %d", got, id)
		}
	})
}

func TestABlockedPeriodicTimerQueuesOneSignalAndCountsTheExpirationsMissedAsOverrun(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGUSR1))
		id := mustTimer(t, g, unix.CLOCK_MONOTONIC, sigevent(g, sigevSignal, unix.SIGUSR1, 0, 0))
		timerSet(g, id, 0, time.Millisecond, 50*time.Millisecond)
		sleep(g, 180*time.Millisecond) // expiries at 1, 51, 101, 151 ms
		// Waiting for its signal to be taken, it reads its next expiry.
		if v, i, _ := timerGet(g, id); v <= 0 || v > 50*time.Millisecond || i != 50*time.Millisecond {
			t.Errorf("timer_gettime while its signal waits: %v, interval %v; want its next expiry within 50ms", v, i)
		}
		got := sigwait(g, sigset(unix.SIGUSR1), 0)
		if got.tookSomethingOf != unix.SIGUSR1 || got.overrun < 3 {
			t.Errorf("siginfo %+v; want SIGUSR1 with an overrun of at least 3", got)
		}
		if n, errno := g.Call(unix.SYS_TIMER_GETOVERRUN, uintptr(id)); errno != 0 || int32(n) != got.overrun {
			t.Errorf("timer_getoverrun = %d, %v; want the signal's %d", n, errno, got.overrun)
		}
		// Taken, the signal rearmed the timer.
		if got := sigwait(g, sigset(unix.SIGUSR1), 5*time.Second); got.tookSomethingOf != unix.SIGUSR1 {
			t.Errorf("no signal after the first was taken: %+v", got)
		}
	})
}

func TestAnAbsoluteTimeInThePastExpiresAtOnceCountingEveryIntervalSince(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGUSR1))
		id := mustTimer(t, g, unix.CLOCK_MONOTONIC, sigevent(g, sigevSignal, unix.SIGUSR1, 0, 0))
		now, _ := cpuClockNs(g, unix.CLOCK_MONOTONIC)
		timerSet(g, id, unix.TIMER_ABSTIME, now-time.Second, 10*time.Millisecond)
		got := sigwait(g, sigset(unix.SIGUSR1), 5*time.Second)
		if got.tookSomethingOf != unix.SIGUSR1 || got.overrun < 99 || got.overrun > 200 {
			t.Errorf("siginfo %+v; want an overrun of about 100 (a second of 10ms intervals)", got)
		}
	})
}

func TestRearmingOrDeletingATimerTakesBackItsPendingSignal(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGUSR1))
		id := mustTimer(t, g, unix.CLOCK_MONOTONIC, sigevent(g, sigevSignal, unix.SIGUSR1, 0, 0))
		timerSet(g, id, 0, time.Millisecond, 0)
		if !within(g, func() bool { return sigpending(t, g)&sigset(unix.SIGUSR1) != 0 }) {
			t.Errorf("the timer's signal never came")
		}
		timerSet(g, id, 0, time.Hour, 0)
		if p := sigpending(t, g); p != 0 {
			t.Errorf("pending after timer_settime: %#x, want none", p)
		}
		timerSet(g, id, 0, time.Millisecond, 0)
		within(g, func() bool { return sigpending(t, g)&sigset(unix.SIGUSR1) != 0 })
		timerDelete(g, id)
		if p := sigpending(t, g); p != 0 {
			t.Errorf("pending after timer_delete: %#x, want none", p)
		}
		if _, _, errno := timerGet(g, id); errno != unix.EINVAL {
			t.Errorf("timer_gettime of a deleted timer: %v, want EINVAL", errno)
		}
	})
}

func TestATimerWithoutNotificationCountsDownAndMovesToItsNextExpiry(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		id := mustTimer(t, g, unix.CLOCK_MONOTONIC, sigevent(g, sigevNone, 0, 0, 0))
		timerSet(g, id, 0, 5*time.Millisecond, 30*time.Millisecond)
		sleep(g, 10*time.Millisecond)
		if v, _, _ := timerGet(g, id); v <= 0 || v > 30*time.Millisecond {
			t.Errorf("a periodic SIGEV_NONE timer past its first expiry reads %v; want within its 30ms interval", v)
		}
		timerSet(g, id, 0, time.Millisecond, 0)
		sleep(g, 5*time.Millisecond)
		if v, _, _ := timerGet(g, id); v != 0 {
			t.Errorf("an expired one-shot SIGEV_NONE timer reads %v, want 0", v)
		}
		if p := sigpending(t, g); p != 0 {
			t.Errorf("a SIGEV_NONE timer left %#x pending", p)
		}
	})
}

func TestSIGEV_THREAD_IDSignalsTheNamedThreadOfTheCallersProcessOnly(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGUSR1)) // the thread inherits it
		if _, errno := timerCreate(g, unix.CLOCK_MONOTONIC, sigevent(g, sigevSignal|sigevThreadID, unix.SIGUSR1, 0, 999)); errno != unix.EINVAL {
			t.Errorf("SIGEV_THREAD_ID naming no thread: %v, want EINVAL", errno)
		}
		r, w := pipe(t, g)
		done, ack := pipe(t, g)
		var got timerInfo
		_, tidAddr, _ := g.Thread(func(g *fake.Guest) {
			send(t, g, ack, uint32(gettid(g)))
			recv(t, g, r)
			got = sigwait(g, sigset(unix.SIGUSR1), 0)
		})
		tid := int(recv(t, g, done))
		child := fork(t, g, func(g *fake.Guest) {
			if _, errno := timerCreate(g, unix.CLOCK_MONOTONIC, sigevent(g, sigevSignal|sigevThreadID, unix.SIGUSR1, 0, tid)); errno != unix.EINVAL {
				t.Errorf("SIGEV_THREAD_ID naming another process's thread: %v, want EINVAL", errno)
			}
		})
		waitExit(t, g, child, 0)
		id := mustTimer(t, g, unix.CLOCK_MONOTONIC, sigevent(g, sigevSignal|sigevThreadID, unix.SIGUSR1, 7, tid))
		timerSet(g, id, 0, time.Millisecond, 0)
		// A signal for the process would be the main thread's to take.
		if other := sigwait(g, sigset(unix.SIGUSR1), 50*time.Millisecond); other.errno != unix.EAGAIN {
			t.Errorf("the main thread took the thread's timer signal: %+v", other)
		}
		send(t, g, w, 1)
		g.Join(tidAddr)
		if got.tookSomethingOf != unix.SIGUSR1 || got.code != linuxabi.SI_TIMER || got.value != 7 {
			t.Errorf("the named thread's siginfo %+v; want SIGUSR1, SI_TIMER, value 7", got)
		}
	})
}

func TestTimerIDsCountOnAcrossExecAndARefusedNotificationUsesOneUp(t *testing.T) {
	s := newSandbox(t)
	s.AddProgram("/bin/after", func(g *fake.Guest) {
		if _, _, errno := timerGet(g, 0); errno != unix.EINVAL {
			t.Errorf("a timer made before execve after it: %v, want EINVAL", errno)
		}
		if id := mustTimer(t, g, unix.CLOCK_MONOTONIC, 0); id != 3 {
			t.Errorf("the first timer after execve has id %d, want 3: ids go on", id)
		}
	})
	runInit(t, s, func(g *fake.Guest) {
		if id := mustTimer(t, g, unix.CLOCK_MONOTONIC, 0); id != 0 {
			t.Errorf("the first timer's id = %d, want 0", id)
		}
		if _, errno := timerCreate(g, unix.CLOCK_MONOTONIC, sigevent(g, sigevSignal, 0, 0, 0)); errno != unix.EINVAL {
			t.Errorf("signal 0: %v, want EINVAL", errno)
		}
		if _, errno := timerCreate(g, unix.CLOCK_MONOTONIC_RAW, 0); errno != unix.EOPNOTSUPP {
			t.Errorf("CLOCK_MONOTONIC_RAW: %v, want EOPNOTSUPP", errno)
		}
		if id := mustTimer(t, g, unix.CLOCK_MONOTONIC, 0); id != 2 {
			t.Errorf("the timer after a refused notification has id %d, want 2", id)
		}
		child := fork(t, g, func(g *fake.Guest) {
			if _, _, errno := timerGet(g, 0); errno != unix.EINVAL {
				t.Errorf("the parent's timer in the child: %v, want EINVAL", errno)
			}
			if id := mustTimer(t, g, unix.CLOCK_MONOTONIC, 0); id != 0 {
				t.Errorf("a child's first timer has id %d, want 0", id)
			}
		})
		waitExit(t, g, child, 0)
		execve(t, g, "/bin/after")
	})
}

func TestEachTimerCountsAgainstItsUsersRLIMIT_SIGPENDINGUntilDeleted(t *testing.T) {
	s := newSandbox(t)
	in := kerneltest.Init{UID: 1000, GID: 1000, Limits: map[int]kernel.Limit{unix.RLIMIT_SIGPENDING: {Cur: 2, Max: 2}}}
	runAs(t, s, in, func(g *fake.Guest) {
		first := mustTimer(t, g, unix.CLOCK_MONOTONIC, 0)
		parentR, childW := pipe(t, g)
		childR, parentW := pipe(t, g)
		child := fork(t, g, func(g *fake.Guest) {
			mustTimer(t, g, unix.CLOCK_MONOTONIC, 0)
			if _, errno := timerCreate(g, unix.CLOCK_MONOTONIC, 0); errno != unix.EAGAIN {
				t.Errorf("a third timer of the user, limit 2: %v, want EAGAIN", errno)
			}
			send(t, g, childW, 1)
			recv(t, g, childR)
		})
		recv(t, g, parentR)
		if _, errno := timerCreate(g, unix.CLOCK_MONOTONIC, 0); errno != unix.EAGAIN {
			t.Errorf("a third timer of the user in another process: %v, want EAGAIN", errno)
		}
		timerDelete(g, first)
		mustTimer(t, g, unix.CLOCK_MONOTONIC, 0)
		send(t, g, parentW, 1)
		waitExit(t, g, child, 0)
		mustTimer(t, g, unix.CLOCK_MONOTONIC, 0) // the child's ended with it
	})
}

func TestATimerOnTheProcessCPUClockExpiresAfterThatMuchCPUTimeNotWallTime(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGUSR1))
		id := mustTimer(t, g, unix.CLOCK_PROCESS_CPUTIME_ID, sigevent(g, sigevSignal, unix.SIGUSR1, 0, 0))
		start, _ := cpuClockNs(g, unix.CLOCK_PROCESS_CPUTIME_ID)
		timerSet(g, id, 0, 20*time.Millisecond, 0)
		sleep(g, 60*time.Millisecond) // uses no CPU time
		if p := sigpending(t, g); p != 0 {
			t.Errorf("the CPU-time timer fired while the process slept (pending %#x)", p)
		}
		for i := 0; i < 2000 && sigwait(g, sigset(unix.SIGUSR1), 0).tookSomethingOf != unix.SIGUSR1; i++ {
			g.Compute(time.Millisecond)
		}
		if used, _ := cpuClockNs(g, unix.CLOCK_PROCESS_CPUTIME_ID); used-start < 20*time.Millisecond {
			t.Errorf("the CPU-time timer fired after %v of CPU time, before its 20ms", used-start)
		}
	})
}

func TestAThreadCanSleepOnAnotherThreadsCPUClockButNotOnItsOwn(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		stop := g.Alloc(4)
		ready, ack := pipe(t, g)
		_, tidAddr, _ := g.Thread(func(g *fake.Guest) {
			send(t, g, ack, uint32(gettid(g)))
			for g.ReadU32(stop) == 0 {
				g.Compute(time.Millisecond)
			}
		})
		tid := int(recv(t, g, ready))
		clock := threadClock(tid)
		before, errno := cpuClockNs(g, clock)
		if errno != 0 {
			t.Errorf("clock_gettime on another thread's clock: %v", errno)
		}
		if _, errno := g.Call(unix.SYS_CLOCK_NANOSLEEP, uintptr(clock), 0, timespec(g, 20*time.Millisecond), 0); errno != 0 {
			t.Errorf("clock_nanosleep on another thread's clock: %v", errno)
		}
		if after, _ := cpuClockNs(g, clock); after-before < 20*time.Millisecond {
			t.Errorf("the sleep on the thread's clock ended after %v of its CPU time, before 20ms", after-before)
		}
		own := threadClock(gettid(g))
		if _, errno := g.Call(unix.SYS_CLOCK_NANOSLEEP, uintptr(own), 0, timespec(g, time.Millisecond), 0); errno != unix.EINVAL {
			t.Errorf("clock_nanosleep on the caller's own thread clock: %v, want EINVAL", errno)
		}
		if _, errno := g.Call(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_THREAD_CPUTIME_ID, 0, timespec(g, time.Millisecond), 0); errno != unix.EOPNOTSUPP {
			t.Errorf("clock_nanosleep(CLOCK_THREAD_CPUTIME_ID): %v, want EOPNOTSUPP", errno)
		}
		g.WriteU32(stop, 1)
		g.Join(tidAddr)
	})
}

func TestAThreadIDNamesNoProcessClockButForClockGettimeInThatThread(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		var ownErrno unix.Errno = 1
		ready, ack := pipe(t, g)
		r, w := pipe(t, g)
		_, tidAddr, _ := g.Thread(func(g *fake.Guest) {
			_, ownErrno = cpuClockNs(g, processClock(gettid(g)))
			send(t, g, ack, uint32(gettid(g)))
			recv(t, g, r)
		})
		tid := int(recv(t, g, ready))
		if ownErrno != 0 {
			t.Errorf("clock_gettime on its own thread id as a process clock, in that thread: %v", ownErrno)
		}
		if _, errno := cpuClockNs(g, processClock(tid)); errno != unix.EINVAL {
			t.Errorf("clock_gettime on a thread's id as a process clock: %v, want EINVAL", errno)
		}
		if _, errno := g.Call(unix.SYS_CLOCK_GETRES, uintptr(processClock(tid)), g.Alloc(16)); errno != unix.EINVAL {
			t.Errorf("clock_getres on a thread's id as a process clock: %v, want EINVAL", errno)
		}
		if _, errno := timerCreate(g, processClock(tid), 0); errno != unix.EINVAL {
			t.Errorf("timer_create on a thread's id as a process clock: %v, want EINVAL", errno)
		}
		if _, errno := cpuClockNs(g, processClock(getpid(g))); errno != 0 {
			t.Errorf("clock_gettime on the process's clock by its pid: %v", errno)
		}
		send(t, g, w, 1)
		g.Join(tidAddr)
	})
}

func TestAChildsCPUClockReadsItsTimeUntilItIsReaped(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) { g.Compute(15 * time.Millisecond) })
		waitZombie(t, g, child)
		if used, errno := cpuClockNs(g, processClock(child)); errno != 0 || used < 15*time.Millisecond {
			t.Errorf("a zombie child's CPU clock: %v, %v; want at least its 15ms", used, errno)
		}
		waitExit(t, g, child, 0)
		if _, errno := cpuClockNs(g, processClock(child)); errno != unix.EINVAL {
			t.Errorf("clock_gettime on a reaped child's clock: %v, want EINVAL", errno)
		}
		if _, errno := g.Call(unix.SYS_CLOCK_GETRES, uintptr(processClock(child)), g.Alloc(16)); errno != unix.EINVAL {
			t.Errorf("clock_getres on a reaped child's clock: %v, want EINVAL", errno)
		}
	})
}
