package kernel_test

import (
	"encoding/binary"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// noChild is a clone's child that must never run.
func noChild(t *testing.T) fake.Program {
	return func(g *fake.Guest) { t.Errorf("a refused clone's child ran") }
}

func TestCloneRefusesTheFlagCombinationsLinuxRefuses(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		for _, tc := range []struct {
			name  string
			flags uint64
			want  unix.Errno
		}{
			{"CLONE_THREAD without CLONE_SIGHAND", unix.CLONE_THREAD | unix.CLONE_VM, unix.EINVAL},
			{"CLONE_SIGHAND without CLONE_VM", unix.CLONE_SIGHAND, unix.EINVAL},
			{"CLONE_FS with CLONE_NEWNS", unix.CLONE_FS | unix.CLONE_NEWNS, unix.EINVAL},
			// The sandbox makes no network namespaces: EINVAL, as Linux
			// built without them.
			{"CLONE_NEWPID with CLONE_THREAD", unix.CLONE_NEWPID | unix.CLONE_THREAD | unix.CLONE_SIGHAND | unix.CLONE_VM, unix.EINVAL},
			{"CLONE_NEWUSER with CLONE_FS", unix.CLONE_NEWUSER | unix.CLONE_FS, unix.EINVAL},
			{"CLONE_NEWNET", unix.CLONE_NEWNET, unix.EINVAL},
			{"CLONE_NEWIPC with CLONE_SYSVSEM", unix.CLONE_NEWIPC | unix.CLONE_SYSVSEM, unix.EINVAL},
		} {
			r, errno := g.Clone(tc.flags|uint64(unix.SIGCHLD), 0, 0, 0, 0, noChild(t))
			expectErrno(t, "clone("+tc.name+")", r, errno, tc.want)
		}
		// As arch_prctl(ARCH_SET_FS) does, clone refuses a TLS base outside
		// user space.
		r, errno := g.Clone(unix.CLONE_SETTLS|uint64(unix.SIGCHLD), 0, 0, 0, 1<<63, noChild(t))
		expectErrno(t, "clone(CLONE_SETTLS) with a kernel address", r, errno, unix.EPERM)
	})
}

// cloneArgs is clone3's struct clone_args, version 0.
func cloneArgs(g *fake.Guest, flags, exitSignal uint64) uintptr {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint64(b[0:], flags)
	binary.LittleEndian.PutUint64(b[32:], exitSignal)
	addr := g.Alloc(64)
	g.Write(addr, b)
	return addr
}

func TestClone3RefusesAnExitSignalThatIsNoSignal(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		r, errno := g.Call(unix.SYS_CLONE3, cloneArgs(g, 0, 65), 64)
		expectErrno(t, "clone3 with exit signal 65", r, errno, unix.EINVAL)
		r, errno = g.Call(unix.SYS_CLONE3, cloneArgs(g, uint64(unix.SIGCHLD), uint64(unix.SIGCHLD)), 64)
		expectErrno(t, "clone3 with the exit signal in the flags", r, errno, unix.EINVAL)
	})
}

func TestCloneParentFromInitIsEINVAL(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		r, errno := g.Clone(unix.CLONE_PARENT|uint64(unix.SIGCHLD), 0, 0, 0, 0, noChild(t))
		expectErrno(t, "clone(CLONE_PARENT) from init, which has no parent in the sandbox", r, errno, unix.EINVAL)
	})
}

func TestCloneParentMakesASiblingThatReportsToTheCallersParent(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		r, w := pipe(t, g)
		caller := fork(t, g, func(g *fake.Guest) {
			// The sibling asks for SIGUSR1 at its end but, as Linux makes
			// it, tells its parent what the caller would: SIGCHLD.
			sib, errno := g.Clone(unix.CLONE_PARENT|uint64(unix.SIGUSR1), 0, 0, 0, 0, func(g *fake.Guest) {
				send(t, g, w, uint32(getppid(g)))
				exitGroup(g, 5)
			})
			if errno != 0 {
				t.Errorf("clone(CLONE_PARENT): %v", errno)
			}
			send(t, g, w, uint32(sib))
			if pid, _, errno := g.Wait(int(sib), unix.WALL); errno != unix.ECHILD {
				t.Errorf("the caller's wait for its sibling = %d, %v; want ECHILD", pid, errno)
			}
		})
		a, b := recv(t, g, r), recv(t, g, r)
		sib, ppid := a, b
		if int(a) == 1 { // the two sends may come in either order
			sib, ppid = b, a
		}
		if ppid != 1 {
			t.Errorf("the sibling's parent is %d, want init", ppid)
		}
		waitExit(t, g, caller, 0)
		waitExit(t, g, int(sib), 5) // no __WCLONE: its exit signal is SIGCHLD
	})
}

