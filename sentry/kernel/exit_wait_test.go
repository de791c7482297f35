package kernel_test

import (
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// childInfo is what waitid and a SIGCHLD's siginfo say of a child.
type childInfo struct {
	Signo, Code, Pid, UID, Status int32
}

// readChildInfo decodes a siginfo_t at addr.
func readChildInfo(g *fake.Guest, addr uintptr) childInfo {
	return childInfo{Signo: int32(g.ReadU32(addr)), Code: int32(g.ReadU32(addr + 8)), Pid: int32(g.ReadU32(addr + 16)),
		UID: int32(g.ReadU32(addr + 20)), Status: int32(g.ReadU32(addr + 24))}
}

// waitid is waitid(idtype, id, &info, options, NULL); info starts as all
// ones, so that what the call leaves shows.
func waitid(g *fake.Guest, idtype, id, options int) (childInfo, unix.Errno) {
	info := g.Alloc(128)
	g.Write(info, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	_, errno := g.Call(unix.SYS_WAITID, uintptr(idtype), uintptr(id), info, uintptr(options), 0)
	return readChildInfo(g, info), errno
}

// pause blocks the calling thread until a signal ends it.
func pause(g *fake.Guest) {
	for {
		g.Call(unix.SYS_PAUSE)
	}
}

func TestAnExitedChildStaysAZombieUntilReaped(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {})
		waitZombie(t, g, child)
		if errno := kill(g, child, 0); errno != 0 {
			t.Errorf("kill(zombie, 0) = %v, want 0: the zombie still has its pid", errno)
		}
		waitExit(t, g, child, 0)
		if errno := kill(g, child, 0); errno != unix.ESRCH {
			t.Errorf("kill(reaped child, 0) = %v, want ESRCH", errno)
		}
	})
}

func TestWaitReportsTheExitCodeOrTheKillingSignal(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		waitExit(t, g, fork(t, g, func(g *fake.Guest) { exitGroup(g, 7) }), 7)
		waitExit(t, g, fork(t, g, func(g *fake.Guest) { exitGroup(g, 0x1ff) }), 0xff) // the low byte only
		for _, sig := range []unix.Signal{unix.SIGTERM, unix.SIGKILL, unix.SIGQUIT} {
			child := fork(t, g, pause)
			kill(g, child, sig)
			got, status, errno := g.Wait(child, 0)
			// No core is written (RLIMIT_CORE is 0): no WCOREDUMP bit.
			if got != child || errno != 0 || uint32(status) != uint32(sig) {
				t.Errorf("%v: wait4 = %d, status %#x, %v; want status %#x", sig, got, uint32(status), errno, uint32(sig))
			}
		}
	})
}

func TestWNOHANGReturnsZeroWhileTheChildRuns(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		r, w := pipe(t, g)
		child := fork(t, g, func(g *fake.Guest) { recv(t, g, r) })
		if got, _, errno := g.Wait(child, unix.WNOHANG); got != 0 || errno != 0 {
			t.Errorf("wait4(WNOHANG) on a running child = %d, %v; want 0", got, errno)
		}
		if info, errno := waitid(g, unix.P_ALL, 0, unix.WEXITED|unix.WNOHANG); errno != 0 || info.Pid != 0 || info.Signo != 0 {
			t.Errorf("waitid(WNOHANG) on a running child: %+v, %v; want the siginfo zeroed", info, errno)
		}
		send(t, g, w, 1)
		waitExit(t, g, child, 0)
	})
}

