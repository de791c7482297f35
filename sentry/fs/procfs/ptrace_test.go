package procfs_test

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// memOpen opens /proc/<pid>/mem with flags.
func memOpen(g *fake.Guest, pid int, flags int) (uintptr, unix.Errno) {
	at := unix.AT_FDCWD
	return g.Call(unix.SYS_OPENAT, uintptr(at), g.CString(fmt.Sprintf("/proc/%d/mem", pid)), uintptr(flags))
}

func TestProcMemReadsAndWritesMemoryWhateverItsProtection(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		ro, errno := g.Call(unix.SYS_MMAP, 0, 8192, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS, ^uintptr(0), 0)
		if errno != 0 {
			t.Fatalf("mmap: %v", errno)
		}
		fd, errno := memOpen(g, 1, unix.O_RDWR)
		if errno != 0 {
			t.Fatalf("open /proc/1/mem: %v", errno)
		}
		buf := g.CString("poked")
		out := g.Alloc(16)
		g.Call(unix.SYS_MUNMAP, ro+4096, 4096) // the second page: nothing, and nothing will be put there
		if n, errno := g.Call(unix.SYS_PWRITE64, fd, buf, 5, ro+10); n != 5 || errno != 0 {
			t.Errorf("pwrite into a read-only private page = %d, %v; want 5", n, errno)
		}
		if n, errno := g.Call(unix.SYS_PREAD64, fd, out, 5, ro+10); n != 5 || errno != 0 {
			t.Errorf("pread = %d, %v", n, errno)
		}
		got := make([]byte, 5)
		g.Read(ro+10, got)
		if string(got) != "poked" {
			t.Errorf("the page reads %q after the write through mem", got)
		}
		// A read that runs into no mapping stops there; one that starts
		// there is EIO.
		if n, errno := g.Call(unix.SYS_PREAD64, fd, out, 16, ro+4096-6); n != 6 || errno != 0 {
			t.Errorf("pread across the end of the mapping = %d, %v; want 6", n, errno)
		}
		if _, errno := g.Call(unix.SYS_PREAD64, fd, out, 8, ro+4096); errno != unix.EIO {
			t.Errorf("pread of no mapping: %v, want EIO", errno)
		}
		g.Call(unix.SYS_CLOSE, fd)
	})
}

func TestProcMemOfAnotherProcessNeedsPtraceAccess(t *testing.T) {
	s := sandbox(t)
	noCaps := &[4]uint64{}
	runIn(t, s, kerneltest.Init{UID: 1000, GID: 1000, Caps: noCaps}, func(g *fake.Guest) {
		fds := g.Alloc(8)
		g.Call(unix.SYS_PIPE2, fds, 0)
		r, w := uintptr(g.ReadU32(fds)), uintptr(g.ReadU32(fds+4))
		b := g.Alloc(1)
		// A child is the parent's to open (YAMA lets an ancestor attach).
		child, _ := g.Fork(func(g *fake.Guest) { g.Call(unix.SYS_READ, r, b, 1) })
		if fd, errno := memOpen(g, child, unix.O_RDONLY); errno != 0 {
			t.Errorf("open of a child's mem: %v", errno)
		} else {
			g.Call(unix.SYS_CLOSE, fd)
		}
		// The child may not open its parent's (not a descendant of it).
		g.Call(unix.SYS_WRITE, w, b, 1)
		g.Wait(child, 0)
		other, _ := g.Fork(func(g *fake.Guest) {
			if _, errno := memOpen(g, 1, unix.O_RDONLY); errno != unix.EACCES {
				t.Errorf("open of the parent's mem: %v, want EACCES", errno)
			}
		})
		g.Wait(other, 0)
	})
}

func TestStatusShowsTheTracerAndATracingStop(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		child, _ := g.Fork(func(g *fake.Guest) {
			g.Call(unix.SYS_PTRACE, unix.PTRACE_TRACEME, 0, 0, 0)
			pid, _ := g.Call(unix.SYS_GETPID)
			g.Call(unix.SYS_KILL, pid, uintptr(unix.SIGSTOP))
		})
		g.Wait(child, 0)
		status := readProc(t, g, fmt.Sprintf("/proc/%d/status", child))
		for _, want := range []string{"State:\tt (tracing stop)\n", "TracerPid:\t1\n"} {
			if !strings.Contains(status, want) {
				t.Errorf("a tracee's status lacks %q:\n%s", want, status)
			}
		}
		g.Call(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(child), 0, uintptr(unix.SIGSTOP))
		// Untraced now, the child takes the stop with its process.
		for i := 0; i < 1000 && !strings.Contains(readProc(t, g, fmt.Sprintf("/proc/%d/status", child)), "State:\tT (stopped)"); i++ {
			g.Call(unix.SYS_SCHED_YIELD)
		}
		if status := readProc(t, g, fmt.Sprintf("/proc/%d/status", child)); !strings.Contains(status, "State:\tT (stopped)\n") ||
			!strings.Contains(status, "TracerPid:\t0\n") {
			t.Errorf("a stopped untraced process's status:\n%s", status)
		}
		g.Call(unix.SYS_KILL, uintptr(child), uintptr(unix.SIGKILL))
		g.Wait(child, 0)
	})
}