// fdOpen reports whether fd is open.
func fdOpen(g *fake.Guest, fd uintptr) bool {
	_, errno := g.Call(unix.SYS_FCNTL, fd, unix.F_GETFD)
	return errno == 0
}

func TestCloneFilesSharesTheFDTableAndForkCopiesIt(t *testing.T) {
	for _, share := range []bool{true, false} {
		runInit(t, newSandbox(t), func(g *fake.Guest) {
			closed, _ := pipe(t, g)
			flags := uint64(unix.SIGCHLD)
			if share {
				flags |= unix.CLONE_FILES
			}
			var opened atomic.Uintptr
			pid, errno := g.Clone(flags, 0, 0, 0, 0, func(g *fake.Guest) {
				r, _ := pipe(t, g)
				opened.Store(r)
				g.Call(unix.SYS_CLOSE, closed)
			})
			if errno != 0 {
				t.Errorf("clone: %v", errno)
			}
			waitExit(t, g, int(pid), 0)
			if open := fdOpen(g, closed); open == share {
				t.Errorf("CLONE_FILES %v: fd %d, which the child closed, is open in the parent: %v", share, closed, open)
			}
			if open := fdOpen(g, opened.Load()); open != share {
				t.Errorf("CLONE_FILES %v: fd %d, which the child opened, is open in the parent: %v", share, opened.Load(), open)
			}
		})
	}
}

func getcwd(t *testing.T, g *fake.Guest) string {
	buf := g.Alloc(256)
	n, errno := g.Call(unix.SYS_GETCWD, buf, 256)
	if errno != 0 || n == 0 {
		t.Errorf("getcwd: %v", errno)
		return ""
	}
	b := make([]byte, n-1)
	g.Read(buf, b)
	return string(b)
}

func TestCloneFSSharesTheWorkingDirectoryAndUmaskAndForkCopiesThem(t *testing.T) {
	for _, share := range []bool{true, false} {
		runInit(t, newSandbox(t), func(g *fake.Guest) {
			flags := uint64(unix.SIGCHLD)
			if share {
				flags |= unix.CLONE_FS
			}
			pid, _ := g.Clone(flags, 0, 0, 0, 0, func(g *fake.Guest) {
				g.Call(unix.SYS_UMASK, 0o077)
				if _, errno := g.Call(unix.SYS_CHDIR, g.CString("/tmp")); errno != 0 {
					t.Errorf("chdir: %v", errno)
				}
			})
			waitExit(t, g, int(pid), 0)
			wantMask, wantCwd := uintptr(0o022), "/"
			if share {
				wantMask, wantCwd = 0o077, "/tmp"
			}
			if old, _ := g.Call(unix.SYS_UMASK, 0o022); old != wantMask {
				t.Errorf("CLONE_FS %v: the parent's umask %#o after the child's umask(077), want %#o", share, old, wantMask)
			}
			if cwd := getcwd(t, g); cwd != wantCwd {
				t.Errorf("CLONE_FS %v: the parent's cwd %q after the child's chdir, want %q", share, cwd, wantCwd)
			}
		})
	}
}

