package kernel_test

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// What the guest-program tests of the kernel share: sandboxes, and the
// calls every program makes, written as libc would make them. Guest code
// reports failures with t.Errorf: it runs on goroutines of its own.

// newSandbox is a kernel with moat's syscall table on the fake platform.
func newSandbox(t *testing.T) *kerneltest.Sandbox { return kerneltest.New(t, syscalls.NewTable()) }

// runInit runs main as init (pid 1, root) in s; the test fails unless it
// exits with status 0.
func runInit(t *testing.T, s *kerneltest.Sandbox, main fake.Program) {
	t.Helper()
	if st := s.Run(main); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

// runAs is runInit with init's credentials and limits given.
func runAs(t *testing.T, s *kerneltest.Sandbox, in kerneltest.Init, main fake.Program) {
	t.Helper()
	s.Start(main, in)
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

// expect fails the test unless a call returned want (wantErr 0) or failed
// with wantErr.
func expect(t *testing.T, what string, got uintptr, errno unix.Errno, want uintptr, wantErr unix.Errno) {
	t.Helper()
	if errno != wantErr || (wantErr == 0 && got != want) {
		t.Errorf("%s = %d, %v; want %d, %v", what, int64(got), errno, int64(want), wantErr)
	}
}

// expectErrno fails the test unless a call failed with want.
func expectErrno(t *testing.T, what string, got uintptr, errno, want unix.Errno) {
	t.Helper()
	if errno != want {
		t.Errorf("%s = %d, %v; want %v", what, int64(got), errno, want)
	}
}

// pipe returns the two ends of a new pipe, which the programs use to tell
// each other where they are.
func pipe(t *testing.T, g *fake.Guest) (r, w uintptr) {
	t.Helper()
	fds := g.Alloc(8)
	if _, errno := g.Call(unix.SYS_PIPE2, fds, 0); errno != 0 {
		t.Errorf("pipe2: %v", errno)
	}
	return uintptr(g.ReadU32(fds)), uintptr(g.ReadU32(fds + 4))
}

// send writes v to a pipe; recv reads it (0 at end of file).
func send(t *testing.T, g *fake.Guest, fd uintptr, v uint32) {
	t.Helper()
	buf := g.Alloc(4)
	g.WriteU32(buf, v)
	if _, errno := g.Call(unix.SYS_WRITE, fd, buf, 4); errno != 0 {
		t.Errorf("write to the pipe: %v", errno)
	}
}

func recv(t *testing.T, g *fake.Guest, fd uintptr) uint32 {
	t.Helper()
	buf := g.Alloc(4)
	n, errno := g.Call(unix.SYS_READ, fd, buf, 4)
	if errno != 0 || (n != 4 && n != 0) {
		t.Errorf("read from the pipe = %d, %v", n, errno)
	}
	return g.ReadU32(buf)
}

// getpid and friends return the caller's ids.
func getpid(g *fake.Guest) int  { pid, _ := g.Call(unix.SYS_GETPID); return int(pid) }
func getppid(g *fake.Guest) int { pid, _ := g.Call(unix.SYS_GETPPID); return int(pid) }
func gettid(g *fake.Guest) int  { tid, _ := g.Call(unix.SYS_GETTID); return int(tid) }

// sigset is the mask of sigs.
func sigset(sigs ...unix.Signal) uint64 {
	var m uint64
	for _, s := range sigs {
		m |= 1 << (s - 1)
	}
	return m
}

// sigprocmask applies how with set and returns the old mask.
func sigprocmask(t *testing.T, g *fake.Guest, how int, set uint64) uint64 {
	t.Helper()
	buf := g.Alloc(16)
	g.WriteU64(buf, set)
	if _, errno := g.Call(unix.SYS_RT_SIGPROCMASK, uintptr(how), buf, buf+8, 8); errno != 0 {
		t.Errorf("rt_sigprocmask: %v", errno)
	}
	return g.ReadU64(buf + 8)
}

// sigmask returns the current mask.
func sigmask(t *testing.T, g *fake.Guest) uint64 {
	t.Helper()
	buf := g.Alloc(8)
	if _, errno := g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, 0, buf, 8); errno != 0 {
		t.Errorf("rt_sigprocmask: %v", errno)
	}
	return g.ReadU64(buf)
}

// sigpending returns the pending set.
func sigpending(t *testing.T, g *fake.Guest) uint64 {
	t.Helper()
	buf := g.Alloc(8)
	if _, errno := g.Call(unix.SYS_RT_SIGPENDING, buf, 8); errno != 0 {
		t.Errorf("rt_sigpending: %v", errno)
	}
	return g.ReadU64(buf)
}

// kill sends sig to pid.
func kill(g *fake.Guest, pid int, sig unix.Signal) unix.Errno {
	_, errno := g.Call(unix.SYS_KILL, uintptr(pid), uintptr(sig))
	return errno
}

// timespec puts a struct timespec of d in guest memory.
func timespec(g *fake.Guest, d time.Duration) uintptr {
	ts := g.Alloc(16)
	g.WriteU64(ts, uint64(d/time.Second))
	g.WriteU64(ts+8, uint64(d%time.Second))
	return ts
}

// sleep is nanosleep(d).
func sleep(g *fake.Guest, d time.Duration) { g.Call(unix.SYS_NANOSLEEP, timespec(g, d), 0) }

// within retries cond (each turn a yield of the CPU) until it holds or a
// few seconds have gone; it reports whether it held. It waits for a state
// the guest cannot be told of (a futex waiter queued, a process stopped).
// With no guest, the test's own goroutine waits.
func within(g *fake.Guest, cond func() bool) bool {
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		if g == nil {
			time.Sleep(100 * time.Microsecond)
		} else {
			sleep(g, 100*time.Microsecond)
		}
	}
	return true
}

// exitGroup ends the calling process with code.
func exitGroup(g *fake.Guest, code int) { g.Call(unix.SYS_EXIT_GROUP, uintptr(code)) }

// waitExit waits for pid and fails the test unless it exited with code.
func waitExit(t *testing.T, g *fake.Guest, pid, code int) {
	t.Helper()
	got, status, errno := g.Wait(pid, 0)
	if errno != 0 || got != pid || !status.Exited() || status.ExitStatus() != code {
		t.Errorf("wait4(%d) = %d, %v (%#x), %v; want it exited with %d", pid, got, status, uint32(status), errno, code)
	}
}

// waitSignaled waits for pid and fails the test unless sig killed it.
func waitSignaled(t *testing.T, g *fake.Guest, pid int, sig unix.Signal) {
	t.Helper()
	got, status, errno := g.Wait(pid, 0)
	if errno != 0 || got != pid || !status.Signaled() || status.Signal() != sig {
		t.Errorf("wait4(%d) = %d, %v (%#x), %v; want it killed by %v", pid, got, status, uint32(status), errno, sig)
	}
}

// fork is Guest.Fork that fails the test when the fork does.
func fork(t *testing.T, g *fake.Guest, child fake.Program) int {
	t.Helper()
	pid, errno := g.Fork(child)
	if errno != 0 {
		t.Errorf("fork: %v", errno)
	}
	return pid
}

// waitZombie returns once pid has ended, leaving it a zombie (waitid with
// WNOWAIT).
func waitZombie(t *testing.T, g *fake.Guest, pid int) {
	t.Helper()
	info := g.Alloc(128)
	if _, errno := g.Call(unix.SYS_WAITID, unix.P_PID, uintptr(pid), info, unix.WEXITED|unix.WNOWAIT, 0); errno != 0 {
		t.Errorf("waitid(WNOWAIT) for %d: %v", pid, errno)
	}
}
