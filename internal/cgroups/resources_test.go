package cgroups

import (
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func TestSharesToWeightKeepsTheEndsAndTheDefault(t *testing.T) {
	for _, c := range []struct{ shares, weight uint64 }{
		{0, 0},          // unset stays unset
		{1, 1},          // below v1's minimum: v2's minimum
		{2, 1},          // the ends map onto the ends
		{262144, 10000}, //
		{1 << 20, 10000},
		{1024, 100}, // the default onto the default
	} {
		if got := SharesToWeight(c.shares); got != c.weight {
			t.Errorf("SharesToWeight(%d) = %d, want %d", c.shares, got, c.weight)
		}
	}
	// Monotonic between the ends, and within v2's range.
	prev := uint64(0)
	for s := uint64(2); s <= 262144; s += 97 {
		w := SharesToWeight(s)
		if w < prev || w < 1 || w > 10000 {
			t.Fatalf("SharesToWeight(%d) = %d after %d", s, w, prev)
		}
		prev = w
	}
}

func TestBlkioToIOWeightMapsTheRangeOntoV2s(t *testing.T) {
	for _, c := range []struct {
		in   uint16
		want uint64
	}{{0, 0}, {10, 1}, {1000, 10000}, {500, 1 + 490*9999/990}} {
		if got := BlkioToIOWeight(c.in); got != c.want {
			t.Errorf("BlkioToIOWeight(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestSwapV2IsMemoryPlusSwapLessMemory(t *testing.T) {
	for _, c := range []struct{ swap, limit, want int64 }{
		{0, 100, 0},   // unset
		{-1, 100, -1}, // no limit
		{0, -1, -1},   // no memory limit: no swap limit either, as memsw follows on v1
		{300, 100, 200},
		{100, 100, 0},
	} {
		if got := swapV2(c.swap, c.limit); got != c.want {
			t.Errorf("swapV2(%d, %d) = %d, want %d", c.swap, c.limit, got, c.want)
		}
	}
}

func i64(v int64) *int64   { return &v }
func u64(v uint64) *uint64 { return &v }
func u16(v uint16) *uint16 { return &v }

func TestValidateNamesTheFieldOfABadValue(t *testing.T) {
	for _, c := range []struct {
		r    specs.LinuxResources
		want string
	}{
		{specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(-5)}}, "linux.resources.memory.limit: -5: must be positive"},
		{specs.LinuxResources{Memory: &specs.LinuxMemory{Reservation: i64(-2)}}, "linux.resources.memory.reservation: -2: "},
		{specs.LinuxResources{Memory: &specs.LinuxMemory{Swap: i64(1 << 20)}}, "linux.resources.memory.swap: 1048576: a swap limit needs a memory limit"},
		{specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(200), Swap: i64(100)}}, "linux.resources.memory.swap: 100: memory plus swap must be at least the memory limit (200)"},
		{specs.LinuxResources{Memory: &specs.LinuxMemory{Swappiness: u64(101)}}, "linux.resources.memory.swappiness: 101: "},
		{specs.LinuxResources{CPU: &specs.LinuxCPU{Shares: u64(1)}}, "linux.resources.cpu.shares: 1: must be 2 to 262144"},
		{specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: i64(-7)}}, "linux.resources.cpu.quota: -7: "},
		{specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: i64(500)}}, "linux.resources.cpu.quota: 500: must be at least 1000"},
		{specs.LinuxResources{CPU: &specs.LinuxCPU{Period: u64(100)}}, "linux.resources.cpu.period: 100: "},
		{specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "0-7"}}, `linux.resources.cpu.cpus: "0-7": 2 is not among the host's (0-1)`},
		{specs.LinuxResources{CPU: &specs.LinuxCPU{Cpus: "1-0"}}, `linux.resources.cpu.cpus: "1-0": "1-0" is not a number or a range`},
		{specs.LinuxResources{CPU: &specs.LinuxCPU{Mems: "1"}}, `linux.resources.cpu.mems: "1": 1 is not among the host's (0)`},
		{specs.LinuxResources{Pids: &specs.LinuxPids{Limit: i64(-3)}}, "linux.resources.pids.limit: -3: "},
		{specs.LinuxResources{BlockIO: &specs.LinuxBlockIO{Weight: u16(5)}}, "linux.resources.blockIO.weight: 5: must be 10 to 1000"},
		{specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{Type: "x"}}}, `linux.resources.devices[0].type: "x": must be a, b or c`},
		{specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{{}, {Type: "c", Access: "rwx"}}}, `linux.resources.devices[1].access: "rwx": `},
	} {
		err := Validate(&c.r, "0-1", "0")
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("Validate(%+v): %v, want one line starting %q", c.r, err, c.want)
		}
	}
}

func TestValidateTakesWhatRuncTakes(t *testing.T) {
	ok := specs.LinuxResources{
		Memory:  &specs.LinuxMemory{Limit: i64(100 << 20), Swap: i64(200 << 20), Reservation: i64(-1)},
		CPU:     &specs.LinuxCPU{Shares: u64(1024), Quota: i64(-1), Period: u64(100000), Cpus: "0-1", Mems: "0"},
		Pids:    &specs.LinuxPids{Limit: i64(-1)},
		BlockIO: &specs.LinuxBlockIO{Weight: u16(10)},
		Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}, {Allow: true, Type: "c", Major: i64(1), Minor: i64(-1), Access: "rw"}},
	}
	if err := Validate(&ok, "0-1", "0"); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if err := Validate(nil, "", ""); err != nil {
		t.Errorf("Validate(nil): %v", err)
	}
}
