package syscalls

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// Pidfds through the table: pidfd_open, poll, waitid(P_PIDFD),
// pidfd_send_signal, pidfd_getfd and clone's CLONE_PIDFD.

// pidfdOpen fails the test unless pidfd_open(pid, flags) succeeds.
func pidfdOpen(t *testing.T, g *fake.Guest, pid int, flags int) uintptr {
	t.Helper()
	fd, errno := g.Call(unix.SYS_PIDFD_OPEN, uintptr(pid), uintptr(flags))
	if errno != 0 {
		t.Errorf("pidfd_open(%d, %#x): %v", pid, flags, errno)
	}
	return fd
}

// blockedChild forks a child that exits with code once a byte reaches the
// returned pipe end.
func blockedChild(t *testing.T, g *fake.Guest, code int) (pid int, release uintptr) {
	t.Helper()
	r, w := guestPipe(t, g, 0)
	pid, errno := g.Fork(func(g *fake.Guest) {
		g.Call(unix.SYS_READ, r, g.Alloc(1), 1)
		g.Call(unix.SYS_EXIT_GROUP, uintptr(code))
	})
	if errno != 0 {
		t.Errorf("fork: %v", errno)
	}
	return pid, w
}

func TestAPidfdPollsReadableOnceItsProcessHasEndedAndHungUpOnceReaped(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		pid, release := blockedChild(t, g, 0)
		fd := pidfdOpen(t, g, pid, 0)
		arr := pollfds(g, [2]int{int(fd), unix.POLLIN})
		n, errno := g.Call(unix.SYS_POLL, arr, 1, 0)
		expectRet(t, "poll of a running child's pidfd", n, errno, 0, 0)
		g.Call(unix.SYS_WRITE, release, g.Alloc(1), 1)
		n, errno = g.Call(unix.SYS_POLL, arr, 1, 5000)
		expectRet(t, "poll once the child ends", n, errno, 1, 0)
		if got := revents(g, arr, 0); got != unix.POLLIN {
			t.Errorf("revents of an ended child's pidfd = %#x, want POLLIN", got)
		}
		g.Wait(pid, 0)
		n, errno = g.Call(unix.SYS_POLL, arr, 1, 0)
		expectRet(t, "poll once the child is reaped", n, errno, 1, 0)
		if got := revents(g, arr, 0); got != unix.POLLIN|unix.POLLHUP {
			t.Errorf("revents of a reaped child's pidfd = %#x, want POLLIN|POLLHUP", got)
		}
	})
}

func TestWaitidThroughAPidfdWaitsForThatChildAlone(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		pid, release := blockedChild(t, g, 5)
		fd := pidfdOpen(t, g, pid, 0)
		other, errno := g.Fork(func(g *fake.Guest) { g.Call(unix.SYS_EXIT_GROUP, 1) })
		if errno != 0 {
			t.Errorf("fork: %v", errno)
		}
		info := g.Alloc(128)
		_, errno = g.Call(unix.SYS_WAITID, unix.P_PIDFD, fd, info, unix.WEXITED|unix.WNOHANG, 0)
		if errno != 0 || g.ReadU32(info+16) != 0 {
			t.Errorf("waitid(P_PIDFD, WNOHANG) with another child ended = pid %d, %v; want nothing", g.ReadU32(info+16), errno)
		}
		g.Call(unix.SYS_WRITE, release, g.Alloc(1), 1)
		_, errno = g.Call(unix.SYS_WAITID, unix.P_PIDFD, fd, info, unix.WEXITED, 0)
		if errno != 0 || int(g.ReadU32(info+16)) != pid || g.ReadU32(info+24) != 5 {
			t.Errorf("waitid(P_PIDFD) = pid %d status %d, %v; want %d, 5", g.ReadU32(info+16), g.ReadU32(info+24), errno, pid)
		}
		_, errno = g.Call(unix.SYS_WAITID, unix.P_PIDFD, fd, info, unix.WEXITED, 0)
		expectErrno(t, "waitid(P_PIDFD) of a reaped child", 0, errno, unix.ECHILD)
		if got, _, errno := g.Wait(other, 0); got != other || errno != 0 {
			t.Errorf("wait4 of the other child = %d, %v", got, errno)
		}
	})
}

