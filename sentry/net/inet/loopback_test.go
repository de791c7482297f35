package inet_test

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestLoopbackSendHasReachedThePeerWhenItReturns: on a TCP connection
// within the stack, the peer is readable (poll with timeout 0) and
// FIONREAD counts the bytes as soon as send returns, both ways, as over
// Linux's loopback; many fresh connections, so that a race with
// netstack's processor goroutines would show.
func TestLoopbackSendHasReachedThePeerWhenItReturns(t *testing.T) {
	run(t, func(g guest) {
		l := g.must("socket", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
		a, n := g.sin(0)
		g.must("bind", unix.SYS_BIND, l, a, n)
		g.must("listen", unix.SYS_LISTEN, l, 8)
		to, tn := g.sin(g.port(l))
		readable := func(fd uintptr) bool {
			p := g.Alloc(8)
			g.WriteU32(p, uint32(fd))
			g.Write(p+4, []byte{unix.POLLIN, 0, 0, 0})
			r, _ := g.Call(unix.SYS_POLL, p, 1, 0)
			return r == 1
		}
		for i := 0; i < 20; i++ {
			c := g.must("socket", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, 0)
			g.must("connect", unix.SYS_CONNECT, c, to, tn)
			s := g.must("accept", unix.SYS_ACCEPT, l, 0, 0)
			g.send(c, "Hello!")
			q := g.Alloc(4)
			g.must("FIONREAD", unix.SYS_IOCTL, s, unix.SIOCINQ, q)
			if got := g.ReadU32(q); got != 6 {
				t.Errorf("connection %d: FIONREAD right after the send %d, want 6", i, got)
			}
			g.send(s, "world!!!")
			if !readable(c) || !readable(s) {
				t.Errorf("connection %d: not both readable right after the sends (client %v, server %v)", i, readable(c), readable(s))
			}
			g.must("close", unix.SYS_CLOSE, c)
			g.must("close", unix.SYS_CLOSE, s)
		}
	})
}
