package pipe_test

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// Pipes as guest programs see them through pipe2(2), read(2), write(2),
// poll(2), fcntl(2) and ioctl(2), against pipe(7)'s rules.

const pipeBuf = 4096 // PIPE_BUF

func run(t *testing.T, prog fake.Program) {
	t.Helper()
	runAs(t, kerneltest.Init{}, prog)
}

func runAs(t *testing.T, in kerneltest.Init, prog fake.Program) {
	t.Helper()
	s := kerneltest.New(t, syscalls.NewTable())
	s.Start(prog, in)
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

func newPipe(t *testing.T, g *fake.Guest, flags int) (r, w uintptr) {
	t.Helper()
	fds := g.Alloc(8)
	if _, errno := g.Call(unix.SYS_PIPE2, fds, uintptr(flags)); errno != 0 {
		t.Errorf("pipe2: %v", errno)
	}
	return uintptr(g.ReadU32(fds)), uintptr(g.ReadU32(fds + 4))
}

// write writes b to fd from new guest memory.
func write(g *fake.Guest, fd uintptr, b []byte) (uintptr, unix.Errno) {
	buf := g.Alloc(uintptr(max(len(b), 1)))
	g.Write(buf, b)
	return g.Call(unix.SYS_WRITE, fd, buf, uintptr(len(b)))
}

// read reads up to n bytes of fd.
func read(g *fake.Guest, fd uintptr, n int) ([]byte, unix.Errno) {
	buf := g.Alloc(uintptr(max(n, 1)))
	got, errno := g.Call(unix.SYS_READ, fd, buf, uintptr(n))
	if errno != 0 {
		return nil, errno
	}
	b := make([]byte, got)
	g.Read(buf, b)
	return b, 0
}

func inPipe(t *testing.T, g *fake.Guest, fd uintptr) int {
	t.Helper()
	n := g.Alloc(4)
	if _, errno := g.Call(unix.SYS_IOCTL, fd, unix.TIOCINQ, n); errno != 0 { // FIONREAD
		t.Errorf("FIONREAD: %v", errno)
	}
	return int(g.ReadU32(n))
}

func revents(g *fake.Guest, fd uintptr, events int16) int16 {
	pfd := g.Alloc(8)
	g.WriteU32(pfd, uint32(fd))
	g.WriteU32(pfd+4, uint32(uint16(events)))
	g.Call(unix.SYS_POLL, pfd, 1, 0)
	b := make([]byte, 2)
	g.Read(pfd+6, b)
	return int16(b[0]) | int16(b[1])<<8
}

func TestWritesOfAtMostPIPEBUFAreNeverInterleaved(t *testing.T) {
	const records = 48 // per writer: several pipes' worth, so that writers wait for room
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g, 0)
		var children []int
		for _, c := range []byte("ab") {
			pid, errno := g.Fork(func(g *fake.Guest) {
				g.Call(unix.SYS_CLOSE, r)
				rec := bytes.Repeat([]byte{c}, pipeBuf)
				for range records {
					if n, errno := write(g, w, rec); n != pipeBuf || errno != 0 {
						t.Errorf("writer %c: write = %d, %v", c, n, errno)
						return
					}
				}
			})
			if errno != 0 {
				t.Errorf("fork: %v", errno)
			}
			children = append(children, pid)
		}
		g.Call(unix.SYS_CLOSE, w)
		// Reads of an odd size leave odd amounts of room for the writers.
		var all []byte
		for {
			b, errno := read(g, r, 1000)
			if errno != 0 || len(b) == 0 {
				break
			}
			all = append(all, b...)
		}
		for _, pid := range children {
			g.Wait(pid, 0)
		}
		if len(all) != 2*records*pipeBuf {
			t.Errorf("read %d bytes, want %d", len(all), 2*records*pipeBuf)
		}
		for off := 0; off+pipeBuf <= len(all); off += pipeBuf {
			rec := all[off : off+pipeBuf]
			if bytes.Count(rec, rec[:1]) != pipeBuf {
				t.Errorf("the write at offset %d was interleaved with another: %q...", off, rec[:16])
				return
			}
		}
	})
}

