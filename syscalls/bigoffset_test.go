package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// TestTransferPastTheLargestOffsetIsEINVAL: a read or write whose end
// would pass 2^63-1 is EINVAL (Linux's rw_verify_area), at the file offset
// as at pread's, and the offset stays; one that ends at it is not. A write
// of /proc/self/comm at the largest offset once moved the offset past it,
// to a negative one, and the next read crashed the sentry.
func TestTransferPastTheLargestOffsetIsEINVAL(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	runIn(t, s, func(g *fake.Guest) {
		g.Call(unix.SYS_MKDIR, g.CString("/tmp/proc"), 0o755)
		if _, errno := g.Call(unix.SYS_MOUNT, g.CString("proc"), g.CString("/tmp/proc"), g.CString("proc"), 0, 0); errno != 0 {
			t.Errorf("mount proc: %v", errno)
			return
		}
		fd := guestOpen(t, g, "/tmp/proc/self/comm", unix.O_RDWR)
		buf := g.Alloc(4096)
		const top = 1<<63 - 1
		g.Call(unix.SYS_LSEEK, fd, top, unix.SEEK_SET)
		n, errno := g.Call(unix.SYS_WRITE, fd, g.CString("0123456789"), 10)
		expectRet(t, "write of 10 bytes at 2^63-1", n, errno, 0, unix.EINVAL)
		n, errno = g.Call(unix.SYS_READ, fd, buf, 1)
		expectRet(t, "read of 1 byte at 2^63-1", n, errno, 0, unix.EINVAL)
		if off, errno := g.Call(unix.SYS_LSEEK, fd, 0, unix.SEEK_CUR); errno != 0 || off != top {
			t.Errorf("offset after the refused transfers = %#x, %v; want 2^63-1", off, errno)
		}
		n, errno = g.Call(unix.SYS_PREAD64, fd, buf, 100, top)
		expectRet(t, "pread of 100 bytes at 2^63-1", n, errno, 0, unix.EINVAL)
		n, errno = g.Call(unix.SYS_PWRITE64, fd, buf, 2, top)
		expectRet(t, "pwrite of 2 bytes at 2^63-1", n, errno, 0, unix.EINVAL)
		g.Call(unix.SYS_LSEEK, fd, top-7, unix.SEEK_SET)
		n, errno = g.Call(unix.SYS_READ, fd, buf, 1)
		expectRet(t, "read of 1 byte at 2^63-8 (end of file)", n, errno, 0, 0)
	})
}
