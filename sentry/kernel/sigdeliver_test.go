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

// sigRTMIN is the first real-time signal glibc leaves to programs.
const sigRTMIN = unix.Signal(34)

// handle installs a handler for sig that runs fn, with flags and mask.
func handle(t *testing.T, s *kerneltest.Sandbox, g *fake.Guest, sig unix.Signal, flags, mask uint64, fn fake.Program) {
	t.Helper()
	if _, errno := g.Sigaction(sig, fake.SigAction{Handler: s.Platform.Handler(fn), Flags: flags, Mask: mask}); errno != 0 {
		t.Errorf("sigaction(%v): %v", sig, errno)
	}
}

func TestABlockedSignalStaysPendingUntilUnblocked(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {
			var ran atomic.Int32
			handle(t, s, g, unix.SIGUSR1, 0, 0, func(*fake.Guest) { ran.Add(1) })
			sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGUSR1))
			kill(g, getpid(g), unix.SIGUSR1)
			kill(g, getpid(g), unix.SIGUSR1)
			if ran.Load() != 0 {
				t.Errorf("a blocked signal's handler ran")
			}
			if p := sigpending(t, g); p != sigset(unix.SIGUSR1) {
				t.Errorf("pending %#x, want SIGUSR1", p)
			}
			sigprocmask(t, g, unix.SIG_UNBLOCK, sigset(unix.SIGUSR1))
			if ran.Load() != 1 {
				t.Errorf("the handler ran %d times once the signal (sent twice) was unblocked, want once before sigprocmask returned", ran.Load())
			}
			if p := sigpending(t, g); p != 0 {
				t.Errorf("pending %#x after delivery", p)
			}
		})
		waitExit(t, g, child, 0)
	})
}

func TestAHandlerRunsWithItsSignalAndMaskBlockedUnlessSANODEFER(t *testing.T) {
	for _, nodefer := range []bool{false, true} {
		s := newSandbox(t)
		runInit(t, s, func(g *fake.Guest) {
			var inside atomic.Uint64
			var flags uint64
			if nodefer {
				flags = linuxabi.SA_NODEFER
			}
			handle(t, s, g, unix.SIGUSR1, flags, sigset(unix.SIGTERM), func(g *fake.Guest) { inside.Store(sigmask(t, g)) })
			sigprocmask(t, g, unix.SIG_SETMASK, sigset(unix.SIGHUP))
			kill(g, 1, unix.SIGUSR1)
			want := sigset(unix.SIGHUP, unix.SIGTERM)
			if !nodefer {
				want |= sigset(unix.SIGUSR1)
			}
			if inside.Load() != want {
				t.Errorf("SA_NODEFER %v: mask %#x in the handler, want %#x", nodefer, inside.Load(), want)
			}
			if m := sigmask(t, g); m != sigset(unix.SIGHUP) {
				t.Errorf("mask %#x after the handler, want the old one back (%#x)", m, sigset(unix.SIGHUP))
			}
		})
	}
}

func TestSARESETHANDRestoresTheDefaultActionOnDelivery(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		var ran atomic.Int32
		handle(t, s, g, unix.SIGUSR1, linuxabi.SA_RESETHAND, 0, func(*fake.Guest) { ran.Add(1) })
		kill(g, 1, unix.SIGUSR1)
		old, _ := g.Sigaction(unix.SIGUSR1, fake.SigAction{Handler: linuxabi.SIG_IGN})
		if ran.Load() != 1 || old.Handler != linuxabi.SIG_DFL {
			t.Errorf("handler ran %d times, action after it %#x; want once, then SIG_DFL", ran.Load(), old.Handler)
		}
	})
}

