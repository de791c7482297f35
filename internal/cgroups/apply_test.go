package cgroups

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// fakeDir is a temp directory standing for a cgroup: it holds the named
// files, empty (or with the given content), as the kernel would show
// them; write refuses any other.
func fakeDir(t *testing.T, names map[string]string) files {
	dir := t.TempDir()
	for name, content := range names {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files(dir)
}

// contents reads back every file of f that is not empty.
func contents(t *testing.T, f files) map[string]string {
	entries, err := os.ReadDir(string(f))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(string(f), e.Name()))
		if len(data) > 0 {
			got[e.Name()] = string(data)
		}
	}
	return got
}

func fullResources() *specs.LinuxResources {
	return &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: i64(100 << 20), Swap: i64(300 << 20), Reservation: i64(50 << 20), Swappiness: u64(10), DisableOOMKiller: ptrTo(true)},
		CPU:    &specs.LinuxCPU{Shares: u64(1024), Quota: i64(50000), Period: u64(100000), Cpus: "0", Mems: "0"},
		Pids:   &specs.LinuxPids{Limit: i64(50)},
		BlockIO: &specs.LinuxBlockIO{
			Weight:                  u16(500),
			ThrottleReadBpsDevice:   []specs.LinuxThrottleDevice{{LinuxBlockIODevice: specs.LinuxBlockIODevice{Major: 8, Minor: 0}, Rate: 1 << 20}},
			ThrottleWriteIOPSDevice: []specs.LinuxThrottleDevice{{LinuxBlockIODevice: specs.LinuxBlockIODevice{Major: 8, Minor: 0}, Rate: 100}},
		},
		Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}, {Allow: true, Type: "c", Major: i64(1), Minor: i64(3), Access: "rw"}},
	}
}

func TestApplyV1WritesEachControllersFilesWithTheHostMargin(t *testing.T) {
	r := fullResources()
	host := func(v int64) string { return strconv.FormatInt(v+SentryMemoryMargin, 10) }
	for _, c := range []struct {
		ctrl  string
		files []string
		want  map[string]string
	}{
		{"memory", []string{"memory.limit_in_bytes", "memory.memsw.limit_in_bytes", "memory.soft_limit_in_bytes", "memory.swappiness", "memory.oom_control"}, map[string]string{
			"memory.oom_control":          "1",
			"memory.limit_in_bytes":       host(100 << 20),
			"memory.memsw.limit_in_bytes": host(300 << 20),
			"memory.soft_limit_in_bytes":  host(50 << 20),
			"memory.swappiness":           "10",
		}},
		{"cpu", []string{"cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us"}, map[string]string{
			"cpu.shares": "1024", "cpu.cfs_quota_us": "50000", "cpu.cfs_period_us": "100000",
		}},
		{"cpuset", []string{"cpuset.cpus", "cpuset.mems"}, map[string]string{"cpuset.cpus": "0", "cpuset.mems": "0"}},
		{"pids", []string{"pids.max"}, map[string]string{"pids.max": strconv.FormatInt(50*hostTasksPerGuestTask+SentryTaskMargin, 10)}},
		{"blkio", []string{"blkio.weight", "blkio.throttle.read_bps_device", "blkio.throttle.write_bps_device", "blkio.throttle.read_iops_device", "blkio.throttle.write_iops_device"}, map[string]string{
			"blkio.weight": "500", "blkio.throttle.read_bps_device": "8:0 1048576", "blkio.throttle.write_iops_device": "8:0 100",
		}},
		// Each write is a rule of its own: the file keeps the last, the
		// kernel keeps them all. Deny-all comes first, then the config's.
		{"devices", []string{"devices.allow", "devices.deny"}, map[string]string{"devices.deny": "a", "devices.allow": "c 1:3 rw"}},
	} {
		names := map[string]string{}
		for _, n := range c.files {
			names[n] = ""
		}
		f := fakeDir(t, names)
		if err := applyV1(c.ctrl, f, r); err != nil {
			t.Errorf("%s: %v", c.ctrl, err)
			continue
		}
		if got := contents(t, f); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: wrote %v, want %v", c.ctrl, got, c.want)
		}
	}
}

func TestApplyV1WithoutSwapAccountingRefusesASwapLimit(t *testing.T) {
	f := fakeDir(t, map[string]string{"memory.limit_in_bytes": ""})
	err := applyV1("memory", f, &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(1 << 20), Swap: i64(2 << 20)}})
	if err == nil || !IsFieldError(err) {
		t.Errorf("applyV1 with no memsw file: %v, want a linux.resources.memory.swap error", err)
	}
}

