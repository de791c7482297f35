package cgroups

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// applyV2 writes r's limits into f, the cgroup's directory in a v2
// hierarchy that holds the controllers. Unset fields leave their files
// as they are.
func applyV2(f files, r *specs.LinuxResources) error {
	for _, apply := range []func(files, *specs.LinuxResources) error{memoryV2, cpuV2, pidsV2, ioV2, unifiedV2} {
		if err := apply(f, r); err != nil {
			return err
		}
	}
	return nil
}

func memoryV2(f files, r *specs.LinuxResources) error {
	m := r.Memory
	if m == nil {
		return nil
	}
	var limit, swap int64
	if m.Limit != nil {
		limit = *m.Limit
	}
	if m.Swap != nil {
		swap = *m.Swap
	}
	// v2 takes swap apart from memory, and refuses nothing for the order.
	if s := swapV2(swap, limit); s != 0 {
		if !f.has("memory.swap.max") {
			if s != unlimited {
				return fieldError("linux.resources.memory.swap", swap, "the host's memory controller accounts no swap")
			}
		} else if err := f.write("memory.swap.max", maxOr(s)); err != nil {
			return err
		}
	}
	if limit != 0 {
		if err := f.write("memory.max", maxOr(HostMemory(limit))); err != nil {
			return err
		}
	}
	if m.Reservation != nil && *m.Reservation != 0 {
		if err := f.write("memory.low", maxOr(HostMemory(*m.Reservation))); err != nil {
			return err
		}
	}
	return nil
}

func cpuV2(f files, r *specs.LinuxResources) error {
	c := r.CPU
	if c == nil {
		return nil
	}
	if w := SharesToWeight(deref(c.Shares)); w != 0 {
		if err := f.write("cpu.weight", strconv.FormatUint(w, 10)); err != nil {
			return err
		}
	}
	if c.Idle != nil {
		if err := f.write("cpu.idle", strconv.FormatInt(*c.Idle, 10)); err != nil {
			return err
		}
	}
	// cpu.max is "QUOTA PERIOD" in one write; a quota alone keeps the
	// current period, and a period alone keeps the current quota.
	if q, p := c.Quota, c.Period; (q != nil && *q != 0) || (p != nil && *p != 0) {
		cur, err := f.read("cpu.max")
		if err != nil {
			return err
		}
		quota, period, _ := strings.Cut(cur, " ")
		if q != nil && *q != 0 {
			quota = maxOr(*q)
		}
		if p != nil && *p != 0 {
			period = strconv.FormatUint(*p, 10)
		}
		if period == "" {
			period = "100000" // the kernel's default, for an empty cpu.max (a test's stand-in)
		}
		if err := f.write("cpu.max", quota+" "+period); err != nil {
			return err
		}
	}
	if c.Burst != nil {
		if err := f.write("cpu.max.burst", strconv.FormatUint(*c.Burst, 10)); err != nil {
			return err
		}
	}
	return cpusetFiles(f, c)
}

func pidsV2(f files, r *specs.LinuxResources) error {
	if p := r.Pids; p != nil && p.Limit != nil {
		return f.write("pids.max", pidsMax(*p.Limit))
	}
	return nil
}

func ioV2(f files, r *specs.LinuxResources) error {
	b := r.BlockIO
	if b == nil {
		return nil
	}
	// BFQ keeps blkio's scale in a file of its own; io.weight has v2's.
	if b.Weight != nil && *b.Weight != 0 {
		var err error
		if f.has("io.bfq.weight") {
			err = f.write("io.bfq.weight", strconv.FormatUint(uint64(*b.Weight), 10))
		} else {
			err = f.write("io.weight", "default "+strconv.FormatUint(BlkioToIOWeight(*b.Weight), 10))
		}
		if err != nil {
			return err
		}
	}
	for _, d := range b.WeightDevice {
		if d.Weight == nil {
			continue
		}
		var err error
		if f.has("io.bfq.weight") {
			err = f.write("io.bfq.weight", fmt.Sprintf("%d:%d %d", d.Major, d.Minor, *d.Weight))
		} else {
			err = f.write("io.weight", fmt.Sprintf("%d:%d %d", d.Major, d.Minor, BlkioToIOWeight(*d.Weight)))
		}
		if err != nil {
			return err
		}
	}
	// io.max takes one line per device with any of its four keys.
	type dev struct{ major, minor int64 }
	limits := map[dev][]string{}
	var order []dev
	for _, t := range []struct {
		key     string
		devices []specs.LinuxThrottleDevice
	}{
		{"rbps", b.ThrottleReadBpsDevice}, {"wbps", b.ThrottleWriteBpsDevice},
		{"riops", b.ThrottleReadIOPSDevice}, {"wiops", b.ThrottleWriteIOPSDevice},
	} {
		for _, d := range t.devices {
			k := dev{d.Major, d.Minor}
			if _, ok := limits[k]; !ok {
				order = append(order, k)
			}
			limits[k] = append(limits[k], fmt.Sprintf("%s=%d", t.key, d.Rate))
		}
	}
	for _, k := range order {
		if err := f.write("io.max", fmt.Sprintf("%d:%d %s", k.major, k.minor, strings.Join(limits[k], " "))); err != nil {
			return err
		}
	}
	return nil
}

// unifiedV2 writes linux.resources.unified: cgroup v2 files by name.
func unifiedV2(f files, r *specs.LinuxResources) error {
	names := make([]string, 0, len(r.Unified))
	for name := range r.Unified {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.Contains(name, "/") || strings.HasPrefix(name, "cgroup.") {
			return fieldError("linux.resources.unified", name, "names no controller file of the container's own cgroup")
		}
		if err := f.write(name, r.Unified[name]); err != nil {
			return err
		}
	}
	return nil
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
