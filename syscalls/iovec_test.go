package syscalls

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// The iovec rules of readv(2), writev(2), preadv(2) and pwritev(2), as
// Linux's import_iovec applies them.

// vectoredCalls are the four calls, each with its offset argument (0 for
// the ones that have none).
var vectoredCalls = []struct {
	name string
	nr   uintptr
}{
	{"readv", unix.SYS_READV}, {"writev", unix.SYS_WRITEV}, {"preadv", unix.SYS_PREADV}, {"pwritev", unix.SYS_PWRITEV},
}

func TestVectoredCallsTakeAtMostUIOMaxIOVIovecs(t *testing.T) {
	const uioMaxIOV = 1024 // UIO_MAXIOV
	s := kerneltest.New(t, NewTable())
	s.WriteFile("/tmp/f", 0o666, []byte("0123456789"))
	runIn(t, s, func(g *fake.Guest) {
		fd := guestOpen(t, g, "/tmp/f", unix.O_RDWR)
		buf := g.Alloc(4096)
		empty := make([][2]uint64, uioMaxIOV+1)
		for i := range empty {
			empty[i] = [2]uint64{uint64(buf), 0}
		}
		arr := guestIovecs(g, empty...)
		for _, c := range vectoredCalls {
			for _, tc := range []struct {
				count uint64
				want  unix.Errno
			}{
				{0, 0}, {uioMaxIOV, 0}, {uioMaxIOV + 1, unix.EINVAL},
				{1<<64 - 1, unix.EINVAL}, // -1: the count is unsigned
				{1 << 32, unix.EINVAL},   // not cut to 32 bits (it would be 0)
			} {
				n, errno := g.Call(c.nr, fd, arr, uintptr(tc.count), 0)
				expectRet(t, fmt.Sprintf("%s of %#x empty iovecs", c.name, tc.count), n, errno, 0, tc.want)
			}
		}
	})
}

func TestAnIovecOfNegativeLengthIsEINVALAndMovesNothing(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.WriteFile("/tmp/f", 0o666, []byte("0123456789"))
	runIn(t, s, func(g *fake.Guest) {
		fd := guestOpen(t, g, "/tmp/f", unix.O_RDWR)
		buf := g.Alloc(4096)
		arr := guestIovecs(g, [2]uint64{uint64(buf), 4}, [2]uint64{uint64(buf), 1 << 63})
		for _, c := range vectoredCalls {
			n, errno := g.Call(c.nr, fd, arr, 2, 0)
			expectErrno(t, c.name+" with a second iovec of length 1<<63", n, errno, unix.EINVAL)
		}
		off, _ := g.Call(unix.SYS_LSEEK, fd, 0, unix.SEEK_CUR)
		expectRet(t, "offset after the refused calls", off, 0, 0, 0)
	})
	if got := string(s.ReadFile("/tmp/f")); got != "0123456789" {
		t.Errorf("file after refused writes: %.40q", got)
	}
}

func TestAnIovecArrayTheGuestCannotReadIsEFAULT(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.WriteFile("/tmp/f", 0o666, []byte("0123456789"))
	runIn(t, s, func(g *fake.Guest) {
		fd := guestOpen(t, g, "/tmp/f", unix.O_RDWR)
		buf := g.Alloc(4096)
		_, gap := guestHole(t, g)
		// The first iovec is readable, the second runs into the hole: the
		// array is read whole before anything moves.
		straddling := gap - 16
		g.WriteU64(straddling, uint64(buf))
		g.WriteU64(straddling+8, 4)
		for _, c := range vectoredCalls {
			n, errno := g.Call(c.nr, fd, unmappedAddr, 1, 0)
			expectErrno(t, c.name+" of an unmapped iovec array", n, errno, unix.EFAULT)
			n, errno = g.Call(c.nr, fd, straddling, 2, 0)
			expectErrno(t, c.name+" of an iovec array running into a hole", n, errno, unix.EFAULT)
		}
		off, _ := g.Call(unix.SYS_LSEEK, fd, 0, unix.SEEK_CUR)
		expectRet(t, "offset after the faulting calls", off, 0, 0, 0)
	})
	if got := string(s.ReadFile("/tmp/f")); got != "0123456789" {
		t.Errorf("file after faulting writes: %.40q", got)
	}
}

func TestAnIovecBeyondTheUserAddressRangeIsEFAULTBeforeAnythingMoves(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.WriteFile("/tmp/f", 0o666, []byte("0123456789"))
	runIn(t, s, func(g *fake.Guest) {
		fd := guestOpen(t, g, "/tmp/f", unix.O_RDWR)
		buf := g.Alloc(4096)
		for _, second := range [][2]uint64{
			{0xffff_8880_0000_0000, 1},  // a kernel address
			{uint64(buf), 1<<63 - 1},    // a length that runs past the user range
			{1<<64 - 4096, 4096 + 4096}, // a range that wraps around
		} {
			arr := guestIovecs(g, [2]uint64{uint64(buf), 4}, second)
			for _, c := range vectoredCalls {
				n, errno := g.Call(c.nr, fd, arr, 2, 0)
				expectErrno(t, c.name+" with a second iovec outside user memory", n, errno, unix.EFAULT)
			}
		}
		off, _ := g.Call(unix.SYS_LSEEK, fd, 0, unix.SEEK_CUR)
		expectRet(t, "offset after the refused calls", off, 0, 0, 0)
	})
	if got := string(s.ReadFile("/tmp/f")); got != "0123456789" {
		t.Errorf("file after refused writes: %.40q", got)
	}
}

