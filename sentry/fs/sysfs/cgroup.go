package sysfs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// NewCgroup returns the root dentry of the sandbox's cgroup tree, what a
// cgroup (or cgroup2) mount of the config shows at /sys/fs/cgroup: the
// sandbox as one cgroup v2, its own root as a container's cgroup
// namespace shows it, with the controllers whose limits the sentry
// enforces (SandboxLimits) and their figures, read when a file is opened.
// It is read-only, as runc mounts it.
func NewCgroup(k *kernel.Kernel) *vfs.Dentry {
	t := &tree{dev: vfs.NewAnonDev(), made: time.Now()}
	gen := func(name string, f func() string) entry {
		e := t.file(name, "")
		e.node.gen = f
		return e
	}
	lim := k.SandboxLimits
	root := t.dir("",
		t.file("cgroup.controllers", "cpuset cpu memory pids"),
		t.file("cgroup.subtree_control", ""),
		t.file("cgroup.type", "domain"),
		gen("cgroup.procs", func() string { return cgroupPIDs(k, false) }),
		gen("cgroup.threads", func() string { return cgroupPIDs(k, true) }),
		gen("cgroup.events", func() string { return "populated 1\nfrozen " + btoa(k.Frozen()) }),
		gen("cgroup.freeze", func() string { return btoa(k.Frozen()) }),
		t.file("cgroup.max.depth", "max"),
		t.file("cgroup.max.descendants", "max"),
		t.file("cgroup.stat", "nr_descendants 0\nnr_dying_descendants 0"),

		gen("memory.max", func() string { return maxOrValue(lim().MemoryMax) }),
		t.file("memory.high", "max"),
		t.file("memory.low", "0"),
		t.file("memory.min", "0"),
		gen("memory.current", func() string { return strconv.FormatUint(k.MemoryCurrent(), 10) }),
		gen("memory.peak", func() string { return strconv.FormatUint(k.MemoryPeak(), 10) }),
		gen("memory.events", func() string {
			e := k.MemoryEvents()
			// Every time the charge was found past memory.max is an
			// oom here: the sentry cannot reclaim before it kills.
			return fmt.Sprintf("low 0\nhigh 0\nmax %d\noom %d\noom_kill %d\noom_group_kill 0", e.OOM, e.OOM, e.OOMKill)
		}),
		// The guest has no swap: memory.swap is the host cgroup's.
		t.file("memory.swap.current", "0"),
		t.file("memory.swap.max", "0"),

		gen("pids.max", func() string { return maxOrValue(lim().PidsMax) }),
		gen("pids.current", func() string { return strconv.FormatUint(k.PidsCurrent(), 10) }),

		gen("cpu.max", func() string {
			l := lim()
			period := l.CPUPeriod
			if period == 0 {
				period = kernel.DefaultCPUPeriod
			}
			return maxOrValue(l.CPUQuota) + " " + strconv.FormatUint(period, 10)
		}),
		t.file("cpu.weight", "100"),
		gen("cpu.stat", func() string { return cgroupCPUStat(k) }),
		gen("cpuset.cpus", func() string {
			if lim().CPUs == "" {
				return ""
			}
			return cpuRange(k.NumCPUs())
		}),
		gen("cpuset.cpus.effective", func() string { return cpuRange(k.NumCPUs()) }),
		t.file("cpuset.mems", ""),
		t.file("cpuset.mems.effective", "0"),
	)
	number(root.node)
	return vfs.NewRoot(root.node)
}

// maxOrValue is a cgroup limit as its file shows it: "max" for none.
func maxOrValue(v uint64) string {
	if v == 0 {
		return "max"
	}
	return strconv.FormatUint(v, 10)
}

func btoa(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// cpuRange is CPUs 0 to n-1 as a CPU list.
func cpuRange(n int) string {
	if n <= 1 {
		return "0"
	}
	return fmt.Sprintf("0-%d", n-1)
}

// cgroupPIDs lists the sandbox's processes (or, with threads, its tasks)
// one a line, as cgroup.procs and cgroup.threads do, by their ids in the
// sandbox's pid namespace.
func cgroupPIDs(k *kernel.Kernel, threads bool) string {
	var ids []string
	for _, tg := range k.ThreadGroups() {
		if !threads {
			ids = append(ids, strconv.Itoa(int(tg.PID())))
			continue
		}
		for _, t := range tg.Tasks() {
			ids = append(ids, strconv.Itoa(int(t.RootTID())))
		}
	}
	return strings.Join(ids, "\n")
}

// cgroupCPUStat is cpu.stat: the CPU time of the sandbox's processes,
// living and reaped, in µs. The quota's throttling is the host cgroup's,
// which the guest does not see.
func cgroupCPUStat(k *kernel.Kernel) string {
	var user, sys time.Duration
	for _, tg := range k.ThreadGroups() {
		u, s := tg.CPUTime()
		c := tg.ChildUsage()
		user += u + c.User
		sys += s + c.Sys
	}
	return fmt.Sprintf("usage_usec %d\nuser_usec %d\nsystem_usec %d\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0",
		(user + sys).Microseconds(), user.Microseconds(), sys.Microseconds())
}
