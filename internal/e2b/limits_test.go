package e2b

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestEverySandboxHasTheServersHardLimits(t *testing.T) {
	l := Limits{CPUs: 3, MemoryMB: 768, PIDs: 100}
	r := sandboxSpec("/r", "id", "/b", egress{}, l).Linux.Resources
	if r == nil || r.Memory == nil || *r.Memory.Limit != 768<<20 || r.CPU == nil || *r.CPU.Quota != 300000 ||
		*r.CPU.Period != 100000 || r.Pids == nil || r.Pids.Limit == nil || *r.Pids.Limit != 100 {
		t.Fatalf("linux.resources %+v, want 768 MiB, 3 CPUs' quota and 100 tasks", r)
	}
	s, err := New(Config{APIKey: "k", StateDir: filepath.Join(t.TempDir(), "state"),
		Templates: map[string]string{"base": t.TempDir()}, Moat: "/nonexistent/moat", Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	if d := s.describe(&sandbox{id: "x"}, false); d.CPUCount != 3 || d.MemoryMB != 768 {
		t.Errorf("described with %d CPUs and %d MiB, want the limits' 3 and 768", d.CPUCount, d.MemoryMB)
	}
	if d := newTestServer(t).describe(&sandbox{id: "x"}, false); d.CPUCount != DefaultLimits.CPUs || d.MemoryMB != int(DefaultLimits.MemoryMB) {
		t.Errorf("a server given no limits describes %d CPUs and %d MiB, want the defaults", d.CPUCount, d.MemoryMB)
	}
}

func TestLimitsThatAreNoLimitsAreRefused(t *testing.T) {
	for _, l := range []Limits{{CPUs: 0, MemoryMB: 512, PIDs: 100}, {CPUs: 1, MemoryMB: 1, PIDs: 100}, {CPUs: 1, MemoryMB: 512, PIDs: -1}} {
		_, err := New(Config{APIKey: "k", StateDir: filepath.Join(t.TempDir(), "state"),
			Templates: map[string]string{"base": t.TempDir()}, Moat: "/nonexistent/moat", Limits: l})
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want a one-line refusal", l, err)
		}
	}
}
