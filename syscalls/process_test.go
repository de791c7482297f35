package syscalls

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// The life of processes through the table: fork, wait, exit, threads,
// execve, vfork, and signal handlers interrupting or restarting calls.

func TestInitIsPIDOneAndItsExitStatusIsTheSandboxs(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	st := s.Run(func(g *fake.Guest) {
		if pid, _ := g.Call(unix.SYS_GETPID); pid != 1 {
			t.Errorf("getpid of init = %d, want 1", pid)
		}
		g.Call(unix.SYS_EXIT_GROUP, 3)
		t.Errorf("exit_group returned")
	})
	if st != (kernel.ExitStatus{Code: 3}) {
		t.Errorf("sandbox ended with %+v, want code 3; log:\n%s", st, s.Log())
	}
}

func TestAForkedChildsExitStatusReachesWait4(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		child, errno := g.Fork(func(g *fake.Guest) {
			if ppid, _ := g.Call(unix.SYS_GETPPID); ppid != 1 {
				t.Errorf("the child's getppid = %d, want 1", ppid)
			}
			g.Call(unix.SYS_EXIT_GROUP, 7)
		})
		if errno != 0 || child <= 1 {
			t.Errorf("fork = %d, %v", child, errno)
		}
		got, status, errno := g.Wait(child, 0)
		if got != child || errno != 0 || !status.Exited() || status.ExitStatus() != 7 {
			t.Errorf("wait4 = %d, %v, %v; want %d exited with 7", got, status, errno, child)
		}
		if _, _, errno := g.Wait(-1, 0); errno != unix.ECHILD {
			t.Errorf("wait4 with no children left: %v, want ECHILD", errno)
		}
	})
}

func TestAHandlerRunsWithTheSignalNumberAsItsArgument(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	var handled []int
	runIn(t, s, func(g *fake.Guest) {
		h := s.Platform.Handler(func(g *fake.Guest) { handled = append(handled, int(g.Regs().Rdi)) })
		if _, errno := g.Sigaction(unix.SIGUSR1, fake.SigAction{Handler: h}); errno != 0 {
			t.Errorf("sigaction: %v", errno)
		}
		g.Call(unix.SYS_KILL, 1, uintptr(unix.SIGUSR1))
		if len(handled) != 1 || handled[0] != int(unix.SIGUSR1) {
			t.Errorf("handler calls after kill = %v, want one with SIGUSR1", handled)
		}
	})
}

func TestAThreadRunsInTheProcessAndItsTIDWordIsClearedAtExit(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		pid, _ := g.Call(unix.SYS_GETPID)
		shared := g.Alloc(8)
		tid, tidAddr, errno := g.Thread(func(g *fake.Guest) {
			if p, _ := g.Call(unix.SYS_GETPID); p != pid {
				t.Errorf("the thread's getpid = %d, want the process's %d", p, pid)
			}
			g.WriteU64(shared, 42) // the same memory
		})
		if errno != 0 || tid == int(pid) {
			t.Errorf("thread = %d, %v", tid, errno)
		}
		g.Join(tidAddr) // returns once the kernel cleared the word
		if g.ReadU64(shared) != 42 {
			t.Errorf("the thread's write is not in the process's memory")
		}
	})
}

func TestExecveRunsTheNewProgramInTheSameProcess(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.AddProgram("/bin/other", func(g *fake.Guest) {
		pid, _ := g.Call(unix.SYS_GETPID)
		g.Call(unix.SYS_EXIT_GROUP, 40+pid)
	})
	runIn(t, s, func(g *fake.Guest) {
		child, _ := g.Fork(func(g *fake.Guest) {
			_, errno := g.Call(unix.SYS_EXECVE, g.CString("/bin/other"), g.CStrings([]string{"other"}), g.CStrings(nil))
			t.Errorf("execve returned %v", errno)
		})
		_, status, _ := g.Wait(child, 0)
		if status.ExitStatus() != 40+child {
			t.Errorf("exec'd child: %v, want exit status %d (its pid kept)", status, 40+child)
		}
		_, errno := g.Call(unix.SYS_EXECVE, g.CString("/bin/none"), g.CStrings([]string{"none"}), 0)
		if errno != unix.ENOENT {
			t.Errorf("execve of a missing file: %v, want ENOENT", errno)
		}
	})
}

