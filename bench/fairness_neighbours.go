package bench

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// The limits every sandbox of a fairness cell gets in linux.resources, the
// measured one too: what a platform that hosts agents' sandboxes sets on
// each (E2B's smallest sandbox has 512 MiB and 2 vCPUs; these are
// tighter, so that two neighbours can saturate this 2-CPU host).
const (
	fairnessMemory   = 256 << 20 // memory.limit, and memory+swap the same: no swap
	fairnessPids     = 128
	fairnessCPUQuota = 100_000 // us of CPU per period: one CPU
	fairnessPeriod   = 100_000
)

// memoryCeilingMiB is where the memory bomb stops by itself (exit 3,
// "ceiling reached"): four times its limit, which it can reach only if the
// limit does not hold; the watch (fairness_watch.go) aborts the cell long
// before, and the ceiling keeps a broken limit from taking the host's
// memory even if the watch were late.
const memoryCeilingMiB = (4 * fairnessMemory) >> 20

// memoryAbortSlack is how far above its limit a neighbour's memory cgroup
// may be charged before the cell is aborted: moat's host cgroup is
// deliberately higher than the guest's limit by the sentry's margin
// (internal/cgroups.SentryMemoryMargin, 64 MiB), and a v1 cgroup's usage
// counts page cache and kernel memory besides; more than this means the
// limit is not holding.
const memoryAbortSlack = 128 << 20

// fairnessResources are the linux.resources of every sandbox of a
// fairness cell.
func fairnessResources() *specs.LinuxResources {
	memory, swap := int64(fairnessMemory), int64(fairnessMemory)
	pids := int64(fairnessPids)
	quota, period := int64(fairnessCPUQuota), uint64(fairnessPeriod)
	return &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: &memory, Swap: &swap},
		Pids:   &specs.LinuxPids{Limit: &pids},
		CPU:    &specs.LinuxCPU{Quota: &quota, Period: &period},
	}
}

// fairnessSpec is the configuration of sandbox id of a fairness cell: the
// bench's usual one (newSpec), the limits, and a cgroup of the bench's
// choosing (as density's: directly under each hierarchy's root), so that
// the watch knows where to read.
func fairnessSpec(argv []string, data, id string) *specs.Spec {
	spec := newSpec(argv, data, false)
	spec.Linux.Resources = fairnessResources()
	spec.Linux.CgroupsPath = "/" + id
	return spec
}

// neighbour is one misbehaving sandbox of a fairness cell.
type neighbour struct {
	Name string
	Argv []string
}

// Names of the neighbours, in the reports.
const (
	memoryBomb = "memory bomb"
	forkBomb   = "fork bomb"
	cpuHog     = "CPU hog"
)

// neighbours are the sandboxes a fairness cell starts beside the measured
// one, on a host of cpus CPUs. Each runs workloads/neighbour.c under a
// shell loop that starts it again whenever it dies, as a supervisor or
// an agent retrying would: the memory bomb is killed at its limit and
// comes back; the fork bomb and the CPU hog never end by themselves.
func neighbours(cpus int) []neighbour {
	again := func(args string) []string {
		return []string{"/bin/sh", "-c", fmt.Sprintf("while :; do %s %s; done", programPath("neighbour"), args)}
	}
	return []neighbour{
		{memoryBomb, again(fmt.Sprintf("memory %d", memoryCeilingMiB))},
		{forkBomb, again("fork")},
		{cpuHog, again(fmt.Sprintf("cpu %d", cpus))},
	}
}