func TestWaitidThroughANonblockingPidfdOfARunningChildIsEAGAIN(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		pid, release := blockedChild(t, g, 0)
		fd := pidfdOpen(t, g, pid, unix.O_NONBLOCK)
		info := g.Alloc(128)
		_, errno := g.Call(unix.SYS_WAITID, unix.P_PIDFD, fd, info, unix.WEXITED, 0)
		expectErrno(t, "waitid(P_PIDFD) of a running child through a PIDFD_NONBLOCK pidfd", 0, errno, unix.EAGAIN)
		_, errno = g.Call(unix.SYS_WAITID, unix.P_PIDFD, fd, info, unix.WEXITED|unix.WNOHANG, 0)
		expectErrno(t, "the same with WNOHANG", 0, errno, 0)
		g.Call(unix.SYS_WRITE, release, g.Alloc(1), 1)
		g.Wait(pid, 0)
	})
}

func TestPidfdSendSignalSignalsAZombieButFindsNoOneOnceItIsReaped(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		pid, release := blockedChild(t, g, 0)
		fd := pidfdOpen(t, g, pid, 0)
		g.Call(unix.SYS_WRITE, release, g.Alloc(1), 1)
		info := g.Alloc(128)
		g.Call(unix.SYS_WAITID, unix.P_PID, uintptr(pid), info, unix.WEXITED|unix.WNOWAIT, 0)
		_, errno := g.Call(unix.SYS_PIDFD_SEND_SIGNAL, fd, uintptr(unix.SIGUSR1), 0, 0)
		expectErrno(t, "pidfd_send_signal to a zombie", 0, errno, 0)
		g.Wait(pid, 0)
		_, errno = g.Call(unix.SYS_PIDFD_SEND_SIGNAL, fd, 0, 0, 0)
		expectErrno(t, "pidfd_send_signal to a reaped process", 0, errno, unix.ESRCH)
	})
}

func TestPidfdGetfdCopiesAnotherProcessDescriptorCloseOnExec(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		ready, readyW := guestPipe(t, g, 0)
		pid, errno := g.Fork(func(g *fake.Guest) {
			// A pipe of its own, which the parent can reach only
			// through pidfd_getfd.
			fds := g.Alloc(8)
			g.Call(unix.SYS_PIPE2, fds, 0)
			g.Call(unix.SYS_DUP2, uintptr(g.ReadU32(fds)), 40)
			g.Call(unix.SYS_DUP2, uintptr(g.ReadU32(fds+4)), 41)
			g.Call(unix.SYS_WRITE, readyW, g.Alloc(1), 1)
			buf := g.Alloc(1)
			n, _ := g.Call(unix.SYS_READ, 40, buf, 1)
			exitWith(g, n == 1 && g.ReadU32(buf)&0xff == 'g')
		})
		if errno != 0 {
			t.Errorf("fork: %v", errno)
		}
		g.Call(unix.SYS_READ, ready, g.Alloc(1), 1)
		fd := pidfdOpen(t, g, pid, 0)
		_, errno = g.Call(unix.SYS_PIDFD_GETFD, fd, 77, 0)
		expectErrno(t, "pidfd_getfd of a descriptor the process lacks", 0, errno, unix.EBADF)
		got, errno := g.Call(unix.SYS_PIDFD_GETFD, fd, 41, 0)
		if errno != 0 {
			t.Errorf("pidfd_getfd: %v", errno)
		}
		if flags, _ := g.Call(unix.SYS_FCNTL, got, unix.F_GETFD); flags != unix.FD_CLOEXEC {
			t.Errorf("F_GETFD of pidfd_getfd's descriptor = %#x, want FD_CLOEXEC", flags)
		}
		b := g.Alloc(1)
		g.Write(b, []byte{'g'})
		if n, errno := g.Call(unix.SYS_WRITE, got, b, 1); n != 1 || errno != 0 {
			t.Errorf("write through the copy = %d, %v", n, errno)
		}
		expectChild(t, g, pid, "the child reading what came through its own pipe")
	})
}

