package kernel_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

// forkNewPID is clone(CLONE_NEWPID | SIGCHLD): the child is pid 1 of a new
// pid namespace; the id returned is the child's as the caller sees it.
func forkNewPID(t *testing.T, g *fake.Guest, child fake.Program) int {
	t.Helper()
	pid, errno := g.Clone(unix.CLONE_NEWPID|uint64(unix.SIGCHLD), 0, 0, 0, 0, child)
	if errno != 0 {
		t.Fatalf("clone(CLONE_NEWPID): %v", errno)
	}
	return int(pid)
}

func TestTheFirstProcessOfANewPIDNamespaceIsItsPID1WithNoParentInIt(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		r, w := pipe(t, g)
		child := forkNewPID(t, g, func(g *fake.Guest) {
			send(t, g, w, uint32(getpid(g)))
			send(t, g, w, uint32(getppid(g)))
			send(t, g, w, uint32(gettid(g)))
			grandchild := fork(t, g, func(g *fake.Guest) {
				send(t, g, w, uint32(getpid(g)))
				send(t, g, w, uint32(getppid(g)))
			})
			waitExit(t, g, grandchild, 0)
			send(t, g, w, uint32(grandchild))
		})
		if child <= 1 {
			t.Errorf("clone(CLONE_NEWPID) returned %d to the parent, want its pid in the parent's namespace", child)
		}
		for _, want := range []struct {
			what string
			v    uint32
		}{{"child getpid", 1}, {"child getppid", 0}, {"child gettid", 1},
			{"grandchild getpid", 2}, {"grandchild getppid", 1}, {"fork's return in the namespace", 2}} {
			if got := recv(t, g, r); got != want.v {
				t.Errorf("%s = %d, want %d", want.what, got, want.v)
			}
		}
		waitExit(t, g, child, 0)
	})
}

func TestUnsharePIDNamespaceMovesOnlyTheCallersNextChildren(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		before := getpid(g)
		if _, errno := g.Call(unix.SYS_UNSHARE, unix.CLONE_NEWPID); errno != 0 {
			t.Fatalf("unshare(CLONE_NEWPID): %v", errno)
		}
		if getpid(g) != before {
			t.Errorf("getpid changed after unshare(CLONE_NEWPID): %d, was %d", getpid(g), before)
		}
		// A second one before the first child: EINVAL (copy_pid_ns).
		_, errno := g.Call(unix.SYS_UNSHARE, unix.CLONE_NEWPID)
		expectErrno(t, "a second unshare(CLONE_NEWPID)", 0, errno, unix.EINVAL)
		// A thread cannot go into another namespace than its process's.
		_, errno = g.Clone(unix.CLONE_THREAD|unix.CLONE_SIGHAND|unix.CLONE_VM, 0, 0, 0, 0, noChild(t))
		expectErrno(t, "a thread after unshare(CLONE_NEWPID)", 0, errno, unix.EINVAL)
		r, w := pipe(t, g)
		release, released := pipe(t, g)
		first := fork(t, g, func(g *fake.Guest) { send(t, g, w, uint32(getpid(g))); recv(t, g, release) })
		if got := recv(t, g, r); got != 1 {
			t.Errorf("the first child after unshare has pid %d, want 1", got)
		}
		second := fork(t, g, func(g *fake.Guest) { send(t, g, w, uint32(getpid(g))) })
		if got := recv(t, g, r); got != 2 {
			t.Errorf("the second child has pid %d, want 2", got)
		}
		waitExit(t, g, second, 0)
		send(t, g, released, 0)
		waitExit(t, g, first, 0)
		// The namespace's init has ended: it takes no process (ENOMEM).
		_, errno = g.Fork(noChild(t))
		expectErrno(t, "fork into a namespace whose init has ended", 0, errno, unix.ENOMEM)
	})
}

func TestANamespaceInitsEndKillsTheRestOfItsNamespace(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		r, w := pipe(t, g)
		child := forkNewPID(t, g, func(g *fake.Guest) {
			// Its children block for good; init's end must kill them.
			up, isUp := pipe(t, g)
			for i := 0; i < 2; i++ {
				fork(t, g, func(g *fake.Guest) { send(t, g, isUp, 0); pause(g) })
			}
			recv(t, g, up)
			recv(t, g, up)
			send(t, g, w, 0)
			exitGroup(g, 3)
		})
		recv(t, g, r)
		waitExit(t, g, child, 3)
		if errno := kill(g, child, 0); errno != unix.ESRCH {
			t.Errorf("kill(init reaped, 0) = %v, want ESRCH", errno)
		}
	})
}

func TestANamespaceInitIgnoresSignalsFromInsideWithoutAHandler(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		r, w := pipe(t, g)
		child := forkNewPID(t, g, func(g *fake.Guest) {
			member := fork(t, g, func(g *fake.Guest) {
				send(t, g, w, uint32(kill(g, 1, unix.SIGKILL)))
				send(t, g, w, uint32(kill(g, 1, unix.SIGTERM)))
			})
			waitExit(t, g, member, 0)
			send(t, g, w, 1) // still alive
			pause(g)
		})
		if got := recv(t, g, r); got != 0 {
			t.Errorf("kill(1, SIGKILL) from inside = %v, want 0", unix.Errno(got))
		}
		recv(t, g, r)
		if got := recv(t, g, r); got != 1 {
			t.Errorf("the namespace's init did not survive SIGKILL and SIGTERM from inside")
		}
		// From the parent's namespace SIGKILL is forced.
		kill(g, child, unix.SIGKILL)
		waitSignaled(t, g, child, unix.SIGKILL)
	})
}

func TestOrphansOfANamespaceGoToItsInit(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		r, w := pipe(t, g)
		ended, tell := pipe(t, g)
		child := forkNewPID(t, g, func(g *fake.Guest) {
			middle := fork(t, g, func(g *fake.Guest) {
				fork(t, g, func(g *fake.Guest) {
					recv(t, g, ended) // until the middle process has ended
					send(t, g, w, uint32(getppid(g)))
				})
			})
			waitExit(t, g, middle, 0)
			send(t, g, tell, 0)
			// init reaps the orphan: it is its child now.
			if got, _, errno := g.Wait(-1, 0); errno != 0 || got != 3 {
				t.Errorf("init's wait for the orphan = %d, %v; want 3", got, errno)
			}
		})
		if got := recv(t, g, r); got != 1 {
			t.Errorf("the orphan's getppid = %d, want 1 (its namespace's init)", got)
		}
		waitExit(t, g, child, 0)
	})
}
