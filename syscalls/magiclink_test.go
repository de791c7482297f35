package syscalls

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// TestProcFDLinksReachTheFile: /proc/self/fd/N leads to the file the
// descriptor holds, as Linux's magic links do: a pipe opens again as a new
// end of the same pipe (bash's <(...), /dev/stdin), a deleted file opens
// again with an offset of its own, an eventfd gives ENXIO.
func TestProcFDLinksReachTheFile(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.Mkdir("/proc", 0o555)
	s.Mount("/proc", procfs.New(s.Kernel, s.Kernel.RootPIDNamespace()), "proc", 0)
	st := s.Run(func(g *fake.Guest) {
		fds := g.Alloc(8)
		g.Call(unix.SYS_PIPE2, fds, 0)
		rfd, wfd := uintptr(g.ReadU32(fds)), uintptr(g.ReadU32(fds+4))
		path := g.CString(fmt.Sprintf("/proc/self/fd/%d", rfd))
		w2, errno := g.Call(unix.SYS_OPEN, path, unix.O_WRONLY)
		if errno != 0 {
			t.Errorf("reopening a pipe's read end for writing: %v", errno)
			return
		}
		buf := g.Alloc(16)
		g.Write(buf, []byte("via the link"))
		g.Call(unix.SYS_WRITE, w2, buf, 12)
		if n, _ := g.Call(unix.SYS_READ, rfd, buf, 16); n != 12 {
			t.Errorf("read %d bytes written through the reopened end", n)
		}
		g.Call(unix.SYS_CLOSE, wfd)

		f, _ := g.Call(unix.SYS_OPEN, g.CString("/tmp/gone"), unix.O_CREAT|unix.O_RDWR, 0o600)
		g.Write(buf, []byte("abc"))
		g.Call(unix.SYS_WRITE, f, buf, 3)
		g.Call(unix.SYS_UNLINK, g.CString("/tmp/gone"))
		again, errno := g.Call(unix.SYS_OPEN, g.CString(fmt.Sprintf("/proc/self/fd/%d", f)), unix.O_RDONLY)
		if errno != 0 {
			t.Errorf("reopening a deleted file: %v", errno)
			return
		}
		if n, _ := g.Call(unix.SYS_READ, again, buf, 16); n != 3 {
			t.Errorf("the reopened deleted file reads %d bytes from its own offset, want 3", n)
		}

		e, _ := g.Call(unix.SYS_EVENTFD2, 0, 0)
		if _, errno := g.Call(unix.SYS_OPEN, g.CString(fmt.Sprintf("/proc/self/fd/%d", e)), unix.O_RDWR); errno != unix.ENXIO {
			t.Errorf("reopening an eventfd: %v, want ENXIO", errno)
		}
	})
	if st.Code != 0 {
		t.Errorf("status %+v; log:\n%s", st, s.Log())
	}
}
