package engines

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/cgroups"
)

// TestPodmanLimitsReachTheSandboxsCgroup: podman's --memory, --pids-limit
// and --cpus land in the cgroup of the container's process (moat's
// sentry, with the host's margins above the guest's memory and pids, runc's
// init as they are), and podman update changes them there.
func TestPodmanLimitsReachTheSandboxsCgroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: podman's containers get cgroups on the host")
	}
	needPackages(t, "podman", "podman")
	mode, err := cgroups.DetectMode(cgroups.Root)
	if err != nil {
		t.Skip(err)
	}
	if r := run(t, "podman", "import", "-q", busyboxTar(t), image); r.code != 0 {
		t.Fatalf("podman import: %s", r.stderr)
	}
	for _, rt := range runtimes(t) {
		t.Run(rt.name, func(t *testing.T) {
			p := client{t: t, rt: rt, argv: []string{"podman", "--runtime", rt.path}}
			name := "moat-engines-cgroup-" + rt.name
			p.cmd("rm", "-f", "-t", "0", name)
			p.ok("run", "-d", "--name", name, "--memory", "100m", "--pids-limit", "50", "--cpus", "0.5", image, "sleep", "1000")
			defer p.cmd("rm", "-f", "-t", "0", name)
			pid := strings.TrimSpace(p.ok("inspect", "-f", "{{.State.Pid}}", name))

			memory, pids := int64(100<<20), int64(50)
			if rt.name == "moat" {
				memory, pids = cgroups.HostMemory(memory), cgroups.HostPids(pids)
			}
			cg := processCgroup(t, mode, pid)
			if mode == cgroups.Unified {
				expectCgroupFile(t, cg(""), "memory.max", strconv.FormatInt(memory, 10))
				expectCgroupFile(t, cg(""), "pids.max", strconv.FormatInt(pids, 10))
				expectCgroupFile(t, cg(""), "cpu.max", "50000 100000")
			} else {
				expectCgroupFile(t, cg("memory"), "memory.limit_in_bytes", strconv.FormatInt(memory, 10))
				expectCgroupFile(t, cg("pids"), "pids.max", strconv.FormatInt(pids, 10))
				expectCgroupFile(t, cg("cpu"), "cpu.cfs_quota_us", "50000")
				expectCgroupFile(t, cg("cpu"), "cpu.cfs_period_us", "100000")
			}

			p.ok("update", "--memory", "200m", name)
			memory = 200 << 20
			if rt.name == "moat" {
				memory = cgroups.HostMemory(memory)
			}
			if mode == cgroups.Unified {
				expectCgroupFile(t, cg(""), "memory.max", strconv.FormatInt(memory, 10))
			} else {
				expectCgroupFile(t, cg("memory"), "memory.limit_in_bytes", strconv.FormatInt(memory, 10))
			}
		})
	}
}

// processCgroup returns, for a controller ("" on v2), the directory of
// pid's cgroup in its hierarchy, from /proc/PID/cgroup.
func processCgroup(t *testing.T, mode cgroups.Mode, pid string) func(ctrl string) string {
	data, err := os.ReadFile("/proc/" + pid + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.SplitN(line, ":", 3); len(f) == 3 {
			for _, c := range strings.Split(f[1], ",") {
				paths[c] = f[2]
			}
		}
	}
	return func(ctrl string) string {
		p, ok := paths[ctrl]
		if !ok {
			t.Fatalf("pid %s is in no %q cgroup: %s", pid, ctrl, data)
		}
		if mode == cgroups.Unified {
			return filepath.Join(cgroups.Root, p)
		}
		return filepath.Join(cgroups.Root, ctrl, p)
	}
}

func expectCgroupFile(t *testing.T, dir, file, want string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Error(err)
		return
	}
	if got := strings.TrimSpace(string(data)); got != want {
		t.Errorf("%s/%s = %s, want %s", dir, file, got, want)
	}
}
