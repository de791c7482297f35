package syscalls

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

func TestSmoke(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	st := s.Run(func(g *fake.Guest) {
		pid, _ := g.Call(unix.SYS_GETPID)
		if pid != 1 {
			t.Errorf("getpid = %d", pid)
		}
		child, errno := g.Fork(func(g *fake.Guest) {
			g.Call(unix.SYS_EXIT_GROUP, 7)
		})
		if errno != 0 {
			t.Fatalf("fork: %v", errno)
		}
		got, status, errno := g.Wait(child, 0)
		if got != child || errno != 0 || status.ExitStatus() != 7 {
			t.Errorf("wait = %d %v %v", got, status, errno)
		}
		g.Call(unix.SYS_EXIT_GROUP, 3)
	})
	if st.Code != 3 {
		t.Errorf("exit status %+v; log %s", st, s.Log())
	}
}

func TestSmokeSignalsThreadsExec(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.AddProgram("/bin/other", func(g *fake.Guest) {
		g.Call(unix.SYS_EXIT_GROUP, 42)
	})
	var handled, threadRan int
	st := s.Run(func(g *fake.Guest) {
		h := s.Platform.Handler(func(g *fake.Guest) { handled = int(g.Regs().Rdi) })
		if _, errno := g.Sigaction(unix.SIGUSR1, fake.SigAction{Handler: h}); errno != 0 {
			t.Errorf("sigaction: %v", errno)
		}
		g.Call(unix.SYS_KILL, 1, uintptr(unix.SIGUSR1))
		_, tidAddr, errno := g.Thread(func(g *fake.Guest) { threadRan++ })
		if errno != 0 {
			t.Errorf("thread: %v", errno)
		}
		g.Join(tidAddr)
		child, _ := g.Fork(func(g *fake.Guest) {
			_, errno := g.Call(unix.SYS_EXECVE, g.CString("/bin/other"), g.CStrings([]string{"other"}), g.CStrings(nil))
			t.Errorf("execve returned %v", errno)
		})
		_, status, _ := g.Wait(child, 0)
		if status.ExitStatus() != 42 {
			t.Errorf("exec'd child: %v", status)
		}
		// A child that faults dies of SIGSEGV.
		child, _ = g.Fork(func(g *fake.Guest) { g.ReadU32(0x10) })
		_, status, _ = g.Wait(child, 0)
		if !status.Signaled() || status.Signal() != unix.SIGSEGV {
			t.Errorf("faulting child: %v", status)
		}
	})
	if st.Code != 0 || handled != int(unix.SIGUSR1) || threadRan != 1 {
		t.Errorf("status %+v handled %d thread %d; log %s", st, handled, threadRan, s.Log())
	}
}

func TestSmokeBlockingAndVfork(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.AddProgram("/bin/other", func(g *fake.Guest) { g.Call(unix.SYS_EXIT_GROUP, 5) })
	st := s.Run(func(g *fake.Guest) {
		fds := g.Alloc(8)
		if _, errno := g.Call(unix.SYS_PIPE2, fds, 0); errno != 0 {
			t.Errorf("pipe2: %v", errno)
		}
		rfd, wfd := uintptr(g.ReadU32(fds)), uintptr(g.ReadU32(fds+4))
		h := s.Platform.Handler(func(g *fake.Guest) {})
		g.Sigaction(unix.SIGUSR1, fake.SigAction{Handler: h})
		child, _ := g.Fork(func(g *fake.Guest) {
			g.Compute(20 * time.Millisecond)
			g.Call(unix.SYS_KILL, 1, uintptr(unix.SIGUSR1))
		})
		buf := g.Alloc(16)
		if _, errno := g.Call(unix.SYS_READ, rfd, buf, 16); errno != unix.EINTR {
			t.Errorf("read interrupted by a handler without SA_RESTART: %v, want EINTR", errno)
		}
		g.Wait(child, 0)
		g.Call(unix.SYS_WRITE, wfd, buf, 3)
		if n, errno := g.Call(unix.SYS_READ, rfd, buf, 16); n != 3 || errno != 0 {
			t.Errorf("read = %d, %v", n, errno)
		}
		pid, errno := g.Clone(unix.CLONE_VM|unix.CLONE_VFORK|uint64(unix.SIGCHLD), 0, 0, 0, 0, func(g *fake.Guest) {
			g.Call(unix.SYS_EXECVE, g.CString("/bin/other"), g.CStrings([]string{"other"}), 0)
		})
		if errno != 0 {
			t.Errorf("vfork: %v", errno)
		}
		_, status, _ := g.Wait(int(pid), 0)
		if status.ExitStatus() != 5 {
			t.Errorf("vfork child: %v", status)
		}
	})
	if st.Code != 0 {
		t.Errorf("status %+v; log %s", st, s.Log())
	}
}
