package syscalls

import (
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

// POSIX message queues through the table: descriptors, notifications as
// processes see them, and waits.

// mqOpen opens (making it) the queue name with room for maxmsg messages
// of msgsize bytes.
func mqOpen(t *testing.T, g *fake.Guest, name string, flags int, maxmsg, msgsize int64) uintptr {
	t.Helper()
	attr := g.Alloc(64)
	g.WriteU64(attr+8, uint64(maxmsg))
	g.WriteU64(attr+16, uint64(msgsize))
	fd, errno := g.Call(unix.SYS_MQ_OPEN, g.CString(name), uintptr(flags|unix.O_CREAT), 0o600, attr)
	if errno != 0 {
		t.Fatalf("mq_open(%s): %v", name, errno)
	}
	return fd
}

// mqSend sends text at prio without waiting for room.
func mqSend(g *fake.Guest, fd uintptr, text string, prio uint32) unix.Errno {
	_, errno := g.Call(unix.SYS_MQ_TIMEDSEND, fd, g.CString(text), uintptr(len(text)), uintptr(prio), 0)
	return errno
}

// sigevent writes a struct sigevent.
func sigevent(g *fake.Guest, notify, signo int32, value uint64) uintptr {
	ev := g.Alloc(64)
	g.WriteU64(ev, value)
	g.WriteU32(ev+8, uint32(signo))
	g.WriteU32(ev+12, uint32(notify))
	return ev
}

func TestMqOpenGivesACloseOnExecDescriptorAndMqUnlinkRemovesTheName(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		fd := mqOpen(t, g, "q", unix.O_RDWR, 4, 16)
		r, errno := g.Call(unix.SYS_FCNTL, fd, unix.F_GETFD)
		expectRet(t, "F_GETFD of an mq_open descriptor", r, errno, unix.FD_CLOEXEC, 0)
		r, errno = g.Call(unix.SYS_FCNTL, fd, unix.F_GETFL)
		expectRet(t, "F_GETFL (O_CREAT is not kept)", r, errno, unix.O_RDWR, 0)
		_, errno = g.Call(unix.SYS_MQ_UNLINK, g.CString("q"))
		expectErrno(t, "mq_unlink", 0, errno, 0)
		_, errno = g.Call(unix.SYS_MQ_OPEN, g.CString("q"), unix.O_RDWR, 0, 0)
		expectErrno(t, "mq_open of the unlinked name", 0, errno, unix.ENOENT)
		expectErrno(t, "mq_timedsend on the open descriptor after the unlink", 0, mqSend(g, fd, "x", 0), 0)
		_, w := guestPipe(t, g, 0)
		_, errno = g.Call(unix.SYS_MQ_TIMEDSEND, w, g.CString("x"), 1, 0, 0)
		expectErrno(t, "mq_timedsend on a pipe", 0, errno, unix.EBADF)
	})
}

func TestMqNotifySendsSIMesgQWithTheSendersPidAndTheValueToTheRegisteringProcess(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		fd := mqOpen(t, g, "q", unix.O_RDWR, 4, 16)
		set := g.Alloc(8)
		g.WriteU64(set, 1<<(unix.SIGUSR1-1))
		g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, set, 0, 8)
		if _, errno := g.Call(unix.SYS_MQ_NOTIFY, fd, sigevent(g, 0, int32(unix.SIGUSR1), 0x1234)); errno != 0 {
			t.Errorf("mq_notify: %v", errno)
		}
		_, errno := g.Call(unix.SYS_MQ_NOTIFY, fd, sigevent(g, 1, 0, 0))
		expectErrno(t, "a second mq_notify", 0, errno, unix.EBUSY)
		child, _ := g.Fork(func(g *fake.Guest) {
			_, errno := g.Call(unix.SYS_MQ_NOTIFY, fd, 0)
			expectErrno(t, "mq_notify(NULL) by another process", 0, errno, 0)
			if errno := mqSend(g, fd, "hello", 1); errno != 0 {
				t.Errorf("mq_timedsend in the child: %v", errno)
			}
		})
		g.Wait(child, 0)
		info := g.Alloc(128)
		sig, errno := g.Call(unix.SYS_RT_SIGTIMEDWAIT, set, info, timespec(g, 10*time.Second), 8)
		if errno != 0 || sig != uintptr(unix.SIGUSR1) {
			t.Fatalf("rt_sigtimedwait = %d, %v; want SIGUSR1", sig, errno)
		}
		var b [128]byte
		g.Read(info, b[:])
		le := binary.LittleEndian
		if code := int32(le.Uint32(b[8:])); code != -3 {
			t.Errorf("si_code %d, want SI_MESGQ (-3)", code)
		}
		if pid := int32(le.Uint32(b[16:])); pid != int32(child) {
			t.Errorf("si_pid %d, want the sender %d", pid, child)
		}
		if v := le.Uint64(b[24:]); v != 0x1234 {
			t.Errorf("si_value %#x, want 0x1234", v)
		}
		// The notification went when it fired: another may register.
		_, errno = g.Call(unix.SYS_MQ_NOTIFY, fd, sigevent(g, 1, 0, 0))
		expectErrno(t, "mq_notify once the first fired", 0, errno, 0)
	})
}

