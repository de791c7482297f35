package unixsock_test

import (
	"time"

	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/sentry/net/unixsock"
	"github.com/moat-sandbox/moat/syscalls"
)

func run(t *testing.T, main func(g guest)) *kerneltest.Sandbox {
	s := kerneltest.New(t, syscalls.NewTable())
	if st := s.Run(func(fg *fake.Guest) { main(guest{fg, t}) }); st.Code != 0 || st.Signo != 0 {
		t.Errorf("guest ended %+v; log:\n%s", st, s.Log())
	}
	return s
}

// TestStreamPairCarriesBytesBothWaysAndEOFFollowsThePeersClose: a
// socketpair's ends are connected both ways, data keeps its order, and a
// read after the peer's close finds the end of the stream; writing then is
// EPIPE.
func TestStreamPairCarriesBytesBothWaysAndEOFFollowsThePeersClose(t *testing.T) {
	run(t, func(g guest) {
		a, b := g.pair(unix.SOCK_STREAM)
		g.write(a, "hello, ")
		g.write(a, "world")
		if got, _ := g.read(b, 64, 0); got != "hello, world" {
			t.Errorf("read %q", got)
		}
		g.write(b, "back")
		if got, _ := g.read(a, 64, 0); got != "back" {
			t.Errorf("read back %q", got)
		}
		if _, errno := g.read(b, 64, unix.MSG_DONTWAIT); errno != unix.EAGAIN {
			t.Errorf("empty MSG_DONTWAIT read: %v, want EAGAIN", errno)
		}
		g.must("close", unix.SYS_CLOSE, a)
		if got, errno := g.read(b, 64, 0); got != "" || errno != 0 {
			t.Errorf("read after the peer's close: %q %v, want end of file", got, errno)
		}
		g.Sigaction(unix.SIGPIPE, fake.SigAction{Handler: 1 /* SIG_IGN */})
		if _, errno := g.write(b, "x"); errno != unix.EPIPE {
			t.Errorf("write after the peer's close: %v, want EPIPE", errno)
		}
	})
}

// TestBindMakesASocketNodeThatConnectFindsByItsInode: bind makes a node
// of type S_IFSOCK with 0777 less the umask, which open refuses (ENXIO);
// connect through another name of the same node (a hard link) reaches
// the listener, and once every name is gone connect finds nothing.
func TestBindMakesASocketNodeThatConnectFindsByItsInode(t *testing.T) {
	run(t, func(g guest) {
		g.must("umask", unix.SYS_UMASK, 0o022)
		l := g.socket(unix.SOCK_STREAM)
		addr, n := g.sockaddr("/tmp/sock")
		g.must("bind", unix.SYS_BIND, l, addr, n)
		if _, errno := g.Call(unix.SYS_BIND, g.socket(unix.SOCK_STREAM), addr, n); errno != unix.EADDRINUSE {
			t.Errorf("bind of a name that exists: %v, want EADDRINUSE", errno)
		}
		var st unix.Stat_t
		sb := g.Alloc(256)
		g.must("stat", unix.SYS_STAT, g.CString("/tmp/sock"), sb)
		raw := make([]byte, 144)
		g.Read(sb, raw)
		if mode := uint32(raw[24]) | uint32(raw[25])<<8 | uint32(raw[26])<<16; mode != unix.S_IFSOCK|0o755 {
			t.Errorf("the node's mode is %o, want %o", mode, unix.S_IFSOCK|0o755)
		}
		_ = st
		if _, errno := g.Call(unix.SYS_OPEN, g.CString("/tmp/sock"), unix.O_RDWR); errno != unix.ENXIO {
			t.Errorf("open of a socket node: %v, want ENXIO", errno)
		}
		g.must("listen", unix.SYS_LISTEN, l, 5)
		g.must("link", unix.SYS_LINK, g.CString("/tmp/sock"), g.CString("/tmp/other"))
		g.must("unlink", unix.SYS_UNLINK, g.CString("/tmp/sock"))
		c := g.socket(unix.SOCK_STREAM)
		other, on := g.sockaddr("/tmp/other")
		g.must("connect through the link", unix.SYS_CONNECT, c, other, on)
		a := g.must("accept", unix.SYS_ACCEPT, l, 0, 0)
		g.write(c, "via link")
		if got, _ := g.read(a, 64, 0); got != "via link" {
			t.Errorf("accepted end read %q", got)
		}
		g.must("unlink", unix.SYS_UNLINK, g.CString("/tmp/other"))
		if _, errno := g.Call(unix.SYS_CONNECT, g.socket(unix.SOCK_STREAM), other, on); errno != unix.ENOENT {
			t.Errorf("connect once the names are gone: %v, want ENOENT", errno)
		}
		// getsockname gives the path with its NUL; the accepted end has
		// the listener's name, the connector none.
		name := g.Alloc(128)
		nl := g.Alloc(4)
		g.WriteU32(nl, 128)
		g.must("getsockname", unix.SYS_GETSOCKNAME, a, name, nl)
		if got := g.ReadU32(nl); got != uint32(2+len("/tmp/sock")+1) {
			t.Errorf("the accepted end's name is %d bytes", got)
		}
		g.WriteU32(nl, 128)
		g.must("getsockname", unix.SYS_GETSOCKNAME, c, name, nl)
		if got := g.ReadU32(nl); got != 2 {
			t.Errorf("an unbound socket's name is %d bytes, want 2", got)
		}
	})
}

