package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// The scheduling calls' rules: what a thread inherits, who may change
// whose settings, and the shapes of their arguments.

// niceOf is the nice value getpriority gives for (which, who).
func niceOf(g *fake.Guest, which, who int) (int, unix.Errno) {
	r, errno := g.Call(unix.SYS_GETPRIORITY, uintptr(which), uintptr(who))
	return 20 - int(r), errno
}

func setNice(g *fake.Guest, which, who, nice int) unix.Errno {
	_, errno := g.Call(unix.SYS_SETPRIORITY, uintptr(which), uintptr(who), uintptr(nice))
	return errno
}

// runUnprivileged runs prog as init with uid 1000 and no capabilities.
func runUnprivileged(t *testing.T, prog fake.Program) {
	t.Helper()
	s := kerneltest.New(t, NewTable())
	s.Start(prog, kerneltest.Init{UID: 1000, GID: 1000})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

func TestANewThreadStartsWithItsCreatorsNiceValueAndChangesOnlyItsOwn(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		setNice(g, unix.PRIO_PROCESS, 0, 7)
		var inThread int
		_, tidAddr, _ := g.Thread(func(g *fake.Guest) {
			inThread, _ = niceOf(g, unix.PRIO_PROCESS, 0)
			setNice(g, unix.PRIO_PROCESS, 0, 15)
		})
		g.Join(tidAddr)
		if inThread != 7 {
			t.Errorf("a new thread's nice value = %d, want its creator's 7", inThread)
		}
		if n, _ := niceOf(g, unix.PRIO_PROCESS, 0); n != 7 {
			t.Errorf("the creator's nice value after the thread set its own = %d, want 7", n)
		}
	})
}

func TestWithoutCapSysNiceTheNiceValueOnlyRises(t *testing.T) {
	runUnprivileged(t, func(g *fake.Guest) {
		if errno := setNice(g, unix.PRIO_PROCESS, 0, 5); errno != 0 {
			t.Errorf("raising the nice value to 5: %v", errno)
		}
		if errno := setNice(g, unix.PRIO_PROCESS, 0, 4); errno != unix.EACCES {
			t.Errorf("lowering it to 4 without CAP_SYS_NICE: %v, want EACCES", errno)
		}
		if n, _ := niceOf(g, unix.PRIO_PROCESS, 0); n != 5 {
			t.Errorf("nice value after the refusal = %d, want 5", n)
		}
	})
}

func TestRLimitNiceAllowsNiceValuesDownToTwentyLessItsValue(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	s.Start(func(g *fake.Guest) {
		setNice(g, unix.PRIO_PROCESS, 0, 10)
		if errno := setNice(g, unix.PRIO_PROCESS, 0, -5); errno != 0 {
			t.Errorf("nice -5 with RLIMIT_NICE 25: %v", errno)
		}
		if errno := setNice(g, unix.PRIO_PROCESS, 0, -6); errno != unix.EACCES {
			t.Errorf("nice -6 with RLIMIT_NICE 25: %v, want EACCES", errno)
		}
	}, kerneltest.Init{UID: 1000, GID: 1000, Limits: map[int]kernel.Limit{unix.RLIMIT_NICE: {Cur: 25, Max: 25}}})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

func TestAnotherUsersThreadCannotBeRenicedWithoutCapSysNice(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		parent, _ := g.Call(unix.SYS_GETPID)
		pid, _ := g.Fork(func(g *fake.Guest) {
			// Without capabilities, as uid 1000: root's process is not its own.
			g.Call(unix.SYS_SETRESUID, 1000, 1000, 1000)
			e1 := setNice(g, unix.PRIO_PROCESS, int(parent), 19)
			_, e2 := g.Call(unix.SYS_SCHED_SETSCHEDULER, parent, unix.SCHED_BATCH, g.Alloc(8))
			mask := g.Alloc(8)
			g.WriteU64(mask, 1)
			_, e3 := g.Call(unix.SYS_SCHED_SETAFFINITY, parent, 8, mask)
			_, e4 := g.Call(unix.SYS_IOPRIO_SET, 1, parent, 2<<13)
			if e1 != unix.EPERM || e2 != unix.EPERM || e3 != unix.EPERM || e4 != unix.EPERM {
				t.Errorf("changes to another user's process: setpriority %v, sched_setscheduler %v, sched_setaffinity %v, ioprio_set %v; want EPERM for each",
					e1, e2, e3, e4)
			}
		})
		g.Wait(pid, 0)
		if n, _ := niceOf(g, unix.PRIO_PROCESS, 0); n != 0 {
			t.Errorf("nice value after the refused change = %d, want 0", n)
		}
	})
}

