package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

func newLimits(r int, v Limit) *Limits {
	l := &Limits{}
	l.setAll(DefaultLimits())
	l.l[r] = v
	return l
}

func TestSetrlimitRefusesASoftLimitAboveTheHardOne(t *testing.T) {
	l := newLimits(unix.RLIMIT_STACK, Limit{8 << 20, 16 << 20})
	if _, err := l.Set(unix.RLIMIT_STACK, Limit{2 << 20, 1 << 20}, true); err != unix.EINVAL {
		t.Errorf("soft above hard = %v, want EINVAL (even privileged)", err)
	}
	if got := l.Get(unix.RLIMIT_STACK); got != (Limit{8 << 20, 16 << 20}) {
		t.Errorf("a refused setrlimit changed the limit to %+v", got)
	}
}

func TestAnUnprivilegedProcessMayLowerButNotRaiseItsHardLimit(t *testing.T) {
	l := newLimits(unix.RLIMIT_NPROC, Limit{100, 200})
	old, err := l.Set(unix.RLIMIT_NPROC, Limit{50, 150}, false)
	if err != nil {
		t.Fatalf("lowering both limits: %v", err)
	}
	if old != (Limit{100, 200}) {
		t.Errorf("old limit %+v, want {100 200}", old)
	}
	if _, err := l.Set(unix.RLIMIT_NPROC, Limit{150, 150}, false); err != nil {
		t.Errorf("raising the soft limit up to the hard one: %v", err)
	}
	if _, err := l.Set(unix.RLIMIT_NPROC, Limit{150, 200}, false); err != unix.EPERM {
		t.Errorf("raising the hard limit back unprivileged = %v, want EPERM", err)
	}
	if got := l.Get(unix.RLIMIT_NPROC); got != (Limit{150, 150}) {
		t.Errorf("limit %+v after the refusal, want {150 150}", got)
	}
	if _, err := l.Set(unix.RLIMIT_NPROC, Limit{Infinity, Infinity}, true); err != nil {
		t.Errorf("raising the hard limit with CAP_SYS_RESOURCE: %v", err)
	}
}

func TestTheNOFILEHardLimitStopsAtNrOpenEvenForThePrivileged(t *testing.T) {
	l := newLimits(unix.RLIMIT_NOFILE, Limit{1024, 4096})
	if _, err := l.Set(unix.RLIMIT_NOFILE, Limit{1024, 1 << 20}, true); err != nil {
		t.Errorf("hard NOFILE at fs.nr_open: %v", err)
	}
	if _, err := l.Set(unix.RLIMIT_NOFILE, Limit{1024, 1<<20 + 1}, true); err != unix.EPERM {
		t.Errorf("hard NOFILE above fs.nr_open = %v, want EPERM", err)
	}
	if _, err := l.Set(unix.RLIMIT_NOFILE, Limit{Infinity, Infinity}, true); err != unix.EPERM {
		t.Errorf("unlimited NOFILE = %v, want EPERM", err)
	}
	if _, err := l.Set(unix.RLIMIT_STACK, Limit{Infinity, Infinity}, true); err != nil {
		t.Errorf("other limits have no such cap: %v", err)
	}
}

// nprocKernel is a kernel with only the RLIMIT_NPROC bookkeeping.
func nprocKernel() *Kernel { return &Kernel{nproc: make(map[uint32]int)} }

func taskOf(c *Credentials) *Task { return &Task{creds: c} }

// addTasks adds n tasks of uid as Clone does, and reports how many the
// limit let in.
func addTasks(k *Kernel, c *Credentials, n int, limit uint64) (added int) {
	for i := 0; i < n; i++ {
		t := taskOf(c.Fork())
		if !k.mayAddTaskLocked(t, limit) {
			return added
		}
		k.countTaskLocked(t, 1)
		added++
	}
	return added
}

func TestNPROCCountsTheTasksOfTheRealUser(t *testing.T) {
	k := nprocKernel()
	if got := addTasks(k, NewCredentials(1000, 1000, nil), 5, 3); got != 3 {
		t.Errorf("%d tasks of uid 1000 under RLIMIT_NPROC 3, want 3", got)
	}
	other := NewCredentials(2000, 2000, nil)
	if got := addTasks(k, other, 1, 3); got != 1 {
		t.Errorf("uid 2000 was refused for uid 1000's tasks")
	}
	// The effective uid does not count: a set-uid program still runs as
	// its real user's.
	c := unprivileged(1000, 2000, 2000)
	if got := addTasks(k, c, 1, 3); got != 0 {
		t.Errorf("a task of real uid 1000, effective 2000, was let in over uid 1000's limit")
	}
}

func TestAnExitedTaskFreesItsPlaceUnderNPROC(t *testing.T) {
	k := nprocKernel()
	c := NewCredentials(1000, 1000, nil)
	first := taskOf(c.Fork())
	if !k.mayAddTaskLocked(first, 1) {
		t.Fatal("the first task was refused")
	}
	k.countTaskLocked(first, 1)
	if k.mayAddTaskLocked(taskOf(c.Fork()), 1) {
		t.Fatal("a second task was let in under a limit of 1")
	}
	k.countTaskLocked(first, -1)
	if k.mayAddTaskLocked(taskOf(c.Fork()), 1) != true {
		t.Errorf("refused after the first task left")
	}
	if _, ok := k.nproc[1000]; ok {
		t.Errorf("a user with no tasks left is still counted: %v", k.nproc)
	}
}

func TestATaskLeavesTheNPROCCountItWasAddedToAfterAUIDChange(t *testing.T) {
	k := nprocKernel()
	c := NewCredentials(1000, 1000, nil)
	task := taskOf(c)
	k.mayAddTaskLocked(task, 10)
	k.countTaskLocked(task, 1)
	c.UID = 2000
	k.countTaskLocked(task, -1)
	if len(k.nproc) != 0 {
		t.Errorf("counts %v after the task left, want none", k.nproc)
	}
}

func TestRootAndCapSysResourceAndCapSysAdminAreExemptFromNPROC(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *Credentials
	}{
		{"uid 0", NewCredentials(0, 0, nil)},
		{"uid 0 without capabilities", func() *Credentials {
			c := NewCredentials(0, 0, nil)
			c.CapEffective, c.CapPermitted = 0, 0
			return c
		}()},
		{"CAP_SYS_RESOURCE", func() *Credentials {
			c := NewCredentials(1000, 1000, nil)
			c.CapEffective = capBit(unix.CAP_SYS_RESOURCE)
			return c
		}()},
		{"CAP_SYS_ADMIN", func() *Credentials {
			c := NewCredentials(1000, 1000, nil)
			c.CapEffective = capBit(unix.CAP_SYS_ADMIN)
			return c
		}()},
	} {
		k := nprocKernel()
		if got := addTasks(k, tc.c, 3, 1); got != 3 {
			t.Errorf("%s: %d of 3 tasks under RLIMIT_NPROC 1, want all", tc.name, got)
		}
	}
	c := NewCredentials(1000, 1000, nil)
	c.CapPermitted = capBit(unix.CAP_SYS_RESOURCE) // permitted, not effective
	if got := addTasks(nprocKernel(), c, 2, 1); got != 1 {
		t.Errorf("a permitted but not effective CAP_SYS_RESOURCE exempted: %d tasks", got)
	}
}