func TestAChildThatFaultsDiesOfSIGSEGV(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		child, _ := g.Fork(func(g *fake.Guest) { g.ReadU32(unmappedAddr) })
		_, status, _ := g.Wait(child, 0)
		if !status.Signaled() || status.Signal() != unix.SIGSEGV {
			t.Errorf("faulting child: %v, want killed by SIGSEGV", status)
		}
	})
}

func TestAHandlerInterruptsABlockingReadWithEINTRUnlessSARESTART(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	runIn(t, s, func(g *fake.Guest) {
		r, w := guestPipe(t, g, 0)
		for _, restart := range []bool{false, true} {
			act := fake.SigAction{Handler: s.Platform.Handler(func(*fake.Guest) {})}
			if restart {
				act.Flags = linuxabi.SA_RESTART
			}
			g.Sigaction(unix.SIGALRM, act)
			// SIGALRM every 10ms, so that one comes while the read waits
			// however late the read starts.
			armItimer(g, 10*time.Millisecond)
			child := 0
			if restart {
				child, _ = g.Fork(func(g *fake.Guest) {
					g.Compute(50 * time.Millisecond)
					g.Call(unix.SYS_WRITE, w, g.CString("abc"), 3)
				})
			}
			buf := g.Alloc(16)
			n, errno := g.Call(unix.SYS_READ, r, buf, 16)
			armItimer(g, 0)
			if restart && (n != 3 || errno != 0) {
				t.Errorf("read interrupted by an SA_RESTART handler = %d, %v; want it restarted, then 3", n, errno)
			}
			if !restart && errno != unix.EINTR {
				t.Errorf("read interrupted by a handler = %d, %v; want EINTR", n, errno)
			}
			if child != 0 {
				g.Wait(child, 0)
			}
		}
	})
}

// armItimer sets ITIMER_REAL to fire every period (0: disarms it).
func armItimer(g *fake.Guest, period time.Duration) {
	it := g.Alloc(32) // struct itimerval: it_interval, it_value
	for _, off := range []uintptr{0, 16} {
		g.WriteU64(it+off, uint64(period/time.Second))
		g.WriteU64(it+off+8, uint64(period%time.Second/time.Microsecond))
	}
	g.Call(unix.SYS_SETITIMER, 0 /* ITIMER_REAL */, it, 0)
}

func TestVforkSuspendsTheParentUntilTheChildExecs(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.AddProgram("/bin/other", func(g *fake.Guest) { g.Call(unix.SYS_EXIT_GROUP, 5) })
	runIn(t, s, func(g *fake.Guest) {
		shared := g.Alloc(8)
		pid, errno := g.Clone(unix.CLONE_VM|unix.CLONE_VFORK|uint64(unix.SIGCHLD), 0, 0, 0, 0, func(g *fake.Guest) {
			g.Compute(20 * time.Millisecond)
			g.WriteU64(shared, 1) // the parent's memory, before it runs again
			g.Call(unix.SYS_EXECVE, g.CString("/bin/other"), g.CStrings([]string{"other"}), 0)
		})
		if errno != 0 {
			t.Errorf("vfork: %v", errno)
		}
		if g.ReadU64(shared) != 1 {
			t.Errorf("the parent ran before its vfork child exec'd")
		}
		_, status, _ := g.Wait(int(pid), 0)
		if status.ExitStatus() != 5 {
			t.Errorf("vfork child: %v, want exit status 5", status)
		}
	})
}