func TestCloneSetTIDWritesTheChildsIDIntoTheChildsAndTheParentsMemory(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		words := g.Alloc(8)
		ptid, ctid := words, words+4
		r, w := pipe(t, g)
		pid, errno := g.Clone(unix.CLONE_PARENT_SETTID|unix.CLONE_CHILD_SETTID|uint64(unix.SIGCHLD), 0, ptid, ctid, 0,
			func(g *fake.Guest) {
				send(t, g, w, g.ReadU32(ptid))
				send(t, g, w, g.ReadU32(ctid))
			})
		if errno != 0 {
			t.Fatalf("clone: %v", errno)
		}
		childPtid, childCtid := recv(t, g, r), recv(t, g, r)
		if got := g.ReadU32(ptid); got != uint32(pid) {
			t.Errorf("the parent's parent_tid word %d, want the child's pid %d", got, pid)
		}
		if got := g.ReadU32(ctid); got != 0 {
			t.Errorf("the parent's child_tid word %d: CLONE_CHILD_SETTID wrote the parent's memory", got)
		}
		if childCtid != uint32(pid) || childPtid != 0 {
			t.Errorf("in the child: child_tid %d, parent_tid %d; want %d and 0 (its memory is a copy made first)", childCtid, childPtid, pid)
		}
		waitExit(t, g, int(pid), 0)
	})
}

func TestAThreadSharesItsProcesssPIDAndParent(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {
			pid, ppid := getpid(g), getppid(g)
			var tpid, tppid, ttid atomic.Int32
			tid, tidAddr, _ := g.Thread(func(g *fake.Guest) {
				tpid.Store(int32(getpid(g)))
				tppid.Store(int32(getppid(g)))
				ttid.Store(int32(gettid(g)))
			})
			g.Join(tidAddr)
			if int(tpid.Load()) != pid || int(tppid.Load()) != ppid || int(ttid.Load()) != tid || tid == pid {
				t.Errorf("thread: pid %d ppid %d tid %d (clone said %d); process: pid %d ppid %d",
					tpid.Load(), tppid.Load(), ttid.Load(), tid, pid, ppid)
			}
		})
		waitExit(t, g, child, 0)
	})
}

func TestVforkSuspendsTheParentUntilTheChildExits(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		word := g.Alloc(4)
		pid, errno := g.Clone(unix.CLONE_VM|unix.CLONE_VFORK|uint64(unix.SIGCHLD), 0, 0, 0, 0, func(g *fake.Guest) {
			sleep(g, 10e6)
			g.WriteU32(word, 1) // the parent's memory: CLONE_VM
			exitGroup(g, 3)
		})
		if errno != 0 {
			t.Fatalf("vfork: %v", errno)
		}
		if g.ReadU32(word) != 1 {
			t.Errorf("vfork returned before the child's exit")
		}
		waitExit(t, g, int(pid), 3)
	})
}

func TestRLIMITNPROCRefusesTasksBeyondTheLimit(t *testing.T) {
	s := newSandbox(t)
	in := kerneltest.Init{UID: 1000, GID: 1000, Limits: map[int]kernel.Limit{unix.RLIMIT_NPROC: {Cur: 2, Max: 2}}}
	runAs(t, s, in, func(g *fake.Guest) {
		r, w := pipe(t, g)
		child := fork(t, g, func(g *fake.Guest) { recv(t, g, r) })
		r2, errno := g.Fork(noChild(t))
		expectErrno(t, "a third task of uid 1000 under RLIMIT_NPROC 2", uintptr(r2), errno, unix.EAGAIN)
		_, _, errno = g.Thread(noChild(t))
		expectErrno(t, "a thread beyond RLIMIT_NPROC", 0, errno, unix.EAGAIN)
		send(t, g, w, 1)
		waitExit(t, g, child, 0)
		child = fork(t, g, func(g *fake.Guest) {})
		waitExit(t, g, child, 0)
	})
}

func TestAZombieCountsAgainstRLIMITNPROCUntilReaped(t *testing.T) {
	s := newSandbox(t)
	in := kerneltest.Init{UID: 1000, GID: 1000, Limits: map[int]kernel.Limit{unix.RLIMIT_NPROC: {Cur: 2, Max: 2}}}
	runAs(t, s, in, func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {})
		waitZombie(t, g, child)
		pid, errno := g.Fork(noChild(t))
		expectErrno(t, "a fork under RLIMIT_NPROC 2 beside a zombie", uintptr(pid), errno, unix.EAGAIN)
		waitExit(t, g, child, 0)
		waitExit(t, g, fork(t, g, func(g *fake.Guest) {}), 0)
	})
}