// TestConnectAnswersLinuxErrors: no such name is ENOENT, a node no socket
// is bound to or a socket that does not listen ECONNREFUSED, a socket of
// another type EPROTOTYPE, a socket connected already EISCONN.
func TestConnectAnswersLinuxErrors(t *testing.T) {
	run(t, func(g guest) {
		missing, mn := g.sockaddr("/tmp/missing")
		if _, errno := g.Call(unix.SYS_CONNECT, g.socket(unix.SOCK_STREAM), missing, mn); errno != unix.ENOENT {
			t.Errorf("no such name: %v", errno)
		}
		g.must("mknod", unix.SYS_MKNOD, g.CString("/tmp/node"), unix.S_IFSOCK|0o777, 0)
		node, nn := g.sockaddr("/tmp/node")
		if _, errno := g.Call(unix.SYS_CONNECT, g.socket(unix.SOCK_STREAM), node, nn); errno != unix.ECONNREFUSED {
			t.Errorf("a node nothing is bound to: %v", errno)
		}
		b := g.socket(unix.SOCK_STREAM)
		ba, bn := g.sockaddr("/tmp/bound")
		g.must("bind", unix.SYS_BIND, b, ba, bn)
		if _, errno := g.Call(unix.SYS_CONNECT, g.socket(unix.SOCK_STREAM), ba, bn); errno != unix.ECONNREFUSED {
			t.Errorf("a socket that does not listen: %v", errno)
		}
		if _, errno := g.Call(unix.SYS_CONNECT, g.socket(unix.SOCK_DGRAM), ba, bn); errno != unix.EPROTOTYPE {
			t.Errorf("a datagram socket to a stream one: %v", errno)
		}
		g.must("listen", unix.SYS_LISTEN, b, 1)
		c := g.socket(unix.SOCK_STREAM)
		g.must("connect", unix.SYS_CONNECT, c, ba, bn)
		if _, errno := g.Call(unix.SYS_CONNECT, c, ba, bn); errno != unix.EISCONN {
			t.Errorf("connect again: %v", errno)
		}
		if _, errno := g.Call(unix.SYS_LISTEN, g.socket(unix.SOCK_STREAM), 1); errno != unix.EINVAL {
			t.Errorf("listen unbound: %v", errno)
		}
		if _, errno := g.Call(unix.SYS_LISTEN, g.socket(unix.SOCK_DGRAM), 1); errno != unix.EOPNOTSUPP {
			t.Errorf("listen on a datagram socket: %v", errno)
		}
		if _, errno := g.Call(unix.SYS_CONNECT, c, ba, 1); errno != unix.EINVAL {
			t.Errorf("an address shorter than the family: %v", errno)
		}
	})
}

