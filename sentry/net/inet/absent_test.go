package inet_test

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestUDPLiteIsAnAbsentProtocol: the netstack has no UDP-Lite, so
// socket(AF_INET[6], SOCK_DGRAM, IPPROTO_UDPLITE) answers as a Linux
// kernel built without it does (inet_create finds no protocol switch
// entry): EPROTONOSUPPORT, and no descriptor is made. gVisor answers the
// same. A SOCK_STREAM socket asking for UDP-Lite is EPROTONOSUPPORT too,
// as on every Linux.
func TestUDPLiteIsAnAbsentProtocol(t *testing.T) {
	run(t, func(g guest) {
		for _, c := range []struct{ family, typ uintptr }{
			{unix.AF_INET, unix.SOCK_DGRAM}, {unix.AF_INET6, unix.SOCK_DGRAM},
			{unix.AF_INET, unix.SOCK_STREAM}, {unix.AF_INET6, unix.SOCK_STREAM},
		} {
			if fd, errno := g.Call(unix.SYS_SOCKET, c.family, c.typ, unix.IPPROTO_UDPLITE); errno != unix.EPROTONOSUPPORT {
				t.Errorf("socket(%d, %d, IPPROTO_UDPLITE) = %d, %v; want EPROTONOSUPPORT", c.family, c.typ, int(fd), errno)
			}
		}
	})
}
