package kernel_test

import (
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// ptrace makes the raw ptrace(2) call.
func ptrace(g *fake.Guest, req int, pid int, addr, data uintptr) (uintptr, unix.Errno) {
	return g.Call(unix.SYS_PTRACE, uintptr(req), uintptr(pid), addr, data)
}

// mustPtrace fails the test if the request does.
func mustPtrace(t *testing.T, g *fake.Guest, req int, pid int, addr, data uintptr) {
	t.Helper()
	if _, errno := ptrace(g, req, pid, addr, data); errno != 0 {
		t.Errorf("ptrace(%#x, %d) = %v", req, pid, errno)
	}
}

// getRegs and setRegs are PTRACE_GETREGS and PTRACE_SETREGS.
func getRegs(t *testing.T, g *fake.Guest, pid int) kernel.UserRegs {
	t.Helper()
	var r kernel.UserRegs
	buf := g.Alloc(unsafe.Sizeof(r))
	mustPtrace(t, g, unix.PTRACE_GETREGS, pid, 0, buf)
	g.Read(buf, unsafe.Slice((*byte)(unsafe.Pointer(&r)), unsafe.Sizeof(r)))
	return r
}

func setRegs(t *testing.T, g *fake.Guest, pid int, r kernel.UserRegs) {
	t.Helper()
	buf := g.Alloc(unsafe.Sizeof(r))
	g.Write(buf, unsafe.Slice((*byte)(unsafe.Pointer(&r)), unsafe.Sizeof(r)))
	mustPtrace(t, g, unix.PTRACE_SETREGS, pid, 0, buf)
}

// sigInfo is PTRACE_GETSIGINFO's signo, code and sender pid.
func sigInfo(g *fake.Guest, pid int) (signo, code, sender int32, errno unix.Errno) {
	buf := g.Alloc(128)
	_, errno = ptrace(g, unix.PTRACE_GETSIGINFO, pid, 0, buf)
	return int32(g.ReadU32(buf)), int32(g.ReadU32(buf + 8)), int32(g.ReadU32(buf + 16)), errno
}

// eventMsg is PTRACE_GETEVENTMSG.
func eventMsg(t *testing.T, g *fake.Guest, pid int) uint64 {
	t.Helper()
	buf := g.Alloc(8)
	mustPtrace(t, g, unix.PTRACE_GETEVENTMSG, pid, 0, buf)
	return g.ReadU64(buf)
}

// waitStop waits for pid's next stop (with __WALL) and fails the test
// unless its status is want<<8|0x7f.
func waitStop(t *testing.T, g *fake.Guest, pid int, want int) {
	t.Helper()
	got, status, errno := g.Wait(pid, unix.WALL)
	if errno != 0 || got != pid || uint32(status) != uint32(want<<8|0x7f) {
		t.Errorf("wait4(%d) = %d, %#x, %v; want a stop with status %#x", pid, got, uint32(status), errno, want<<8|0x7f)
	}
}

// tracedChild forks a child that asks to be traced and stops itself with
// SIGSTOP, then runs child; it returns once the child is in that stop.
func tracedChild(t *testing.T, g *fake.Guest, child fake.Program) int {
	t.Helper()
	pid := fork(t, g, func(g *fake.Guest) {
		if _, errno := ptrace(g, unix.PTRACE_TRACEME, 0, 0, 0); errno != 0 {
			t.Errorf("PTRACE_TRACEME: %v", errno)
		}
		kill(g, getpid(g), unix.SIGSTOP)
		child(g)
	})
	waitStop(t, g, pid, int(unix.SIGSTOP))
	return pid
}

const sysGood = int(unix.SIGTRAP) | 0x80

// syscallEntry resumes pid from stop to stop with PTRACE_SYSCALL until
// the entry-stop of call nr (its tracer has not set TRACESYSGOOD).
func syscallEntry(t *testing.T, g *fake.Guest, pid int, nr uint64) {
	t.Helper()
	for i := 0; i < 100; i++ {
		mustPtrace(t, g, unix.PTRACE_SYSCALL, pid, 0, 0)
		waitStop(t, g, pid, int(unix.SIGTRAP))
		if r := getRegs(t, g, pid); r.OrigRax == nr && int64(r.Rax) == -int64(unix.ENOSYS) {
			return
		}
		mustPtrace(t, g, unix.PTRACE_SYSCALL, pid, 0, 0) // its exit
		waitStop(t, g, pid, int(unix.SIGTRAP))
	}
	t.Errorf("no entry of system call %d in 100", nr)
}

func TestATracedSignalStopsTheTraceeUntilTheTracerChoosesWhatToDeliver(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		// Suppressed: SIGUSR1 would kill the child.
		pid := tracedChild(t, g, func(g *fake.Guest) {
			kill(g, getpid(g), unix.SIGUSR1)
			exitGroup(g, 3)
		})
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitStop(t, g, pid, int(unix.SIGUSR1))
		if signo, code, sender, errno := sigInfo(g, pid); errno != 0 || signo != int32(unix.SIGUSR1) ||
			code != linuxabi.SI_USER || sender != int32(pid) {
			t.Errorf("GETSIGINFO = %d, %d, %d, %v; want SIGUSR1 from the child itself", signo, code, sender, errno)
		}
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitExit(t, g, pid, 3)

		// Replaced: the tracer's signal is delivered instead.
		pid = tracedChild(t, g, func(g *fake.Guest) {
			kill(g, getpid(g), unix.SIGUSR1)
			exitGroup(g, 3)
		})
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitStop(t, g, pid, int(unix.SIGUSR1))
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, uintptr(unix.SIGTERM))
		waitSignaled(t, g, pid, unix.SIGTERM)
	})
}

