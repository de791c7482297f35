package boot

import (
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
)

func ptr[T any](v T) *T { return &v }

// twoCPUs is a host set of CPUs 0 and 1.
func twoCPUs() unix.CPUSet {
	var s unix.CPUSet
	s.Set(0)
	s.Set(1)
	return s
}

func TestResourcesBecomeTheSandboxsLimits(t *testing.T) {
	got, err := sandboxLimits(kernel.SandboxLimits{}, &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: ptr(int64(100 << 20)), Swap: ptr(int64(200 << 20))},
		Pids:   &specs.LinuxPids{Limit: ptr(int64(50))},
		CPU:    &specs.LinuxCPU{Quota: ptr(int64(50000)), Cpus: "1"},
	}, twoCPUs())
	want := kernel.SandboxLimits{MemoryMax: 100 << 20, PidsMax: 50, CPUQuota: 50000, CPUs: "1", CPUCount: 1}
	if err != nil || got != want {
		t.Errorf("limits = %+v, %v; want %+v", got, err, want)
	}
}

func TestAnUpdateKeepsWhatItLeavesOutAndMinusOneLifts(t *testing.T) {
	cur := kernel.SandboxLimits{MemoryMax: 100 << 20, PidsMax: 50, CPUQuota: 50000, CPUPeriod: 100000}
	got, err := sandboxLimits(cur, &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: ptr(int64(-1))}}, twoCPUs())
	want := kernel.SandboxLimits{PidsMax: 50, CPUQuota: 50000, CPUPeriod: 100000}
	if err != nil || got != want {
		t.Errorf("after memory -1: %+v, %v; want %+v", got, err, want)
	}
	got, err = sandboxLimits(cur, &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: ptr(int64(-1))},
		CPU: &specs.LinuxCPU{Quota: ptr(int64(-1))}}, twoCPUs())
	want = kernel.SandboxLimits{MemoryMax: 100 << 20, CPUPeriod: 100000}
	if err != nil || got != want {
		t.Errorf("after pids and quota -1: %+v, %v; want %+v", got, err, want)
	}
}

func TestBadResourcesAreOneLineNamingTheField(t *testing.T) {
	for _, c := range []struct {
		r     specs.LinuxResources
		field string
	}{
		{specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: ptr(int64(-2))}}, "linux.resources.memory.limit"},
		{specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: ptr(int64(-5))}}, "linux.resources.cpu.quota"},
		{specs.LinuxResources{CPU: &specs.LinuxCPU{Period: ptr(uint64(10))}}, "linux.resources.cpu.period"},
		{specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "5"}}, "linux.resources.cpu.cpus"},
		{specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "1-0"}}, "linux.resources.cpu.cpus"},
		{specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "x"}}, "linux.resources.cpu.cpus"},
	} {
		_, err := sandboxLimits(kernel.SandboxLimits{}, &c.r, twoCPUs())
		if err == nil || !strings.HasPrefix(err.Error(), c.field+": ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: error %v, want one line starting %q", c.r, err, c.field)
		}
	}
}

func TestCPUListsReadAsCpusetReadsThem(t *testing.T) {
	got, err := parseCPUList("3,0-1,1")
	if err != nil || len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 3 {
		t.Errorf(`parseCPUList("3,0-1,1") = %v, %v; want [0 1 3]`, got, err)
	}
}

func TestAnOverlaysDataInMemoryLeavesRoomUnderTheMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		configured int64
		limit      uint64
		want       int64
	}{
		{256 << 20, 0, 256 << 20},        // no limit: as configured
		{256 << 20, 100 << 20, 25 << 20}, // a quarter of the limit
		{8 << 20, 100 << 20, 8 << 20},    // less configured: kept
		{0, 100 << 20, 0},                // no spill file: nothing to cut
	} {
		if got := overlayMemory(c.configured, c.limit); got != c.want {
			t.Errorf("overlayMemory(%d, %d) = %d, want %d", c.configured, c.limit, got, c.want)
		}
	}
}