func TestClonePidfdWritesThePidfdWhereTheParentTidWouldGo(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		ptid := g.Alloc(4)
		g.WriteU32(ptid, 0xffffffff)
		pid, errno := g.Clone(unix.CLONE_PIDFD|uint64(unix.SIGCHLD), 0, ptid, 0, 0, func(g *fake.Guest) {
			g.Call(unix.SYS_EXIT_GROUP, 6)
		})
		if errno != 0 {
			t.Errorf("clone(CLONE_PIDFD): %v", errno)
		}
		fd := uintptr(g.ReadU32(ptid))
		info := g.Alloc(128)
		_, errno = g.Call(unix.SYS_WAITID, unix.P_PIDFD, fd, info, unix.WEXITED, 0)
		if errno != 0 || uintptr(g.ReadU32(info+16)) != pid {
			t.Errorf("waitid(P_PIDFD) of clone's pidfd %d = pid %d, %v; want %d", fd, g.ReadU32(info+16), errno, pid)
		}
		_, errno = g.Clone(unix.CLONE_PIDFD|unix.CLONE_PARENT_SETTID|uint64(unix.SIGCHLD), 0, ptid, 0, 0, func(g *fake.Guest) {})
		expectErrno(t, "clone(CLONE_PIDFD|CLONE_PARENT_SETTID)", 0, errno, unix.EINVAL)
	})
}

func TestPidfdSendSignalTakesAProcPidDirectoryForItsProcessAndNoOtherProcFile(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.Mkdir("/proc", 0o555)
	s.Mount("/proc", procfs.New(s.Kernel, s.Kernel.RootPIDNamespace()), "proc", 0)
	st := s.Run(func(g *fake.Guest) {
		pid, _ := blockedChild(t, g, 0)
		open := func(path string, flags int) uintptr {
			fd, errno := g.Call(unix.SYS_OPEN, g.CString(path), uintptr(flags))
			if errno != 0 {
				t.Errorf("open %s: %v", path, errno)
			}
			return fd
		}
		dir := open(fmt.Sprintf("/proc/%d", pid), unix.O_RDONLY|unix.O_DIRECTORY)
		task := open(fmt.Sprintf("/proc/%d/task/%d", pid, pid), unix.O_RDONLY|unix.O_DIRECTORY)
		status := open(fmt.Sprintf("/proc/%d/status", pid), unix.O_RDONLY)
		_, errno := g.Call(unix.SYS_PIDFD_SEND_SIGNAL, task, 0, 0, 0)
		expectErrno(t, "pidfd_send_signal through /proc/<pid>/task/<tid>", 0, errno, unix.EBADF)
		_, errno = g.Call(unix.SYS_PIDFD_SEND_SIGNAL, status, 0, 0, 0)
		expectErrno(t, "pidfd_send_signal through /proc/<pid>/status", 0, errno, unix.EBADF)
		_, errno = g.Call(unix.SYS_PIDFD_GETFD, dir, 0, 0)
		expectErrno(t, "pidfd_getfd through /proc/<pid>", 0, errno, unix.EBADF)
		_, errno = g.Call(unix.SYS_PIDFD_SEND_SIGNAL, dir, uintptr(unix.SIGKILL), 0, 0)
		expectErrno(t, "pidfd_send_signal(SIGKILL) through /proc/<pid>", 0, errno, 0)
		if _, ws, _ := g.Wait(pid, 0); !ws.Signaled() || ws.Signal() != unix.SIGKILL {
			t.Errorf("the child ended with status %#x, want killed by SIGKILL", uint32(ws))
		}
		_, errno = g.Call(unix.SYS_PIDFD_SEND_SIGNAL, dir, 0, 0, 0)
		expectErrno(t, "pidfd_send_signal through /proc/<pid> of a reaped process", 0, errno, unix.ESRCH)
	})
	if st.Code != 0 {
		t.Errorf("status %+v; log:\n%s", st, s.Log())
	}
}
