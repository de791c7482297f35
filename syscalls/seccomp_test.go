package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/seccomp"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// guestFilter writes prog and its sock_fprog into guest memory and returns
// the sock_fprog's address.
func guestFilter(g *fake.Guest, prog []seccomp.Insn) uintptr {
	code := seccomp.Encode(prog)
	insns := g.Alloc(uintptr(len(code)))
	g.Write(insns, code)
	fprog := g.Alloc(sizeofSockFprog)
	g.WriteU64(fprog, uint64(len(prog)))
	g.WriteU64(fprog+8, uint64(insns))
	return fprog
}

// denyCall returns ret for call nr and allows every other.
func denyCall(nr uintptr, ret uint32) []seccomp.Insn {
	return []seccomp.Insn{
		seccomp.Stmt(seccomp.LdAbsW, seccomp.OffNr),
		seccomp.Jump(seccomp.JeqK, uint32(nr), 0, 1),
		seccomp.Stmt(seccomp.RetK, ret),
		seccomp.Stmt(seccomp.RetK, seccomp.ActAllow),
	}
}

func setNoNewPrivs(t *testing.T, g *fake.Guest) {
	t.Helper()
	if _, errno := g.Call(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); errno != 0 {
		t.Errorf("PR_SET_NO_NEW_PRIVS: %v", errno)
	}
}

// TestSeccompFilterWithoutNoNewPrivsOrCapSysAdminIsEACCES: an unprivileged
// process must set no_new_privs first.
func TestSeccompFilterWithoutNoNewPrivsOrCapSysAdminIsEACCES(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.Start(func(g *fake.Guest) {
		f := guestFilter(g, denyCall(unix.SYS_GETPPID, seccomp.Errno(unix.EPERM)))
		r, errno := g.Call(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, f)
		expectErrno(t, "seccomp without no_new_privs, as uid 1000", r, errno, unix.EACCES)
		setNoNewPrivs(t, g)
		r, errno = g.Call(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, f)
		expectRet(t, "seccomp with no_new_privs", r, errno, 0, 0)
	}, kerneltest.Init{UID: 1000})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; log:\n%s", st, s.Log())
	}
}

// TestSeccompErrnoFilterFailsTheCallAndIsInherited: a filter's ERRNO is
// the call's error, in the task, in its children (fork copies filters),
// and /proc/self/status counts it.
func TestSeccompErrnoFilterFailsTheCallAndIsInherited(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		setNoNewPrivs(t, g)
		f := guestFilter(g, denyCall(unix.SYS_GETPPID, seccomp.Errno(unix.EXDEV)))
		if r, errno := g.Call(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, f); errno != 0 {
			t.Errorf("seccomp: %d, %v", r, errno)
		}
		r, errno := g.Call(unix.SYS_GETPPID)
		expectErrno(t, "getppid under its filter", r, errno, unix.EXDEV)
		if r, errno := g.Call(unix.SYS_PRCTL, unix.PR_GET_SECCOMP, 0, 0, 0, 0); r != unix.SECCOMP_MODE_FILTER || errno != 0 {
			t.Errorf("PR_GET_SECCOMP = %d, %v; want SECCOMP_MODE_FILTER", r, errno)
		}
		// A second filter stacks: both run, the stricter answer wins.
		f2 := guestFilter(g, denyCall(unix.SYS_GETPPID, seccomp.ActKillProcess))
		if _, errno := g.Call(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, f2, 0, 0); errno != 0 {
			t.Errorf("PR_SET_SECCOMP: %v", errno)
		}
		pid, errno := g.Fork(func(c *fake.Guest) {
			c.Call(unix.SYS_GETPPID)
			t.Errorf("the child survived a call its inherited filter kills for")
		})
		if errno != 0 {
			t.Errorf("fork: %v", errno)
			return
		}
		if _, ws, errno := g.Wait(pid, 0); errno != 0 || !ws.Signaled() || ws.Signal() != unix.SIGSYS {
			t.Errorf("the child: wait status %#x, %v; want killed by SIGSYS", ws, errno)
		}
	})
}

// TestSeccompStrictModeAllowsFourCalls: in strict mode a call other than
// read, write, exit and rt_sigreturn kills the thread with SIGKILL.
func TestSeccompStrictModeAllowsFourCalls(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		pid, errno := g.Fork(func(c *fake.Guest) {
			if _, errno := c.Call(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_STRICT, 0, 0); errno != 0 {
				t.Errorf("strict mode: %v", errno)
			}
			buf := c.Alloc(1)
			if _, errno := c.Call(unix.SYS_WRITE, 99, buf, 1); errno != unix.EBADF {
				t.Errorf("write in strict mode: %v, want EBADF (the call runs)", errno)
			}
			c.Call(unix.SYS_GETPID)
			t.Errorf("getpid in strict mode returned")
		})
		if errno != 0 {
			t.Errorf("fork: %v", errno)
			return
		}
		if _, ws, errno := g.Wait(pid, 0); errno != 0 || !ws.Signaled() || ws.Signal() != unix.SIGKILL {
			t.Errorf("the child: wait status %#x, %v; want killed by SIGKILL", ws, errno)
		}
	})
}

// TestSeccompRefusesBadPrograms: Linux's checks of the request.
func TestSeccompRefusesBadPrograms(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		setNoNewPrivs(t, g)
		empty := g.Alloc(sizeofSockFprog)
		r, errno := g.Call(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, empty)
		expectErrno(t, "an empty program", r, errno, unix.EINVAL)
		noReturn := guestFilter(g, []seccomp.Insn{seccomp.Stmt(seccomp.LdAbsW, seccomp.OffNr)})
		r, errno = g.Call(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, noReturn)
		expectErrno(t, "a program that does not end in a return", r, errno, unix.EINVAL)
		_, gap := guestHole(t, g)
		r, errno = g.Call(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, gap)
		expectErrno(t, "a sock_fprog in unmapped memory", r, errno, unix.EFAULT)
		ok := guestFilter(g, denyCall(unix.SYS_GETPPID, seccomp.ActAllow))
		r, errno = g.Call(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 1<<30, ok)
		expectErrno(t, "an unknown flag", r, errno, unix.EINVAL)
		r, errno = g.Call(unix.SYS_SECCOMP, 99, 0, ok)
		expectErrno(t, "an unknown operation", r, errno, unix.EINVAL)
		action := g.Alloc(4)
		g.WriteU32(action, seccomp.ActLog)
		r, errno = g.Call(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, action)
		expectRet(t, "SECCOMP_GET_ACTION_AVAIL of LOG", r, errno, 0, 0)
		g.WriteU32(action, 0x7ff80000)
		r, errno = g.Call(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, action)
		expectErrno(t, "SECCOMP_GET_ACTION_AVAIL of an unknown action", r, errno, unix.EOPNOTSUPP)
	})
}