// TestAbstractNamesArePerTypeAndGoWithTheSocket: an abstract name is
// taken once per socket type, is free again when its socket closes, and
// binding the family alone picks a name of five hex digits.
func TestAbstractNamesArePerTypeAndGoWithTheSocket(t *testing.T) {
	run(t, func(g guest) {
		addr, n := g.sockaddr("\x00moat-test")
		s1 := g.socket(unix.SOCK_STREAM)
		g.must("bind", unix.SYS_BIND, s1, addr, n)
		if _, errno := g.Call(unix.SYS_BIND, g.socket(unix.SOCK_STREAM), addr, n); errno != unix.EADDRINUSE {
			t.Errorf("second stream bind: %v, want EADDRINUSE", errno)
		}
		g.must("bind of a datagram socket to the same name", unix.SYS_BIND, g.socket(unix.SOCK_DGRAM), addr, n)
		g.must("close", unix.SYS_CLOSE, s1)
		g.must("bind once the socket closed", unix.SYS_BIND, g.socket(unix.SOCK_STREAM), addr, n)
		auto := g.socket(unix.SOCK_DGRAM)
		g.must("autobind", unix.SYS_BIND, auto, addr, 2)
		name := g.Alloc(128)
		nl := g.Alloc(4)
		g.WriteU32(nl, 128)
		g.must("getsockname", unix.SYS_GETSOCKNAME, auto, name, nl)
		got := make([]byte, g.ReadU32(nl))
		g.Read(name, got)
		if len(got) != 8 || got[2] != 0 {
			t.Errorf("autobound name %q, want a NUL and five hex digits", got)
		}
		if _, errno := g.Call(unix.SYS_BIND, auto, addr, n); errno != unix.EINVAL {
			t.Errorf("bind of a bound socket: %v, want EINVAL", errno)
		}
	})
}

// TestRightsMoveFilesIntoTheReceiversTable: SCM_RIGHTS carries a pipe's
// write end to the receiver, which writes through it; MSG_CMSG_CLOEXEC
// marks the new fd close-on-exec; files that do not fit the control
// buffer are closed, with MSG_CTRUNC.
func TestRightsMoveFilesIntoTheReceiversTable(t *testing.T) {
	run(t, func(g guest) {
		a, b := g.pair(unix.SOCK_STREAM)
		p := g.Alloc(8)
		g.must("pipe", unix.SYS_PIPE, p)
		r, w := uintptr(g.ReadU32(p)), int32(g.ReadU32(p+4))
		if _, errno := g.sendmsg(a, "f", 0, cmsg{unix.SOL_SOCKET, unix.SCM_RIGHTS, fdsData(w)}); errno != 0 {
			t.Errorf("sendmsg: %v", errno)
		}
		g.must("close", unix.SYS_CLOSE, uintptr(w))
		got := g.recvmsg(b, 16, 64, unix.MSG_CMSG_CLOEXEC)
		fds := got.rights()
		if got.data != "f" || len(fds) != 1 {
			t.Fatalf("received %+v", got)
		}
		if fl, _ := g.Call(unix.SYS_FCNTL, uintptr(fds[0]), unix.F_GETFD); fl != unix.FD_CLOEXEC {
			t.Errorf("the received fd's flags are %d, want FD_CLOEXEC", fl)
		}
		g.write(uintptr(fds[0]), "through")
		pb := g.Alloc(64)
		if n, _ := g.Call(unix.SYS_READ, r, pb, 64); n != 7 {
			t.Errorf("pipe read %d bytes, want 7", n)
		}
		// No room: the file is closed, so the pipe has no writer left.
		g.sendmsg(a, "g", 0, cmsg{unix.SOL_SOCKET, unix.SCM_RIGHTS, fdsData(fds[0])})
		g.must("close", unix.SYS_CLOSE, uintptr(fds[0]))
		if got := g.recvmsg(b, 16, 0, 0); got.flags&unix.MSG_CTRUNC == 0 || len(got.rights()) != 0 {
			t.Errorf("received without room: %+v, want MSG_CTRUNC and no fds", got)
		}
		buf := g.Alloc(8)
		if n, errno := g.Call(unix.SYS_READ, r, buf, 8); n != 0 || errno != 0 {
			t.Errorf("pipe read once its last writer was dropped in flight: %d %v, want end of file", n, errno)
		}
		if _, errno := g.sendmsg(a, "x", 0, cmsg{unix.SOL_SOCKET, unix.SCM_RIGHTS, fdsData(99)}); errno != unix.EBADF {
			t.Errorf("SCM_RIGHTS of a closed fd: %v, want EBADF", errno)
		}
		many := make([]int32, 254)
		for i := range many {
			many[i] = int32(a)
		}
		if _, errno := g.sendmsg(a, "x", 0, cmsg{unix.SOL_SOCKET, unix.SCM_RIGHTS, fdsData(many...)}); errno != unix.EINVAL {
			t.Errorf("254 fds in one message: %v, want EINVAL", errno)
		}
	})
}