func TestSigsuspendRunsTheHandlerWithItsMaskThenRestoresTheOldOne(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		var inside atomic.Uint64
		handle(t, s, g, unix.SIGUSR1, 0, sigset(unix.SIGTERM), func(g *fake.Guest) { inside.Store(sigmask(t, g)) })
		sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGUSR1))
		kill(g, 1, unix.SIGUSR1)
		set := g.Alloc(8)
		g.WriteU64(set, sigset(unix.SIGHUP))
		r, errno := g.Call(unix.SYS_RT_SIGSUSPEND, set, 8)
		expectErrno(t, "rt_sigsuspend", r, errno, unix.EINTR)
		if want := sigset(unix.SIGHUP, unix.SIGUSR1, unix.SIGTERM); inside.Load() != want {
			t.Errorf("mask %#x in the handler, want the suspend mask, the signal and sa_mask: %#x", inside.Load(), want)
		}
		if m := sigmask(t, g); m != sigset(unix.SIGUSR1) {
			t.Errorf("mask %#x after sigsuspend, want the one before it (%#x)", m, sigset(unix.SIGUSR1))
		}
	})
}

func TestSigtimedwaitTakesAPendingSignalWithoutRunningItsHandler(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		var ran atomic.Bool
		handle(t, s, g, unix.SIGUSR1, 0, 0, func(*fake.Guest) { ran.Store(true) })
		sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGUSR1))
		kill(g, 1, unix.SIGUSR1)
		set, info := g.Alloc(8), g.Alloc(128)
		g.WriteU64(set, sigset(unix.SIGUSR1))
		sig, errno := g.Call(unix.SYS_RT_SIGTIMEDWAIT, set, info, 0, 8)
		expect(t, "rt_sigtimedwait", sig, errno, uintptr(unix.SIGUSR1), 0)
		if got := readChildInfo(g, info); got.Code != linuxabi.SI_USER || got.Pid != 1 {
			t.Errorf("siginfo %+v, want SI_USER from pid 1", got)
		}
		if ran.Load() || sigpending(t, g) != 0 {
			t.Errorf("handler ran %v, pending %#x; want neither", ran.Load(), sigpending(t, g))
		}
		g.WriteU64(set, sigset(unix.SIGUSR2))
		start := time.Now()
		sig, errno = g.Call(unix.SYS_RT_SIGTIMEDWAIT, set, info, timespec(g, 10*time.Millisecond), 8)
		expectErrno(t, "rt_sigtimedwait with nothing pending", sig, errno, unix.EAGAIN)
		if d := time.Since(start); d < 10*time.Millisecond {
			t.Errorf("gave up after %v, before its 10 ms", d)
		}
	})
}

func TestRealTimeSignalsAreDeliveredOnceEachInOrderWithTheirValues(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		sigprocmask(t, g, unix.SIG_BLOCK, sigset(sigRTMIN, sigRTMIN+1))
		info := g.Alloc(128)
		for _, v := range []uint32{7, 8, 9} {
			g.Write(info, make([]byte, 128))
			g.WriteU32(info+8, uint32(0xffffffff)) // SI_QUEUE (-1)
			g.WriteU32(info+16, 1)                 // si_pid
			g.WriteU32(info+24, v)                 // si_value
			if _, errno := g.Call(unix.SYS_RT_SIGQUEUEINFO, 1, uintptr(sigRTMIN+1), info); errno != 0 {
				t.Errorf("rt_sigqueueinfo: %v", errno)
			}
		}
		kill(g, 1, sigRTMIN)
		set := g.Alloc(8)
		g.WriteU64(set, sigset(sigRTMIN, sigRTMIN+1))
		var got [][2]uint32
		for {
			sig, errno := g.Call(unix.SYS_RT_SIGTIMEDWAIT, set, info, timespec(g, 0), 8)
			if errno != 0 {
				break
			}
			got = append(got, [2]uint32{uint32(sig), g.ReadU32(info + 24)})
		}
		want := [][2]uint32{{uint32(sigRTMIN), 0}, {uint32(sigRTMIN + 1), 7}, {uint32(sigRTMIN + 1), 8}, {uint32(sigRTMIN + 1), 9}}
		if len(got) != len(want) {
			t.Fatalf("took %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("took %v, want %v: lowest signal first, each instance in order", got, want)
				break
			}
		}
	})
}

