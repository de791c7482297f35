package kernel

import (
	"runtime"
	"sync/atomic"

	"github.com/moat-sandbox/moat/platform"
)

// SandboxLimits are the limits of the sandbox as a whole, the ones a
// container's cgroup gives it (config.json's linux.resources): the sentry
// enforces them itself and shows them to the guest as a cgroup v2 view
// (memory.max, pids.max, cpu.max, cpuset.cpus.effective), through
// /proc/meminfo and sysinfo(2), and through the CPUs the guest may run on.
// A zero field is no limit.
type SandboxLimits struct {
	// MemoryMax is memory.max in bytes: past it, the OOM killer ends a
	// guest process (oom.go).
	MemoryMax uint64
	// PidsMax is pids.max: the tasks (threads too) that may exist at
	// once; clone past it fails with EAGAIN.
	PidsMax uint64
	// CPUQuota and CPUPeriod are cpu.max, in µs: the guest may use quota
	// of CPU time every period. A quota of 0 is "max".
	CPUQuota, CPUPeriod uint64
	// CPUs is cpuset.cpus as the config gives it ("0-1,3"), the host CPUs
	// the sandbox may run on; "" for every CPU the sentry may use. The
	// guest sees CPUCount of them, numbered from 0 as all its CPUs are.
	CPUs     string
	CPUCount int
}

// DefaultCPUPeriod is cpu.max's period when the config sets none (Linux's
// default cfs_period_us).
const DefaultCPUPeriod = 100000

// sandboxLimits holds the current SandboxLimits, read without a lock on
// the hot paths (clone, the memory watcher).
type sandboxLimits struct {
	cur  atomic.Pointer[SandboxLimits]
	wake chan struct{} // told of every change (buffered, one)
}

// SetSandboxLimits replaces the sandbox's limits (at boot, and for `moat
// update`). A lower memory limit takes effect at once: the OOM killer runs
// if the guest is already over it.
func (k *Kernel) SetSandboxLimits(l SandboxLimits) {
	if l.CPUQuota != 0 && l.CPUPeriod == 0 {
		l.CPUPeriod = DefaultCPUPeriod
	}
	k.sbLimits.cur.Store(&l)
	select {
	case k.sbLimits.wake <- struct{}{}:
	default:
	}
	if cl, ok := k.Platform.(platform.CPULimiter); ok {
		cl.LimitCPUs(l.usableCPUs())
	}
}

// usableCPUs is how many CPUs the guest may keep busy at once: its
// cpuset's, or every CPU the sentry may use, and no more than its quota
// rounded up.
func (l *SandboxLimits) usableCPUs() int {
	n := runtime.NumCPU()
	if l.CPUCount > 0 {
		n = min(n, l.CPUCount)
	}
	if l.CPUQuota != 0 && l.CPUPeriod != 0 {
		n = min(n, int((l.CPUQuota+l.CPUPeriod-1)/l.CPUPeriod))
	}
	return max(n, 1)
}

// SandboxLimits returns the sandbox's limits.
func (k *Kernel) SandboxLimits() SandboxLimits {
	if l := k.sbLimits.cur.Load(); l != nil {
		return *l
	}
	return SandboxLimits{}
}

// PidsCurrent is pids.current: the sandbox's tasks, threads and processes
// not yet reaped included, as the pids controller counts them until
// release.
func (k *Kernel) PidsCurrent() uint64 {
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	return k.pidsCurrentLocked()
}

func (k *Kernel) pidsCurrentLocked() uint64 {
	var n int
	for _, c := range k.nproc {
		n += c
	}
	return uint64(n)
}

// pidsFullLocked reports whether one more task would pass pids.max. As
// the pids controller, it spares no one: root and CAP_SYS_RESOURCE are
// held to it too.
func (k *Kernel) pidsFullLocked() bool {
	l := k.sbLimits.cur.Load()
	return l != nil && l.PidsMax != 0 && k.pidsCurrentLocked() >= l.PidsMax
}

// NumCPUs is how many CPUs the guest has: those of its cpuset, or every
// CPU the sentry may use, numbered from 0.
func (k *Kernel) NumCPUs() int {
	if l := k.sbLimits.cur.Load(); l != nil && l.CPUCount > 0 {
		return min(l.CPUCount, runtime.NumCPU())
	}
	return runtime.NumCPU()
}