// TestStreamReadStopsAfterThePieceThatCarriesFiles: a read never joins
// data sent with files to data sent after them.
func TestStreamReadStopsAfterThePieceThatCarriesFiles(t *testing.T) {
	run(t, func(g guest) {
		a, b := g.pair(unix.SOCK_STREAM)
		g.write(a, "one")
		g.sendmsg(a, "two", 0, cmsg{unix.SOL_SOCKET, unix.SCM_RIGHTS, fdsData(int32(a))})
		g.write(a, "three")
		got := g.recvmsg(b, 64, 64, 0)
		if got.data != "onetwo" || len(got.rights()) != 1 {
			t.Errorf("first read %q with %d fds, want \"onetwo\" and 1", got.data, len(got.rights()))
		}
		if got := g.recvmsg(b, 64, 64, 0); got.data != "three" {
			t.Errorf("second read %q", got.data)
		}
	})
}

// TestCredentialsAreTheSendersOwn: SO_PASSCRED makes every message carry
// the sender's pid and real ids; a sender names others only with the
// capabilities (EPERM without).
func TestCredentialsAreTheSendersOwn(t *testing.T) {
	s := kerneltest.New(t, syscalls.NewTable())
	s.Start(func(fg *fake.Guest) {
		g := guest{fg, t}
		a, b := g.pair(unix.SOCK_DGRAM)
		if errno := g.setInt(b, unix.SOL_SOCKET, unix.SO_PASSCRED, 1); errno != 0 {
			t.Errorf("SO_PASSCRED: %v", errno)
		}
		g.write(a, "m")
		got := g.recvmsg(b, 16, 64, 0)
		if pid, uid, gid, ok := got.creds(); !ok || pid != 1 || uid != 1000 || gid != 100 {
			t.Errorf("credentials %d %d %d %v, want 1 1000 100", pid, uid, gid, ok)
		}
		if _, errno := g.sendmsg(a, "m", 0, cmsg{unix.SOL_SOCKET, unix.SCM_CREDENTIALS, credsData(1, 0, 100)}); errno != unix.EPERM {
			t.Errorf("someone else's uid: %v, want EPERM", errno)
		}
		if _, errno := g.sendmsg(a, "m", 0, cmsg{unix.SOL_SOCKET, unix.SCM_CREDENTIALS, credsData(2, 1000, 100)}); errno != unix.EPERM {
			t.Errorf("someone else's pid: %v, want EPERM", errno)
		}
		if _, errno := g.sendmsg(a, "m", 0, cmsg{unix.SOL_SOCKET, unix.SCM_CREDENTIALS, credsData(1, 1000, 100)[:8]}); errno != unix.EINVAL {
			t.Errorf("a short ucred: %v, want EINVAL", errno)
		}
		// SO_PEERCRED of a pair: the creator's pid and effective ids.
		v := g.Alloc(12)
		l := g.Alloc(4)
		g.WriteU32(l, 12)
		g.must("SO_PEERCRED", unix.SYS_GETSOCKOPT, a, unix.SOL_SOCKET, unix.SO_PEERCRED, v, l)
		if pid, uid := g.ReadU32(v), g.ReadU32(v+4); pid != 1 || uid != 1000 {
			t.Errorf("SO_PEERCRED %d %d", pid, uid)
		}
	}, kerneltest.Init{UID: 1000, GID: 100})
	if st := s.Wait(); st.Code != 0 || st.Signo != 0 {
		t.Errorf("guest ended %+v; log:\n%s", st, s.Log())
	}
}

