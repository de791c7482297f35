package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// TestNothingOnANoexecMountRuns: execve gives EACCES, a PROT_EXEC mapping
// EPERM, and mprotect cannot add PROT_EXEC later (EACCES), as on Linux.
func TestNothingOnANoexecMountRuns(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.Mkdir("/mnt", 0o755)
	s.Mount("/mnt", tmpfs.New(s.MemFile, tmpfs.DefaultOptions()), "tmpfs", unix.MS_NOEXEC)
	s.AddProgram("/mnt/prog", func(g *fake.Guest) { t.Error("a program on a noexec mount ran") })
	s.AddProgram("/bin/prog", func(g *fake.Guest) { g.Call(unix.SYS_EXIT_GROUP, 9) })
	st := s.Run(func(g *fake.Guest) {
		argv := g.CStrings([]string{"prog"})
		if _, errno := g.Call(unix.SYS_EXECVE, g.CString("/mnt/prog"), argv, 0); errno != unix.EACCES {
			t.Errorf("execve from a noexec mount: %v, want EACCES", errno)
		}
		fd, errno := g.Call(unix.SYS_OPEN, g.CString("/mnt/prog"), unix.O_RDONLY)
		if errno != 0 {
			t.Errorf("open: %v", errno)
			return
		}
		if _, errno := g.Call(unix.SYS_MMAP, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE, fd, 0); errno != unix.EPERM {
			t.Errorf("PROT_EXEC mapping of a noexec file: %v, want EPERM", errno)
		}
		addr, errno := g.Call(unix.SYS_MMAP, 0, 4096, unix.PROT_READ, unix.MAP_PRIVATE, fd, 0)
		if errno != 0 {
			t.Errorf("PROT_READ mapping of a noexec file: %v", errno)
			return
		}
		if _, errno := g.Call(unix.SYS_MPROTECT, addr, 4096, unix.PROT_READ|unix.PROT_EXEC); errno != unix.EACCES {
			t.Errorf("mprotect to PROT_EXEC: %v, want EACCES", errno)
		}
		g.Call(unix.SYS_EXECVE, g.CString("/bin/prog"), argv, 0) // the same program elsewhere runs
	})
	if st.Code != 9 {
		t.Errorf("exit status %+v; log:\n%s", st, s.Log())
	}
}
