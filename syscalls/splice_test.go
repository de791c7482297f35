package syscalls

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

// guestFile makes name with text and returns it open for reading and
// writing.
func guestFile(t *testing.T, g *fake.Guest, name, text string) uintptr {
	t.Helper()
	fd := guestOpen(t, g, name, unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC)
	g.Call(unix.SYS_WRITE, fd, g.CString(text), uintptr(len(text)))
	return fd
}

func guestRead(g *fake.Guest, fd uintptr, n int) string {
	buf := g.Alloc(uintptr(n))
	got, errno := g.Call(unix.SYS_READ, fd, buf, uintptr(n))
	if errno != 0 {
		return errno.Error()
	}
	b := make([]byte, got)
	g.Read(buf, b)
	return string(b)
}

func TestSpliceMovesBetweenAFileAndAPipeAtTheOffsetItIsGiven(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		f := guestFile(t, g, "/tmp/f", "hello world")
		r, w := guestPipe(t, g, 0)
		off := g.Alloc(8)
		g.WriteU64(off, 6)
		n, errno := g.Call(unix.SYS_SPLICE, f, off, w, 0, 100, 0)
		expectRet(t, "splice file to pipe at offset 6", n, errno, 5, 0)
		if got := g.ReadU64(off); got != 11 {
			t.Errorf("offset after the splice %d, want 11", got)
		}
		if pos, _ := g.Call(unix.SYS_LSEEK, f, 0, unix.SEEK_CUR); pos != 11 {
			t.Errorf("the file's own offset moved to %d", pos)
		}
		g.WriteU64(off, 0)
		n, errno = g.Call(unix.SYS_SPLICE, r, 0, f, off, 3, 0)
		expectRet(t, "splice pipe to file at 0", n, errno, 3, 0)
		buf := g.Alloc(11)
		g.Call(unix.SYS_PREAD64, f, buf, 11, 0)
		got := make([]byte, 11)
		if g.Read(buf, got); string(got) != "worlo world" {
			t.Errorf("file after the splice %q", got)
		}
		if s := guestRead(g, r, 16); s != "ld" {
			t.Errorf("what stayed in the pipe: %q", s)
		}
		_, errno = g.Call(unix.SYS_SPLICE, r, 0, w, 0, 5, 0)
		expectErrno(t, "splice of a pipe to itself", 0, errno, unix.EINVAL)
		_, errno = g.Call(unix.SYS_SPLICE, f, 0, f, 0, 5, 0)
		expectErrno(t, "splice with no pipe", 0, errno, unix.EINVAL)
		_, errno = g.Call(unix.SYS_SPLICE, r, off, f, 0, 5, 0)
		expectErrno(t, "an offset for a pipe", 0, errno, unix.ESPIPE)
		_, errno = g.Call(unix.SYS_SPLICE, r, 0, f, 0, 5, unix.SPLICE_F_NONBLOCK)
		expectErrno(t, "an empty pipe with SPLICE_F_NONBLOCK", 0, errno, unix.EAGAIN)
	})
}

func TestASpliceFromAnEmptyPipeWaitsForAWriter(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		f := guestFile(t, g, "/tmp/f", "")
		r, w := guestPipe(t, g, 0)
		child, _ := g.Fork(func(g *fake.Guest) {
			g.Compute(20 * time.Millisecond)
			g.Call(unix.SYS_WRITE, w, g.CString("late"), 4)
		})
		n, errno := g.Call(unix.SYS_SPLICE, r, 0, f, 0, 100, 0)
		expectRet(t, "splice waiting for data", n, errno, 4, 0)
		g.Wait(child, 0)
		g.Call(unix.SYS_CLOSE, w)
		n, errno = g.Call(unix.SYS_SPLICE, r, 0, f, 0, 100, 0)
		expectRet(t, "splice with no writer left", n, errno, 0, 0)
	})
}

func TestTeeCopiesWithoutConsumingAndVmspliceFollowsTheAccessMode(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		r1, w1 := guestPipe(t, g, 0)
		r2, w2 := guestPipe(t, g, 0)
		iov := guestIovecs(g, [2]uint64{uint64(g.CString("ab")), 2}, [2]uint64{uint64(g.CString("cde")), 3})
		n, errno := g.Call(unix.SYS_VMSPLICE, w1, iov, 2, 0)
		expectRet(t, "vmsplice into the write end", n, errno, 5, 0)
		n, errno = g.Call(unix.SYS_TEE, r1, w2, 100, 0)
		expectRet(t, "tee", n, errno, 5, 0)
		if s := guestRead(g, r2, 16); s != "abcde" {
			t.Errorf("tee's copy %q", s)
		}
		buf := g.Alloc(3)
		n, errno = g.Call(unix.SYS_VMSPLICE, r1, guestIovecs(g, [2]uint64{uint64(buf), 3}), 1, 0)
		expectRet(t, "vmsplice out of the read end", n, errno, 3, 0)
		if s := guestRead(g, r1, 16); s != "de" {
			t.Errorf("left after vmsplice: %q", s)
		}
		f := guestFile(t, g, "/tmp/f", "x")
		_, errno = g.Call(unix.SYS_VMSPLICE, f, iov, 1, 0)
		expectErrno(t, "vmsplice of a file", 0, errno, unix.EBADF)
		_, errno = g.Call(unix.SYS_TEE, r1, w1, 5, 0)
		expectErrno(t, "tee of a pipe to itself", 0, errno, unix.EINVAL)
		_, errno = g.Call(unix.SYS_TEE, r1, w2, 5, unix.SPLICE_F_NONBLOCK)
		expectErrno(t, "tee of an empty pipe", 0, errno, unix.EAGAIN)
	})
}

func TestCopyFileRangeCopiesBetweenRegularFilesAndMovesTheOffsetsGiven(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		a := guestFile(t, g, "/tmp/a", "0123456789")
		b := guestFile(t, g, "/tmp/b", "")
		in, out := g.Alloc(8), g.Alloc(8)
		g.WriteU64(in, 2)
		g.WriteU64(out, 0)
		n, errno := g.Call(unix.SYS_COPY_FILE_RANGE, a, in, b, out, 100, 0)
		expectRet(t, "copy_file_range", n, errno, 8, 0)
		if g.ReadU64(in) != 10 || g.ReadU64(out) != 8 {
			t.Errorf("offsets after the copy %d, %d; want 10, 8", g.ReadU64(in), g.ReadU64(out))
		}
		g.WriteU64(in, 0)
		g.WriteU64(out, 3)
		_, errno = g.Call(unix.SYS_COPY_FILE_RANGE, a, in, a, out, 5, 0)
		expectErrno(t, "overlapping ranges of one file", 0, errno, unix.EINVAL)
		_, pw := guestPipe(t, g, 0)
		_, errno = g.Call(unix.SYS_COPY_FILE_RANGE, a, in, pw, 0, 5, 0)
		expectErrno(t, "a pipe", 0, errno, unix.EINVAL)
		if pos, _ := g.Call(unix.SYS_LSEEK, a, 0, unix.SEEK_CUR); pos != 10 {
			t.Errorf("the input's own offset moved to %d", pos)
		}
		g.Call(unix.SYS_LSEEK, a, 4, unix.SEEK_SET)
		n, errno = g.Call(unix.SYS_COPY_FILE_RANGE, a, 0, b, 0, 3, 0)
		expectRet(t, "copy_file_range at the files' offsets", n, errno, 3, 0)
		if pos, _ := g.Call(unix.SYS_LSEEK, a, 0, unix.SEEK_CUR); pos != 7 {
			t.Errorf("input offset %d after the copy, want 7", pos)
		}
	})
}
