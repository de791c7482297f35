package syscalls

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// TestFIFOsOpenAsLinuxOpensThem: mkfifo makes a node on tmpfs; a reader's
// open waits for a writer (and gets what a writer that has already closed
// wrote), a writer's waits for a reader; O_NONBLOCK readers open at once
// and writers with no reader get ENXIO; O_RDWR never waits; the node
// stats as itself.
func TestFIFOsOpenAsLinuxOpensThem(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	st := s.Run(func(g *fake.Guest) {
		path := g.CString("/tmp/fifo")
		if _, errno := g.Call(unix.SYS_MKNOD, path, unix.S_IFIFO|0o644, 0); errno != 0 {
			t.Errorf("mknod S_IFIFO: %v", errno)
			return
		}
		if _, errno := g.Call(unix.SYS_OPEN, path, unix.O_WRONLY|unix.O_NONBLOCK); errno != unix.ENXIO {
			t.Errorf("non-blocking writer with no reader: %v, want ENXIO", errno)
		}
		r, errno := g.Call(unix.SYS_OPEN, path, unix.O_RDONLY|unix.O_NONBLOCK)
		if errno != 0 {
			t.Errorf("non-blocking reader: %v", errno)
		}
		buf := g.Alloc(64)
		if _, errno := g.Call(unix.SYS_READ, r, buf, 64); errno != 0 {
			t.Errorf("read with no writer ever: %v, want 0 (end of file)", errno)
		}
		g.Call(unix.SYS_CLOSE, r)

		// A writer that writes and closes before the blocked reader runs.
		child, _ := g.Fork(func(g *fake.Guest) {
			g.Compute(20 * time.Millisecond)
			w, errno := g.Call(unix.SYS_OPEN, path, unix.O_WRONLY)
			if errno != 0 {
				t.Errorf("writer open: %v", errno)
				return
			}
			b := g.CString("hello")
			g.Call(unix.SYS_WRITE, w, b, 5)
			g.Call(unix.SYS_CLOSE, w)
		})
		r, errno = g.Call(unix.SYS_OPEN, path, unix.O_RDONLY)
		if errno != 0 {
			t.Errorf("blocking reader: %v", errno)
			return
		}
		g.Wait(child, 0)
		n, _ := g.Call(unix.SYS_READ, r, buf, 64)
		got := make([]byte, n)
		if g.Read(buf, got); string(got) != "hello" {
			t.Errorf("the reader got %q", got)
		}
		var stat unix.Stat_t
		sb := g.Alloc(256)
		g.Call(unix.SYS_FSTAT, r, sb)
		raw := make([]byte, 144)
		g.Read(sb, raw)
		stat.Mode = uint32(raw[24]) | uint32(raw[25])<<8 | uint32(raw[26])<<16 | uint32(raw[27])<<24
		if stat.Mode != unix.S_IFIFO|0o644 {
			t.Errorf("fstat of the FIFO: mode %o", stat.Mode)
		}
		g.Call(unix.SYS_CLOSE, r)

		rw, errno := g.Call(unix.SYS_OPEN, path, unix.O_RDWR)
		if errno != 0 {
			t.Errorf("O_RDWR open: %v", errno)
		}
		g.Call(unix.SYS_WRITE, rw, g.CString("xy"), 2)
		if n, _ := g.Call(unix.SYS_READ, rw, buf, 64); n != 2 {
			t.Errorf("read back through O_RDWR: %d bytes", n)
		}
	})
	if st.Code != 0 {
		t.Errorf("status %+v; log:\n%s", st, s.Log())
	}
}