func TestAHandlersSiginfoNamesTheSender(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		var got atomic.Value
		// SA_RESTART: the signal comes while init waits for the sender.
		handle(t, s, g, unix.SIGUSR1, linuxabi.SA_SIGINFO|linuxabi.SA_RESTART, 0, func(g *fake.Guest) {
			if int(g.Regs().Rdi) != int(unix.SIGUSR1) {
				t.Errorf("the handler's first argument %d, want SIGUSR1", g.Regs().Rdi)
			}
			got.Store(readChildInfo(g, uintptr(g.Regs().Rsi)))
		})
		sender := fork(t, g, func(g *fake.Guest) {
			// Real uid 1000, which si_uid names; effective 0, which may
			// signal init.
			g.Call(unix.SYS_SETRESUID, 1000, 0, 0)
			kill(g, 1, unix.SIGUSR1)
		})
		waitExit(t, g, sender, 0)
		if !within(g, func() bool { return got.Load() != nil }) {
			t.Fatalf("the handler did not run")
		}
		want := childInfo{Signo: int32(unix.SIGUSR1), Code: linuxabi.SI_USER, Pid: int32(sender), UID: 1000}
		if info := got.Load().(childInfo); info != want {
			t.Errorf("siginfo %+v, want %+v", info, want)
		}
		g.Call(unix.SYS_TGKILL, 1, 1, uintptr(unix.SIGUSR1))
		if info := got.Load().(childInfo); info.Code != linuxabi.SI_TKILL || info.Pid != 1 {
			t.Errorf("tgkill's siginfo %+v, want SI_TKILL from pid 1", info)
		}
	})
}

func TestAnUnprivilegedProcessMaySignalOnlyProcessesOfItsUID(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		other, done := forkWaiting(t, g, func(g *fake.Guest) { g.Call(unix.SYS_SETRESUID, 2000, 2000, 2000) })
		same, _ := forkWaiting(t, g, func(g *fake.Guest) { g.Call(unix.SYS_SETRESUID, 1000, 1000, 1000) })
		sender := fork(t, g, func(g *fake.Guest) {
			g.Call(unix.SYS_SETRESUID, 1000, 1000, 1000)
			if errno := kill(g, other, 0); errno != unix.EPERM {
				t.Errorf("kill(uid 2000's process, 0) by uid 1000 = %v, want EPERM", errno)
			}
			if errno := kill(g, other, unix.SIGKILL); errno != unix.EPERM {
				t.Errorf("kill(uid 2000's process, SIGKILL) by uid 1000 = %v, want EPERM", errno)
			}
			if errno := kill(g, same, unix.SIGKILL); errno != 0 {
				t.Errorf("kill(uid 1000's process) by uid 1000 = %v", errno)
			}
		})
		waitExit(t, g, sender, 0)
		waitSignaled(t, g, same, unix.SIGKILL)
		send(t, g, done, 1)
		waitExit(t, g, other, 0)
	})
}

// counter forks a child that counts in a word of shared memory for as
// long as it runs.
func counter(t *testing.T, g *fake.Guest) (pid int, word uintptr) {
	word = mapShared(t, g)
	pid = fork(t, g, func(g *fake.Guest) {
		for n := uint32(1); ; n++ {
			g.WriteU32(word, n)
			g.Compute(100 * time.Microsecond)
		}
	})
	return pid, word
}

func TestSIGSTOPStopsTheProcessUntilSIGCONT(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child, word := counter(t, g)
		if !within(g, func() bool { return g.ReadU32(word) > 0 }) {
			t.Fatalf("the child does not count")
		}
		kill(g, child, unix.SIGSTOP)
		g.Wait(child, unix.WUNTRACED)
		sleep(g, 10*time.Millisecond) // a count under way when the stop came is done
		before := g.ReadU32(word)
		sleep(g, 20*time.Millisecond)
		if after := g.ReadU32(word); after != before {
			t.Errorf("a stopped process counted from %d to %d", before, after)
		}
		kill(g, child, unix.SIGCONT)
		if !within(g, func() bool { return g.ReadU32(word) != before }) {
			t.Errorf("the process did not resume after SIGCONT")
		}
		kill(g, child, unix.SIGKILL)
		waitSignaled(t, g, child, unix.SIGKILL)
	})
}

