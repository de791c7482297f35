package kernel_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// TestParentDeathSignalReachesTheOrphan: a process that asked for
// PR_SET_PDEATHSIG gets that signal when its parent exits. The child goes
// on setting it while the parent exits, so that under -race the exiting
// parent's read of the child's flags meets the child's writes.
func TestParentDeathSignalReachesTheOrphan(t *testing.T) {
	s := kerneltest.New(t, syscalls.NewTable())
	st := s.Run(func(g *fake.Guest) {
		parent, _ := g.Fork(func(g *fake.Guest) {
			self, _ := g.Call(unix.SYS_GETPID)
			fds := g.Alloc(8)
			if _, errno := g.Call(unix.SYS_PIPE2, fds, 0); errno != 0 {
				t.Errorf("pipe2: %v", errno)
			}
			rfd, wfd := uintptr(g.ReadU32(fds)), uintptr(g.ReadU32(fds+4))
			buf := g.Alloc(1)
			_, errno := g.Fork(func(g *fake.Guest) {
				setDeathSignal := func() {
					if _, errno := g.Call(unix.SYS_PRCTL, unix.PR_SET_PDEATHSIG, uintptr(unix.SIGUSR1)); errno != 0 {
						t.Errorf("prctl(PR_SET_PDEATHSIG): %v", errno)
						g.Call(unix.SYS_EXIT_GROUP, 2)
					}
				}
				setDeathSignal()
				g.Call(unix.SYS_WRITE, wfd, buf, 1) // the parent may exit now
				for {
					setDeathSignal()
					if ppid, _ := g.Call(unix.SYS_GETPPID); ppid != self {
						break
					}
				}
				// Re-parented: the signal is on its way, and its default
				// action ends the process before this sleep does.
				ts := g.Alloc(16)
				g.WriteU64(ts, 10)
				g.Call(unix.SYS_NANOSLEEP, ts, 0)
				g.Call(unix.SYS_EXIT_GROUP, 1)
			})
			if errno != 0 {
				t.Errorf("fork: %v", errno)
			}
			if n, errno := g.Call(unix.SYS_READ, rfd, buf, 1); n != 1 || errno != 0 {
				t.Errorf("read from the child: %d, %v", n, errno)
			}
			g.Call(unix.SYS_EXIT_GROUP, 0)
		})
		if _, status, errno := g.Wait(parent, 0); errno != 0 || status.ExitStatus() != 0 {
			t.Errorf("parent: %v %v", status, errno)
		}
		got, status, errno := g.Wait(-1, 0)
		if errno != 0 {
			t.Errorf("wait for the orphan: %v", errno)
		} else if !status.Signaled() || status.Signal() != unix.SIGUSR1 {
			t.Errorf("orphan %d ended with %v, want killed by SIGUSR1", got, status)
		}
	})
	if st.Code != 0 {
		t.Errorf("init: %+v; log %s", st, s.Log())
	}
}