func TestSyscallStopsShowENOSYSAtEntryAndTheResultAtExit(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		pid := tracedChild(t, g, func(g *fake.Guest) {
			if ppid := getppid(g); ppid != 1 {
				t.Errorf("getppid = %d under the tracer, want 1", ppid)
			}
		})
		mustPtrace(t, g, unix.PTRACE_SETOPTIONS, pid, 0, unix.PTRACE_O_TRACESYSGOOD)
		mustPtrace(t, g, unix.PTRACE_SYSCALL, pid, 0, 0)
		waitStop(t, g, pid, sysGood)
		r := getRegs(t, g, pid)
		if r.OrigRax != unix.SYS_GETPPID || int64(r.Rax) != -int64(unix.ENOSYS) {
			t.Errorf("at entry: orig_rax %d, rax %d; want getppid (%d) and -ENOSYS", r.OrigRax, int64(r.Rax), unix.SYS_GETPPID)
		}
		if signo, code, _, errno := sigInfo(g, pid); errno != 0 || signo != int32(unix.SIGTRAP) || code != int32(sysGood) {
			t.Errorf("GETSIGINFO at entry = %d, %#x, %v; want SIGTRAP, si_code SIGTRAP|0x80", signo, code, errno)
		}
		if msg := eventMsg(t, g, pid); msg != unix.PTRACE_EVENTMSG_SYSCALL_ENTRY {
			t.Errorf("event message at entry = %d", msg)
		}
		mustPtrace(t, g, unix.PTRACE_SYSCALL, pid, 0, 0)
		waitStop(t, g, pid, sysGood)
		if r := getRegs(t, g, pid); r.OrigRax != unix.SYS_GETPPID || r.Rax != 1 {
			t.Errorf("at exit: orig_rax %d, rax %d; want getppid and 1", r.OrigRax, int64(r.Rax))
		}
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitExit(t, g, pid, 0)
	})
}

