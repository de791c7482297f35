package cgroups

import (
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// SentryMemoryMargin is what the host cgroup's memory limit adds to the
// guest's: the sentry enforces the guest's limit itself (its own OOM
// killer), but the host cgroup also holds the sentry's Go heap, its page
// tables and stubs, and the gofer, none of which the guest's figure
// counts. The host limit is a backstop against a sentry bug, and must
// never fire before the sentry's own killer would.
const SentryMemoryMargin = 64 << 20

// The host cgroup's pids.max for a guest limit of n tasks is
// n*hostTasksPerGuestTask + SentryTaskMargin. On the host each guest
// thread is a stub thread and each guest address space a stub process
// with a thread of its own that serves the sentry's requests: two for a
// process. The third is the sentry's: each guest task is a goroutine,
// and one blocked in a host call (a pread on a bind mount's file, say)
// holds a Go thread of its own. Beside them run the sentry's and the
// gofer's other threads and the stubs kept ready. The sentry counts
// guest tasks itself (fork fails with EAGAIN there); the host limit is
// the backstop that keeps a sentry bug from forking the host out of
// pids, and must never fire first: when it does, the sentry's Go runtime
// cannot start a thread and aborts, and the sandbox dies with it.
const (
	hostTasksPerGuestTask = 3
	SentryTaskMargin      = 128
)

// unlimited is -1, which linux.resources takes for "no limit".
const unlimited = -1

// Limits of the kernel's controllers (kernel/sched/sched.h, block/).
const (
	minShares, maxShares           = 2, 1 << 18
	minWeight, maxWeight           = 1, 10000
	minBlkioWeight, maxBlkioWeight = 10, 1000
)

// HostCPUs and HostMems are the sets a cpuset may name: the online CPUs
// and memory nodes.
func hostSet(file, fallback string) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return fallback
	}
	return strings.TrimSpace(string(data))
}

// Validate checks r before anything is made, so that a bad value is one
// line naming the field. cpus and mems are the host's online sets (the
// "0-3,5" lists of /sys/devices/system); empty skips the check.
func Validate(r *specs.LinuxResources, cpus, mems string) error {
	if r == nil {
		return nil
	}
	if m := r.Memory; m != nil {
		for _, f := range []struct {
			name string
			v    *int64
		}{{"limit", m.Limit}, {"reservation", m.Reservation}, {"swap", m.Swap}} {
			if f.v != nil && *f.v < unlimited {
				return fieldError("linux.resources.memory."+f.name, *f.v, "must be positive, or -1 for no limit")
			}
		}
		if m.Swap != nil && *m.Swap > 0 && (m.Limit == nil || *m.Limit <= 0) {
			return fieldError("linux.resources.memory.swap", *m.Swap, "a swap limit needs a memory limit (linux.resources.memory.limit)")
		}
		if m.Swap != nil && *m.Swap > 0 && m.Limit != nil && *m.Swap < *m.Limit {
			return fieldError("linux.resources.memory.swap", *m.Swap, fmt.Sprintf("memory plus swap must be at least the memory limit (%d)", *m.Limit))
		}
		if m.Swappiness != nil && *m.Swappiness > 100 {
			return fieldError("linux.resources.memory.swappiness", *m.Swappiness, "must be 0 to 100")
		}
	}
	if c := r.CPU; c != nil {
		if c.Shares != nil && *c.Shares != 0 && (*c.Shares < minShares || *c.Shares > maxShares) {
			return fieldError("linux.resources.cpu.shares", *c.Shares, fmt.Sprintf("must be %d to %d", minShares, maxShares))
		}
		if c.Quota != nil && *c.Quota < unlimited {
			return fieldError("linux.resources.cpu.quota", *c.Quota, "must be positive, or -1 for no limit")
		}
		// The kernel's bounds on cfs_period_us: 1 ms to 1 s.
		if c.Period != nil && *c.Period != 0 && (*c.Period < 1000 || *c.Period > 1000000) {
			return fieldError("linux.resources.cpu.period", *c.Period, "must be 1000 to 1000000 microseconds")
		}
		if c.Quota != nil && *c.Quota > 0 && *c.Quota < 1000 {
			return fieldError("linux.resources.cpu.quota", *c.Quota, "must be at least 1000 microseconds")
		}
		if err := checkSet("linux.resources.cpu.cpus", c.Cpus, cpus); err != nil {
			return err
		}
		if err := checkSet("linux.resources.cpu.mems", c.Mems, mems); err != nil {
			return err
		}
	}
	if p := r.Pids; p != nil && p.Limit != nil && *p.Limit < unlimited {
		return fieldError("linux.resources.pids.limit", *p.Limit, "must be positive, or 0 or -1 for no limit")
	}
	if b := r.BlockIO; b != nil {
		weight := func(field string, w *uint16) error {
			if w != nil && *w != 0 && (*w < minBlkioWeight || *w > maxBlkioWeight) {
				return fieldError(field, *w, fmt.Sprintf("must be %d to %d", minBlkioWeight, maxBlkioWeight))
			}
			return nil
		}
		if err := weight("linux.resources.blockIO.weight", b.Weight); err != nil {
			return err
		}
		if err := weight("linux.resources.blockIO.leafWeight", b.LeafWeight); err != nil {
			return err
		}
		for i, d := range b.WeightDevice {
			if err := weight(fmt.Sprintf("linux.resources.blockIO.weightDevice[%d].weight", i), d.Weight); err != nil {
				return err
			}
		}
	}
	for i, d := range r.Devices {
		if err := checkDeviceRule(i, d); err != nil {
			return err
		}
	}
	return nil
}

