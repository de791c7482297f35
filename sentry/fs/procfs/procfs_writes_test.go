package procfs_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// What a guest may write in /proc, and what it gets for the rest, as
// Linux answers (checked on Linux by the same writes as root and as a
// user).

// writeProc opens name for writing and writes data in one call.
func writeProc(g *fake.Guest, name, data string) (uintptr, unix.Errno) {
	at := unix.AT_FDCWD
	fd, errno := g.Call(unix.SYS_OPENAT, uintptr(at), g.CString(name), unix.O_WRONLY)
	if errno != 0 {
		return 0, errno
	}
	defer g.Call(unix.SYS_CLOSE, fd)
	buf := g.Alloc(uintptr(len(data)) + 1)
	g.Write(buf, []byte(data))
	return g.Call(unix.SYS_WRITE, fd, buf, uintptr(len(data)))
}

func TestCommWriteNamesTheTaskWithWhatWasWrittenCutTo15Bytes(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		for _, c := range []struct{ write, want string }{
			// The newline is kept: Linux's comm_write copies the bytes as
			// they are, up to a NUL.
			{"hello\n", "hello\n\n"},
			{"abcdefghijklmnopqrstuvwxyz", "abcdefghijklmno\n"},
			{"ab\x00cd", "ab\n"},
			{"", "\n"},
		} {
			n, errno := writeProc(g, "/proc/self/comm", c.write)
			if errno != 0 || int(n) != len(c.write) {
				t.Errorf("write %q to comm: %d, %v; want the whole count", c.write, n, errno)
			}
			if got := readProc(t, g, "/proc/self/comm"); got != c.want {
				t.Errorf("comm after writing %q = %q, want %q", c.write, got, c.want)
			}
		}
	})
}

func TestCommOfAnotherProcessIsEINVALAndAThreadsOwnIsItsAlone(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		writeProc(g, "/proc/self/comm", "parent")
		pid, _ := g.Call(unix.SYS_GETPID)
		child, _ := g.Fork(func(g *fake.Guest) {
			if _, errno := writeProc(g, fmt.Sprintf("/proc/%d/comm", pid), "child"); errno != unix.EINVAL {
				t.Errorf("a child's write to its parent's comm: %v, want EINVAL", errno)
			}
		})
		g.Wait(child, 0)
		if got := readProc(t, g, "/proc/self/comm"); got != "parent\n" {
			t.Errorf("comm after the child's write = %q", got)
		}
		fds := g.Alloc(8)
		g.Call(unix.SYS_PIPE2, fds, 0)
		release := uintptr(g.ReadU32(fds))
		tid, tidAddr, _ := g.Thread(func(g *fake.Guest) { g.Call(unix.SYS_READ, release, g.Alloc(1), 1) })
		task := fmt.Sprintf("/proc/self/task/%d/comm", tid)
		if _, errno := writeProc(g, task, "worker"); errno != 0 {
			t.Errorf("write to a thread's comm from its process: %v", errno)
		}
		if got := readProc(t, g, task); got != "worker\n" {
			t.Errorf("the thread's comm = %q, want worker", got)
		}
		if got := readProc(t, g, "/proc/self/comm"); got != "parent\n" {
			t.Errorf("the process's comm after naming a thread = %q, want parent", got)
		}
		g.Call(unix.SYS_CLOSE, uintptr(g.ReadU32(fds+4)))
		g.Join(tidAddr)
	})
}

func TestOOMScoreAdjTakesLinuxsNumbersInRange(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		for _, c := range []struct {
			write string
			errno unix.Errno
			after string
		}{
			{"500", 0, "500"}, {" 300 \n", 0, "300"}, {"0x10", 0, "16"}, {"010", 0, "8"},
			{"1001", unix.EINVAL, "8"}, {"-1001", unix.EINVAL, "8"}, {"abc", unix.EINVAL, "8"},
			// Past PROC_NUMBUF the rest is not read: what is left overflows.
			{"12345678901234", unix.ERANGE, "8"},
			{"1000", 0, "1000"},
		} {
			if _, errno := writeProc(g, "/proc/self/oom_score_adj", c.write); errno != c.errno {
				t.Errorf("write %q: %v, want %v", c.write, errno, c.errno)
			}
			if got := strings.TrimSpace(readProc(t, g, "/proc/self/oom_score_adj")); got != c.after {
				t.Errorf("oom_score_adj after %q = %s, want %s", c.write, got, c.after)
			}
		}
		if got := readProc(t, g, "/proc/self/oom_adj"); got != "15\n" {
			t.Errorf("oom_adj at oom_score_adj 1000 = %q, want 15", got)
		}
		child, _ := g.Fork(func(g *fake.Guest) {
			if got := readProc(t, g, "/proc/self/oom_score_adj"); got != "1000\n" {
				t.Errorf("a child's oom_score_adj = %q, want its parent's 1000", got)
			}
		})
		g.Wait(child, 0)
	})
}