func TestWaitWithoutAMatchingChildIsECHILD(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		got, _, errno := g.Wait(-1, 0)
		expectErrno(t, "wait4(-1) with no children", uintptr(got), errno, unix.ECHILD)
		got, _, errno = g.Wait(-1, unix.WNOHANG)
		expectErrno(t, "wait4(-1, WNOHANG) with no children", uintptr(got), errno, unix.ECHILD)
		r, w := pipe(t, g)
		release, released := pipe(t, g)
		child := fork(t, g, func(g *fake.Guest) {
			grandchild := fork(t, g, func(g *fake.Guest) { recv(t, g, release) })
			send(t, g, w, uint32(grandchild))
			waitExit(t, g, grandchild, 0)
		})
		grandchild := int(recv(t, g, r))
		got, _, errno = g.Wait(grandchild, 0)
		expectErrno(t, "wait4 for a grandchild", uintptr(got), errno, unix.ECHILD)
		got, _, errno = g.Wait(child, unix.WCLONE)
		expectErrno(t, "wait4(__WCLONE) for a child whose exit signal is SIGCHLD", uintptr(got), errno, unix.ECHILD)
		_, errno = waitid(g, unix.P_ALL, 0, 0)
		expectErrno(t, "waitid with none of WEXITED, WSTOPPED and WCONTINUED", 0, errno, unix.EINVAL)
		send(t, g, released, 1)
		waitExit(t, g, child, 0)
	})
}

func TestWUNTRACEDReportsAStopOnceAndWCONTINUEDAContinueOnce(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child := fork(t, g, pause)
		kill(g, child, unix.SIGSTOP)
		got, status, errno := g.Wait(child, unix.WUNTRACED)
		if got != child || errno != 0 || uint32(status) != 0x137f {
			t.Errorf("wait4(WUNTRACED) = %d, %#x, %v; want stopped by SIGSTOP (0x137f)", got, uint32(status), errno)
		}
		if got, _, errno := g.Wait(child, unix.WUNTRACED|unix.WNOHANG); got != 0 || errno != 0 {
			t.Errorf("a second wait4(WUNTRACED) = %d, %v; want 0: a stop is reported once", got, errno)
		}
		kill(g, child, unix.SIGCONT)
		got, status, errno = g.Wait(child, unix.WCONTINUED)
		if got != child || errno != 0 || uint32(status) != 0xffff {
			t.Errorf("wait4(WCONTINUED) = %d, %#x, %v; want continued (0xffff)", got, uint32(status), errno)
		}
		if got, _, errno := g.Wait(child, unix.WCONTINUED|unix.WNOHANG); got != 0 || errno != 0 {
			t.Errorf("a second wait4(WCONTINUED) = %d, %v; want 0", got, errno)
		}
		kill(g, child, unix.SIGTSTP)
		if !within(g, func() bool {
			info, _ := waitid(g, unix.P_PID, child, unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT)
			return info.Pid != 0
		}) {
			t.Errorf("SIGTSTP did not stop the child")
		}
		if got, _, errno := g.Wait(child, unix.WNOHANG); got != 0 || errno != 0 {
			t.Errorf("wait4 without WUNTRACED on a stopped child = %d, %v; want 0", got, errno)
		}
		info, errno := waitid(g, unix.P_PID, child, unix.WSTOPPED)
		if errno != 0 || info.Code != linuxabi.CLD_STOPPED || info.Status != int32(unix.SIGTSTP) || info.Pid != int32(child) {
			t.Errorf("waitid(WSTOPPED) = %+v, %v; want CLD_STOPPED by SIGTSTP", info, errno)
		}
		kill(g, child, unix.SIGKILL)
		waitSignaled(t, g, child, unix.SIGKILL)
	})
}

func TestWaitidReportsTheChildInItsSiginfo(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) { exitGroup(g, 9) })
		want := childInfo{Signo: int32(unix.SIGCHLD), Code: linuxabi.CLD_EXITED, Pid: int32(child), Status: 9}
		if info, errno := waitid(g, unix.P_PID, child, unix.WEXITED|unix.WNOWAIT); errno != 0 || info != want {
			t.Errorf("waitid(WNOWAIT) = %+v, %v; want %+v", info, errno, want)
		}
		if info, errno := waitid(g, unix.P_ALL, 0, unix.WEXITED); errno != 0 || info != want {
			t.Errorf("waitid after WNOWAIT = %+v, %v; want %+v: WNOWAIT leaves the child waitable", info, errno, want)
		}
		child = fork(t, g, pause)
		kill(g, child, unix.SIGTERM)
		want = childInfo{Signo: int32(unix.SIGCHLD), Code: linuxabi.CLD_KILLED, Pid: int32(child), Status: int32(unix.SIGTERM)}
		if info, errno := waitid(g, unix.P_PID, child, unix.WEXITED); errno != 0 || info != want {
			t.Errorf("waitid of a killed child = %+v, %v; want %+v", info, errno, want)
		}
	})
}