func TestATracerSkipsACallBySettingOrigRaxToMinusOne(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		pid := tracedChild(t, g, func(g *fake.Guest) {
			if _, errno := g.Call(unix.SYS_KILL, 1, uintptr(unix.SIGKILL)); errno != 0 {
				t.Errorf("the skipped kill failed: %v", errno)
			}
			if got := getpid(g); got != 4242 {
				t.Errorf("getpid = %d, want the tracer's 4242", got)
			}
		})
		for _, result := range []uint64{0, 4242} {
			mustPtrace(t, g, unix.PTRACE_SYSCALL, pid, 0, 0)
			waitStop(t, g, pid, int(unix.SIGTRAP))
			r := getRegs(t, g, pid)
			r.OrigRax, r.Rax = ^uint64(0), result
			setRegs(t, g, pid, r)
			mustPtrace(t, g, unix.PTRACE_SYSCALL, pid, 0, 0)
			waitStop(t, g, pid, int(unix.SIGTRAP))
			if r := getRegs(t, g, pid); r.Rax != result || r.OrigRax != ^uint64(0) {
				t.Errorf("at exit of a skipped call: rax %d, orig_rax %d; want %d and -1", r.Rax, int64(r.OrigRax), result)
			}
		}
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitExit(t, g, pid, 0)
	})
}

func TestRequestsOnATraceeThatIsNotStoppedFailWithESRCH(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		r, w := pipe(t, g)
		pid := tracedChild(t, g, func(g *fake.Guest) { recv(t, g, r) })
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		buf := g.Alloc(512)
		for _, req := range []int{unix.PTRACE_GETREGS, unix.PTRACE_CONT, unix.PTRACE_PEEKDATA, unix.PTRACE_DETACH} {
			_, errno := ptrace(g, req, pid, buf, buf)
			expectErrno(t, "request on a running tracee", 0, errno, unix.ESRCH)
		}
		_, errno := ptrace(g, unix.PTRACE_INTERRUPT, pid, 0, 0)
		expectErrno(t, "PTRACE_INTERRUPT on a tracee not seized", 0, errno, unix.EIO)
		_, errno = ptrace(g, unix.PTRACE_GETREGS, 1, 0, buf)
		expectErrno(t, "GETREGS on a process not traced", 0, errno, unix.ESRCH)
		send(t, g, w, 0)
		waitExit(t, g, pid, 0)
	})
}

func TestSeizedTraceeTrapsOnInterruptWithEventStop(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		pid := fork(t, g, func(g *fake.Guest) { pause(g) })
		_, errno := ptrace(g, unix.PTRACE_SEIZE, pid, 1, 0)
		expectErrno(t, "SEIZE with an address", 0, errno, unix.EIO)
		mustPtrace(t, g, unix.PTRACE_SEIZE, pid, 0, 0)
		_, errno = ptrace(g, unix.PTRACE_SEIZE, pid, 0, 0)
		expectErrno(t, "SEIZE of a traced task", 0, errno, unix.EPERM)
		if got, _, errno := g.Wait(pid, unix.WALL|unix.WNOHANG); got != 0 || errno != 0 {
			t.Errorf("wait after SEIZE = %d, %v: a seize must not stop the tracee", got, errno)
		}
		mustPtrace(t, g, unix.PTRACE_INTERRUPT, pid, 0, 0)
		stop := int(unix.SIGTRAP) | unix.PTRACE_EVENT_STOP<<8
		waitStop(t, g, pid, stop)
		if signo, code, sender, errno := sigInfo(g, pid); errno != 0 || signo != int32(unix.SIGTRAP) ||
			code != int32(stop) || sender != int32(pid) {
			t.Errorf("GETSIGINFO = %d, %#x, %d, %v; want SIGTRAP, %#x, the tracee", signo, code, sender, errno, stop)
		}
		_, errno = ptrace(g, unix.PTRACE_LISTEN, pid, 0, 0)
		if errno != 0 {
			t.Errorf("LISTEN in an event stop: %v", errno)
		}
		if got, _, errno := g.Wait(pid, unix.WALL|unix.WNOHANG); got != 0 || errno != 0 {
			t.Errorf("wait on a listening tracee = %d, %v: it is not reported", got, errno)
		}
		// The interrupted pause restarts; SIGUSR1 then ends it.
		mustPtrace(t, g, unix.PTRACE_INTERRUPT, pid, 0, 0)
		waitStop(t, g, pid, stop)
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		kill(g, pid, unix.SIGUSR1)
		waitStop(t, g, pid, int(unix.SIGUSR1))
		// Detaching with the signal delivers it, untraced.
		mustPtrace(t, g, unix.PTRACE_DETACH, pid, 0, uintptr(unix.SIGUSR1))
		waitSignaled(t, g, pid, unix.SIGUSR1)
	})
}

