package kernel_test

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

const mib = 1 << 20

// limitedSandbox is a sandbox with a memory file of its own (so that its
// charge is its guest's alone), /proc mounted, and limits l.
func limitedSandbox(t *testing.T, l kernel.SandboxLimits) *kerneltest.Sandbox {
	t.Helper()
	s := kerneltest.NewWithOwnMemory(t, syscalls.NewTable())
	s.Mkdir("/proc", 0o555)
	s.Mount("/proc", procfs.New(s.Kernel, s.Kernel.RootPIDNamespace()), "proc", 0)
	s.Kernel.SetSandboxLimits(l)
	return s
}

// touch maps n bytes and writes every page of them, so that each costs
// memory.
func touch(g *fake.Guest, n uintptr) {
	addr := g.Alloc(n)
	for off := uintptr(0); off < n; off += 4096 {
		g.Write(addr+off, []byte{1})
	}
}

// writeFile writes s to the file at name.
func writeFile(t *testing.T, g *fake.Guest, name, s string) {
	fd, errno := g.Call(unix.SYS_OPENAT, atFDCWDArg, g.CString(name), unix.O_WRONLY)
	if errno != 0 {
		t.Errorf("open %s: %v", name, errno)
		return
	}
	defer g.Call(unix.SYS_CLOSE, fd)
	if _, errno := g.Call(unix.SYS_WRITE, fd, g.CString(s), uintptr(len(s))); errno != 0 {
		t.Errorf("write %q to %s: %v", s, name, errno)
	}
}

// holder is a child that sets its oom_score_adj, touches n bytes, says so
// on ready and waits for a word on release before it exits with 0.
func holder(t *testing.T, adj int, n uintptr, ready, release uintptr) fake.Program {
	return func(g *fake.Guest) {
		writeFile(t, g, "/proc/self/oom_score_adj", strconv.Itoa(adj))
		touch(g, n)
		send(t, g, ready, 1)
		recv(t, g, release)
	}
}

func TestOOMKillerKillsTheProcessWithMostMemoryAndSparesOOMScoreAdjMinus1000(t *testing.T) {
	s := limitedSandbox(t, kernel.SandboxLimits{MemoryMax: 64 * mib})
	runInit(t, s, func(g *fake.Guest) {
		ready, readyW := pipe(t, g)
		release, releaseW := pipe(t, g)
		// The biggest is spared by its oom_score_adj; of the others the
		// middle one holds most, more than init will.
		spared, _ := g.Fork(holder(t, kernel.OOMScoreAdjMin, 28*mib, readyW, release))
		recv(t, g, ready)
		big, _ := g.Fork(holder(t, 0, 18*mib, readyW, release))
		recv(t, g, ready)
		small, _ := g.Fork(holder(t, 0, 4*mib, readyW, release))
		recv(t, g, ready)
		touch(g, 16*mib) // past the limit, by init

		if _, st, errno := g.Wait(big, 0); errno != 0 || !st.Signaled() || st.Signal() != unix.SIGKILL {
			t.Errorf("the process with most memory ended with %v (%v); want SIGKILL", st, errno)
		}
		for range 2 {
			send(t, g, releaseW, 1)
		}
		for _, pid := range []int{spared, small} {
			if _, st, errno := g.Wait(pid, 0); errno != 0 || !st.Exited() || st.ExitStatus() != 0 {
				t.Errorf("process %d ended with %v (%v); want exit 0: the OOM killer took it too", pid, st, errno)
			}
		}
	})
	if e := s.Kernel.MemoryEvents(); e.OOMKill != 1 {
		t.Errorf("memory.events oom_kill = %d, want 1", e.OOMKill)
	}
}

func TestInitKilledByTheOOMKillerEndsTheSandboxWithSIGKILL(t *testing.T) {
	s := limitedSandbox(t, kernel.SandboxLimits{MemoryMax: 32 * mib})
	s.Start(func(g *fake.Guest) {
		for range 64 {
			touch(g, 4*mib) // 256 MiB in all, unless killed first
		}
		t.Errorf("init allocated 256 MiB under a 32 MiB limit")
	}, kerneltest.Init{})
	if st := s.Wait(); st.Signo != int(unix.SIGKILL) {
		t.Errorf("init ended with %+v, want SIGKILL; log:\n%s", st, s.Log())
	}
	if !s.Kernel.InitOOMKilled() {
		t.Errorf("the kernel does not report init as killed by the OOM killer")
	}
}

