package integration

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/cgroups"
)

// cgroupEnv is an env whose container runs with linux.resources in a
// cgroup of its own, at an absolute path no other test process uses.
type cgroupEnv struct {
	*env
	mode cgroups.Mode
	path string // linux.cgroupsPath
}

func newCgroupEnv(t *testing.T, name string) *cgroupEnv {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the sandbox's cgroup is made on the host")
	}
	mode, err := cgroups.DetectMode(cgroups.Root)
	if err != nil {
		t.Skip(err)
	}
	return &cgroupEnv{env: newEnv(t), mode: mode, path: fmt.Sprintf("/moat-test-%s-%d", name, os.Getpid())}
}

// start runs args detached with r as container id.
func (e *cgroupEnv) start(id string, r *specs.LinuxResources, args ...string) {
	e.t.Helper()
	e.startWith(nil, id, r, args...)
}

// startWith is start with moat's global flags.
func (e *cgroupEnv) startWith(flags []string, id string, r *specs.LinuxResources, args ...string) {
	e.t.Helper()
	e.writeSpec(specs.Spec{
		Version:  specs.Version,
		Process:  &specs.Process{Args: args, Env: []string{"PATH=/bin"}, Cwd: "/"},
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "moat-integration",
		Linux:    &specs.Linux{CgroupsPath: e.path, Resources: r},
	})
	if _, stderr, code := e.moatCmd(append(flags, "run", "-d", "--bundle", e.bundle, id)...); code != 0 {
		e.t.Fatalf("run -d: exit %d: %s", code, stderr)
	}
	e.t.Cleanup(func() { e.moatCmd("delete", "--force", id) })
}

// dir is the container's cgroup in the hierarchy of controller ctrl
// ("" for the v2 one).
func (e *cgroupEnv) dir(ctrl string) string {
	if e.mode == cgroups.Unified {
		return filepath.Join(cgroups.Root, e.path)
	}
	if ctrl == "" {
		return filepath.Join(cgroups.Root, "unified", e.path)
	}
	return filepath.Join(cgroups.Root, ctrl, e.path)
}

func (e *cgroupEnv) read(ctrl, file string) string {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.dir(ctrl), file))
	must(e.t, err)
	return strings.TrimSpace(string(data))
}

// leftovers lists the directories named like the container's cgroup
// anywhere under /sys/fs/cgroup.
func (e *cgroupEnv) leftovers() []string {
	var left []string
	base := filepath.Base(e.path)
	filepath.WalkDir(cgroups.Root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == base {
			left = append(left, path)
		}
		return nil
	})
	return left
}

// sandboxPids are the sentry (pid), the gofer serving the env's bundle
// and every descendant of either: the stubs.
func (e *cgroupEnv) sandboxPids(sentry int) []int {
	parents := map[int]int{}
	var roots []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(p))
		data, err := os.ReadFile(p + "/stat")
		if err != nil {
			continue
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		ppid, _ := strconv.Atoi(fields[1])
		parents[pid] = ppid
		if args := cmdline(pid); pid == sentry || len(args) >= 2 && args[1] == "gofer" && strings.Contains(strings.Join(args, " "), e.bundle) {
			roots = append(roots, pid)
		}
	}
	var all []int
	for pid := range parents {
		for p := pid; p > 1; p = parents[p] {
			if slices.Contains(roots, p) {
				all = append(all, pid)
				break
			}
		}
	}
	slices.Sort(all)
	return all
}

func procsOf(t *testing.T, dir string) []int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	must(t, err)
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		n, _ := strconv.Atoi(f)
		pids = append(pids, n)
	}
	return pids
}