func TestForkEventTracesTheChildWhichStopsFirst(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		pid := tracedChild(t, g, func(g *fake.Guest) {
			grandchild := fork(t, g, func(g *fake.Guest) { exitGroup(g, 7) })
			waitExit(t, g, grandchild, 7)
		})
		mustPtrace(t, g, unix.PTRACE_SETOPTIONS, pid, 0, unix.PTRACE_O_TRACEFORK)
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitStop(t, g, pid, int(unix.SIGTRAP)|unix.PTRACE_EVENT_FORK<<8)
		grandchild := int(eventMsg(t, g, pid))
		// The new child is traced, and stops with a SIGSTOP first.
		waitStop(t, g, grandchild, int(unix.SIGSTOP))
		if signo, code, sender, errno := sigInfo(g, grandchild); errno != 0 || signo != int32(unix.SIGSTOP) ||
			code != linuxabi.SI_USER || sender != 0 {
			t.Errorf("the new child's first stop: %d, %d, %d, %v; want a SIGSTOP from no one", signo, code, sender, errno)
		}
		mustPtrace(t, g, unix.PTRACE_CONT, grandchild, 0, 0)
		waitExit(t, g, grandchild, 7) // the tracer sees it first
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitStop(t, g, pid, int(unix.SIGCHLD))
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, uintptr(unix.SIGCHLD))
		waitExit(t, g, pid, 0)
	})
}

func TestExitEventStopsWithTheExitStatusBeforeTheTraceeEnds(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		pid := tracedChild(t, g, func(g *fake.Guest) { exitGroup(g, 5) })
		mustPtrace(t, g, unix.PTRACE_SETOPTIONS, pid, 0, unix.PTRACE_O_TRACEEXIT)
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitStop(t, g, pid, int(unix.SIGTRAP)|unix.PTRACE_EVENT_EXIT<<8)
		if msg := eventMsg(t, g, pid); msg != 5<<8 {
			t.Errorf("exit event message = %#x, want 0x500", msg)
		}
		if r := getRegs(t, g, pid); r.OrigRax != unix.SYS_EXIT_GROUP {
			t.Errorf("registers at the exit event: orig_rax %d, want exit_group", r.OrigRax)
		}
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitExit(t, g, pid, 5)
	})
}

func TestSIGKILLEndsAnyStopAndSkipsTheExitEvent(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		pid := tracedChild(t, g, func(g *fake.Guest) {})
		mustPtrace(t, g, unix.PTRACE_SETOPTIONS, pid, 0, unix.PTRACE_O_TRACEEXIT)
		kill(g, pid, unix.SIGKILL)
		waitSignaled(t, g, pid, unix.SIGKILL)
	})
}

func TestExecReportsTheEventOrALegacySIGTRAP(t *testing.T) {
	s := newSandbox(t)
	s.AddProgram("/bin/six", func(g *fake.Guest) { exitGroup(g, 6) })
	runInit(t, s, func(g *fake.Guest) {
		exec := func(g *fake.Guest) {
			argv := g.CStrings([]string{"six"})
			g.Call(unix.SYS_EXECVE, g.CString("/bin/six"), argv, g.CStrings(nil))
		}
		// Without PTRACE_O_TRACEEXEC: a SIGTRAP once the new program is in.
		pid := tracedChild(t, g, exec)
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitStop(t, g, pid, int(unix.SIGTRAP))
		if signo, code, sender, _ := sigInfo(g, pid); signo != int32(unix.SIGTRAP) || code != linuxabi.SI_USER || sender != int32(pid) {
			t.Errorf("exec's SIGTRAP: %d, %d, %d; want SIGTRAP from the tracee", signo, code, sender)
		}
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitExit(t, g, pid, 6)

		// With it: the event, whose message is the former thread id, then
		// the execve's exit-stop with rax 0.
		pid = tracedChild(t, g, exec)
		mustPtrace(t, g, unix.PTRACE_SETOPTIONS, pid, 0, unix.PTRACE_O_TRACEEXEC)
		syscallEntry(t, g, pid, unix.SYS_EXECVE)
		mustPtrace(t, g, unix.PTRACE_SYSCALL, pid, 0, 0)
		waitStop(t, g, pid, int(unix.SIGTRAP)|unix.PTRACE_EVENT_EXEC<<8)
		if msg := eventMsg(t, g, pid); msg != uint64(pid) {
			t.Errorf("exec event message = %d, want %d", msg, pid)
		}
		mustPtrace(t, g, unix.PTRACE_SYSCALL, pid, 0, 0)
		waitStop(t, g, pid, int(unix.SIGTRAP))
		if r := getRegs(t, g, pid); r.OrigRax != unix.SYS_EXECVE || r.Rax != 0 {
			t.Errorf("execve's exit-stop: orig_rax %d, rax %d; want execve and 0", r.OrigRax, int64(r.Rax))
		}
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitExit(t, g, pid, 6)
	})
}

