package syscalls

import (
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

// The sigset arguments of the signal calls: x86-64 Linux takes 8 bytes,
// SIGKILL and SIGSTOP are never blocked, and a bad pointer is EFAULT.

// sigBit is sig's bit in a sigset.
func sigBit(sig unix.Signal) uint64 { return 1 << (sig - 1) }

// guestMask reads the calling thread's signal mask.
func guestMask(t *testing.T, g *fake.Guest) uint64 {
	t.Helper()
	old := g.Alloc(8)
	if _, errno := g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, 0, old, 8); errno != 0 {
		t.Errorf("rt_sigprocmask to read the mask: %v", errno)
	}
	return g.ReadU64(old)
}

// sigset puts a sigset in new guest memory.
func sigset(g *fake.Guest, mask uint64) uintptr {
	addr := g.Alloc(8)
	g.WriteU64(addr, mask)
	return addr
}

func TestSignalCallsTakeOnlyAnEightByteSigset(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		set := sigset(g, sigBit(unix.SIGUSR1))
		act := g.Alloc(32)
		ts := timespec(g, 0)
		for _, size := range []uintptr{0, 4, 7, 9, 16, 128} {
			for _, c := range []struct {
				name string
				nr   uintptr
				args []uintptr
			}{
				{"rt_sigprocmask", unix.SYS_RT_SIGPROCMASK, []uintptr{unix.SIG_BLOCK, set, 0, size}},
				{"rt_sigprocmask with no sets", unix.SYS_RT_SIGPROCMASK, []uintptr{unix.SIG_BLOCK, 0, 0, size}},
				{"rt_sigaction", unix.SYS_RT_SIGACTION, []uintptr{uintptr(unix.SIGUSR1), 0, act, size}},
				{"rt_sigsuspend", unix.SYS_RT_SIGSUSPEND, []uintptr{set, size}},
				{"rt_sigtimedwait", unix.SYS_RT_SIGTIMEDWAIT, []uintptr{set, 0, ts, size}},
				{"signalfd4", unix.SYS_SIGNALFD4, []uintptr{^uintptr(0), set, size, 0}},
				{"signalfd", unix.SYS_SIGNALFD, []uintptr{^uintptr(0), set, size}},
			} {
				n, errno := g.Call(c.nr, c.args...)
				expectErrno(t, c.name+" with sigsetsize "+strconv.Itoa(int(size)), n, errno, unix.EINVAL)
			}
		}
		// rt_sigpending takes up to 8 and writes as many bytes.
		out := sigset(g, ^uint64(0))
		n, errno := g.Call(unix.SYS_RT_SIGPENDING, out, 9)
		expectErrno(t, "rt_sigpending with sigsetsize 9", n, errno, unix.EINVAL)
		n, errno = g.Call(unix.SYS_RT_SIGPENDING, out, 4)
		expectRet(t, "rt_sigpending with sigsetsize 4", n, errno, 0, 0)
		if got := g.ReadU64(out); got != 0xffffffff_00000000 {
			t.Errorf("rt_sigpending of 4 bytes left %#x, want only the low half cleared", got)
		}
	})
}

func TestSIGKILLAndSIGSTOPCannotBeBlocked(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		unblockable := sigBit(unix.SIGKILL) | sigBit(unix.SIGSTOP)
		for _, how := range []uintptr{unix.SIG_SETMASK, unix.SIG_BLOCK} {
			g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, sigset(g, 0), 0, 8)
			n, errno := g.Call(unix.SYS_RT_SIGPROCMASK, how, sigset(g, ^uint64(0)), 0, 8)
			expectRet(t, "rt_sigprocmask of every signal", n, errno, 0, 0)
			if got := guestMask(t, g); got != ^unblockable {
				t.Errorf("mask after blocking everything (how %d) = %#x, want %#x", how, got, ^unblockable)
			}
		}
	})
}

func TestRtSigprocmaskChecksHowOnlyWhenGivenASet(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, sigset(g, sigBit(unix.SIGUSR2)), 0, 8)
		old := g.Alloc(8)
		n, errno := g.Call(unix.SYS_RT_SIGPROCMASK, 99, 0, old, 8)
		expectRet(t, "rt_sigprocmask(99, NULL, &old)", n, errno, 0, 0)
		if got := g.ReadU64(old); got != sigBit(unix.SIGUSR2) {
			t.Errorf("old mask = %#x, want SIGUSR2's bit", got)
		}
		n, errno = g.Call(unix.SYS_RT_SIGPROCMASK, 99, sigset(g, sigBit(unix.SIGUSR1)), 0, 8)
		expectErrno(t, "rt_sigprocmask(99, &set, NULL)", n, errno, unix.EINVAL)
		if got := guestMask(t, g); got != sigBit(unix.SIGUSR2) {
			t.Errorf("mask after a refused how = %#x, want it unchanged", got)
		}
		// SIG_UNBLOCK takes bits away.
		g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_UNBLOCK, sigset(g, sigBit(unix.SIGUSR2)), 0, 8)
		if got := guestMask(t, g); got != 0 {
			t.Errorf("mask after SIG_UNBLOCK = %#x, want 0", got)
		}
	})
}

