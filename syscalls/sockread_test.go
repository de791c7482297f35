package syscalls

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

// zeroReadLeavesTheQueue checks, on a connected socket fd whose peer is
// peer, Linux's rule for read(2) of no bytes: 0 at once, with data queued
// (which stays queued) and without (the socket blocks, but a 5 s receive
// timeout bounds a read that wrongly waits).
func zeroReadLeavesTheQueue(t *testing.T, g *fake.Guest, what string, fd, peer uintptr) {
	t.Helper()
	tv := g.Alloc(16)
	g.WriteU64(tv, 5)
	g.WriteU64(tv+8, 0)
	if _, errno := g.Call(unix.SYS_SETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, tv, 16); errno != 0 {
		t.Errorf("%s: SO_RCVTIMEO: %v", what, errno)
	}
	buf := g.Alloc(16)
	n, errno := g.Call(unix.SYS_READ, fd, buf, 0)
	expectRet(t, what+": read of 0 bytes with nothing queued", n, errno, 0, 0)
	g.Write(buf, []byte("data"))
	g.Call(unix.SYS_WRITE, peer, buf, 4)
	n, errno = g.Call(unix.SYS_READ, fd, buf, 0)
	expectRet(t, what+": read of 0 bytes with data queued", n, errno, 0, 0)
	n, errno = g.Call(unix.SYS_READ, fd, buf+8, 8)
	expectRet(t, what+": the read after it", n, errno, 4, 0)
	got := make([]byte, 4)
	g.Read(buf+8, got)
	if string(got) != "data" {
		t.Errorf("%s: the read after a read of 0 bytes got %q, want the queued \"data\"", what, got)
	}
}

func TestReadOfNoBytesFromASocketIsZeroAtOnceAndLeavesItsData(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		sv := g.Alloc(8)
		if _, errno := g.Call(unix.SYS_SOCKETPAIR, unix.AF_UNIX, unix.SOCK_STREAM, 0, sv); errno != 0 {
			t.Errorf("socketpair: %v", errno)
			return
		}
		zeroReadLeavesTheQueue(t, g, "AF_UNIX stream", uintptr(g.ReadU32(sv)), uintptr(g.ReadU32(sv+4)))

		if s, c, ok := tcpPair(t, g); ok {
			zeroReadLeavesTheQueue(t, g, "TCP", s, c)
		}
	})
}

func TestRecvOfNoBytesFromATCPSocketWaitsForDataAndLeavesIt(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		s, c, ok := tcpPair(t, g)
		if !ok {
			return
		}
		buf := g.Alloc(16)
		n, errno := g.Call(unix.SYS_RECVFROM, s, buf, 0, unix.MSG_DONTWAIT, 0, 0)
		expectRet(t, "recv of 0 bytes, non-blocking, with nothing queued", n, errno, 0, unix.EAGAIN)
		g.Write(buf, []byte("data"))
		g.Call(unix.SYS_WRITE, c, buf, 4)
		// Blocking: it waits for the data, which may still be on its way.
		n, errno = g.Call(unix.SYS_RECVFROM, s, buf, 0, 0, 0, 0)
		expectRet(t, "recv of 0 bytes with data coming", n, errno, 0, 0)
		n, errno = g.Call(unix.SYS_RECVFROM, s, buf+8, 8, unix.MSG_DONTWAIT, 0, 0)
		expectRet(t, "the recv after it", n, errno, 4, 0)
		got := make([]byte, 4)
		g.Read(buf+8, got)
		if string(got) != "data" {
			t.Errorf("the recv after a recv of 0 bytes got %q, want the queued \"data\"", got)
		}
	})
}

// tcpPair connects a TCP socket to a listener on 127.0.0.1 and returns
// the accepted end and the connecting one; ok is false (the failure
// reported) if a step failed.
func tcpPair(t *testing.T, g *fake.Guest) (s, c uintptr, ok bool) {
	l, errno := g.Call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
	if errno != 0 {
		t.Errorf("socket: %v", errno)
		return 0, 0, false
	}
	sin := g.Alloc(16)
	b := make([]byte, 16)
	binary.LittleEndian.PutUint16(b, unix.AF_INET)
	copy(b[4:], []byte{127, 0, 0, 1})
	g.Write(sin, b)
	g.Call(unix.SYS_BIND, l, sin, 16)
	g.Call(unix.SYS_LISTEN, l, 1)
	alen := g.Alloc(4)
	g.WriteU32(alen, 16)
	g.Call(unix.SYS_GETSOCKNAME, l, sin, alen)
	c, _ = g.Call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
	if _, errno := g.Call(unix.SYS_CONNECT, c, sin, 16); errno != 0 {
		t.Errorf("connect over loopback: %v", errno)
		return 0, 0, false
	}
	s, errno = g.Call(unix.SYS_ACCEPT, l, 0, 0)
	if errno != 0 {
		t.Errorf("accept: %v", errno)
		return 0, 0, false
	}
	return s, c, true
}