func TestPokeWritesPrivateMemoryEvenWhereItIsReadOnly(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		ro, errno := g.Call(unix.SYS_MMAP, 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
		shared, errno2 := g.Call(unix.SYS_MMAP, 0, 4096, unix.PROT_READ, unix.MAP_SHARED|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
		if errno != 0 || errno2 != 0 {
			t.Fatalf("mmap: %v, %v", errno, errno2)
		}
		pid := tracedChild(t, g, func(g *fake.Guest) {
			if v := g.ReadU64(ro); v != 0x1122334455667788 {
				t.Errorf("the child reads %#x where its tracer poked", v)
			}
		})
		mustPtrace(t, g, unix.PTRACE_POKEDATA, pid, ro, 0x1122334455667788)
		_, errno = ptrace(g, unix.PTRACE_POKEDATA, pid, shared, 1)
		expectErrno(t, "POKEDATA into a read-only shared mapping", 0, errno, unix.EIO)
		_, errno = ptrace(g, unix.PTRACE_PEEKDATA, pid, 0x1000, g.Alloc(8))
		expectErrno(t, "PEEKDATA of no mapping", 0, errno, unix.EIO)
		if v := g.ReadU64(ro); v != 0 {
			t.Errorf("the tracer's own page reads %#x: the poke reached it", v)
		}
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitExit(t, g, pid, 0)
	})
}

func TestATracedProcessEndReachesItsParentOnlyAfterTheTracerReapsIt(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		toChild, fromTracer := pipe(t, g)
		toParent, fromParent := pipe(t, g)
		tellParent, tellTracer := pipe(t, g)
		child := fork(t, g, func(g *fake.Guest) { recv(t, g, toChild); exitGroup(g, 9) })
		tracer := fork(t, g, func(g *fake.Guest) {
			mustPtrace(t, g, unix.PTRACE_SEIZE, child, 0, 0)
			send(t, g, fromTracer, 0)
			if _, errno := waitid(g, unix.P_PID, child, unix.WEXITED|unix.WNOWAIT); errno != 0 {
				t.Errorf("the tracer's waitid(WNOWAIT): %v", errno)
			}
			send(t, g, tellTracer, 0) // the child has ended
			recv(t, g, toParent)      // and the parent has looked
			waitExit(t, g, child, 9)
		})
		recv(t, g, tellParent)
		if got, _, errno := g.Wait(child, unix.WNOHANG); got != 0 || errno != 0 {
			t.Errorf("the parent's wait4(WNOHANG) = %d, %v before the tracer reaped its child; want 0", got, errno)
		}
		send(t, g, fromParent, 0)
		waitExit(t, g, tracer, 0)
		waitExit(t, g, child, 9)
	})
}