// checkSet checks a cpuset list (such as "0-2,4") is well formed and
// within host, the host's set.
func checkSet(field, list, host string) error {
	if list == "" {
		return nil
	}
	want, err := parseSet(list)
	if err != nil {
		return fieldError(field, list, err.Error())
	}
	if host == "" {
		return nil
	}
	have, err := parseSet(host)
	if err != nil {
		return nil // the host's own list is not ours to judge
	}
	for _, n := range slices.Sorted(maps.Keys(want)) {
		if !have[n] {
			return fieldError(field, list, fmt.Sprintf("%d is not among the host's (%s)", n, host))
		}
	}
	return nil
}

// parseSet reads the kernel's list format: numbers and ranges, comma
// separated.
func parseSet(list string) (map[int]bool, error) {
	set := map[int]bool{}
	for _, part := range strings.Split(list, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < a {
			return nil, fmt.Errorf("%q is not a number or a range a-b", part)
		}
		if b-a > 1<<16 {
			return nil, fmt.Errorf("%q is too large a range", part)
		}
		for n := a; n <= b; n++ {
			set[n] = true
		}
	}
	return set, nil
}

// SharesToWeight converts cpu.shares (2 to 262144, 1024 the default) to
// cgroup v2's cpu.weight (1 to 10000, 100 the default) as runc and crun
// do since 2025: a quadratic in log2(shares) through the two ranges' ends
// and their defaults, so that the default stays the default. 0 is unset.
func SharesToWeight(shares uint64) uint64 {
	switch {
	case shares == 0:
		return 0
	case shares <= minShares:
		return minWeight
	case shares >= maxShares:
		return maxWeight
	}
	l := math.Log2(float64(shares))
	return uint64(math.Ceil(math.Pow(10, (l*l+125*l)/612-7.0/34)))
}

// BlkioToIOWeight maps blkio.weight (10 to 1000) linearly onto io.weight
// (1 to 10000), as runc and crun do. 0 is unset.
func BlkioToIOWeight(w uint16) uint64 {
	if w == 0 {
		return 0
	}
	return 1 + (uint64(w)-minBlkioWeight)*(maxWeight-1)/(maxBlkioWeight-minBlkioWeight)
}

// swapV2 is cgroup v2's memory.swap.max for linux.resources' swap, which
// is memory plus swap as on v1: 0 leaves it unset, -1 is no limit.
func swapV2(swap, limit int64) int64 {
	switch {
	case limit == unlimited && swap == 0:
		return unlimited // no memory limit, as v1's memsw follows the limit
	case swap <= 0, limit <= 0:
		return swap
	}
	return swap - limit
}

// HostMemory is the host cgroup's memory limit for a guest limit of v
// bytes: v plus SentryMemoryMargin; 0 (unset) and -1 stay as they are.
func HostMemory(v int64) int64 {
	if v <= 0 {
		return v
	}
	return v + SentryMemoryMargin
}

// HostPids is the host cgroup's pids.max for a guest limit of n tasks;
// 0 and -1 (no limit) stay as they are.
func HostPids(n int64) int64 {
	if n <= 0 {
		return n
	}
	return n*hostTasksPerGuestTask + SentryTaskMargin
}

// OnlineCPUs and OnlineMems are the host's sets, for Validate.
func OnlineCPUs() string { return hostSet("/sys/devices/system/cpu/online", "") }
func OnlineMems() string { return hostSet("/sys/devices/system/node/online", "0") }