func TestANonBlockingWriteOfAtMostPIPEBUFIsAllOrNothing(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g, unix.O_NONBLOCK)
		size, _ := g.Call(unix.SYS_FCNTL, w, unix.F_GETPIPE_SZ)
		if size != 65536 {
			t.Errorf("a new pipe holds %d bytes, want 65536", size)
		}
		if n, errno := write(g, w, make([]byte, 65536-100)); n != 65536-100 || errno != 0 {
			t.Errorf("fill = %d, %v", n, errno)
		}
		if n, errno := write(g, w, make([]byte, 200)); errno != unix.EAGAIN {
			t.Errorf("write of 200 bytes into 100 of room = %d, %v; want EAGAIN", n, errno)
		}
		if got := inPipe(t, g, r); got != 65536-100 {
			t.Errorf("after a refused write the pipe holds %d bytes, want %d", got, 65536-100)
		}
		read(g, r, 65536)
		// Past PIPE_BUF a non-blocking write is cut to the room there is.
		g.Call(unix.SYS_FCNTL, w, unix.F_SETPIPE_SZ, pipeBuf)
		if n, errno := write(g, w, make([]byte, 5000)); n != pipeBuf || errno != 0 {
			t.Errorf("write of 5000 bytes into an empty one-page pipe = %d, %v; want %d", n, errno, pipeBuf)
		}
		if n, errno := write(g, w, []byte("x")); errno != unix.EAGAIN {
			t.Errorf("write into a full pipe = %d, %v; want EAGAIN", n, errno)
		}
	})
}

func TestABlockingReadWaitsForAWriter(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g, 0)
		const delay = 20 * time.Millisecond
		start := time.Now() // before the child can start its delay
		pid, _ := g.Fork(func(g *fake.Guest) {
			g.Compute(delay)
			write(g, w, []byte("hello"))
		})
		b, errno := read(g, r, 100)
		if el := time.Since(start); el < delay {
			t.Errorf("read returned after %v, before the writer wrote", el)
		}
		if string(b) != "hello" || errno != 0 {
			t.Errorf("read = %q, %v", b, errno)
		}
		g.Wait(pid, 0)
	})
}

func TestReadOfAPipeWithNoWriterFindsTheDataThenTheEnd(t *testing.T) {
	run(t, func(g *fake.Guest) {
		for _, flags := range []int{0, unix.O_NONBLOCK} {
			r, w := newPipe(t, g, flags)
			write(g, w, []byte("abc"))
			g.Call(unix.SYS_CLOSE, w)
			if b, errno := read(g, r, 100); string(b) != "abc" || errno != 0 {
				t.Errorf("read after the writer closed = %q, %v; want the data", b, errno)
			}
			if b, errno := read(g, r, 100); len(b) != 0 || errno != 0 {
				t.Errorf("read of an empty pipe with no writer = %q, %v; want 0 (end of file)", b, errno)
			}
		}
	})
}

func TestANonBlockingReadOfAnEmptyPipeIsEAGAIN(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, _ := newPipe(t, g, unix.O_NONBLOCK)
		if b, errno := read(g, r, 100); errno != unix.EAGAIN {
			t.Errorf("read = %q, %v; want EAGAIN", b, errno)
		}
		// A read of nothing returns at once, even from an empty pipe.
		if b, errno := read(g, r, 0); len(b) != 0 || errno != 0 {
			t.Errorf("read of 0 bytes = %q, %v; want 0", b, errno)
		}
	})
}

func TestAWriteWithNoReaderIsEPIPEAndRaisesSIGPIPE(t *testing.T) {
	s := kerneltest.New(t, syscalls.NewTable())
	var caught []int
	s.Start(func(g *fake.Guest) {
		h := s.Platform.Handler(func(g *fake.Guest) { caught = append(caught, int(g.Regs().Rdi)) })
		g.Sigaction(unix.SIGPIPE, fake.SigAction{Handler: h})
		r, w := newPipe(t, g, 0)
		g.Call(unix.SYS_CLOSE, r)
		if n, errno := write(g, w, []byte("x")); errno != unix.EPIPE {
			t.Errorf("write with no reader = %d, %v; want EPIPE", n, errno)
		}
		if len(caught) != 1 || caught[0] != int(unix.SIGPIPE) {
			t.Errorf("signals caught = %v, want one SIGPIPE", caught)
		}
		// A write of nothing succeeds without a signal (pipe_write returns
		// before it looks for readers).
		if n, errno := write(g, w, nil); n != 0 || errno != 0 {
			t.Errorf("write of 0 bytes with no reader = %d, %v; want 0", n, errno)
		}
		if len(caught) != 1 {
			t.Errorf("signals caught after an empty write = %v, want still one", caught)
		}
		// Without a handler, SIGPIPE kills the writer.
		r, w = newPipe(t, g, 0)
		g.Call(unix.SYS_CLOSE, r)
		pid, _ := g.Fork(func(g *fake.Guest) {
			g.Sigaction(unix.SIGPIPE, fake.SigAction{Handler: 0}) // SIG_DFL
			write(g, w, []byte("x"))
			t.Errorf("the writer outlived SIGPIPE")
		})
		_, status, _ := g.Wait(pid, 0)
		if !status.Signaled() || status.Signal() != unix.SIGPIPE {
			t.Errorf("writer with SIGPIPE's default action: %v, want killed by SIGPIPE", status)
		}
	}, kerneltest.Init{})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

func TestABlockedWriterGetsEPIPEWhenTheLastReaderCloses(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g, 0)
		write(g, w, make([]byte, 65536)) // full
		pid, _ := g.Fork(func(g *fake.Guest) {
			g.Sigaction(unix.SIGPIPE, fake.SigAction{Handler: 1}) // SIG_IGN
			g.Call(unix.SYS_CLOSE, r)
			if n, errno := write(g, w, []byte("x")); errno != unix.EPIPE {
				t.Errorf("blocked write after the reader closed = %d, %v; want EPIPE", n, errno)
			}
		})
		g.Compute(20 * time.Millisecond) // the child blocks in its write
		g.Call(unix.SYS_CLOSE, r)
		g.Wait(pid, 0)
	})
}