func TestAProcessSparedByOOMScoreAdjIsNeverKilled(t *testing.T) {
	s := limitedSandbox(t, kernel.SandboxLimits{MemoryMax: 16 * mib})
	runInit(t, s, func(g *fake.Guest) {
		writeFile(t, g, "/proc/self/oom_score_adj", "-1000")
		touch(g, 24*mib) // over the limit with nothing the OOM killer may take
		// Once the watcher has found the sandbox over its limit (and no
		// victim), the process is still here to tell.
		eventually(t, g, "the memory watcher finds the sandbox over its limit", func() bool {
			return s.Kernel.MemoryEvents().OOM != 0
		})
	})
	if e := s.Kernel.MemoryEvents(); e.OOMKill != 0 {
		t.Errorf("memory.events oom_kill = %d, want 0", e.OOMKill)
	}
}

func TestPidsMaxRefusesForkAndThreadsWithEAGAINCountingZombies(t *testing.T) {
	s := newSandbox(t)
	s.Kernel.SetSandboxLimits(kernel.SandboxLimits{PidsMax: 3})
	runInit(t, s, func(g *fake.Guest) {
		release, releaseW := pipe(t, g)
		child, errno := g.Fork(func(g *fake.Guest) { recv(t, g, release) })
		if errno != 0 {
			t.Errorf("fork of the second task: %v", errno)
			return
		}
		_, tidAddr, errno := g.Thread(func(g *fake.Guest) { recv(t, g, release) })
		if errno != 0 {
			t.Errorf("thread as the third task: %v", errno)
			return
		}
		if got := s.Kernel.PidsCurrent(); got != 3 {
			t.Errorf("pids.current = %d, want 3", got)
		}
		// Root with every capability is held to pids.max all the same.
		spaces := len(s.Platform.AddressSpaces())
		r, errno := g.Fork(noChild(t))
		expectErrno(t, "fork past pids.max", uintptr(r), errno, unix.EAGAIN)
		r2, _, errno := g.Thread(noChild(t))
		expectErrno(t, "a thread past pids.max", uintptr(r2), errno, unix.EAGAIN)
		// Refused before anything is made: on the host an address space
		// is a stub process, which a fork bomb would make and kill in a
		// loop, past the host cgroup's backstop.
		if n := len(s.Platform.AddressSpaces()); n != spaces {
			t.Errorf("refused forks made %d address spaces", n-spaces)
		}
		send(t, g, releaseW, 1)
		send(t, g, releaseW, 1)
		g.Join(tidAddr)
		// The child's zombie counts until it is reaped.
		info := g.Alloc(128)
		if _, errno := g.Call(unix.SYS_WAITID, unix.P_PID, uintptr(child), info, unix.WEXITED|unix.WNOWAIT, 0); errno != 0 {
			t.Errorf("waitid for the child: %v", errno)
		}
		// The thread's tid word is cleared as it starts to exit, before
		// it leaves the count.
		eventually(t, g, "pids.current is 2: init and the zombie", func() bool { return s.Kernel.PidsCurrent() == 2 })
		g.Wait(child, 0)
		if pid, errno := g.Fork(func(*fake.Guest) {}); errno != 0 {
			t.Errorf("fork under pids.max again: %v", errno)
		} else {
			g.Wait(pid, 0)
		}
	})
}

