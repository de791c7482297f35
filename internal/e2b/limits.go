package e2b

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Limits are every sandbox's hard limits (linux.resources, which the
// sentry enforces inside and the host cgroup outside), and what the API
// describes it with (cpuCount, memoryMB).
type Limits struct {
	CPUs     int   // CPU quota, in CPUs
	MemoryMB int64 // memory limit, MiB
	PIDs     int64 // processes and threads
}

// DefaultLimits are E2B's default sandbox's (2 vCPUs, 512 MiB), with moat
// sandbox's bound on tasks.
var DefaultLimits = Limits{CPUs: 2, MemoryMB: 512, PIDs: 4096}

// check refuses limits that are no limits.
func (l Limits) check() error {
	switch {
	case l.CPUs < 1:
		return fmt.Errorf("limits: cpus %d: want at least 1", l.CPUs)
	case l.MemoryMB < 16:
		return fmt.Errorf("limits: memory %d MiB: want at least 16", l.MemoryMB)
	case l.PIDs < 16:
		return fmt.Errorf("limits: pids %d: want at least 16", l.PIDs)
	}
	return nil
}

// cfsPeriod is the CPU quota's period, in microseconds, as docker --cpus
// uses it.
const cfsPeriod = 100000

// resources are l as a container's linux.resources.
func (l Limits) resources() *specs.LinuxResources {
	memory := l.MemoryMB << 20
	quota := int64(l.CPUs) * cfsPeriod
	period := uint64(cfsPeriod)
	pids := l.PIDs
	return &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: &memory},
		CPU:    &specs.LinuxCPU{Quota: &quota, Period: &period},
		Pids:   &specs.LinuxPids{Limit: &pids},
	}
}