func TestWaitAndSIGCHLDReportTheChildsRealUID(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		var sigUID atomic.Int32
		sigUID.Store(-1)
		h := s.Platform.Handler(func(g *fake.Guest) { sigUID.Store(readChildInfo(g, uintptr(g.Regs().Rsi)).UID) })
		g.Sigaction(unix.SIGCHLD, fake.SigAction{Handler: h, Flags: linuxabi.SA_SIGINFO})
		child := fork(t, g, func(g *fake.Guest) {
			if _, errno := g.Call(unix.SYS_SETRESUID, 1234, 1234, 1234); errno != 0 {
				t.Errorf("setresuid: %v", errno)
			}
		})
		info, errno := waitid(g, unix.P_PID, child, unix.WEXITED|unix.WNOWAIT)
		if errno != 0 || info.UID != 1234 {
			t.Errorf("waitid: si_uid %d, %v; want the child's uid 1234", info.UID, errno)
		}
		if !within(g, func() bool { return sigUID.Load() != -1 }) || sigUID.Load() != 1234 {
			t.Errorf("SIGCHLD's si_uid %d, want 1234", sigUID.Load())
		}
		waitExit(t, g, child, 0)
	})
}

func TestWaitForAProcessGroupReapsOnlyItsMembers(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		r, w := pipe(t, g)
		own := fork(t, g, func(g *fake.Guest) {
			g.Call(unix.SYS_SETPGID, 0, 0)
			send(t, g, w, 1)
		})
		recv(t, g, r)
		same := fork(t, g, func(g *fake.Guest) {})
		waitZombie(t, g, own)
		waitZombie(t, g, same)
		if got, _, errno := g.Wait(-own, 0); got != own || errno != 0 {
			t.Errorf("wait4(-%d) = %d, %v; want the child of that group", own, got, errno)
		}
		if got, _, errno := g.Wait(-own, 0); errno != unix.ECHILD {
			t.Errorf("wait4(-%d) with the group empty = %d, %v; want ECHILD", own, got, errno)
		}
		if info, errno := waitid(g, unix.P_PGID, 0, unix.WEXITED); errno != 0 || info.Pid != int32(same) {
			t.Errorf("waitid(P_PGID, 0) = %+v, %v; want the child in the caller's group (%d)", info, errno, same)
		}
	})
}

func TestWALLWaitsForEveryKindOfChild(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		a := fork(t, g, func(g *fake.Guest) {})
		b, _ := g.Clone(uint64(unix.SIGUSR2), 0, 0, 0, 0, func(g *fake.Guest) {})
		seen := map[int]bool{}
		for i := 0; i < 2; i++ {
			got, _, errno := g.Wait(-1, unix.WALL)
			if errno != 0 {
				t.Errorf("wait4(-1, __WALL): %v", errno)
			}
			seen[got] = true
		}
		if !seen[a] || !seen[int(b)] {
			t.Errorf("__WALL reaped %v, want %d and %d", seen, a, b)
		}
	})
}

func TestOrphansAreReparentedToInit(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		r, w := pipe(t, g)
		ask, answer := pipe(t, g)
		child := fork(t, g, func(g *fake.Guest) {
			send(t, g, w, uint32(fork(t, g, func(g *fake.Guest) {
				recv(t, g, ask)
				send(t, g, w, uint32(getppid(g)))
			})))
		})
		orphan := int(recv(t, g, r))
		waitExit(t, g, child, 0)
		send(t, g, answer, 1)
		if ppid := recv(t, g, r); ppid != 1 {
			t.Errorf("the orphan's parent is %d, want init", ppid)
		}
		waitExit(t, g, orphan, 0)
	})
}