func TestSetpriorityOfAProcessGroupReachesEveryThreadInIt(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		r, w := guestPipe(t, g, 0)
		var seen [2]int
		pid, _ := g.Fork(func(g *fake.Guest) {
			g.Call(unix.SYS_SETPGID, 0, 0)
			_, tidAddr, _ := g.Thread(func(g *fake.Guest) {
				g.Call(unix.SYS_READ, r, g.Alloc(1), 1)
				seen[1], _ = niceOf(g, unix.PRIO_PROCESS, 0)
			})
			g.Call(unix.SYS_READ, r, g.Alloc(1), 1)
			seen[0], _ = niceOf(g, unix.PRIO_PROCESS, 0)
			g.Join(tidAddr)
		})
		for {
			if pgid, _ := g.Call(unix.SYS_GETPGID, uintptr(pid)); int(pgid) == pid {
				break
			}
			g.Call(unix.SYS_SCHED_YIELD)
		}
		if errno := setNice(g, unix.PRIO_PGRP, pid, 8); errno != 0 {
			t.Errorf("setpriority(PRIO_PGRP): %v", errno)
		}
		g.Call(unix.SYS_WRITE, w, g.CString("xx"), 2)
		g.Wait(pid, 0)
		if seen != [2]int{8, 8} {
			t.Errorf("nice values of the group's two threads = %v, want 8 for both", seen)
		}
	})
}

func TestResetOnForkGivesTheChildTheNormalPolicy(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		param := g.Alloc(8)
		g.WriteU32(param, 10)
		if _, errno := g.Call(unix.SYS_SCHED_SETSCHEDULER, 0, unix.SCHED_FIFO|unix.SCHED_RESET_ON_FORK, param); errno != 0 {
			t.Errorf("sched_setscheduler(SCHED_FIFO|SCHED_RESET_ON_FORK) as root: %v", errno)
		}
		setNice(g, unix.PRIO_PROCESS, 0, -5)
		var policy, prio uintptr
		var nice int
		pid, _ := g.Fork(func(g *fake.Guest) {
			policy, _ = g.Call(unix.SYS_SCHED_GETSCHEDULER, 0)
			p := g.Alloc(8)
			g.Call(unix.SYS_SCHED_GETPARAM, 0, p)
			prio = uintptr(g.ReadU32(p))
			nice, _ = niceOf(g, unix.PRIO_PROCESS, 0)
		})
		g.Wait(pid, 0)
		if policy != unix.SCHED_NORMAL || prio != 0 || nice != 0 {
			t.Errorf("child of a SCHED_FIFO parent with SCHED_RESET_ON_FORK: policy %#x, priority %d, nice %d; want SCHED_NORMAL, 0, 0",
				policy, prio, nice)
		}
		if p, _ := g.Call(unix.SYS_SCHED_GETSCHEDULER, 0); p != unix.SCHED_FIFO|unix.SCHED_RESET_ON_FORK {
			t.Errorf("the parent's policy = %#x, want SCHED_FIFO|SCHED_RESET_ON_FORK", p)
		}
	})
}

func TestRealTimePoliciesNeedCapSysNiceOrRLimitRTPrio(t *testing.T) {
	runUnprivileged(t, func(g *fake.Guest) {
		param := g.Alloc(8)
		g.WriteU32(param, 1)
		if _, errno := g.Call(unix.SYS_SCHED_SETSCHEDULER, 0, unix.SCHED_RR, param); errno != unix.EPERM {
			t.Errorf("SCHED_RR without CAP_SYS_NICE or RLIMIT_RTPRIO: %v, want EPERM", errno)
		}
	})
	s := kerneltest.New(t, NewTable())
	s.Start(func(g *fake.Guest) {
		param := g.Alloc(8)
		g.WriteU32(param, 5)
		if _, errno := g.Call(unix.SYS_SCHED_SETSCHEDULER, 0, unix.SCHED_RR, param); errno != 0 {
			t.Errorf("SCHED_RR priority 5 with RLIMIT_RTPRIO 5: %v", errno)
		}
		g.WriteU32(param, 6)
		if _, errno := g.Call(unix.SYS_SCHED_SETPARAM, 0, param); errno != unix.EPERM {
			t.Errorf("priority 6 with RLIMIT_RTPRIO 5: %v, want EPERM", errno)
		}
	}, kerneltest.Init{UID: 1000, GID: 1000, Limits: map[int]kernel.Limit{unix.RLIMIT_RTPRIO: {Cur: 5, Max: 5}}})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

func TestSchedSetattrTooSmallOrWithBytesPastTheKernelsGivesE2BIGAndItsSize(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		attr := g.Alloc(128)
		g.WriteU32(attr, 40)
		if _, errno := g.Call(unix.SYS_SCHED_SETATTR, 0, attr, 0); errno != unix.E2BIG {
			t.Errorf("sched_setattr of size 40: %v, want E2BIG", errno)
		}
		if size := g.ReadU32(attr); size != unix.SizeofSchedAttr {
			t.Errorf("size written back = %d, want %d", size, unix.SizeofSchedAttr)
		}
		g.WriteU32(attr, 100)
		g.Write(attr+90, []byte{1})
		if _, errno := g.Call(unix.SYS_SCHED_SETATTR, 0, attr, 0); errno != unix.E2BIG {
			t.Errorf("sched_setattr of size 100 with a byte set at 90: %v, want E2BIG", errno)
		}
		g.Write(attr+90, []byte{0})
		g.WriteU32(attr, 100)
		if _, errno := g.Call(unix.SYS_SCHED_SETATTR, 0, attr, 0); errno != 0 {
			t.Errorf("sched_setattr of size 100, zeros past the kernel's 56 bytes: %v", errno)
		}
		// Utilization clamps, as Linux built without CONFIG_UCLAMP_TASK.
		g.WriteU32(attr, unix.SizeofSchedAttr)
		g.WriteU64(attr+8, unix.SCHED_FLAG_UTIL_CLAMP_MIN)
		if _, errno := g.Call(unix.SYS_SCHED_SETATTR, 0, attr, 0); errno != unix.EOPNOTSUPP {
			t.Errorf("sched_setattr with SCHED_FLAG_UTIL_CLAMP_MIN: %v, want EOPNOTSUPP", errno)
		}
	})
}