func TestTheParentHasSIGCHLDPendingWhenItReapsAChildItsTracerReaped(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGCHLD))
		set := g.Alloc(8)
		g.WriteU64(set, sigset(unix.SIGCHLD))
		takeSIGCHLD := func(within time.Duration) unix.Errno {
			_, errno := g.Call(unix.SYS_RT_SIGTIMEDWAIT, set, 0, timespec(g, within), 8)
			return errno
		}
		// The signal once came from a goroutine, racing the parent's
		// wait: a few rounds catch it.
		for i := 0; i < 20; i++ {
			toChild, fromTracer := pipe(t, g)
			toTracer, fromParent := pipe(t, g)
			child := fork(t, g, func(g *fake.Guest) { recv(t, g, toChild); exitGroup(g, 4) })
			tracer := fork(t, g, func(g *fake.Guest) {
				mustPtrace(t, g, unix.PTRACE_SEIZE, child, 0, 0)
				send(t, g, fromTracer, 0)
				waitExit(t, g, child, 4)
				recv(t, g, toTracer)
			})
			waitExit(t, g, child, 4) // it returns once the tracer has reaped it
			if errno := takeSIGCHLD(0); errno != 0 {
				t.Errorf("round %d: no SIGCHLD pending once the parent reaped its child: %v", i, errno)
			}
			send(t, g, fromParent, 0)
			waitExit(t, g, tracer, 0)
			if errno := takeSIGCHLD(time.Second); errno != 0 {
				t.Errorf("round %d: no SIGCHLD for the tracer's end: %v", i, errno)
			}
			for _, fd := range []uintptr{toChild, fromTracer, toTracer, fromParent} {
				g.Call(unix.SYS_CLOSE, fd)
			}
		}
	})
}

func TestExitKillKillsTheTraceeWhenTheTracerExits(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) { pause(g) })
		tracer := fork(t, g, func(g *fake.Guest) {
			mustPtrace(t, g, unix.PTRACE_SEIZE, child, 0, unix.PTRACE_O_EXITKILL)
		})
		waitExit(t, g, tracer, 0)
		waitSignaled(t, g, child, unix.SIGKILL)
	})
}

func TestAnUnreportedSignalStopIsDeliveredWhenTheTracerGoes(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) { pause(g) })
		tracer := fork(t, g, func(g *fake.Guest) {
			mustPtrace(t, g, unix.PTRACE_SEIZE, child, 0, 0)
			kill(g, child, unix.SIGUSR1)
			sleep(g, 20*time.Millisecond) // the stop happens, unreported
		})
		waitExit(t, g, tracer, 0)
		waitSignaled(t, g, child, unix.SIGUSR1)
	})
}

