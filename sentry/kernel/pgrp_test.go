package kernel_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

func setpgid(g *fake.Guest, pid, pgid int) unix.Errno {
	_, errno := g.Call(unix.SYS_SETPGID, uintptr(pid), uintptr(pgid))
	return errno
}

func getpgid(g *fake.Guest, pid int) int {
	r, _ := g.Call(unix.SYS_GETPGID, uintptr(pid))
	return int(r)
}
func getsid(g *fake.Guest, pid int) int {
	r, _ := g.Call(unix.SYS_GETSID, uintptr(pid))
	return int(r)
}

// forkWaiting forks a child that runs before (if set), reports its pid
// on a pipe and then waits until the parent writes to done (or dies).
func forkWaiting(t *testing.T, g *fake.Guest, before fake.Program) (pid int, done uintptr) {
	t.Helper()
	r, w := pipe(t, g)
	release, released := pipe(t, g)
	pid = fork(t, g, func(g *fake.Guest) {
		if before != nil {
			before(g)
		}
		send(t, g, w, uint32(getpid(g)))
		recv(t, g, release)
	})
	recv(t, g, r)
	return pid, released
}

func TestSetpgidOfAChildInAnotherSessionIsEPERM(t *testing.T) {
	s := newSandbox(t)
	var ready uintptr // the exec'd program's end of a pipe (the fd survives the exec)
	s.AddProgram("/bin/waiter", func(g *fake.Guest) {
		send(t, g, ready, 1)
		pause(g)
	})
	runInit(t, s, func(g *fake.Guest) {
		child, done := forkWaiting(t, g, func(g *fake.Guest) { g.Call(unix.SYS_SETSID) })
		if errno := setpgid(g, child, child); errno != unix.EPERM {
			t.Errorf("setpgid of a child in another session = %v, want EPERM", errno)
		}
		send(t, g, done, 1)
		waitExit(t, g, child, 0)

		// The session is looked at before the exec: EPERM, not EACCES.
		r, w := pipe(t, g)
		ready = w
		child = fork(t, g, func(g *fake.Guest) {
			g.Call(unix.SYS_SETSID)
			g.Call(unix.SYS_EXECVE, g.CString("/bin/waiter"), g.CStrings([]string{"waiter"}), 0)
			t.Errorf("execve returned")
		})
		recv(t, g, r)
		if errno := setpgid(g, child, child); errno != unix.EPERM {
			t.Errorf("setpgid of an exec'd child in another session = %v, want EPERM", errno)
		}
		kill(g, child, unix.SIGKILL)
		waitSignaled(t, g, child, unix.SIGKILL)
	})
}

func TestSetpgidOfAChildThatExecedIsEACCES(t *testing.T) {
	s := newSandbox(t)
	var ready uintptr
	s.AddProgram("/bin/waiter", func(g *fake.Guest) {
		send(t, g, ready, 1)
		pause(g)
	})
	runInit(t, s, func(g *fake.Guest) {
		r, w := pipe(t, g)
		ready = w
		child := fork(t, g, func(g *fake.Guest) {
			g.Call(unix.SYS_EXECVE, g.CString("/bin/waiter"), g.CStrings([]string{"waiter"}), 0)
		})
		recv(t, g, r)
		if errno := setpgid(g, child, child); errno != unix.EACCES {
			t.Errorf("setpgid of a child that has exec'd = %v, want EACCES", errno)
		}
		kill(g, child, unix.SIGKILL)
		waitSignaled(t, g, child, unix.SIGKILL)
	})
}

func TestSetpgidOfAProcessThatIsNeitherTheCallerNorItsChildIsESRCH(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child, done := forkWaiting(t, g, func(g *fake.Guest) {
			if errno := setpgid(g, getppid(g), 0); errno != unix.ESRCH {
				t.Errorf("setpgid of the parent = %v, want ESRCH", errno)
			}
		})
		if errno := setpgid(g, 99999, 0); errno != unix.ESRCH {
			t.Errorf("setpgid of no process = %v, want ESRCH", errno)
		}
		send(t, g, done, 1)
		waitExit(t, g, child, 0)
		if errno := setpgid(g, child, 0); errno != unix.ESRCH {
			t.Errorf("setpgid of a reaped child = %v, want ESRCH", errno)
		}
	})
}

func TestSetpgidIntoAGroupOfAnotherSessionOrOfNoOneIsEPERM(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		leader, done := forkWaiting(t, g, func(g *fake.Guest) { g.Call(unix.SYS_SETSID) })
		other, done2 := forkWaiting(t, g, func(g *fake.Guest) {
			if errno := setpgid(g, 0, 9999); errno != unix.EPERM {
				t.Errorf("setpgid into a group no process is in = %v, want EPERM", errno)
			}
		})
		if errno := setpgid(g, other, leader); errno != unix.EPERM {
			t.Errorf("setpgid into a group of another session = %v, want EPERM", errno)
		}
		if errno := setpgid(g, other, -1); errno != unix.EINVAL {
			t.Errorf("setpgid to a negative group = %v, want EINVAL", errno)
		}
		send(t, g, done, 1)
		send(t, g, done2, 1)
		waitExit(t, g, leader, 0)
		waitExit(t, g, other, 0)
	})
}