// TestShutdownOfWritingGivesThePeerEOFAndRdHup: after SHUT_WR the peer
// reads what was sent, then the end; poll shows it POLLIN|POLLRDHUP, and
// both ways shut down is POLLHUP.
func TestShutdownOfWritingGivesThePeerEOFAndRdHup(t *testing.T) {
	run(t, func(g guest) {
		a, b := g.pair(unix.SOCK_STREAM)
		g.write(a, "last")
		g.must("shutdown", unix.SYS_SHUTDOWN, a, unix.SHUT_WR)
		if ev := g.poll(b, unix.POLLIN|unix.POLLRDHUP); ev != unix.POLLIN|unix.POLLRDHUP {
			t.Errorf("peer's poll %#x", ev)
		}
		if got, _ := g.read(b, 64, 0); got != "last" {
			t.Errorf("read %q", got)
		}
		if got, errno := g.read(b, 64, 0); got != "" || errno != 0 {
			t.Errorf("read after the data: %q %v", got, errno)
		}
		g.must("shutdown", unix.SYS_SHUTDOWN, a, unix.SHUT_RD)
		if ev := g.poll(b, unix.POLLIN|unix.POLLOUT); ev&unix.POLLHUP == 0 {
			t.Errorf("peer's poll with both ways shut %#x, want POLLHUP", ev)
		}
		if _, errno := g.Call(unix.SYS_SHUTDOWN, a, 3); errno != unix.EINVAL {
			t.Errorf("shutdown(3): %v", errno)
		}
		s := g.socket(unix.SOCK_STREAM)
		if ev := g.poll(s, unix.POLLIN|unix.POLLOUT); ev != unix.POLLOUT|unix.POLLHUP {
			t.Errorf("a new stream socket polls %#x, want POLLOUT|POLLHUP", ev)
		}
	})
}

// TestSeqpacketKeepsMessagesWholeAndMSGTruncGivesTheirLength.
func TestSeqpacketKeepsMessagesWholeAndMSGTruncGivesTheirLength(t *testing.T) {
	run(t, func(g guest) {
		a, b := g.pair(unix.SOCK_SEQPACKET)
		g.write(a, "first message")
		g.write(a, "second")
		got := g.recvmsg(b, 5, 0, 0)
		if got.data != "first" || got.flags&unix.MSG_TRUNC == 0 {
			t.Errorf("short read %+v, want \"first\" and MSG_TRUNC", got)
		}
		got = g.recvmsg(b, 2, 0, unix.MSG_TRUNC|unix.MSG_PEEK)
		if got.n != 6 || got.data != "se" {
			t.Errorf("MSG_TRUNC|MSG_PEEK read %d %q, want the length 6", got.n, got.data)
		}
		if got, _ := g.read(b, 64, 0); got != "second" {
			t.Errorf("after the peek: %q", got)
		}
		g.must("close", unix.SYS_CLOSE, a)
		if got, errno := g.read(b, 64, 0); got != "" || errno != 0 {
			t.Errorf("read after the peer's close %q %v", got, errno)
		}
	})
}

// TestDatagramReceiverQueueBoundsSendersNotConnectedBack: a socket takes
// max_dgram_qlen+1 messages from a sender it is not connected to, then the
// sender waits (EAGAIN when it may not), and is writable once it is read.
func TestDatagramReceiverQueueBoundsSendersNotConnectedBack(t *testing.T) {
	run(t, func(g guest) {
		r := g.socket(unix.SOCK_DGRAM)
		addr, n := g.sockaddr("\x00dgram-queue")
		g.must("bind", unix.SYS_BIND, r, addr, n)
		s := g.socket(unix.SOCK_DGRAM)
		g.must("connect", unix.SYS_CONNECT, s, addr, n)
		sent := 0
		buf := g.Alloc(1)
		for sent < 100 {
			if _, errno := g.Call(unix.SYS_SENDTO, s, buf, 1, unix.MSG_DONTWAIT, 0, 0); errno != 0 {
				if errno != unix.EAGAIN {
					t.Errorf("send: %v", errno)
				}
				break
			}
			sent++
		}
		if sent != 11 {
			t.Errorf("%d messages queued, want 11", sent)
		}
		if ev := g.poll(s, unix.POLLOUT); ev != 0 {
			t.Errorf("sender polls %#x with the receiver full", ev)
		}
		g.read(r, 1, 0)
		if ev := g.poll(s, unix.POLLOUT); ev&unix.POLLOUT == 0 {
			t.Errorf("sender polls %#x once a message was read", ev)
		}
	})
}