func TestAStoppedProcessIsKilledBySIGKILL(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child, _ := counter(t, g)
		kill(g, child, unix.SIGSTOP)
		g.Wait(child, unix.WUNTRACED)
		kill(g, child, unix.SIGKILL)
		waitSignaled(t, g, child, unix.SIGKILL)
	})
}

func TestAStopSignalWithAHandlerDoesNotStop(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {
			var ran atomic.Bool
			handle(t, s, g, unix.SIGTSTP, 0, 0, func(*fake.Guest) { ran.Store(true) })
			kill(g, getpid(g), unix.SIGTSTP)
			if !ran.Load() {
				t.Errorf("SIGTSTP's handler did not run")
			}
			exitGroup(g, 4)
		})
		got, status, _ := g.Wait(child, unix.WUNTRACED)
		if got != child || !status.Exited() || status.ExitStatus() != 4 {
			t.Errorf("wait4(WUNTRACED) = %d, %#x; want the child's exit, no stop", got, uint32(status))
		}
	})
}

func TestSignalsWhoseDefaultIsToIgnoreDoNothing(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {
			for _, sig := range []unix.Signal{unix.SIGCHLD, unix.SIGURG, unix.SIGWINCH, unix.SIGCONT} {
				kill(g, getpid(g), sig)
			}
			exitGroup(g, 2)
		})
		waitExit(t, g, child, 2)
	})
}

func TestAnIgnoredSignalDoesNothingButABlockedOneWaits(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {
			g.Sigaction(unix.SIGTERM, fake.SigAction{Handler: linuxabi.SIG_IGN})
			kill(g, getpid(g), unix.SIGTERM)
			if p := sigpending(t, g); p != 0 {
				t.Errorf("an ignored signal is pending: %#x", p)
			}
			sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGTERM))
			kill(g, getpid(g), unix.SIGTERM)
			if p := sigpending(t, g); p != sigset(unix.SIGTERM) {
				t.Errorf("pending %#x, want the blocked, ignored SIGTERM: sigwait may take it", p)
			}
			g.Sigaction(unix.SIGTERM, fake.SigAction{Handler: linuxabi.SIG_DFL})
			if p := sigpending(t, g); p != sigset(unix.SIGTERM) {
				t.Errorf("pending %#x after SIG_DFL for a signal that terminates; want it kept", p)
			}
			sigprocmask(t, g, unix.SIG_UNBLOCK, sigset(unix.SIGTERM))
			t.Errorf("the unblocked SIGTERM did not end the process")
		})
		waitSignaled(t, g, child, unix.SIGTERM)
	})
}

func TestAFaultKillsEvenWhenItsSignalIsBlockedOrIgnored(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		for _, mode := range []string{"blocked", "ignored"} {
			child := fork(t, g, func(g *fake.Guest) {
				if mode == "blocked" {
					handle(t, s, g, unix.SIGSEGV, 0, 0, func(*fake.Guest) { t.Errorf("a blocked fault's handler ran") })
					sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGSEGV))
				} else {
					g.Sigaction(unix.SIGSEGV, fake.SigAction{Handler: linuxabi.SIG_IGN})
				}
				g.ReadU32(0x10)
				t.Errorf("%s: the faulting access went on", mode)
			})
			waitSignaled(t, g, child, unix.SIGSEGV)
		}
	})
}

