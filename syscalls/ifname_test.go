package syscalls

import (
	"bytes"
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

func TestSIOCGIFNAMEEndsTheNameWithANulWhateverTheFieldHeld(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		s, errno := g.Call(unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, 0)
		if errno != 0 {
			t.Errorf("socket: %v", errno)
			return
		}
		req := make([]byte, 40)
		for i := range 16 {
			req[i] = 0xf5
		}
		binary.LittleEndian.PutUint32(req[16:], 1)
		ifr := g.Alloc(40)
		g.Write(ifr, req)
		if _, errno := g.Call(unix.SYS_IOCTL, s, unix.SIOCGIFNAME, ifr); errno != 0 {
			t.Errorf("SIOCGIFNAME of index 1: %v", errno)
			return
		}
		g.Read(ifr, req)
		name, _, found := bytes.Cut(req[:16], []byte{0})
		if !found || string(name) != "lo" {
			t.Errorf("SIOCGIFNAME of index 1 gave the name field %q, want \"lo\" and a NUL", req[:16])
		}
	})
}