func TestAffinityIsCutToTheSandboxsCPUsAndInherited(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		mask := g.Alloc(128)
		for i := uintptr(0); i < 128; i += 8 {
			g.WriteU64(mask+i, ^uint64(0))
		}
		g.WriteU64(mask, 1) // CPU 0, and CPUs 64 to 1023 that no sandbox here has
		if _, errno := g.Call(unix.SYS_SCHED_SETAFFINITY, 0, 128, mask); errno != 0 {
			t.Errorf("sched_setaffinity: %v", errno)
		}
		var got uint64
		pid, _ := g.Fork(func(g *fake.Guest) {
			out := g.Alloc(8)
			g.Call(unix.SYS_SCHED_GETAFFINITY, 0, 8, out)
			got = g.ReadU64(out)
		})
		g.Wait(pid, 0)
		if got != 1 {
			t.Errorf("the child's affinity = %#x, want CPU 0 alone", got)
		}
		g.WriteU64(mask, 0)
		if _, errno := g.Call(unix.SYS_SCHED_SETAFFINITY, 0, 128, mask); errno != unix.EINVAL {
			t.Errorf("a mask of CPUs the sandbox lacks: %v, want EINVAL", errno)
		}
	})
}

func TestIoprioOfAProcessGroupIsTheBestOfItsThreadsEffectivePriorities(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		g.Call(unix.SYS_SETPGID, 0, 0)
		// A thread with none set has its nice value's: best effort, level
		// (nice+20)/5. Lower values are better.
		setNice(g, unix.PRIO_PROCESS, 0, 10)
		if v, _ := g.Call(unix.SYS_IOPRIO_GET, 2, 0); v != 2<<13|6 {
			t.Errorf("ioprio of a group whose thread set none, at nice 10 = %#x, want best effort 6", v)
		}
		tid, tidAddr, _ := g.Thread(func(g *fake.Guest) {
			g.Call(unix.SYS_IOPRIO_SET, 1, 0, 2<<13|1)
		})
		g.Join(tidAddr)
		// CLONE_CHILD_CLEARTID wakes the joiner before the thread is gone
		// (on Linux too: its I/O context outlives the clearing a little),
		// so wait until it is (tgkill finds no such thread).
		pid, _ := g.Call(unix.SYS_GETPID)
		for i := 0; i < 10_000; i++ {
			if _, errno := g.Call(unix.SYS_TGKILL, pid, uintptr(tid), 0); errno == unix.ESRCH {
				break
			}
			g.Call(unix.SYS_SCHED_YIELD)
		}
		// The thread is gone; set one that stays.
		g.Call(unix.SYS_IOPRIO_SET, 1, 0, 3<<13)
		if v, _ := g.Call(unix.SYS_IOPRIO_GET, 1, 0); v != 3<<13 {
			t.Errorf("ioprio_get of the thread = %#x, want idle", v)
		}
		if v, _ := g.Call(unix.SYS_IOPRIO_GET, 2, 0); v != 3<<13 {
			t.Errorf("ioprio_get of the group = %#x, want the one thread's idle", v)
		}
	})
}