func TestClosingAnyDescriptorOfTheQueueDropsTheProcesssRegistration(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		fd := mqOpen(t, g, "q", unix.O_RDWR, 4, 16)
		dup, _ := g.Call(unix.SYS_DUP, fd)
		g.Call(unix.SYS_MQ_NOTIFY, fd, sigevent(g, 1, 0, 0))
		child, _ := g.Fork(func(g *fake.Guest) {
			g.Call(unix.SYS_CLOSE, dup) // the child's table, not the owner's
		})
		g.Wait(child, 0)
		_, errno := g.Call(unix.SYS_MQ_NOTIFY, fd, sigevent(g, 1, 0, 0))
		expectErrno(t, "mq_notify after a child closed its copy", 0, errno, unix.EBUSY)
		g.Call(unix.SYS_CLOSE, dup)
		_, errno = g.Call(unix.SYS_MQ_NOTIFY, fd, sigevent(g, 1, 0, 0))
		expectErrno(t, "mq_notify after the owner closed a descriptor", 0, errno, 0)
	})
}

func TestAReceiveWaitsForASendAndAPastTimeoutIsETIMEDOUT(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		fd := mqOpen(t, g, "q", unix.O_RDWR, 1, 8)
		buf, prio := g.Alloc(8), g.Alloc(4)
		past := g.Alloc(16) // 1970: long past
		_, errno := g.Call(unix.SYS_MQ_TIMEDRECEIVE, fd, buf, 8, prio, past)
		expectErrno(t, "mq_timedreceive of an empty queue with a past timeout", 0, errno, unix.ETIMEDOUT)
		pfd := g.Alloc(8)
		g.WriteU32(pfd, uint32(fd))
		g.WriteU32(pfd+4, unix.POLLIN|unix.POLLOUT)
		n, _ := g.Call(unix.SYS_POLL, pfd, 1, 0)
		if rev := g.ReadU32(pfd+4) >> 16; n != 1 || rev != unix.POLLOUT {
			t.Errorf("poll of an empty queue: %d, revents %#x; want POLLOUT", n, rev)
		}
		child, _ := g.Fork(func(g *fake.Guest) {
			if errno := mqSend(g, fd, "late", 7); errno != 0 {
				t.Errorf("mq_timedsend: %v", errno)
			}
		})
		r, errno := g.Call(unix.SYS_MQ_TIMEDRECEIVE, fd, buf, 8, prio, 0)
		expectRet(t, "a waiting mq_timedreceive", r, errno, 4, 0)
		var text [4]byte
		g.Read(buf, text[:])
		if string(text[:]) != "late" || g.ReadU32(prio) != 7 {
			t.Errorf("received %q at priority %d, want \"late\" at 7", text, g.ReadU32(prio))
		}
		g.Wait(child, 0)
		mqSend(g, fd, "full", 0)
		_, errno = g.Call(unix.SYS_MQ_TIMEDSEND, fd, g.CString("x"), 1, 0, past)
		expectErrno(t, "mq_timedsend to a full queue with a past timeout", 0, errno, unix.ETIMEDOUT)
		old := g.Alloc(64)
		nb := g.Alloc(64)
		g.WriteU64(nb, unix.O_NONBLOCK)
		_, errno = g.Call(unix.SYS_MQ_GETSETATTR, fd, nb, old)
		expectErrno(t, "mq_getsetattr", 0, errno, 0)
		if cur := g.ReadU64(old + 24); cur != 1 {
			t.Errorf("mq_curmsgs %d, want 1", cur)
		}
		expectErrno(t, "mq_timedsend to a full queue once O_NONBLOCK", 0, mqSend(g, fd, "x", 0), unix.EAGAIN)
		fl, _ := g.Call(unix.SYS_FCNTL, fd, unix.F_GETFL)
		if fl&unix.O_NONBLOCK == 0 {
			t.Errorf("F_GETFL %#x after mq_getsetattr set O_NONBLOCK", fl)
		}
	})
}

func TestSigevThreadSendsTheCookieToTheNetlinkSocket(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		fd := mqOpen(t, g, "q", unix.O_RDWR, 4, 16)
		sock, errno := g.Call(unix.SYS_SOCKET, unix.AF_NETLINK, unix.SOCK_RAW, 0)
		if errno != 0 {
			t.Skipf("no netlink socket in this sandbox: %v", errno)
		}
		cookie := g.Alloc(32)
		g.Write(cookie, []byte("cookie-of-thirty-two-bytes-here!"))
		ev := sigevent(g, 2, int32(sock), uint64(cookie))
		_, errno = g.Call(unix.SYS_MQ_NOTIFY, fd, ev)
		expectErrno(t, "mq_notify(SIGEV_THREAD)", 0, errno, 0)
		mqSend(g, fd, "x", 0)
		got := g.Alloc(64)
		n, errno := g.Call(unix.SYS_RECVFROM, sock, got, 64, unix.MSG_DONTWAIT, 0, 0)
		if errno != 0 || n != 32 {
			t.Fatalf("recv of the cookie: %d, %v", n, errno)
		}
		var b [32]byte
		g.Read(got, b[:])
		if string(b[:31]) != "cookie-of-thirty-two-bytes-here" || b[31] != 1 {
			t.Errorf("cookie %q, want the registered one ending in NOTIFY_WOKENUP (1)", b)
		}
		g.Call(unix.SYS_MQ_NOTIFY, fd, ev)
		g.Call(unix.SYS_MQ_NOTIFY, fd, 0)
		n, _ = g.Call(unix.SYS_RECVFROM, sock, got, 64, unix.MSG_DONTWAIT, 0, 0)
		if g.Read(got, b[:]); n != 32 || b[31] != 2 {
			t.Errorf("removal sent %d bytes ending in %d, want 32 ending in NOTIFY_REMOVED (2)", n, b[31])
		}
		pipe, _ := guestPipe(t, g, 0)
		_, errno = g.Call(unix.SYS_MQ_NOTIFY, fd, sigevent(g, 2, int32(pipe), uint64(cookie)))
		expectErrno(t, "SIGEV_THREAD with a pipe", 0, errno, unix.ENOTSOCK)
	})
}