func TestOrphansGoToTheNearestSubreaper(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		reaper := fork(t, g, func(g *fake.Guest) {
			if _, errno := g.Call(unix.SYS_PRCTL, unix.PR_SET_CHILD_SUBREAPER, 1); errno != 0 {
				t.Errorf("PR_SET_CHILD_SUBREAPER: %v", errno)
			}
			flag := g.Alloc(4)
			g.Call(unix.SYS_PRCTL, unix.PR_GET_CHILD_SUBREAPER, flag)
			if g.ReadU32(flag) != 1 {
				t.Errorf("PR_GET_CHILD_SUBREAPER = %d", g.ReadU32(flag))
			}
			self := getpid(g)
			r, w := pipe(t, g)
			ask, answer := pipe(t, g)
			middle := fork(t, g, func(g *fake.Guest) {
				send(t, g, w, uint32(fork(t, g, func(g *fake.Guest) {
					recv(t, g, ask)
					send(t, g, w, uint32(getppid(g)))
					exitGroup(g, 6)
				})))
			})
			orphan := int(recv(t, g, r))
			waitExit(t, g, middle, 0)
			send(t, g, answer, 1)
			if ppid := int(recv(t, g, r)); ppid != self {
				t.Errorf("the orphan's parent is %d, want the subreaper %d", ppid, self)
			}
			waitExit(t, g, orphan, 6)
		})
		waitExit(t, g, reaper, 0)
	})
}

func TestAZombieReparentedToASubreaperIsSignalledToIt(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		reaper := fork(t, g, func(g *fake.Guest) {
			g.Call(unix.SYS_PRCTL, unix.PR_SET_CHILD_SUBREAPER, 1)
			sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGCHLD))
			r, w := pipe(t, g)
			middle := fork(t, g, func(g *fake.Guest) {
				grandchild := fork(t, g, func(g *fake.Guest) { exitGroup(g, 5) })
				waitZombie(t, g, grandchild)
				send(t, g, w, uint32(grandchild))
			})
			grandchild := int(recv(t, g, r))
			// Linux hands the zombie over (with a SIGCHLD to its new
			// parent) before the middle process tells its own end: the
			// first SIGCHLD is the grandchild's, and the middle one's,
			// a standard signal already pending, is not queued again.
			set := g.Alloc(8)
			g.WriteU64(set, sigset(unix.SIGCHLD))
			info := g.Alloc(128)
			waitExit(t, g, middle, 0)
			if sig, errno := g.Call(unix.SYS_RT_SIGTIMEDWAIT, set, info, timespec(g, time.Second), 8); errno != 0 || sig != uintptr(unix.SIGCHLD) {
				t.Errorf("sigtimedwait = %d, %v; want SIGCHLD", sig, errno)
			}
			if got := readChildInfo(g, info); got.Pid != int32(grandchild) || got.Status != 5 {
				t.Errorf("the first SIGCHLD: %+v, want the reparented zombie %d with status 5", got, grandchild)
			}
			waitExit(t, g, grandchild, 5)
		})
		waitExit(t, g, reaper, 0)
	})
}

func TestExitGroupFromAThreadEndsTheProcessWithItsCode(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {
			g.Thread(func(g *fake.Guest) { exitGroup(g, 9) })
			pause(g)
		})
		waitExit(t, g, child, 9)
	})
}

func TestTheLastThreadsExitCodeIsTheProcesss(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {
			g.Thread(func(g *fake.Guest) {
				sleep(g, 10*time.Millisecond)
				g.Call(unix.SYS_EXIT, 5)
			})
			g.Call(unix.SYS_EXIT, 3) // the leader alone
		})
		waitExit(t, g, child, 5)
	})
}