func TestAFaultHandlerGetsTheFaultingAddress(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {
			handle(t, s, g, unix.SIGSEGV, linuxabi.SA_SIGINFO, 0, func(g *fake.Guest) {
				info := uintptr(g.Regs().Rsi)
				if code, addr := int32(g.ReadU32(info+8)), g.ReadU64(info+16); code != 1 || addr != 0x10 {
					t.Errorf("si_code %d si_addr %#x, want SEGV_MAPERR at 0x10", code, addr)
				}
				exitGroup(g, 7) // returning would fault again
			})
			g.ReadU32(0x10)
		})
		waitExit(t, g, child, 7)
	})
}

func TestInitIgnoresSignalsItHasNoHandlerFor(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGINT, unix.SIGUSR1, unix.SIGKILL, unix.SIGSTOP} {
			if errno := kill(g, 1, sig); errno != 0 {
				t.Errorf("kill(1, %v) = %v, want 0 (and nothing done)", sig, errno)
			}
		}
		child := fork(t, g, func(g *fake.Guest) { kill(g, 1, unix.SIGTERM) })
		waitExit(t, g, child, 0)
	})
}

func TestAFaultEndsInitAndTheSandbox(t *testing.T) {
	s := newSandbox(t)
	st := s.Run(func(g *fake.Guest) { g.ReadU32(0x10) })
	if st != (kernel.ExitStatus{Signo: int(unix.SIGSEGV)}) {
		t.Errorf("sandbox ended with %+v, want init killed by SIGSEGV", st)
	}
}

func TestAHandlerWithSAONSTACKRunsOnTheAlternateStack(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		const size = 64 << 10
		stack := g.Alloc(size)
		ss := g.Alloc(24)
		g.WriteU64(ss, uint64(stack))
		g.WriteU64(ss+16, size)
		if _, errno := g.Call(unix.SYS_SIGALTSTACK, ss, 0); errno != 0 {
			t.Fatalf("sigaltstack: %v", errno)
		}
		var sp, flags atomic.Uint64
		handle(t, s, g, unix.SIGUSR1, linuxabi.SA_ONSTACK, 0, func(g *fake.Guest) {
			sp.Store(g.Regs().Rsp)
			old := g.Alloc(24)
			g.Call(unix.SYS_SIGALTSTACK, 0, old)
			flags.Store(uint64(g.ReadU32(old + 8)))
		})
		kill(g, 1, unix.SIGUSR1)
		if p := uintptr(sp.Load()); p < stack || p >= stack+size {
			t.Errorf("the handler ran with sp %#x, outside the alternate stack [%#x, %#x)", p, stack, stack+size)
		}
		if flags.Load() != linuxabi.SS_ONSTACK {
			t.Errorf("sigaltstack in the handler gives flags %d, want SS_ONSTACK", flags.Load())
		}
	})
}

func TestAnInitWithPlainSignalsDiesOfASignalItHasNoHandlerFor(t *testing.T) {
	s := newSandbox(t)
	s.Start(func(g *fake.Guest) {
		if errno := kill(g, 1, unix.SIGTERM); errno != 0 {
			t.Errorf("kill(1, SIGTERM) = %v, want 0", errno)
		}
		for range 1000 { // bounded: a signal that never comes fails the test, not the run
			g.Compute(10 * time.Millisecond)
		}
	}, kerneltest.Init{PlainSignals: true})
	if st := s.Wait(); st != (kernel.ExitStatus{Signo: int(unix.SIGTERM)}) {
		t.Errorf("init ended with %+v, want killed by SIGTERM", st)
	}
}

func TestAnInitWithPlainSignalsDiesOfASignalFromOutside(t *testing.T) {
	s := newSandbox(t)
	running := make(chan struct{})
	s.Start(func(g *fake.Guest) {
		close(running)
		for range 1000 {
			g.Compute(10 * time.Millisecond)
		}
	}, kerneltest.Init{PlainSignals: true})
	<-running
	s.Kernel.SignalInit(int(unix.SIGINT))
	if st := s.Wait(); st != (kernel.ExitStatus{Signo: int(unix.SIGINT)}) {
		t.Errorf("init ended with %+v, want killed by SIGINT", st)
	}
}