func TestSandboxRunsInItsCgroupWithTheConfigsLimits(t *testing.T) {
	e := newCgroupEnv(t, "limits")
	mem := int64(100 << 20)
	r := &specs.LinuxResources{
		Memory: &specs.LinuxMemory{Limit: &mem},
		Pids:   &specs.LinuxPids{Limit: ptr(int64(50))},
		CPU:    &specs.LinuxCPU{Quota: ptr(int64(50000)), Period: ptr(uint64(100000))},
	}
	e.start("cg1", r, "sleep", "600")
	st := e.state("cg1")

	// The limits, the host's margins above the guest's.
	if e.mode == cgroups.Unified {
		checkFile(t, e.dir(""), "memory.max", strconv.FormatInt(cgroups.HostMemory(mem), 10), e.read("", "memory.max"))
		checkFile(t, e.dir(""), "pids.max", strconv.FormatInt(cgroups.HostPids(50), 10), e.read("", "pids.max"))
		checkFile(t, e.dir(""), "cpu.max", "50000 100000", e.read("", "cpu.max"))
	} else {
		checkFile(t, e.dir("memory"), "memory.limit_in_bytes", strconv.FormatInt(cgroups.HostMemory(mem), 10), e.read("memory", "memory.limit_in_bytes"))
		checkFile(t, e.dir("pids"), "pids.max", strconv.FormatInt(cgroups.HostPids(50), 10), e.read("pids", "pids.max"))
		checkFile(t, e.dir("cpu"), "cpu.cfs_quota_us", "50000", e.read("cpu", "cpu.cfs_quota_us"))
		checkFile(t, e.dir("cpu"), "cpu.cfs_period_us", "100000", e.read("cpu", "cpu.cfs_period_us"))
	}

	// Every process of the sandbox, in every hierarchy.
	pids := e.sandboxPids(st.Pid)
	if len(pids) < 3 {
		t.Fatalf("found only %v of the sandbox (sentry %d, gofer, stubs)", pids, st.Pid)
	}
	ctrls := []string{""}
	if e.mode != cgroups.Unified {
		ctrls = append(ctrls, "memory", "pids", "cpu", "cpuacct", "devices")
	}
	for _, ctrl := range ctrls {
		in := procsOf(t, e.dir(ctrl))
		for _, pid := range pids {
			if !slices.Contains(in, pid) {
				t.Errorf("%s: pid %d (%q) is not in the cgroup (which holds %v)", e.dir(ctrl), pid, cmdline(pid), in)
			}
		}
	}

	// events --stats reports the cgroup's use beside the guest's.
	out, stderr, code := e.moatCmd("events", "--stats", "cg1")
	if code != 0 {
		t.Fatalf("events --stats: exit %d: %s", code, stderr)
	}
	var ev struct {
		Data struct {
			Host *cgroups.Stats `json:"host"`
		} `json:"data"`
	}
	must(t, json.Unmarshal([]byte(out), &ev))
	if h := ev.Data.Host; h == nil || h.Memory.Usage.Usage == 0 || h.Memory.Usage.Limit != uint64(cgroups.HostMemory(mem)) ||
		h.Pids.Current < uint64(len(pids)) || h.CPU.Usage.Total == 0 {
		t.Errorf("events --stats host part: %s", out)
	}

	// update writes into the cgroup.
	if _, stderr, code := e.moatCmd("update", "--memory", "200m", "--pids-limit", "70", "cg1"); code != 0 {
		t.Fatalf("update: exit %d: %s", code, stderr)
	}
	memFile, pidsCtrl := "memory.limit_in_bytes", "pids"
	memCtrl := "memory"
	if e.mode == cgroups.Unified {
		memFile, memCtrl, pidsCtrl = "memory.max", "", ""
	}
	checkFile(t, e.dir(memCtrl), memFile, strconv.FormatInt(cgroups.HostMemory(200<<20), 10), e.read(memCtrl, memFile))
	checkFile(t, e.dir(pidsCtrl), "pids.max", strconv.FormatInt(cgroups.HostPids(70), 10), e.read(pidsCtrl, "pids.max"))

	if _, stderr, code := e.moatCmd("delete", "--force", "cg1"); code != 0 {
		t.Fatalf("delete --force: exit %d: %s", code, stderr)
	}
	if left := e.leftovers(); len(left) > 0 {
		t.Errorf("after delete: %v", left)
	}
}

func checkFile(t *testing.T, dir, file, want, got string) {
	t.Helper()
	if got != want {
		t.Errorf("%s/%s = %q, want %q", dir, file, got, want)
	}
}

func ptr[T any](v T) *T { return &v }

