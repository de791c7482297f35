package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// TestSharedMappingsAreTheFile: a MAP_SHARED mapping of a tmpfs file and
// read(2)/write(2) see each other's changes, across processes; a
// MAP_PRIVATE one sees the file until it writes, then its own copy.
func TestSharedMappingsAreTheFile(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	st := s.Run(func(g *fake.Guest) {
		fd, errno := g.Call(unix.SYS_OPEN, g.CString("/tmp/f"), unix.O_RDWR|unix.O_CREAT, 0o644)
		if errno != 0 {
			t.Errorf("open: %v", errno)
			return
		}
		buf := g.Alloc(8192)
		g.Write(buf, []byte("written by write(2)"))
		g.Call(unix.SYS_PWRITE64, fd, buf, 19, 0)
		g.Call(unix.SYS_FTRUNCATE, fd, 8192)
		shared, errno := g.Call(unix.SYS_MMAP, 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED, fd, 0)
		if errno != 0 {
			t.Errorf("mmap shared: %v", errno)
			return
		}
		private, _ := g.Call(unix.SYS_MMAP, 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE, fd, 0)
		got := make([]byte, 19)
		if g.Read(shared, got); string(got) != "written by write(2)" {
			t.Errorf("shared mapping reads %q", got)
		}
		g.Write(shared+4096, []byte("through the mapping"))
		n, _ := g.Call(unix.SYS_PREAD64, fd, buf, 19, 4096)
		if g.Read(buf, got[:n]); string(got[:n]) != "through the mapping" {
			t.Errorf("pread after a write through the mapping: %q", got[:n])
		}
		if g.Read(private+4096, got); string(got) != "through the mapping" {
			t.Errorf("an unwritten private page reads %q, want the file's", got)
		}
		g.Write(private, []byte("private"))
		child, _ := g.Fork(func(g *fake.Guest) {
			g.Write(shared, []byte("CHILD"))
			g.Write(buf, []byte("later"))
			g.Call(unix.SYS_PWRITE64, fd, buf, 5, 8000)
		})
		g.Wait(child, 0)
		n, _ = g.Call(unix.SYS_PREAD64, fd, buf, 5, 0)
		if g.Read(buf, got[:n]); string(got[:n]) != "CHILD" {
			t.Errorf("the child's write through its shared mapping: file reads %q", got[:n])
		}
		if g.Read(shared+8000, got[:5]); string(got[:5]) != "later" {
			t.Errorf("the child's pwrite: shared mapping reads %q", got[:5])
		}
		if g.Read(private, got[:7]); string(got[:7]) != "private" {
			t.Errorf("a written private page reads %q", got[:7])
		}
		n, _ = g.Call(unix.SYS_PREAD64, fd, buf, 7, 0)
		if g.Read(buf, got[:n]); string(got[:n]) == "private" {
			t.Error("a private mapping's write reached the file")
		}
	})
	if st.Code != 0 {
		t.Errorf("status %+v; log:\n%s", st, s.Log())
	}
}