func TestApplyV1OnBFQWritesItsWeightFile(t *testing.T) {
	f := fakeDir(t, map[string]string{"blkio.bfq.weight": ""})
	if err := applyV1("blkio", f, &specs.LinuxResources{BlockIO: &specs.LinuxBlockIO{Weight: u16(300)}}); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, f); got["blkio.bfq.weight"] != "300" {
		t.Errorf("wrote %v, want blkio.bfq.weight 300", got)
	}
	// Neither CFQ's nor BFQ's: the field is named.
	f = fakeDir(t, nil)
	if err := applyV1("blkio", f, &specs.LinuxResources{BlockIO: &specs.LinuxBlockIO{Weight: u16(300)}}); !IsFieldError(err) {
		t.Errorf("a weight with no weight file: %v, want a field error", err)
	}
}

func TestApplyV1LeavesUnsetFieldsAlone(t *testing.T) {
	f := fakeDir(t, map[string]string{"memory.limit_in_bytes": "", "memory.memsw.limit_in_bytes": "", "pids.max": "", "cpu.shares": "", "cpu.cfs_quota_us": ""})
	r := &specs.LinuxResources{Memory: &specs.LinuxMemory{}, CPU: &specs.LinuxCPU{}, Pids: &specs.LinuxPids{}}
	for _, ctrl := range []string{"memory", "cpu", "pids"} {
		if err := applyV1(ctrl, f, r); err != nil {
			t.Fatal(err)
		}
	}
	if got := contents(t, f); len(got) != 0 {
		t.Errorf("unset fields wrote %v", got)
	}
}

func TestApplyV2WritesV2sFilesAndConversions(t *testing.T) {
	f := fakeDir(t, map[string]string{
		"memory.max": "", "memory.swap.max": "", "memory.low": "", "cpu.weight": "", "cpu.max": "max 100000",
		"cpuset.cpus": "", "cpuset.mems": "", "pids.max": "", "io.weight": "", "io.max": "",
	})
	r := fullResources()
	r.Unified = map[string]string{"memory.high": "200000000"}
	if err := os.WriteFile(filepath.Join(string(f), "memory.high"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := applyV2(f, r); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"memory.max":      strconv.Itoa(100<<20 + SentryMemoryMargin),
		"memory.swap.max": strconv.Itoa(200 << 20), // memory+swap less memory: the margin cancels
		"memory.low":      strconv.Itoa(50<<20 + SentryMemoryMargin),
		"cpu.weight":      "100",
		"cpu.max":         "50000 100000",
		"cpuset.cpus":     "0", "cpuset.mems": "0",
		"pids.max":    strconv.FormatInt(HostPids(50), 10),
		"io.weight":   "default " + strconv.FormatUint(BlkioToIOWeight(500), 10),
		"io.max":      "8:0 rbps=1048576 wiops=100",
		"memory.high": "200000000",
	}
	if got := contents(t, f); !reflect.DeepEqual(got, want) {
		t.Errorf("wrote %v\nwant  %v", got, want)
	}
}

func TestApplyV2QuotaAloneKeepsThePeriod(t *testing.T) {
	f := fakeDir(t, map[string]string{"cpu.max": "max 250000\n"})
	if err := applyV2(f, &specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: i64(125000)}}); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, f)["cpu.max"]; got != "125000 250000" {
		t.Errorf("cpu.max %q, want 125000 250000", got)
	}
	if err := applyV2(f, &specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: i64(-1)}}); err != nil {
		t.Fatal(err)
	}
	if got := contents(t, f)["cpu.max"]; got != "max 250000" {
		t.Errorf("cpu.max %q after quota -1, want max 250000", got)
	}
}

func TestApplyV2RefusesUnifiedKeysOutsideTheCgroup(t *testing.T) {
	for _, key := range []string{"../memory.max", "cgroup.procs"} {
		err := applyV2(fakeDir(t, nil), &specs.LinuxResources{Unified: map[string]string{key: "1"}})
		if !IsFieldError(err) {
			t.Errorf("unified %q: %v, want a field error", key, err)
		}
	}
}

func TestSeedCpusetGivesEachEmptyLevelItsParentsSets(t *testing.T) {
	mnt := fakeDir(t, map[string]string{"cpuset.cpus": "0-1\n", "cpuset.mems": "0\n"})
	a := filepath.Join(string(mnt), "a")
	b := filepath.Join(a, "b")
	for _, dir := range []string{a, b} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// a has CPUs of its own, which b must get; its memory nodes are empty.
	for dir, cpus := range map[string]string{a: "1", b: ""} {
		must(t, os.WriteFile(filepath.Join(dir, "cpuset.cpus"), []byte(cpus), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "cpuset.mems"), nil, 0o644))
	}
	if err := seedCpuset(string(mnt), []string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{a: {"cpuset.cpus": "1", "cpuset.mems": "0"}, b: {"cpuset.cpus": "1", "cpuset.mems": "0"}}
	for dir, w := range want {
		if got := contents(t, files(dir)); !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %v, want %v", dir, got, w)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ptrTo[T any](v T) *T { return &v }