// TestDeleteForceAfterTheSentryWasKilledRemovesItsCgroup: a sentry killed
// with SIGKILL leaves its cgroup (and whatever else was in it) to delete
// --force, which kills what is left and removes the cgroup.
func TestDeleteForceAfterTheSentryWasKilledRemovesItsCgroup(t *testing.T) {
	e := newCgroupEnv(t, "killed")
	e.start("cg2", &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: ptr(int64(50))}}, "sleep", "600")
	st := e.state("cg2")
	pids := e.sandboxPids(st.Pid)
	if len(e.leftovers()) == 0 {
		t.Fatal("the running sandbox has no cgroup")
	}
	must(t, syscall.Kill(st.Pid, syscall.SIGKILL))
	if _, stderr, code := e.moatCmd("delete", "--force", "cg2"); code != 0 {
		t.Fatalf("delete --force: exit %d: %s", code, stderr)
	}
	if left := e.leftovers(); len(left) > 0 {
		t.Errorf("after kill -9 and delete --force: %v", left)
	}
	for _, pid := range pids {
		if args := cmdline(pid); args != nil {
			t.Errorf("process %d %q outlived delete --force", pid, args)
		}
	}
}

// TestCPUQuotaHoldsABusyLoopToItsShare: a quota of half a CPU holds a
// guest that spins to half of one CPU, as the cgroup itself counts the
// sandbox's CPU time (so a loaded host, which can only lower the figure,
// does not fail it: the upper bound is strict, the lower one loose).
func TestCPUQuotaHoldsABusyLoopToItsShare(t *testing.T) {
	e := newCgroupEnv(t, "quota")
	e.start("cg3", &specs.LinuxResources{CPU: &specs.LinuxCPU{Quota: ptr(int64(50000)), Period: ptr(uint64(100000))}},
		"sh", "-c", "while :; do :; done")
	e.state("cg3")
	usage := func() (time.Duration, time.Time) {
		if e.mode == cgroups.Unified {
			for _, line := range strings.Split(e.read("", "cpu.stat"), "\n") {
				if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					return time.Duration(n) * time.Microsecond, time.Now()
				}
			}
			t.Fatal("no usage_usec in cpu.stat")
		}
		n, err := strconv.ParseInt(e.read("cpuacct", "cpuacct.usage"), 10, 64)
		must(t, err)
		return time.Duration(n), time.Now()
	}
	// Past start-up: the loop runs once the guest has used some CPU.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if u, _ := usage(); u > 100*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the busy loop never ran")
		}
	}
	u0, t0 := usage()
	time.Sleep(5 * time.Second) // the span measured, not a wait for an event
	u1, t1 := usage()
	share := float64(u1-u0) / float64(t1.Sub(t0))
	t.Logf("CPU used: %v in %v: %.3f of one CPU", u1-u0, t1.Sub(t0).Round(time.Millisecond), share)
	if share > 0.6 {
		t.Errorf("a quota of 0.5 CPU let the sandbox use %.3f of one CPU", share)
	}
	if share < 0.02 {
		t.Errorf("the sandbox used only %.3f of one CPU: was the loop running?", share)
	}
}

// TestSystemdCgroupPathNamesTheScopeSystemdWouldMake: with
// --systemd-cgroup, slice:prefix:name is the scope prefix-name.scope in
// the slice's directory (the root slice here, so that no slice is left
// on the host), made by moat itself.
func TestSystemdCgroupPathNamesTheScopeSystemdWouldMake(t *testing.T) {
	e := newCgroupEnv(t, "systemd")
	name := fmt.Sprintf("cg4-%d", os.Getpid())
	e.path = "-.slice:moat-test:" + name
	e.startWith([]string{"--systemd-cgroup"}, "cg4", &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: ptr(int64(50))}}, "sleep", "600")
	st := e.state("cg4")
	e.path = "/moat-test-" + name + ".scope" // where the scope's cgroup must be
	ctrl := "pids"
	if e.mode == cgroups.Unified {
		ctrl = ""
	}
	if !slices.Contains(procsOf(t, e.dir(ctrl)), st.Pid) {
		t.Errorf("the sentry %d is not in %s", st.Pid, e.dir(ctrl))
	}
	checkFile(t, e.dir(ctrl), "pids.max", strconv.FormatInt(cgroups.HostPids(50), 10), e.read(ctrl, "pids.max"))
	if _, stderr, code := e.moatCmd("delete", "--force", "cg4"); code != 0 {
		t.Fatalf("delete --force: exit %d: %s", code, stderr)
	}
	if left := e.leftovers(); len(left) > 0 {
		t.Errorf("after delete: %v", left)
	}
}
