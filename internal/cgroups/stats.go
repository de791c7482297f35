package cgroups

import (
	"strconv"
	"strings"
)

// Stats is the cgroup's use, in the shape of runc's `events --stats`
// data (libcontainer's types.Stats), the parts the cgroup can tell.
type Stats struct {
	CPU    CPUStats    `json:"cpu"`
	Memory MemoryStats `json:"memory"`
	Pids   PidsStats   `json:"pids"`
}

type CPUStats struct {
	Usage struct {
		Total  uint64   `json:"total"` // nanoseconds
		PerCPU []uint64 `json:"percpu,omitempty"`
		Kernel uint64   `json:"kernel"`
		User   uint64   `json:"user"`
	} `json:"usage"`
	Throttling struct {
		Periods          uint64 `json:"periods,omitempty"`
		ThrottledPeriods uint64 `json:"throttled_periods,omitempty"`
		ThrottledTime    uint64 `json:"throttled_time,omitempty"` // nanoseconds
	} `json:"throttling"`
}

type MemoryStats struct {
	Cache uint64            `json:"cache,omitempty"`
	Usage MemoryUsage       `json:"usage"`
	Swap  MemoryUsage       `json:"swap_usage"`
	Raw   map[string]uint64 `json:"raw,omitempty"`
}

type MemoryUsage struct {
	Limit   uint64 `json:"limit"`
	Usage   uint64 `json:"usage,omitempty"`
	Max     uint64 `json:"max,omitempty"`
	Failcnt uint64 `json:"failcnt"`
}

type PidsStats struct {
	Current uint64 `json:"current,omitempty"`
	Limit   uint64 `json:"limit,omitempty"`
}

// userHZ is the unit of cpuacct.stat: USER_HZ, 100 on every Linux ABI
// moat runs on.
const userHZ = 100

// Stats reads the cgroup's use. A controller the host lacks reads as
// zero.
func (cg *Cgroup) Stats() (*Stats, error) {
	s := &Stats{}
	for _, key := range cg.keys() {
		f := files(cg.Dirs[key])
		if key == unifiedKey {
			if cg.Mode == Unified {
				statsV2(f, s)
			}
			continue
		}
		for _, ctrl := range splitControllers(key) {
			statsV1(ctrl, f, s)
		}
	}
	return s, nil
}

func statsV1(ctrl string, f files, s *Stats) {
	switch ctrl {
	case "cpuacct":
		s.CPU.Usage.Total, _ = f.readUint("cpuacct.usage")
		if st, err := f.readKeyed("cpuacct.stat"); err == nil {
			s.CPU.Usage.User = st["user"] * (1e9 / userHZ)
			s.CPU.Usage.Kernel = st["system"] * (1e9 / userHZ)
		}
		if per, err := f.read("cpuacct.usage_percpu"); err == nil {
			s.CPU.Usage.PerCPU = parseUints(per)
		}
	case "cpu":
		if st, err := f.readKeyed("cpu.stat"); err == nil {
			s.CPU.Throttling.Periods = st["nr_periods"]
			s.CPU.Throttling.ThrottledPeriods = st["nr_throttled"]
			s.CPU.Throttling.ThrottledTime = st["throttled_time"]
		}
	case "memory":
		s.Memory.Usage.Usage, _ = f.readUint("memory.usage_in_bytes")
		s.Memory.Usage.Max, _ = f.readUint("memory.max_usage_in_bytes")
		s.Memory.Usage.Limit, _ = f.readUint("memory.limit_in_bytes")
		s.Memory.Usage.Failcnt, _ = f.readUint("memory.failcnt")
		s.Memory.Swap.Usage, _ = f.readUint("memory.memsw.usage_in_bytes")
		s.Memory.Swap.Limit, _ = f.readUint("memory.memsw.limit_in_bytes")
		if raw, err := f.readKeyed("memory.stat"); err == nil {
			s.Memory.Raw, s.Memory.Cache = raw, raw["cache"]
		}
	case "pids":
		s.Pids.Current, _ = f.readUint("pids.current")
		s.Pids.Limit, _ = f.readUint("pids.max")
	}
}

func statsV2(f files, s *Stats) {
	if st, err := f.readKeyed("cpu.stat"); err == nil {
		// v2 counts microseconds.
		s.CPU.Usage.Total = st["usage_usec"] * 1000
		s.CPU.Usage.User = st["user_usec"] * 1000
		s.CPU.Usage.Kernel = st["system_usec"] * 1000
		s.CPU.Throttling.Periods = st["nr_periods"]
		s.CPU.Throttling.ThrottledPeriods = st["nr_throttled"]
		s.CPU.Throttling.ThrottledTime = st["throttled_usec"] * 1000
	}
	s.Memory.Usage.Usage, _ = f.readUint("memory.current")
	s.Memory.Usage.Max, _ = f.readUint("memory.peak")
	s.Memory.Usage.Limit, _ = f.readUint("memory.max")
	if ev, err := f.readKeyed("memory.events"); err == nil {
		s.Memory.Usage.Failcnt = ev["max"]
	}
	s.Memory.Swap.Usage, _ = f.readUint("memory.swap.current")
	s.Memory.Swap.Limit, _ = f.readUint("memory.swap.max")
	if raw, err := f.readKeyed("memory.stat"); err == nil {
		s.Memory.Raw, s.Memory.Cache = raw, raw["file"]
	}
	s.Pids.Current, _ = f.readUint("pids.current")
	s.Pids.Limit, _ = f.readUint("pids.max")
}

func parseUints(s string) []uint64 {
	var out []uint64
	for _, w := range strings.Fields(s) {
		if n, err := strconv.ParseUint(w, 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}