func TestAVectoredFileTransferStopsAtTheFirstBufferThatFaults(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.WriteFile("/tmp/f", 0o666, nil)
	runIn(t, s, func(g *fake.Guest) {
		fd := guestOpen(t, g, "/tmp/f", unix.O_RDWR)
		_, gap := guestHole(t, g)
		src := g.CString("abcd")
		n, errno := g.Call(unix.SYS_WRITEV, fd, guestIovecs(g, [2]uint64{uint64(src), 4}, [2]uint64{uint64(gap), 4}), 2)
		expectRet(t, "writev whose second buffer is unmapped", n, errno, 4, 0)
		dst := g.Alloc(8)
		n, errno = g.Call(unix.SYS_PREADV, fd, guestIovecs(g, [2]uint64{uint64(dst), 2}, [2]uint64{uint64(gap), 2}), 2, 0)
		expectRet(t, "preadv whose second buffer is unmapped", n, errno, 2, 0)
		got := make([]byte, 2)
		g.Read(dst, got)
		if string(got) != "ab" {
			t.Errorf("preadv read %q, want \"ab\"", got)
		}
		// A first buffer that faults moves nothing: EFAULT.
		n, errno = g.Call(unix.SYS_PREADV, fd, guestIovecs(g, [2]uint64{uint64(gap), 2}), 1, 0)
		expectErrno(t, "preadv whose only buffer is unmapped", n, errno, unix.EFAULT)
		// An empty iovec is never touched, whatever its base.
		n, errno = g.Call(unix.SYS_PREADV, fd, guestIovecs(g, [2]uint64{unmappedAddr, 0}, [2]uint64{uint64(dst), 4}), 2, 0)
		expectRet(t, "preadv after an empty iovec at an unmapped address", n, errno, 4, 0)
	})
	if got := string(s.ReadFile("/tmp/f")); got != "abcd" {
		t.Errorf("file after a writev cut short: %.40q, want \"abcd\"", got)
	}
}

func TestVectoredCallsCheckTheFileBeforeTheIovecs(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.WriteFile("/tmp/f", 0o666, []byte("0123456789"))
	runIn(t, s, func(g *fake.Guest) {
		ro := guestOpen(t, g, "/tmp/f", unix.O_RDONLY)
		wo := guestOpen(t, g, "/tmp/f", unix.O_WRONLY)
		r, _ := guestPipe(t, g, 0)
		for _, tc := range []struct {
			name       string
			nr, fd     uintptr
			arr, count uintptr
		}{
			{"readv of a write-only file, 2000 iovecs", unix.SYS_READV, wo, g.Alloc(16), 2000},
			{"readv of a write-only file, a bad array", unix.SYS_READV, wo, unmappedAddr, 1},
			{"writev to a read-only file, 2000 iovecs", unix.SYS_WRITEV, ro, g.Alloc(16), 2000},
			{"pwritev to a read-only file, a bad array", unix.SYS_PWRITEV, ro, unmappedAddr, 1},
		} {
			n, errno := g.Call(tc.nr, tc.fd, tc.arr, tc.count, 0)
			expectErrno(t, tc.name, n, errno, unix.EBADF)
		}
		buf := g.Alloc(16)
		arr := guestIovecs(g, [2]uint64{uint64(buf), 4})
		n, errno := g.Call(unix.SYS_PREADV, ro, arr, 1, ^uintptr(0))
		expectErrno(t, "preadv at offset -1", n, errno, unix.EINVAL)
		n, errno = g.Call(unix.SYS_PREADV, r, arr, 1, 0)
		expectErrno(t, "preadv of a pipe", n, errno, unix.ESPIPE)
		n, errno = g.Call(unix.SYS_READV, 99, arr, 1)
		expectErrno(t, "readv of a closed fd", n, errno, unix.EBADF)
	})
}

// TestIovecLengthsAreClampedToMaxRWCountInTotal reads the decoded ranges
// (a transfer of 2 GiB is what a real call would need to show it): the
// sum stops at MAX_RW_COUNT, later iovecs shrink to nothing, and none is
// refused for it.
func TestIovecLengthsAreClampedToMaxRWCountInTotal(t *testing.T) {
	const maxRWCount = 0x7ffff000 // MAX_RW_COUNT: INT_MAX rounded down to a page
	s := kerneltest.New(t, NewTable())
	runIn(t, s, func(g *fake.Guest) {
		task := s.Kernel.TaskByTID(1)
		lens := []uint64{maxRWCount - 10, 100, 50, 1 << 40}
		v := make([][2]uint64, len(lens))
		for i, n := range lens {
			v[i] = [2]uint64{0x10000, n}
		}
		ranges, err := copyInIovecs(task, guestIovecs(g, v...), uint64(len(v)))
		if err != nil {
			t.Errorf("iovecs summing past MAX_RW_COUNT: %v", err)
			return
		}
		want := []int{maxRWCount - 10, 10, 0, 0}
		total := 0
		for i, r := range ranges {
			total += r.Len
			if r.Len != want[i] {
				t.Errorf("iovec %d: length %d, want %d", i, r.Len, want[i])
			}
		}
		if total != maxRWCount {
			t.Errorf("total %d, want MAX_RW_COUNT", total)
		}
	})
}
