package kernel_test

import (
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// What execve keeps and what it resets, seen from the program it starts.

func execve(t *testing.T, g *fake.Guest, name string) {
	t.Helper()
	_, errno := g.Call(unix.SYS_EXECVE, g.CString(name), g.CStrings([]string{name}), 0)
	t.Errorf("execve %s: %v", name, errno)
}

// capPermitted is the caller's permitted capability set (capget).
func capPermitted(t *testing.T, g *fake.Guest) uint64 {
	hdr, data := g.Alloc(8), g.Alloc(24)
	g.WriteU32(hdr, unix.LINUX_CAPABILITY_VERSION_3)
	if _, errno := g.Call(unix.SYS_CAPGET, hdr, data); errno != 0 {
		t.Errorf("capget: %v", errno)
	}
	return uint64(g.ReadU32(data+4)) | uint64(g.ReadU32(data+16))<<32
}

func TestExecClearsKeepCaps(t *testing.T) {
	s := newSandbox(t)
	s.AddProgram("/bin/after", func(g *fake.Guest) {
		if r, _ := g.Call(unix.SYS_PRCTL, unix.PR_GET_KEEPCAPS); r != 0 {
			t.Errorf("PR_GET_KEEPCAPS = %d after execve, want 0", r)
		}
		g.Call(unix.SYS_SETRESUID, 1000, 1000, 1000)
		if p := capPermitted(t, g); p != 0 {
			t.Errorf("permitted %#x after leaving uid 0 in the exec'd program, want none: keepcaps did not survive", p)
		}
	})
	runInit(t, s, func(g *fake.Guest) {
		if _, errno := g.Call(unix.SYS_PRCTL, unix.PR_SET_KEEPCAPS, 1); errno != 0 {
			t.Errorf("PR_SET_KEEPCAPS: %v", errno)
		}
		child := fork(t, g, func(g *fake.Guest) {
			if r, _ := g.Call(unix.SYS_PRCTL, unix.PR_GET_KEEPCAPS); r != 1 {
				t.Errorf("PR_GET_KEEPCAPS = %d in a forked child, want 1: fork keeps it", r)
			}
			execve(t, g, "/bin/after")
		})
		waitExit(t, g, child, 0)
	})
}

func TestExecResetsHandlersKeepsIgnoredSignalsAndTheirPendingAndMask(t *testing.T) {
	s := newSandbox(t)
	s.AddProgram("/bin/after", func(g *fake.Guest) {
		for _, tc := range []struct {
			sig  unix.Signal
			want fake.SigAction
		}{
			{unix.SIGUSR1, fake.SigAction{Handler: linuxabi.SIG_DFL}},
			{unix.SIGUSR2, fake.SigAction{Handler: linuxabi.SIG_IGN}}, // flags and mask cleared
		} {
			old, _ := g.Sigaction(tc.sig, fake.SigAction{Handler: linuxabi.SIG_DFL})
			if old != tc.want {
				t.Errorf("%v after execve: %+v, want %+v", tc.sig, old, tc.want)
			}
		}
		if m := sigmask(t, g); m != sigset(unix.SIGTERM) {
			t.Errorf("mask %#x after execve, want the one before (%#x)", m, sigset(unix.SIGTERM))
		}
		if p := sigpending(t, g); p != sigset(unix.SIGTERM) {
			t.Errorf("pending %#x after execve, want SIGTERM still pending", p)
		}
		g.Sigaction(unix.SIGTERM, fake.SigAction{Handler: linuxabi.SIG_IGN})
	})
	runInit(t, s, func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {
			handle(t, s, g, unix.SIGUSR1, linuxabi.SA_RESTART, sigset(unix.SIGHUP), func(*fake.Guest) {})
			g.Sigaction(unix.SIGUSR2, fake.SigAction{Handler: linuxabi.SIG_IGN, Flags: linuxabi.SA_RESTART, Mask: sigset(unix.SIGHUP)})
			sigprocmask(t, g, unix.SIG_BLOCK, sigset(unix.SIGTERM))
			kill(g, getpid(g), unix.SIGTERM)
			execve(t, g, "/bin/after")
		})
		waitExit(t, g, child, 0)
	})
}

func TestExecClosesOnlyCloseOnExecFDs(t *testing.T) {
	s := newSandbox(t)
	var kept, closed atomic.Uintptr
	s.AddProgram("/bin/after", func(g *fake.Guest) {
		if !fdOpen(g, kept.Load()) {
			t.Errorf("fd %d, without FD_CLOEXEC, was closed by execve", kept.Load())
		}
		if fdOpen(g, closed.Load()) {
			t.Errorf("fd %d, with FD_CLOEXEC, survived execve", closed.Load())
		}
	})
	runInit(t, s, func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {
			fds := g.Alloc(8)
			g.Call(unix.SYS_PIPE2, fds, unix.O_CLOEXEC)
			closed.Store(uintptr(g.ReadU32(fds)))
			r, _ := pipe(t, g)
			kept.Store(r)
			execve(t, g, "/bin/after")
		})
		waitExit(t, g, child, 0)
	})
}

func TestAThreadThatExecsTakesOverThePIDAndLeavesOneTaskCounted(t *testing.T) {
	// Each round a thread execs the program again, ending the old leader;
	// under RLIMIT_NPROC 2 the next round's thread (and the last fork)
	// fits only if each leader left the count.
	const rounds = 8
	s := newSandbox(t)
	var round atomic.Int32
	var pid atomic.Int32
	s.AddProgram("/bin/again", func(g *fake.Guest) {
		if getpid(g) != int(pid.Load()) || gettid(g) != int(pid.Load()) {
			t.Errorf("after a thread's execve: pid %d tid %d, want both %d", getpid(g), gettid(g), pid.Load())
		}
		if round.Add(1) < rounds {
			if _, _, errno := g.Thread(func(g *fake.Guest) { execve(t, g, "/bin/again") }); errno != 0 {
				t.Errorf("round %d: thread: %v", round.Load(), errno)
				exitGroup(g, 1)
			}
			pause(g)
		}
		waitExit(t, g, fork(t, g, func(g *fake.Guest) {}), 0)
	})
	in := kerneltest.Init{UID: 1000, GID: 1000, Limits: map[int]kernel.Limit{unix.RLIMIT_NPROC: {Cur: 2, Max: 2}}}
	runAs(t, s, in, func(g *fake.Guest) {
		pid.Store(int32(getpid(g)))
		execve(t, g, "/bin/again")
	})
	if round.Load() != rounds {
		t.Errorf("%d rounds, want %d", round.Load(), rounds)
	}
}
