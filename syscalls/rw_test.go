package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// What read(2), write(2), pread64(2) and pwrite64(2) check before they
// move a byte, in Linux's order.

func TestABufferPastTheUserAddressRangeIsEFAULTBeforeAnythingMoves(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.WriteFile("/tmp/f", 0o666, []byte("0123456789"))
	runIn(t, s, func(g *fake.Guest) {
		fd := guestOpen(t, g, "/tmp/f", unix.O_RDWR)
		buf := g.Alloc(4096)
		for _, tc := range []struct {
			name      string
			addr, len uintptr
		}{
			{"a count of SIZE_MAX", buf, ^uintptr(0)},
			{"a count that ends a byte past the user range", buf, 0x7fff_ffff_f000 - buf + 1},
			{"a kernel address and no bytes", 0xffff_8880_0000_0000, 0},
		} {
			for _, c := range []struct {
				name string
				nr   uintptr
			}{{"read", unix.SYS_READ}, {"write", unix.SYS_WRITE}, {"pread64", unix.SYS_PREAD64}, {"pwrite64", unix.SYS_PWRITE64}} {
				n, errno := g.Call(c.nr, fd, tc.addr, tc.len, 0)
				expectErrno(t, c.name+" with "+tc.name, n, errno, unix.EFAULT)
			}
		}
		off, _ := g.Call(unix.SYS_LSEEK, fd, 0, unix.SEEK_CUR)
		expectRet(t, "offset after the refused calls", off, 0, 0, 0)
		// The largest buffer that ends inside the range is taken.
		n, errno := g.Call(unix.SYS_READ, fd, buf, 0x7fff_ffff_f000-buf)
		expectRet(t, "read with a count that ends at the range's end", n, errno, 10, 0)
	})
	if got := string(s.ReadFile("/tmp/f")); got != "0123456789" {
		t.Errorf("file after refused writes: %.40q", got)
	}
}

func TestPositionalCallsCheckTheOffsetThenTheFileThenTheBuffer(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		r, w := guestPipe(t, g, 0)
		minus1 := ^uintptr(0)
		for _, tc := range []struct {
			name       string
			nr, fd     uintptr
			buf, count uintptr
			off        uintptr
			want       unix.Errno
		}{
			{"pread64 of a closed fd at offset -1", unix.SYS_PREAD64, 99, g.Alloc(8), 8, minus1, unix.EINVAL},
			{"pwritev of a closed fd at offset -1", unix.SYS_PWRITEV, 99, unmappedAddr, 1, minus1, unix.EINVAL},
			{"pread64 of a pipe into an unmapped buffer", unix.SYS_PREAD64, r, unmappedAddr, 8, 0, unix.ESPIPE},
			{"pwrite64 to a pipe past the user range", unix.SYS_PWRITE64, w, 0, ^uintptr(0), 0, unix.ESPIPE},
			{"preadv of a pipe with an unmapped array", unix.SYS_PREADV, r, unmappedAddr, 1, 0, unix.ESPIPE},
			{"pwritev to a pipe with 2000 iovecs", unix.SYS_PWRITEV, w, g.Alloc(16), 2000, 0, unix.ESPIPE},
			{"read of the write end past the user range", unix.SYS_READ, w, 0, ^uintptr(0), 0, unix.EBADF},
		} {
			n, errno := g.Call(tc.nr, tc.fd, tc.buf, tc.count, tc.off)
			expectErrno(t, tc.name, n, errno, tc.want)
		}
	})
}
