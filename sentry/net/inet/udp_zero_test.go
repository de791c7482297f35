package inet_test

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestAUDPReceiveIntoNoRoomTakesTheDatagram: recvfrom with a zero-length
// buffer takes the next datagram and returns 0 (its full length with
// MSG_TRUNC), as Linux's udp_recvmsg does; it was EFAULT (Go's net
// TestUDPZeroByteBuffer reads so).
func TestAUDPReceiveIntoNoRoomTakesTheDatagram(t *testing.T) {
	run(t, func(g guest) {
		u := g.must("socket", unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, 0)
		a, n := g.sin(0)
		g.must("bind", unix.SYS_BIND, u, a, n)
		to, tn := g.sin(g.port(u))
		sendSelf := func(s string) {
			buf := g.Alloc(uintptr(len(s)))
			g.Write(buf, []byte(s))
			g.must("sendto", unix.SYS_SENDTO, u, buf, uintptr(len(s)), 0, to, tn)
		}
		sendSelf("first")
		sendSelf("second!")
		if got, errno := g.Call(unix.SYS_RECVFROM, u, g.Alloc(1), 0, 0, 0, 0); got != 0 || errno != 0 {
			t.Errorf("recvfrom into no room = %d, %v; want 0", got, errno)
		}
		if got, errno := g.Call(unix.SYS_RECVFROM, u, g.Alloc(1), 0, unix.MSG_TRUNC, 0, 0); got != 7 || errno != 0 {
			t.Errorf("recvfrom into no room with MSG_TRUNC = %d, %v; want the second datagram's 7", got, errno)
		}
		if _, errno := g.recv(u, 16, unix.MSG_DONTWAIT); errno != unix.EAGAIN {
			t.Errorf("a third recv: %v, want EAGAIN: the empty reads took both datagrams", errno)
		}
	})
}