func TestAnIgnoredSIGCHLDReapsChildrenAtOnce(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		g.Sigaction(unix.SIGCHLD, fake.SigAction{Handler: linuxabi.SIG_IGN})
		child := fork(t, g, func(g *fake.Guest) { sleep(g, 5*time.Millisecond) })
		// The wait blocks until the child has ended, then finds nothing.
		got, _, errno := g.Wait(-1, 0)
		expectErrno(t, "wait4 with SIGCHLD ignored", uintptr(got), errno, unix.ECHILD)
		if errno := kill(g, child, 0); errno != unix.ESRCH {
			t.Errorf("kill(child, 0) = %v, want ESRCH: no zombie is left", errno)
		}
	})
}

func TestSANOCLDWAITReapsChildrenAndStillSignals(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		var from atomic.Int32
		h := s.Platform.Handler(func(g *fake.Guest) { from.Store(readChildInfo(g, uintptr(g.Regs().Rsi)).Pid) })
		g.Sigaction(unix.SIGCHLD, fake.SigAction{Handler: h, Flags: linuxabi.SA_SIGINFO | linuxabi.SA_NOCLDWAIT})
		child := fork(t, g, func(g *fake.Guest) {})
		got, _, errno := g.Wait(-1, 0)
		expectErrno(t, "wait4 with SA_NOCLDWAIT", uintptr(got), errno, unix.ECHILD)
		if !within(g, func() bool { return from.Load() != 0 }) || from.Load() != int32(child) {
			t.Errorf("SIGCHLD from %d, want %d: SA_NOCLDWAIT with a handler still signals", from.Load(), child)
		}
	})
}

func TestSANOCLDSTOPKeepsStopsFromSignallingTheParent(t *testing.T) {
	for _, noStop := range []bool{false, true} {
		s := newSandbox(t)
		runInit(t, s, func(g *fake.Guest) {
			var codes atomic.Uint64 // a bit per si_code seen
			h := s.Platform.Handler(func(g *fake.Guest) {
				codes.Or(1 << readChildInfo(g, uintptr(g.Regs().Rsi)).Code)
			})
			var flags uint64 = linuxabi.SA_SIGINFO
			if noStop {
				flags |= linuxabi.SA_NOCLDSTOP
			}
			g.Sigaction(unix.SIGCHLD, fake.SigAction{Handler: h, Flags: flags})
			// Each change is awaited before the next: a SIGCHLD still
			// pending would absorb the next one.
			seen := func(code int) bool {
				return within(g, func() bool { return codes.Load()&(1<<code) != 0 })
			}
			child := fork(t, g, pause)
			kill(g, child, unix.SIGSTOP)
			g.Wait(child, unix.WUNTRACED)
			if !noStop && !seen(linuxabi.CLD_STOPPED) {
				t.Errorf("no SIGCHLD for the stop")
			}
			kill(g, child, unix.SIGCONT)
			g.Wait(child, unix.WCONTINUED)
			if !noStop && !seen(linuxabi.CLD_CONTINUED) {
				t.Errorf("no SIGCHLD for the continue")
			}
			kill(g, child, unix.SIGKILL)
			waitSignaled(t, g, child, unix.SIGKILL)
			if !seen(linuxabi.CLD_KILLED) {
				t.Errorf("no SIGCHLD for the kill")
			}
			stops := uint64(1)<<linuxabi.CLD_STOPPED | 1<<linuxabi.CLD_CONTINUED
			if noStop && codes.Load()&stops != 0 {
				t.Errorf("SA_NOCLDSTOP: SIGCHLD codes %#b include a stop or continue", codes.Load())
			}
		})
	}
}

func TestInitsEndEndsEveryProcess(t *testing.T) {
	s := newSandbox(t)
	st := s.Run(func(g *fake.Guest) {
		fork(t, g, pause)
		g.Thread(pause)
		exitGroup(g, 3)
	})
	if st != (kernel.ExitStatus{Code: 3}) {
		t.Errorf("sandbox status %+v, want init's code 3", st)
	}
	if !within(nil, func() bool { return s.Kernel.NumTasks() == 0 }) {
		t.Errorf("%d tasks left after init's end", s.Kernel.NumTasks())
	}
}