func TestFIONREADCountsTheBytesBufferedAtEitherEnd(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g, 0)
		write(g, w, []byte("0123456789"))
		read(g, r, 3)
		if got := inPipe(t, g, r); got != 7 {
			t.Errorf("FIONREAD of the read end = %d, want 7", got)
		}
		if got := inPipe(t, g, w); got != 7 {
			t.Errorf("FIONREAD of the write end = %d, want 7", got)
		}
	})
}

func TestFSETPIPESZRoundsUpToAPowerOfTwoOfPages(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g, 0)
		for _, tc := range []struct {
			arg, want uintptr
			errno     unix.Errno
		}{
			{0, 4096, 0}, {1, 4096, 0}, {5000, 8192, 0}, {65536, 65536, 0}, {65537, 131072, 0},
			{0xffffffff, 0, unix.EINVAL}, // (unsigned)-1: too big to round
		} {
			n, errno := g.Call(unix.SYS_FCNTL, r, unix.F_SETPIPE_SZ, tc.arg)
			if n != tc.want || errno != tc.errno {
				t.Errorf("F_SETPIPE_SZ(%d) = %d, %v; want %d, %v", tc.arg, n, errno, tc.want, tc.errno)
			}
		}
		if n, _ := g.Call(unix.SYS_FCNTL, w, unix.F_GETPIPE_SZ); n != 131072 {
			t.Errorf("F_GETPIPE_SZ of the other end = %d, want 131072", n)
		}
		// The pipe cannot shrink below what it holds.
		write(g, w, make([]byte, 10000))
		if n, errno := g.Call(unix.SYS_FCNTL, w, unix.F_SETPIPE_SZ, 4096); errno != unix.EBUSY {
			t.Errorf("F_SETPIPE_SZ below the data held = %d, %v; want EBUSY", n, errno)
		}
		at := unix.AT_FDCWD
		file, errno := g.Call(unix.SYS_OPENAT, uintptr(at), g.CString("/tmp/f"), unix.O_CREAT|unix.O_RDWR, 0o600)
		if errno != 0 {
			t.Errorf("open: %v", errno)
		}
		if n, errno := g.Call(unix.SYS_FCNTL, file, unix.F_GETPIPE_SZ); errno != unix.EBADF {
			t.Errorf("F_GETPIPE_SZ of a regular file = %d, %v; want EBADF", n, errno)
		}
	})
}

func TestFSETPIPESZPastPipeMaxSizeNeedsCAPSYSRESOURCE(t *testing.T) {
	runAs(t, kerneltest.Init{UID: 1000, GID: 1000}, func(g *fake.Guest) {
		r, _ := newPipe(t, g, 0)
		if n, errno := g.Call(unix.SYS_FCNTL, r, unix.F_SETPIPE_SZ, 1<<20); n != 1<<20 || errno != 0 {
			t.Errorf("F_SETPIPE_SZ(pipe-max-size) = %d, %v", n, errno)
		}
		if n, errno := g.Call(unix.SYS_FCNTL, r, unix.F_SETPIPE_SZ, 1<<20+1); errno != unix.EPERM {
			t.Errorf("F_SETPIPE_SZ past pipe-max-size without CAP_SYS_RESOURCE = %d, %v; want EPERM", n, errno)
		}
	})
}

