package procfs_test

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
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

// A process's environ and auxv open only for a task that may read its
// memory (Linux's mm_access, PTRACE_MODE_READ_FSCREDS): a task in a
// Landlock domain cannot open them of its less restricted parent (the
// kernel's landlock ptrace_test), while the parent opens its child's and
// the child its own; status, which shows no memory, opens for both.
func TestProcEnvironAndAuxvNeedPtraceReadAccess(t *testing.T) {
	s := sandbox(t)
	noCaps := &[4]uint64{}
	runIn(t, s, kerneltest.Init{UID: 1000, GID: 1000, Caps: noCaps}, func(g *fake.Guest) {
		open := func(g *fake.Guest, path string) unix.Errno {
			at := unix.AT_FDCWD
			fd, errno := g.Call(unix.SYS_OPENAT, uintptr(at), g.CString(path), unix.O_RDONLY)
			if errno == 0 {
				g.Call(unix.SYS_CLOSE, fd)
			}
			return errno
		}
		fds := g.Alloc(16)
		g.Call(unix.SYS_PIPE2, fds, 0)
		g.Call(unix.SYS_PIPE2, fds+8, 0)
		// ready: child to parent; done: parent to child.
		readyR, readyW := uintptr(g.ReadU32(fds)), uintptr(g.ReadU32(fds+4))
		doneR, doneW := uintptr(g.ReadU32(fds+8)), uintptr(g.ReadU32(fds+12))
		b := g.Alloc(1)
		child, _ := g.Fork(func(g *fake.Guest) {
			attr := g.Alloc(8)
			g.WriteU64(attr, unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK)
			rs, errno := g.Call(unix.SYS_LANDLOCK_CREATE_RULESET, attr, 8, 0)
			if errno != 0 {
				t.Errorf("landlock_create_ruleset: %v", errno)
				return
			}
			g.Call(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
			if _, errno := g.Call(unix.SYS_LANDLOCK_RESTRICT_SELF, rs, 0); errno != 0 {
				t.Errorf("landlock_restrict_self: %v", errno)
			}
			for _, name := range []string{"/proc/1/environ", "/proc/1/auxv"} {
				if errno := open(g, name); errno != unix.EACCES {
					t.Errorf("a Landlock domain's open of its parent's %s: %v, want EACCES", name, errno)
				}
			}
			if errno := open(g, "/proc/1/status"); errno != 0 {
				t.Errorf("open of the parent's status: %v", errno)
			}
			if errno := open(g, "/proc/self/environ"); errno != 0 {
				t.Errorf("open of its own environ: %v", errno)
			}
			g.Call(unix.SYS_WRITE, readyW, b, 1)
			g.Call(unix.SYS_READ, doneR, b, 1)
		})
		g.Call(unix.SYS_READ, readyR, b, 1)
		for _, name := range []string{"environ", "auxv"} {
			if errno := open(g, fmt.Sprintf("/proc/%d/%s", child, name)); errno != 0 {
				t.Errorf("the parent's open of its child's %s: %v", name, errno)
			}
		}
		g.Call(unix.SYS_WRITE, doneW, b, 1)
		g.Wait(child, 0)
	})
}

// /proc/sys/kernel/yama/ptrace_scope says the scope the sandbox's ptrace
// checks enforce, so that programs (the kernel's landlock ptrace_test)
// expect what they get.
func TestYamaPtraceScopeIsTheEnforcedOne(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		if got, want := readProc(t, g, "/proc/sys/kernel/yama/ptrace_scope"), fmt.Sprintf("%d\n", kernel.PtraceScope); got != want {
			t.Errorf("ptrace_scope = %q, want %q", got, want)
		}
	})
}
