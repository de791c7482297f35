package sysfs_test

import (
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/sysfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/syscalls"
)

// cgroupSandbox mounts the sandbox's cgroup view at /cg.
func cgroupSandbox(t *testing.T, l kernel.SandboxLimits) *kerneltest.Sandbox {
	t.Helper()
	s := kerneltest.New(t, syscalls.NewTable())
	s.Kernel.SetSandboxLimits(l)
	point, err := vfs.MakeMountPoint(s.Root, "cg", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vfs.Attach(point, sysfs.NewCgroup(s.Kernel), "cgroup2", unix.MS_RDONLY); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCgroupFilesShowTheSandboxsLimitsAsCgroupV2Does(t *testing.T) {
	s := cgroupSandbox(t, kernel.SandboxLimits{MemoryMax: 100 << 20, PidsMax: 50, CPUQuota: 50000, CPUPeriod: 100000,
		CPUs: "1", CPUCount: 1})
	run(t, s, func(g *fake.Guest) {
		for file, want := range map[string]string{
			"memory.max":            "104857600\n",
			"pids.max":              "50\n",
			"cpu.max":               "50000 100000\n",
			"cpuset.cpus.effective": "0\n",
			"cgroup.controllers":    "cpuset cpu memory pids\n",
			"cgroup.procs":          "1\n",
			"pids.current":          "1\n",
		} {
			if got, errno := read(t, g, "/cg/"+file); errno != 0 || got != want {
				t.Errorf("%s = %q, %v; want %q", file, got, errno, want)
			}
		}
		got, _ := read(t, g, "/cg/memory.current")
		if n, err := strconv.ParseUint(strings.TrimSpace(got), 10, 64); err != nil || n == 0 {
			t.Errorf("memory.current = %q, want a byte count", got)
		}
		// moat update: the files show the new limits.
		s.Kernel.SetSandboxLimits(kernel.SandboxLimits{})
		for file, want := range map[string]string{"memory.max": "max\n", "pids.max": "max\n", "cpu.max": "max 100000\n"} {
			if got, errno := read(t, g, "/cg/"+file); errno != 0 || got != want {
				t.Errorf("%s with no limit = %q, %v; want %q", file, got, errno, want)
			}
		}
		if _, errno := g.Call(unix.SYS_OPENAT, ^uintptr(99), g.CString("/cg/memory.max"), unix.O_WRONLY); errno != unix.EROFS {
			t.Errorf("open memory.max for writing: %v, want EROFS", errno)
		}
	})
}