func TestPollSeesAPipeAsLinuxDoes(t *testing.T) {
	const (
		in  = unix.POLLIN
		out = unix.POLLOUT
	)
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g, unix.O_NONBLOCK)
		check := func(what string, fd uintptr, want int16) {
			t.Helper()
			if got := revents(g, fd, in|out); got != want {
				t.Errorf("%s: revents %#x, want %#x", what, got, want)
			}
		}
		check("empty pipe, read end", r, 0)
		check("empty pipe, write end", w, out)
		write(g, w, []byte("x"))
		check("pipe with data, read end", r, in)
		read(g, r, 1)
		write(g, w, make([]byte, 65536))
		check("full pipe, write end", w, 0)
		read(g, r, pipeBuf)
		check("pipe with PIPE_BUF of room, write end", w, out)
		g.Call(unix.SYS_CLOSE, w)
		check("pipe with data and no writer, read end", r, in|unix.POLLHUP)
		read(g, r, 65536)
		check("empty pipe with no writer, read end", r, unix.POLLHUP)
		r, w = newPipe(t, g, 0)
		g.Call(unix.SYS_CLOSE, r)
		check("pipe with no reader, write end", w, out|unix.POLLERR)
	})
}

func TestAPipeTransferThatFaultsMovesNothing(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g, 0)
		page := g.Alloc(2 * 4096)
		g.Call(unix.SYS_MPROTECT, page+4096, 4096, unix.PROT_NONE)
		edge := page + 4096 - 4 // 4 good bytes, then the hole
		// A write of at most PIPE_BUF whose source faults part way adds
		// nothing: it is atomic.
		if n, errno := g.Call(unix.SYS_WRITE, w, edge, 8); errno != unix.EFAULT {
			t.Errorf("write from a buffer running into a hole = %d, %v; want EFAULT", n, errno)
		}
		if got := inPipe(t, g, r); got != 0 {
			t.Errorf("after the faulting write the pipe holds %d bytes, want 0", got)
		}
		// A read whose destination faults part way takes nothing.
		write(g, w, []byte("01234567"))
		if n, errno := g.Call(unix.SYS_READ, r, edge, 8); errno != unix.EFAULT {
			t.Errorf("read into a buffer running into a hole = %d, %v; want EFAULT", n, errno)
		}
		if got := inPipe(t, g, r); got != 8 {
			t.Errorf("after the faulting read the pipe holds %d bytes, want 8", got)
		}
		if b, _ := read(g, r, 8); string(b) != "01234567" {
			t.Errorf("read after the faulting read = %q, want all the data", b)
		}
	})
}

func TestPacketModeReadsTakeOneWriteEach(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g, unix.O_DIRECT|unix.O_NONBLOCK)
		write(g, w, []byte("abc"))
		write(g, w, []byte("defg"))
		if b, _ := read(g, r, 100); string(b) != "abc" {
			t.Errorf("first read = %q, want the first packet", b)
		}
		if b, _ := read(g, r, 2); string(b) != "de" {
			t.Errorf("short read = %q, want the start of the second packet", b)
		}
		if b, errno := read(g, r, 100); errno != unix.EAGAIN {
			t.Errorf("read after the short read = %q, %v; want EAGAIN (the rest of the packet is gone)", b, errno)
		}
		// A write past PIPE_BUF is cut into packets of PIPE_BUF.
		write(g, w, make([]byte, pipeBuf+10))
		if b, _ := read(g, r, 2*pipeBuf); len(b) != pipeBuf {
			t.Errorf("read of a long write's first packet = %d bytes, want %d", len(b), pipeBuf)
		}
		if b, _ := read(g, r, 2*pipeBuf); len(b) != 10 {
			t.Errorf("read of a long write's second packet = %d bytes, want 10", len(b))
		}
	})
}

func TestAPipeIsAFIFOOwnedByNoPath(t *testing.T) {
	run(t, func(g *fake.Guest) {
		r, w := newPipe(t, g, 0)
		st := g.Alloc(144)
		for _, fd := range []uintptr{r, w} {
			if _, errno := g.Call(unix.SYS_FSTAT, fd, st); errno != 0 {
				t.Errorf("fstat: %v", errno)
			}
			if mode := g.ReadU32(st + 24); mode&unix.S_IFMT != unix.S_IFIFO {
				t.Errorf("st_mode = %#o, want a FIFO", mode)
			}
		}
		if n, errno := g.Call(unix.SYS_LSEEK, r, 0, unix.SEEK_SET); errno != unix.ESPIPE {
			t.Errorf("lseek of a pipe = %d, %v; want ESPIPE", n, errno)
		}
		if n, errno := write(g, r, []byte("x")); errno != unix.EBADF {
			t.Errorf("write to the read end = %d, %v; want EBADF", n, errno)
		}
		if b, errno := read(g, w, 1); errno != unix.EBADF {
			t.Errorf("read of the write end = %q, %v; want EBADF", b, errno)
		}
	})
}