func TestSysinfoAndMeminfoShowTheMemoryLimitAndWhatTheChargeLeaves(t *testing.T) {
	s := limitedSandbox(t, kernel.SandboxLimits{MemoryMax: 256 * mib})
	runInit(t, s, func(g *fake.Guest) {
		sysinfo := func() (total, free uint64) {
			buf := g.Alloc(112)
			if _, errno := g.Call(unix.SYS_SYSINFO, buf); errno != 0 {
				t.Errorf("sysinfo: %v", errno)
			}
			unit := uint64(g.ReadU32(buf + 104))
			return g.ReadU64(buf+32) * unit, g.ReadU64(buf+40) * unit
		}
		before := s.Kernel.MemoryCurrent()
		touch(g, 32*mib)
		total, free := sysinfo()
		if total != 256*mib {
			t.Errorf("sysinfo totalram = %d bytes, want the limit, %d", total, 256*mib)
		}
		if free > 256*mib-32*mib-before {
			t.Errorf("sysinfo freeram = %d bytes with 32 MiB touched under 256 MiB (%d charged before)", free, before)
		}
		if now := s.Kernel.MemoryCurrent(); free+4*mib < 256*mib-now {
			t.Errorf("sysinfo freeram = %d bytes, %d charged: not what the charge leaves", free, now)
		}
		meminfo := readGuestFile(t, g, "/proc/meminfo")
		if want := "MemTotal:         262144 kB\n"; len(meminfo) < len(want) || meminfo[:len(want)] != want {
			t.Errorf("/proc/meminfo starts %q, want %q", meminfo[:min(len(meminfo), len(want))], want)
		}
		// moat update: a new limit is what the guest sees next.
		s.Kernel.SetSandboxLimits(kernel.SandboxLimits{MemoryMax: 512 * mib})
		if total, _ := sysinfo(); total != 512*mib {
			t.Errorf("sysinfo totalram after the update = %d bytes, want %d", total, 512*mib)
		}
	})
}

// readGuestFile reads up to 4 KiB of the file at name.
func readGuestFile(t *testing.T, g *fake.Guest, name string) string {
	fd, errno := g.Call(unix.SYS_OPENAT, atFDCWDArg, g.CString(name), unix.O_RDONLY)
	if errno != 0 {
		t.Errorf("open %s: %v", name, errno)
		return ""
	}
	defer g.Call(unix.SYS_CLOSE, fd)
	buf := g.Alloc(4096)
	n, errno := g.Call(unix.SYS_READ, fd, buf, 4096)
	if errno != 0 {
		t.Errorf("read %s: %v", name, errno)
		return ""
	}
	b := make([]byte, n)
	g.Read(buf, b)
	return string(b)
}

func TestSchedGetaffinityHoldsTheCPUsOfTheCpuset(t *testing.T) {
	s := newSandbox(t)
	s.Kernel.SetSandboxLimits(kernel.SandboxLimits{CPUs: "1", CPUCount: 1})
	runInit(t, s, func(g *fake.Guest) {
		mask := g.Alloc(128)
		n, errno := g.Call(unix.SYS_SCHED_GETAFFINITY, 0, 128, mask)
		if errno != 0 {
			t.Errorf("sched_getaffinity: %v", errno)
			return
		}
		if n != 8 || g.ReadU64(mask) != 1 {
			t.Errorf("sched_getaffinity = %d bytes, mask %#x; want 8 bytes, CPU 0 alone", n, g.ReadU64(mask))
		}
	})
}

// eventually runs guest code until cond holds, for at most half the
// sandbox's timeout, and fails the test if it never does.
func eventually(t *testing.T, g *fake.Guest, what string, cond func() bool) {
	deadline := time.Now().Add(kerneltest.Timeout / 2)
	for !cond() {
		if time.Now().After(deadline) {
			t.Errorf("after %v: not so: %s", kerneltest.Timeout/2, what)
			return
		}
		g.Compute(time.Millisecond)
	}
}

func TestStartProcessAtPidsMaxIsRefusedWithEAGAIN(t *testing.T) {
	s := newSandbox(t)
	s.Kernel.SetSandboxLimits(kernel.SandboxLimits{PidsMax: 1})
	s.AddProgram("/bin/true", func(g *fake.Guest) {})
	release := startInitHeld(t, s)
	if _, err := s.Kernel.StartProcess(execSpec("/bin/true")); !errors.Is(err, unix.EAGAIN) {
		t.Errorf("StartProcess with init alone under pids.max 1 = %v, want EAGAIN", err)
	}
	s.Kernel.SetSandboxLimits(kernel.SandboxLimits{PidsMax: 2})
	if p, err := s.Kernel.StartProcess(execSpec("/bin/true")); err != nil {
		t.Errorf("StartProcess under pids.max 2: %v", err)
	} else {
		waitProcess(t, p)
	}
	close(release)
	s.Wait()
}