func TestATaskThatChangesItsRealUIDCountsUnderTheNewOne(t *testing.T) {
	// Linux's commit_creds moves a task to its new user's count: a child
	// that root's setuid made a user's counts for that user's limit.
	for _, call := range []struct {
		name string
		nr   uintptr
		args []uintptr
	}{
		{"setuid", unix.SYS_SETUID, []uintptr{4243}},
		{"setreuid", unix.SYS_SETREUID, []uintptr{4243, 4243}},
		{"setresuid", unix.SYS_SETRESUID, []uintptr{4243, 4243, 4243}},
	} {
		runInit(t, newSandbox(t), func(g *fake.Guest) {
			child := fork(t, g, func(g *fake.Guest) {
				lim := g.Alloc(16)
				g.WriteU64(lim, 1)
				g.WriteU64(lim+8, 1)
				g.Call(unix.SYS_SETRLIMIT, unix.RLIMIT_NPROC, lim)
				if _, errno := g.Call(call.nr, call.args...); errno != 0 {
					t.Errorf("%s: %v", call.name, errno)
				}
				pid, errno := g.Fork(noChild(t))
				expectErrno(t, "a fork by uid 4243's only task under RLIMIT_NPROC 1 after "+call.name, uintptr(pid), errno, unix.EAGAIN)
			})
			waitExit(t, g, child, 0)
		})
	}
}

func TestRootAndCapSysResourceAreExemptFromRLIMITNPROC(t *testing.T) {
	caps := uint64(1) << unix.CAP_SYS_RESOURCE
	for _, in := range []kerneltest.Init{
		{UID: 0},
		{UID: 1000, GID: 1000, Caps: &[4]uint64{caps, caps, caps, caps}, Ambient: caps},
	} {
		in.Limits = map[int]kernel.Limit{unix.RLIMIT_NPROC: {Cur: 1, Max: 1}}
		runAs(t, newSandbox(t), in, func(g *fake.Guest) {
			waitExit(t, g, fork(t, g, func(g *fake.Guest) {}), 0)
		})
	}
}

func TestACloneChildsExitSignalIsWhatItsParentGets(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		var code, pid, status atomic.Int32
		h := s.Platform.Handler(func(g *fake.Guest) {
			info := g.Regs().Rsi
			code.Store(int32(g.ReadU32(uintptr(info) + 8)))
			pid.Store(int32(g.ReadU32(uintptr(info) + 16)))
			status.Store(int32(g.ReadU32(uintptr(info) + 24)))
		})
		g.Sigaction(unix.SIGUSR1, fake.SigAction{Handler: h, Flags: linuxabi.SA_SIGINFO})
		child, _ := g.Clone(uint64(unix.SIGUSR1), 0, 0, 0, 0, func(g *fake.Guest) { exitGroup(g, 4) })
		if !within(g, func() bool { return pid.Load() != 0 }) {
			t.Errorf("no SIGUSR1 for the child's end")
		}
		if code.Load() != linuxabi.CLD_EXITED || pid.Load() != int32(child) || status.Load() != 4 {
			t.Errorf("siginfo code %d pid %d status %d, want CLD_EXITED, %d, 4", code.Load(), pid.Load(), status.Load(), child)
		}
		r, _, errno := g.Wait(int(child), 0)
		expectErrno(t, "wait4 without __WCLONE for a child whose exit signal is SIGUSR1", uintptr(r), errno, unix.ECHILD)
		got, st, errno := g.Wait(int(child), unix.WCLONE)
		if got != int(child) || errno != 0 || st.ExitStatus() != 4 {
			t.Errorf("wait4(__WCLONE) = %d, %v, %v", got, st, errno)
		}
	})
}

func TestACloneChildWithExitSignalZeroSignalsNoOne(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		var signalled atomic.Bool
		h := s.Platform.Handler(func(*fake.Guest) { signalled.Store(true) })
		g.Sigaction(unix.SIGCHLD, fake.SigAction{Handler: h})
		child, _ := g.Clone(0, 0, 0, 0, 0, func(g *fake.Guest) {})
		got, _, errno := g.Wait(int(child), unix.WALL)
		if got != int(child) || errno != 0 {
			t.Errorf("wait4(__WALL) = %d, %v", got, errno)
		}
		sleep(g, 10e6)
		if signalled.Load() {
			t.Errorf("a child with exit signal 0 sent SIGCHLD")
		}
	})
}