func TestASessionLeaderCannotChangeItsGroup(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		if errno := setpgid(g, 0, 0); errno != unix.EPERM {
			t.Errorf("setpgid by init, a session leader = %v, want EPERM", errno)
		}
		child := fork(t, g, func(g *fake.Guest) {
			g.Call(unix.SYS_SETSID)
			if errno := setpgid(g, 0, 1); errno != unix.EPERM {
				t.Errorf("setpgid by a new session's leader = %v, want EPERM", errno)
			}
		})
		waitExit(t, g, child, 0)
	})
}

func TestSetpgidMovesProcessesBetweenTheGroupsOfItsSession(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		a, doneA := forkWaiting(t, g, nil)
		b, doneB := forkWaiting(t, g, nil)
		if getpgid(g, a) != 1 || getpgid(g, b) != 1 {
			t.Errorf("children's groups %d and %d, want their parent's (1)", getpgid(g, a), getpgid(g, b))
		}
		if errno := setpgid(g, a, 0); errno != 0 || getpgid(g, a) != a {
			t.Errorf("setpgid(a, 0) = %v, group %d; want a's own group %d", errno, getpgid(g, a), a)
		}
		if errno := setpgid(g, b, a); errno != 0 || getpgid(g, b) != a {
			t.Errorf("setpgid(b, a) = %v, group %d; want %d", errno, getpgid(g, b), a)
		}
		if errno := setpgid(g, b, 1); errno != 0 || getpgid(g, b) != 1 {
			t.Errorf("setpgid(b, 1) = %v, group %d; want back in 1", errno, getpgid(g, b))
		}
		send(t, g, doneA, 1)
		send(t, g, doneB, 1)
		waitExit(t, g, a, 0)
		waitExit(t, g, b, 0)
	})
}

func TestSetsidOfAGroupLeaderIsEPERM(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		if _, errno := g.Call(unix.SYS_SETSID); errno != unix.EPERM {
			t.Errorf("setsid by init = %v, want EPERM", errno)
		}
		child := fork(t, g, func(g *fake.Guest) {
			setpgid(g, 0, 0)
			if _, errno := g.Call(unix.SYS_SETSID); errno != unix.EPERM {
				t.Errorf("setsid by a process group leader = %v, want EPERM", errno)
			}
		})
		waitExit(t, g, child, 0)
	})
}

func TestSetsidMakesASessionAndGroupThatChildrenInherit(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		child := fork(t, g, func(g *fake.Guest) {
			self := getpid(g)
			if sid, errno := g.Call(unix.SYS_SETSID); errno != 0 || int(sid) != self {
				t.Errorf("setsid = %d, %v; want the caller's pid %d", sid, errno, self)
			}
			if getsid(g, 0) != self || getpgid(g, 0) != self {
				t.Errorf("session %d, group %d after setsid; want %d", getsid(g, 0), getpgid(g, 0), self)
			}
			if getsid(g, getppid(g)) != 1 {
				t.Errorf("the parent's session changed to %d", getsid(g, getppid(g)))
			}
			grandchild := fork(t, g, func(g *fake.Guest) {
				if getsid(g, 0) != self || getpgid(g, 0) != self {
					t.Errorf("the grandchild's session %d, group %d; want its parent's %d", getsid(g, 0), getpgid(g, 0), self)
				}
			})
			waitExit(t, g, grandchild, 0)
		})
		waitExit(t, g, child, 0)
		if _, errno := g.Call(unix.SYS_GETSID, 99999); errno != unix.ESRCH {
			t.Errorf("getsid of no process = %v, want ESRCH", errno)
		}
		if _, errno := g.Call(unix.SYS_GETPGID, 99999); errno != unix.ESRCH {
			t.Errorf("getpgid of no process = %v, want ESRCH", errno)
		}
	})
}

func TestKillOfAGroupReachesEveryMember(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		a, _ := forkWaiting(t, g, nil)
		b, _ := forkWaiting(t, g, nil)
		outside, done := forkWaiting(t, g, nil)
		if setpgid(g, a, a) != 0 || setpgid(g, b, a) != 0 {
			t.Errorf("setpgid failed")
		}
		if errno := kill(g, -a, unix.SIGTERM); errno != 0 {
			t.Errorf("kill(-%d) = %v", a, errno)
		}
		waitSignaled(t, g, a, unix.SIGTERM)
		waitSignaled(t, g, b, unix.SIGTERM)
		if errno := kill(g, -a, unix.SIGTERM); errno != unix.ESRCH {
			t.Errorf("kill of an emptied group = %v, want ESRCH", errno)
		}
		send(t, g, done, 1)
		waitExit(t, g, outside, 0)
	})
}
