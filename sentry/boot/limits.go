package boot

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
)

// sandboxLimits applies the resources of config.json (or of `moat
// update`) to the limits the sandbox has now, as runc applies them to a
// cgroup: a field the resources leave out keeps its value; -1 (and for
// pids any value below 1) is no limit. Memory swap, reservation, CPU
// shares and the like are the host cgroup's alone (the guest sees nothing
// of them). A bad value is an error naming its field.
func sandboxLimits(cur kernel.SandboxLimits, r *specs.LinuxResources, hostCPUs unix.CPUSet) (kernel.SandboxLimits, error) {
	if r == nil {
		return cur, nil
	}
	if m := r.Memory; m != nil && m.Limit != nil {
		switch v := *m.Limit; {
		case v == -1:
			cur.MemoryMax = 0
		case v < 0:
			return cur, fmt.Errorf("linux.resources.memory.limit: %d is negative (-1 is no limit)", v)
		case v > 0:
			cur.MemoryMax = uint64(v)
		}
	}
	if p := r.Pids; p != nil && p.Limit != nil {
		cur.PidsMax = uint64(max(*p.Limit, 0))
	}
	if c := r.CPU; c != nil {
		if c.Period != nil && *c.Period != 0 {
			if *c.Period < 1000 || *c.Period > 1000000 {
				return cur, fmt.Errorf("linux.resources.cpu.period: %d µs is outside [1000, 1000000]", *c.Period)
			}
			cur.CPUPeriod = *c.Period
		}
		if c.Quota != nil {
			switch q := *c.Quota; {
			case q == -1:
				cur.CPUQuota = 0
			case q < 0:
				return cur, fmt.Errorf("linux.resources.cpu.quota: %d is negative (-1 is no limit)", q)
			case q > 0:
				if q < 1000 {
					return cur, fmt.Errorf("linux.resources.cpu.quota: %d µs is below the least Linux takes, 1000", q)
				}
				cur.CPUQuota = uint64(q)
			}
		}
		if c.Cpus != "" {
			set, err := parseCPUList(c.Cpus)
			if err != nil {
				return cur, fmt.Errorf("linux.resources.cpu.cpus: %q: %v", c.Cpus, err)
			}
			n := 0
			for _, cpu := range set {
				if !hostCPUs.IsSet(cpu) {
					return cur, fmt.Errorf("linux.resources.cpu.cpus: %q: CPU %d is not one the sandbox may use", c.Cpus, cpu)
				}
				n++
			}
			cur.CPUs, cur.CPUCount = c.Cpus, n
		}
	}
	return cur, nil
}

// parseCPUList reads a CPU list as cpuset.cpus takes it ("0-3,5"), in
// increasing order without repeats.
func parseCPUList(s string) ([]int, error) {
	seen := make(map[int]bool)
	var out []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%q is not a CPU number", part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%q is not a CPU range", part)
			}
		}
		if b >= 1<<16 {
			return nil, fmt.Errorf("CPU %d is past any machine's", b)
		}
		for cpu := a; cpu <= b; cpu++ {
			if !seen[cpu] {
				seen[cpu] = true
				out = append(out, cpu)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// overlayMemoryShare: an overlay root's upper layer keeps at most
// 1/overlayMemoryShare of memory.max of file data in memory, then spills
// to disk. Under runc a container's file writes go to the page cache,
// which Linux writes back and reclaims before its memory cgroup kills
// anyone; the upper layer's data in memory is charged and cannot be
// reclaimed, so it must leave room under the limit for the processes.
const overlayMemoryShare = 4

// overlayMemory is how many bytes of the upper layer's data stay in
// memory: what the CLI set (0: no spilling), cut to the memory limit's
// share.
func overlayMemory(configured int64, memoryMax uint64) int64 {
	if configured <= 0 || memoryMax == 0 {
		return configured
	}
	return min(configured, int64(memoryMax/overlayMemoryShare))
}