// TestSocketsOnlyMessagesInFlightHoldAreCollected: two pairs each sent
// over the other and then closed are reachable by no program; the next
// release of a socket collects them (as Linux's unix_release_sock runs
// unix_gc), with the files their messages carried.
func TestSocketsOnlyMessagesInFlightHoldAreCollected(t *testing.T) {
	s := run(t, func(g guest) {
		a, b := g.pair(unix.SOCK_STREAM)
		c, d := g.pair(unix.SOCK_STREAM)
		g.sendmsg(a, "x", 0, cmsg{unix.SOL_SOCKET, unix.SCM_RIGHTS, fdsData(int32(c), int32(d))})
		g.sendmsg(c, "y", 0, cmsg{unix.SOL_SOCKET, unix.SCM_RIGHTS, fdsData(int32(a), int32(b))})
		for _, fd := range []uintptr{a, b, c, d} {
			g.must("close", unix.SYS_CLOSE, fd)
		}
		g.must("close", unix.SYS_CLOSE, g.socket(unix.SOCK_DGRAM))
	})
	if n := unixsock.Live(s.Kernel); n != 0 {
		t.Errorf("%d sockets live after the cycle was closed", n)
	}
	if n := unixsock.InFlight(s.Kernel); n != 0 {
		t.Errorf("%d files still in flight", n)
	}
}

// TestFilesInFlightAreBoundedByRlimitNofile: a sender without
// CAP_SYS_RESOURCE may have at most RLIMIT_NOFILE files in flight
// (ETOOMANYREFS past it), so a program cannot pin the sentry's memory
// with unreceived files.
func TestFilesInFlightAreBoundedByRlimitNofile(t *testing.T) {
	s := kerneltest.New(t, syscalls.NewTable())
	s.Start(func(fg *fake.Guest) {
		g := guest{fg, t}
		a, _ := g.pair(unix.SOCK_DGRAM)
		sent := 0
		for i := 0; i < 100; i++ {
			_, errno := g.sendmsg(a, "x", 0, cmsg{unix.SOL_SOCKET, unix.SCM_RIGHTS, fdsData(int32(a), int32(a), int32(a), int32(a))})
			if errno == unix.ETOOMANYREFS {
				break
			}
			if errno != 0 {
				t.Errorf("sendmsg: %v", errno)
				break
			}
			sent++
		}
		if sent != 5 { // 16 in flight is not yet more than 16: one more message goes
			t.Errorf("%d messages of 4 fds sent before ETOOMANYREFS, want 5", sent)
		}
	}, kerneltest.Init{UID: 1000, GID: 1000, Limits: map[int]kernel.Limit{unix.RLIMIT_NOFILE: {Cur: 16, Max: 16}}})
	if st := s.Wait(); st.Code != 0 || st.Signo != 0 {
		t.Errorf("guest ended %+v; log:\n%s", st, s.Log())
	}
}

// TestBlockedAcceptWakesForAConnectionFromAnotherProcess.
func TestBlockedAcceptWakesForAConnectionFromAnotherProcess(t *testing.T) {
	run(t, func(g guest) {
		l := g.socket(unix.SOCK_STREAM)
		addr, n := g.sockaddr("\x00accept-wake")
		g.must("bind", unix.SYS_BIND, l, addr, n)
		g.must("listen", unix.SYS_LISTEN, l, 1)
		child, _ := g.Fork(func(fg *fake.Guest) {
			cg := guest{fg, t}
			cg.Compute(20 * time.Millisecond)
			c := cg.socket(unix.SOCK_STREAM)
			cg.must("connect", unix.SYS_CONNECT, c, addr, n)
			cg.write(c, "from the child")
		})
		a := g.must("accept", unix.SYS_ACCEPT4, l, 0, 0, unix.SOCK_CLOEXEC)
		if got, _ := g.read(a, 64, unix.MSG_WAITALL); got != "from the child" {
			t.Errorf("read %q", got)
		}
		g.Wait(child, 0)
		v := g.Alloc(12)
		lp := g.Alloc(4)
		g.WriteU32(lp, 12)
		g.must("SO_PEERCRED", unix.SYS_GETSOCKOPT, a, unix.SOL_SOCKET, unix.SO_PEERCRED, v, lp)
		if pid := g.ReadU32(v); pid != uint32(child) {
			t.Errorf("accepted end's SO_PEERCRED pid %d, want the child's %d", pid, child)
		}
	})
}