func TestYAMAScopeLetsOnlyAncestorsOrNamedTracersAttach(t *testing.T) {
	s := newSandbox(t)
	noCaps := &[4]uint64{}
	s.Start(func(g *fake.Guest) {
		r, w := pipe(t, g)
		r2, w2 := pipe(t, g)
		target := fork(t, g, func(g *fake.Guest) {
			recv(t, g, r)
			if _, errno := g.Call(unix.SYS_PRCTL, unix.PR_SET_PTRACER, uintptr(recv(t, g, r)), 0, 0, 0); errno != 0 {
				t.Errorf("PR_SET_PTRACER: %v", errno)
			}
			send(t, g, w2, 0)
			pause(g)
		})
		sibling := fork(t, g, func(g *fake.Guest) {
			_, errno := ptrace(g, unix.PTRACE_ATTACH, target, 0, 0)
			expectErrno(t, "a sibling's attach under ptrace_scope 1", 0, errno, unix.EPERM)
			send(t, g, w, 0)
			send(t, g, w, uint32(getpid(g)))
			recv(t, g, r2)
			mustPtrace(t, g, unix.PTRACE_SEIZE, target, 0, unix.PTRACE_O_EXITKILL)
		})
		waitExit(t, g, sibling, 0)
		waitSignaled(t, g, target, unix.SIGKILL)
		if _, errno := g.Call(unix.SYS_PRCTL, unix.PR_SET_PTRACER, 0x7ffffff0, 0, 0, 0); errno != unix.EINVAL {
			t.Errorf("PR_SET_PTRACER of no process = %v, want EINVAL", errno)
		}
	}, kerneltest.Init{UID: 1000, GID: 1000, Caps: noCaps})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

func TestSingleStepTrapsAfterEachInstructionWithTheTrapFlagHidden(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		word := g.Alloc(8)
		pid := tracedChild(t, g, func(g *fake.Guest) {
			g.WriteU64(word, 1) // one instruction
			g.WriteU64(word, 2) // another
			getpid(g)           // a syscall instruction
			g.WriteU64(word, 3)
		})
		flagsOf := func() uint64 {
			buf := g.Alloc(8)
			mustPtrace(t, g, unix.PTRACE_PEEKUSR, pid, uintptr(unsafe.Offsetof(kernel.UserRegs{}.Eflags)), buf)
			return g.ReadU64(buf)
		}
		var rips []uint64
		for i := 0; i < 3; i++ {
			mustPtrace(t, g, unix.PTRACE_SINGLESTEP, pid, 0, 0)
			waitStop(t, g, pid, int(unix.SIGTRAP))
			if signo, code, _, _ := sigInfo(g, pid); signo != int32(unix.SIGTRAP) || code != linuxabi.TRAP_TRACE {
				t.Errorf("step %d: siginfo %d, %d; want SIGTRAP, TRAP_TRACE", i, signo, code)
			}
			r := getRegs(t, g, pid)
			if r.Eflags&0x100 != 0 || flagsOf()&0x100 != 0 {
				t.Errorf("step %d: the tracer sees the trap flag it did not set (eflags %#x)", i, r.Eflags)
			}
			rips = append(rips, r.Rip)
		}
		if rips[0] == rips[1] || rips[1] == rips[2] {
			t.Errorf("each step should move on an instruction: rips %#x", rips)
		}
		// The third step went over the syscall instruction: the trap comes
		// right after it, as the CPU's would.
		if r := getRegs(t, g, pid); r.OrigRax != ^uint64(0) || int(r.Rax) != pid {
			t.Errorf("after stepping over getpid: orig_rax %d, rax %d; want -1 and %d", int64(r.OrigRax), r.Rax, pid)
		}
		buf := g.Alloc(8)
		mustPtrace(t, g, unix.PTRACE_PEEKDATA, pid, word, buf)
		if v := g.ReadU64(buf); v != 2 {
			t.Errorf("after three steps the tracee's word is %d, want 2", v)
		}
		// Continuing clears the trap flag: no more traps.
		mustPtrace(t, g, unix.PTRACE_CONT, pid, 0, 0)
		waitExit(t, g, pid, 0)
	})
}

// TestAThreadThatMadeTheParentItsTracerIsReapedApartFromItsProcess: a
// non-leader thread that asked the parent to trace it ends as a zombie of
// its own; the parent's wait reports and reaps it by its thread id, then
// reports the process's end by the process's id (Linux's delay_group_leader).
func TestAThreadThatMadeTheParentItsTracerIsReapedApartFromItsProcess(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		toChild, fromParent := pipe(t, g)
		child := fork(t, g, func(g *fake.Guest) {
			traced, done := pipe(t, g)
			if _, _, errno := g.Thread(func(g *fake.Guest) {
				if _, errno := ptrace(g, unix.PTRACE_TRACEME, 0, 0, 0); errno != 0 {
					t.Errorf("PTRACE_TRACEME from a thread: %v", errno)
				}
				send(t, g, done, 0)
				pause(g)
			}); errno != 0 {
				t.Errorf("thread: %v", errno)
			}
			recv(t, g, traced)
			recv(t, g, toChild)
			exitGroup(g, 6)
		})
		send(t, g, fromParent, 0)
		var ended []int
		for len(ended) < 2 {
			got, status, errno := g.Wait(-1, unix.WALL)
			if errno != 0 {
				t.Errorf("wait4(-1, __WALL) after %v: %v", ended, errno)
				return
			}
			if !status.Exited() || status.ExitStatus() != 6 {
				t.Errorf("wait4: pid %d status %#x, want an exit with 6", got, uint32(status))
			}
			ended = append(ended, got)
		}
		if ended[0] == child || ended[1] != child {
			t.Errorf("reported in the order %v, want the thread's, then the process's %d", ended, child)
		}
	})
}