func TestRtSigprocmaskFaultsOnBadPointersAfterApplyingTheSet(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		n, errno := g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, unmappedAddr, 0, 8)
		expectErrno(t, "rt_sigprocmask with an unmapped set", n, errno, unix.EFAULT)
		if got := guestMask(t, g); got != 0 {
			t.Errorf("mask after an unreadable set = %#x, want it unchanged", got)
		}
		// Linux applies the new set, then fails to write the old one.
		n, errno = g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_SETMASK, sigset(g, sigBit(unix.SIGUSR1)), unmappedAddr, 8)
		expectErrno(t, "rt_sigprocmask with an unmapped oldset", n, errno, unix.EFAULT)
		if got := guestMask(t, g); got != sigBit(unix.SIGUSR1) {
			t.Errorf("mask after an unwritable oldset = %#x, want SIGUSR1's bit", got)
		}
	})
}

func TestRtSigactionRefusesBadSignalsAndCannotChangeSIGKILLOrSIGSTOP(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		act := g.Alloc(32) // SIG_DFL, no flags
		for _, sig := range []uintptr{0, 65, ^uintptr(0)} {
			n, errno := g.Call(unix.SYS_RT_SIGACTION, sig, act, 0, 8)
			expectErrno(t, "rt_sigaction of signal "+strconv.Itoa(int(sig)), n, errno, unix.EINVAL)
		}
		for _, sig := range []unix.Signal{unix.SIGKILL, unix.SIGSTOP} {
			n, errno := g.Call(unix.SYS_RT_SIGACTION, uintptr(sig), act, 0, 8)
			expectErrno(t, "rt_sigaction setting "+sig.String(), n, errno, unix.EINVAL)
			n, errno = g.Call(unix.SYS_RT_SIGACTION, uintptr(sig), 0, g.Alloc(32), 8)
			expectRet(t, "rt_sigaction reading "+sig.String(), n, errno, 0, 0)
		}
		n, errno := g.Call(unix.SYS_RT_SIGACTION, uintptr(unix.SIGUSR1), unmappedAddr, 0, 8)
		expectErrno(t, "rt_sigaction with an unmapped act", n, errno, unix.EFAULT)
		n, errno = g.Call(unix.SYS_RT_SIGACTION, uintptr(unix.SIGUSR1), 0, unmappedAddr, 8)
		expectErrno(t, "rt_sigaction with an unmapped oldact", n, errno, unix.EFAULT)
	})
}

func TestRtSigtimedwaitTakesABlockedPendingSignalWithItsSiginfo(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		set := sigset(g, sigBit(unix.SIGUSR1))
		g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, set, 0, 8)
		n, errno := g.Call(unix.SYS_RT_SIGTIMEDWAIT, set, 0, timespec(g, 0), 8)
		expectErrno(t, "rt_sigtimedwait with nothing pending and a zero timeout", n, errno, unix.EAGAIN)
		pid, _ := g.Call(unix.SYS_GETPID)
		g.Call(unix.SYS_KILL, pid, uintptr(unix.SIGUSR1))
		info := g.Alloc(128)
		n, errno = g.Call(unix.SYS_RT_SIGTIMEDWAIT, set, info, timespec(g, 0), 8)
		expectRet(t, "rt_sigtimedwait of a pending SIGUSR1", n, errno, uintptr(unix.SIGUSR1), 0)
		// siginfo_t: si_signo, si_errno, si_code, then si_pid, si_uid.
		if signo, code, spid := g.ReadU32(info), int32(g.ReadU32(info+8)), g.ReadU32(info+16); signo != uint32(unix.SIGUSR1) ||
			code != 0 /* SI_USER */ || uintptr(spid) != pid {
			t.Errorf("siginfo: signo %d code %d pid %d; want %d, SI_USER, %d", signo, code, spid, unix.SIGUSR1, pid)
		}
		n, errno = g.Call(unix.SYS_RT_SIGPENDING, info, 8)
		if expectRet(t, "rt_sigpending", n, errno, 0, 0); g.ReadU64(info) != 0 {
			t.Errorf("pending after rt_sigtimedwait took the signal: %#x", g.ReadU64(info))
		}
	})
}
