package cgroups

import (
	"errors"
	"fmt"
	"strconv"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// applyV1 writes r's limits for controller ctrl into f, the cgroup's
// directory in ctrl's v1 hierarchy. Unset fields leave their files as
// they are, so that an update changes only what it names.
func applyV1(ctrl string, f files, r *specs.LinuxResources) error {
	switch ctrl {
	case "memory":
		return memoryV1(f, r.Memory)
	case "cpu":
		return cpuV1(f, r.CPU)
	case "cpuset":
		if c := r.CPU; c != nil {
			return cpusetFiles(f, c)
		}
	case "pids":
		if p := r.Pids; p != nil && p.Limit != nil {
			return f.write("pids.max", pidsMax(*p.Limit))
		}
	case "blkio":
		return blkioV1(f, r.BlockIO)
	case "devices":
		return applyDevicesV1(f, r.Devices)
	}
	return nil
}

func memoryV1(f files, m *specs.LinuxMemory) error {
	if m == nil {
		return nil
	}
	if m.Limit != nil && *m.Limit != 0 {
		limit := strconv.FormatInt(HostMemory(*m.Limit), 10)
		// memory.memsw.limit_in_bytes may never be below the limit: a
		// limit raised above the current memory+swap is refused until
		// that is raised first.
		err := f.write("memory.limit_in_bytes", limit)
		if errors.Is(err, unix.EINVAL) && m.Swap != nil && *m.Swap != 0 && f.has("memory.memsw.limit_in_bytes") {
			if err = f.write("memory.memsw.limit_in_bytes", strconv.FormatInt(HostMemory(*m.Swap), 10)); err == nil {
				err = f.write("memory.limit_in_bytes", limit)
			}
		}
		if err != nil {
			return err
		}
	}
	if m.Swap != nil && *m.Swap != 0 {
		if !f.has("memory.memsw.limit_in_bytes") {
			if *m.Swap != unlimited {
				return fieldError("linux.resources.memory.swap", *m.Swap, "the host's memory controller accounts no swap (swapaccount=0)")
			}
		} else if err := f.write("memory.memsw.limit_in_bytes", strconv.FormatInt(HostMemory(*m.Swap), 10)); err != nil {
			return err
		}
	}
	if m.Reservation != nil && *m.Reservation != 0 {
		if err := f.write("memory.soft_limit_in_bytes", strconv.FormatInt(HostMemory(*m.Reservation), 10)); err != nil {
			return err
		}
	}
	if m.Swappiness != nil {
		if err := f.write("memory.swappiness", strconv.FormatUint(*m.Swappiness, 10)); err != nil {
			return err
		}
	}
	// Asked for, the host's OOM killer leaves the sandbox alone at the
	// limit (its tasks wait for memory instead), as under runc; v2 has no
	// such switch.
	if m.DisableOOMKiller != nil && *m.DisableOOMKiller {
		if err := f.write("memory.oom_control", "1"); err != nil {
			return err
		}
	}
	return nil
}

func cpuV1(f files, c *specs.LinuxCPU) error {
	if c == nil {
		return nil
	}
	if c.Shares != nil && *c.Shares != 0 {
		if err := f.write("cpu.shares", strconv.FormatUint(*c.Shares, 10)); err != nil {
			return err
		}
	}
	// The kernel checks each write of the pair against the other's
	// current value: a new period may not fit the old quota, so on a
	// refusal the quota goes first.
	var writes [][2]string
	if c.Period != nil && *c.Period != 0 {
		writes = append(writes, [2]string{"cpu.cfs_period_us", strconv.FormatUint(*c.Period, 10)})
	}
	if c.Quota != nil && *c.Quota != 0 {
		writes = append(writes, [2]string{"cpu.cfs_quota_us", strconv.FormatInt(*c.Quota, 10)})
	}
	if err := writeEitherOrder(f, writes); err != nil {
		return err
	}
	if c.Burst != nil {
		if err := f.write("cpu.cfs_burst_us", strconv.FormatUint(*c.Burst, 10)); err != nil {
			return err
		}
	}
	if c.RealtimePeriod != nil && *c.RealtimePeriod != 0 {
		if err := f.write("cpu.rt_period_us", strconv.FormatUint(*c.RealtimePeriod, 10)); err != nil {
			return err
		}
	}
	if c.RealtimeRuntime != nil && *c.RealtimeRuntime != 0 {
		if err := f.write("cpu.rt_runtime_us", strconv.FormatInt(*c.RealtimeRuntime, 10)); err != nil {
			return err
		}
	}
	if c.Idle != nil {
		if err := f.write("cpu.idle", strconv.FormatInt(*c.Idle, 10)); err != nil {
			return err
		}
	}
	return nil
}

// writeEitherOrder writes the pairs in order and, if that is refused,
// in the reverse order.
func writeEitherOrder(f files, writes [][2]string) error {
	var err error
	for _, w := range writes {
		if err = f.write(w[0], w[1]); err != nil {
			break
		}
	}
	if err == nil || len(writes) < 2 {
		return err
	}
	for i := len(writes) - 1; i >= 0; i-- {
		if err := f.write(writes[i][0], writes[i][1]); err != nil {
			return err
		}
	}
	return nil
}

// cpusetFiles writes cpus and mems, which are named alike on v1 and v2.
func cpusetFiles(f files, c *specs.LinuxCPU) error {
	if c.Cpus != "" {
		if err := f.write("cpuset.cpus", c.Cpus); err != nil {
			return err
		}
	}
	if c.Mems != "" {
		if err := f.write("cpuset.mems", c.Mems); err != nil {
			return err
		}
	}
	return nil
}

// pidsMax is the host's pids.max for linux.resources.pids.limit (HostPids):
// 0 and -1 are no limit.
func pidsMax(limit int64) string {
	if limit <= 0 {
		return "max"
	}
	return strconv.FormatInt(HostPids(limit), 10)
}

func blkioV1(f files, b *specs.LinuxBlockIO) error {
	if b == nil {
		return nil
	}
	// Without CFQ the weights are BFQ's, in files of its own.
	weightFile, deviceWeightFile := "blkio.weight", "blkio.weight_device"
	if !f.has(weightFile) {
		weightFile, deviceWeightFile = "blkio.bfq.weight", "blkio.bfq.weight_device"
	}
	if b.Weight != nil && *b.Weight != 0 {
		if !f.has(weightFile) {
			return fieldError("linux.resources.blockIO.weight", *b.Weight, "the host's block I/O scheduler takes no weights (neither CFQ nor BFQ)")
		}
		if err := f.write(weightFile, strconv.FormatUint(uint64(*b.Weight), 10)); err != nil {
			return err
		}
	}
	if b.LeafWeight != nil && *b.LeafWeight != 0 {
		if !f.has("blkio.leaf_weight") {
			return fieldError("linux.resources.blockIO.leafWeight", *b.LeafWeight, "the host's block I/O scheduler takes no leaf weights (CFQ only)")
		}
		if err := f.write("blkio.leaf_weight", strconv.FormatUint(uint64(*b.LeafWeight), 10)); err != nil {
			return err
		}
	}
	for i, d := range b.WeightDevice {
		if d.Weight == nil {
			continue
		}
		if !f.has(deviceWeightFile) {
			return fieldError(fmt.Sprintf("linux.resources.blockIO.weightDevice[%d].weight", i), *d.Weight, "the host's block I/O scheduler takes no weights (neither CFQ nor BFQ)")
		}
		if err := f.write(deviceWeightFile, fmt.Sprintf("%d:%d %d", d.Major, d.Minor, *d.Weight)); err != nil {
			return err
		}
	}
	for _, t := range []struct {
		file    string
		devices []specs.LinuxThrottleDevice
	}{
		{"blkio.throttle.read_bps_device", b.ThrottleReadBpsDevice},
		{"blkio.throttle.write_bps_device", b.ThrottleWriteBpsDevice},
		{"blkio.throttle.read_iops_device", b.ThrottleReadIOPSDevice},
		{"blkio.throttle.write_iops_device", b.ThrottleWriteIOPSDevice},
	} {
		for _, d := range t.devices {
			if err := f.write(t.file, fmt.Sprintf("%d:%d %d", d.Major, d.Minor, d.Rate)); err != nil {
				return err
			}
		}
	}
	return nil
}
