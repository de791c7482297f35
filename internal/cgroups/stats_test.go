package cgroups

import (
	"testing"
)

func TestStatsReadsV1sFilesInRuncsUnits(t *testing.T) {
	cpuacct := fakeDir(t, map[string]string{
		"cpuacct.usage": "3000000000\n", "cpuacct.stat": "user 150\nsystem 50\n", "cpuacct.usage_percpu": "1000000000 2000000000 \n",
	})
	cpu := fakeDir(t, map[string]string{"cpu.stat": "nr_periods 10\nnr_throttled 4\nthrottled_time 7000\n"})
	mem := fakeDir(t, map[string]string{
		"memory.usage_in_bytes": "4096\n", "memory.max_usage_in_bytes": "8192\n", "memory.limit_in_bytes": "1048576\n",
		"memory.failcnt": "2\n", "memory.stat": "cache 1024\nrss 2048\n",
	})
	pids := fakeDir(t, map[string]string{"pids.current": "7\n", "pids.max": "max\n"})
	cg := &Cgroup{Mode: Hybrid, Dirs: map[string]string{"cpuacct": string(cpuacct), "cpu": string(cpu), "memory": string(mem), "pids": string(pids)}}
	s, err := cg.Stats()
	if err != nil {
		t.Fatal(err)
	}
	u := s.CPU.Usage
	// cpuacct.stat counts USER_HZ ticks: 150 of them are 1.5 s.
	if u.Total != 3e9 || u.User != 15e8 || u.Kernel != 5e8 || len(u.PerCPU) != 2 || u.PerCPU[1] != 2e9 {
		t.Errorf("cpu usage %+v", u)
	}
	if th := s.CPU.Throttling; th.Periods != 10 || th.ThrottledPeriods != 4 || th.ThrottledTime != 7000 {
		t.Errorf("throttling %+v", th)
	}
	if m := s.Memory; m.Usage.Usage != 4096 || m.Usage.Max != 8192 || m.Usage.Limit != 1<<20 || m.Usage.Failcnt != 2 || m.Cache != 1024 || m.Raw["rss"] != 2048 {
		t.Errorf("memory %+v", m)
	}
	if s.Pids.Current != 7 || s.Pids.Limit != 0 {
		t.Errorf("pids %+v (max reads as no limit, 0)", s.Pids)
	}
}

func TestStatsReadsV2sFilesInRuncsUnits(t *testing.T) {
	dir := fakeDir(t, map[string]string{
		"cpu.stat":       "usage_usec 3000\nuser_usec 2000\nsystem_usec 1000\nnr_periods 5\nnr_throttled 1\nthrottled_usec 9\n",
		"memory.current": "4096\n", "memory.peak": "8192\n", "memory.max": "max\n", "memory.events": "low 0\nhigh 0\nmax 3\noom 0\n",
		"memory.stat":  "anon 2048\nfile 1024\n",
		"pids.current": "7\n", "pids.max": "228\n",
	})
	cg := &Cgroup{Mode: Unified, Dirs: map[string]string{"": string(dir)}}
	s, err := cg.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// v2 counts microseconds; runc's figures are nanoseconds.
	if u := s.CPU.Usage; u.Total != 3e6 || u.User != 2e6 || u.Kernel != 1e6 {
		t.Errorf("cpu usage %+v", u)
	}
	if th := s.CPU.Throttling; th.Periods != 5 || th.ThrottledPeriods != 1 || th.ThrottledTime != 9000 {
		t.Errorf("throttling %+v", th)
	}
	if m := s.Memory; m.Usage.Usage != 4096 || m.Usage.Max != 8192 || m.Usage.Limit != 0 || m.Usage.Failcnt != 3 || m.Cache != 1024 {
		t.Errorf("memory %+v", m)
	}
	if s.Pids.Current != 7 || s.Pids.Limit != 228 {
		t.Errorf("pids %+v", s.Pids)
	}
}
