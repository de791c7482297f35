package kernel

import (
	"runtime"
	"testing"
)

func TestUsableCPUsAreTheCpusetsWithinTheQuotaRoundedUp(t *testing.T) {
	all := runtime.NumCPU()
	for _, c := range []struct {
		l    SandboxLimits
		want int
	}{
		{SandboxLimits{}, all},
		{SandboxLimits{CPUQuota: 100000, CPUPeriod: 100000}, min(all, 1)},
		{SandboxLimits{CPUQuota: 50000, CPUPeriod: 100000}, 1}, // half a CPU still runs on one
		{SandboxLimits{CPUQuota: 150000, CPUPeriod: 100000}, min(all, 2)},
		{SandboxLimits{CPUQuota: 1000000, CPUPeriod: 100000}, all}, // ten CPUs' worth
		{SandboxLimits{CPUs: "0", CPUCount: 1}, 1},
		{SandboxLimits{CPUs: "0", CPUCount: 1, CPUQuota: 400000, CPUPeriod: 100000}, 1},
	} {
		if got := c.l.usableCPUs(); got != c.want {
			t.Errorf("%+v: %d usable CPUs, want %d", c.l, got, c.want)
		}
	}
}