func TestOOMScoreAdjGoesBelowItsFloorOnlyWithCapSysResource(t *testing.T) {
	s := sandbox(t)
	// Root's exec gives it its bounding set: that is where the capability
	// must be missing.
	all := uint64(1<<(unix.CAP_LAST_CAP+1)-1) &^ (1 << unix.CAP_SYS_RESOURCE)
	noResource := [4]uint64{all, all, 0, all}
	runIn(t, s, kerneltest.Init{Caps: &noResource}, func(g *fake.Guest) {
		// The floor starts at 0: raising and lowering back to it is free.
		for _, v := range []string{"300", "100", "0"} {
			if _, errno := writeProc(g, "/proc/self/oom_score_adj", v); errno != 0 {
				t.Errorf("write %s without CAP_SYS_RESOURCE: %v", v, errno)
			}
		}
		if _, errno := writeProc(g, "/proc/self/oom_score_adj", "-1"); errno != unix.EACCES {
			t.Errorf("write -1 without CAP_SYS_RESOURCE: %v, want EACCES", errno)
		}
		// The legacy file may not go below the current value.
		writeProc(g, "/proc/self/oom_score_adj", "500")
		if _, errno := writeProc(g, "/proc/self/oom_adj", "0"); errno != unix.EACCES {
			t.Errorf("oom_adj 0 below oom_score_adj 500: %v, want EACCES", errno)
		}
	})
	s = sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		if _, errno := writeProc(g, "/proc/self/oom_score_adj", "-1000"); errno != 0 {
			t.Errorf("write -1000 with CAP_SYS_RESOURCE: %v", errno)
		}
		if got := readProc(t, g, "/proc/self/oom_score"); got != "0\n" {
			t.Errorf("oom_score at -1000 = %q, want 0: the process cannot be chosen", got)
		}
		// A privileged write moved the floor; a child that drops the
		// capability may come back down to it.
		writeProc(g, "/proc/self/oom_score_adj", "-500")
		child, _ := g.Fork(func(g *fake.Guest) {
			hdr, data := g.Alloc(8), g.Alloc(24)
			g.WriteU32(hdr, unix.LINUX_CAPABILITY_VERSION_3)
			g.Call(unix.SYS_CAPSET, hdr, data) // every set empty
			writeProc(g, "/proc/self/oom_score_adj", "0")
			if _, errno := writeProc(g, "/proc/self/oom_score_adj", "-500"); errno != 0 {
				t.Errorf("back down to the floor -500 without the capability: %v", errno)
			}
			if _, errno := writeProc(g, "/proc/self/oom_score_adj", "-501"); errno != unix.EACCES {
				t.Errorf("below the floor -500 without the capability: %v, want EACCES", errno)
			}
		})
		g.Wait(child, 0)
	})
}

func TestOOMScoreIsTwoThirdsOfThousandPlusAdj(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		// Linux scales oom_score_adj by a thousandth of the pages rounded
		// down, so that 1000 shows 1332 for a small process natively.
		for _, c := range []struct {
			adj    string
			lo, hi int
		}{{"0", 666, 700}, {"500", 999, 1030}, {"1000", 1332, 1360}} {
			writeProc(g, "/proc/self/oom_score_adj", c.adj)
			v, err := strconv.Atoi(strings.TrimSpace(readProc(t, g, "/proc/self/oom_score")))
			if err != nil || v < c.lo || v > c.hi {
				t.Errorf("oom_score at oom_score_adj %s = %d, %v; want in [%d, %d]", c.adj, v, err, c.lo, c.hi)
			}
		}
	})
}

func TestFilesThatCannotBeWrittenFailAsLinuxFailsThem(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		for _, c := range []struct {
			name  string
			errno unix.Errno
		}{
			// Root opens them (CAP_DAC_OVERRIDE); the write finds no
			// method: EINVAL for a process's files, EIO for the rest.
			{"/proc/self/stat", unix.EINVAL}, {"/proc/self/cgroup", unix.EINVAL}, {"/proc/cpuinfo", unix.EIO},
			// A sysctl's own check refuses the open, even to root.
			{"/proc/sys/kernel/osrelease", unix.EACCES}, {"/proc/sys/kernel/random/boot_id", unix.EACCES},
		} {
			if _, errno := writeProc(g, c.name, "x"); errno != c.errno {
				t.Errorf("write to %s as root: %v, want %v", c.name, errno, c.errno)
			}
		}
	})
	s = sandbox(t)
	runIn(t, s, kerneltest.Init{UID: 1000, GID: 1000}, func(g *fake.Guest) {
		for _, name := range []string{"/proc/self/stat", "/proc/cpuinfo", "/proc/sys/kernel/hostname"} {
			if _, errno := writeProc(g, name, "x"); errno != unix.EACCES {
				t.Errorf("write to %s as a user: %v, want EACCES", name, errno)
			}
		}
		// A user's own process's comm and oom_score_adj are its to write.
		if _, errno := writeProc(g, "/proc/self/comm", "mine"); errno != 0 {
			t.Errorf("a user's write to its own comm: %v", errno)
		}
		if _, errno := writeProc(g, "/proc/self/oom_score_adj", "10"); errno != 0 {
			t.Errorf("a user's write to its own oom_score_adj: %v", errno)
		}
	})
}
