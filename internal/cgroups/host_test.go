package cgroups

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// These run on the host's own hierarchies, whatever their layout.

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes cgroups on the host")
	}
	if _, err := DetectMode(Root); err != nil {
		t.Skip(err)
	}
}

func TestStartPutsTheChildInTheCgroupFromBirthAndNotTheCaller(t *testing.T) {
	needRoot(t)
	inner := fmt.Sprintf("/moat-cgroups-test-%d", os.Getpid())
	r := &specs.LinuxResources{Memory: &specs.LinuxMemory{Limit: i64(100 << 20)}, Pids: &specs.LinuxPids{Limit: i64(50)}}
	cg, err := Create(Root, inner, r)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Destroy(10 * time.Second)
	if len(cg.Dirs) == 0 {
		t.Fatal("no directories")
	}
	// The child reports its own cgroups before anything could move it.
	cmd := exec.Command("/bin/sh", "-c", "cat /proc/self/cgroup; exec sleep 60")
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = wr
	if err := cg.Start(cmd); err != nil {
		t.Fatal(err)
	}
	wr.Close()
	buf := make([]byte, 4096)
	n, _ := rd.Read(buf)
	rd.Close()
	lines := string(buf[:n])
	for key, dir := range cg.Dirs {
		if !strings.Contains(lines, ":"+key+":") {
			continue
		}
		if !strings.Contains(lines, ":"+key+":"+strings.TrimPrefix(dir, mountOf(dir, key))) {
			t.Errorf("child's own cgroups:\n%s\nwant %s in %s", lines, dir, key)
		}
	}
	procs, err := cg.Procs()
	if err != nil || !slices.Contains(procs, cmd.Process.Pid) {
		t.Errorf("Procs = %v, %v; want the child %d", procs, err, cmd.Process.Pid)
	}
	// No thread of this process stayed in it.
	self, _ := filepath.Glob("/proc/self/task/*/cgroup")
	for _, file := range self {
		data, _ := os.ReadFile(file)
		if strings.Contains(string(data), inner) {
			t.Errorf("%s: %s", file, data)
		}
	}
	if dir, ok := cg.Dirs["memory"]; ok {
		got, _ := files(dir).read("memory.limit_in_bytes")
		if got != strconv.Itoa(100<<20+SentryMemoryMargin) {
			t.Errorf("memory.limit_in_bytes %s", got)
		}
	}
	if err := cg.Destroy(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if cmd.ProcessState == nil || cmd.ProcessState.Success() {
		t.Errorf("the child was not killed: %v", cmd.ProcessState)
	}
	for _, dir := range cg.Dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s remains: %v", dir, err)
		}
	}
}

// mountOf is the mount point of the hierarchy dir is in.
func mountOf(dir, key string) string {
	rel := strings.TrimPrefix(dir, Root+"/")
	first, _, _ := strings.Cut(rel, "/")
	return Root + "/" + first
}

func TestCreateRefusesACgroupThatHoldsProcesses(t *testing.T) {
	needRoot(t)
	inner := fmt.Sprintf("/moat-cgroups-busy-%d", os.Getpid())
	cg, err := Create(Root, inner, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Destroy(10 * time.Second)
	cmd := exec.Command("sleep", "60")
	if err := cg.Start(cmd); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(Root, inner, nil); err == nil || !strings.Contains(err.Error(), "already holds processes") {
		t.Errorf("second Create: %v, want a refusal", err)
	}
	// The refusal removed nothing of the first.
	if procs, _ := cg.Procs(); !slices.Contains(procs, cmd.Process.Pid) {
		t.Errorf("after the refusal Procs = %v", procs)
	}
	if err := cg.Destroy(10 * time.Second); err != nil {
		t.Error(err)
	}
	cmd.Wait()
}

// TestDeviceProgramAllowsOnlyTheRulesDevices runs the v2 device program
// alone: the v1 devices cgroup (on a hybrid host) is opened to every
// device first, so that only the program can refuse.
func TestDeviceProgramAllowsOnlyTheRulesDevices(t *testing.T) {
	needRoot(t)
	inner := fmt.Sprintf("/moat-cgroups-devices-%d", os.Getpid())
	rules := []specs.LinuxDeviceCgroup{
		{Allow: false, Access: "rwm"},
		{Allow: true, Type: "c", Major: i64(1), Minor: i64(-1), Access: "rw"},  // /dev/null, /dev/zero...
		{Allow: false, Type: "c", Major: i64(1), Minor: i64(5), Access: "rwm"}, // ...but not /dev/zero
		{Allow: true, Type: "c", Major: i64(5), Minor: i64(2), Access: "r"},    // /dev/ptmx, read only
	}
	cg, err := Create(Root, inner, &specs.LinuxResources{Devices: rules})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Destroy(10 * time.Second)
	if _, ok := cg.Dirs[unifiedKey]; !ok {
		t.Skip("no v2 hierarchy: the program has no cgroup to attach to")
	}
	if dir, ok := cg.Dirs["devices"]; ok {
		must(t, files(dir).write("devices.allow", "a"))
	}
	script := `for f in "null r" "null w" "zero r" "urandom w" "ptmx r" "ptmx w" "tty r"; do
		set -- $f
		if [ $2 = r ]; then head -c0 /dev/$1 2>/dev/null && echo $f ok || echo $f denied
		else true 2>/dev/null >/dev/$1 && echo $f ok || echo $f denied; fi
	done`
	cmd := exec.Command("/bin/sh", "-c", script)
	rd, wr, err := os.Pipe()
	must(t, err)
	cmd.Stdout = wr
	must(t, cg.Start(cmd))
	wr.Close()
	out, _ := io.ReadAll(rd)
	cmd.Wait()
	// The last rule that matches decides; none matches /dev/tty.
	want := "null r ok\nnull w ok\nzero r denied\nurandom w ok\nptmx r ok\nptmx w denied\ntty r denied\n"
	if string(out) != want {
		t.Errorf("inside the cgroup:\n%s\nwant\n%s", out, want)
	}
}

// TestV2ModeOnAV2HierarchyAlone takes the host's v2 hierarchy (the one
// at the root on a v2 host, at unified/ on a hybrid one) as the whole
// host: membership from birth through CLONE_INTO_CGROUP, the device
// program as the only device control, and cgroup.kill on Destroy. On a
// hybrid host that hierarchy has no controllers, so no limit is tried.
func TestV2ModeOnAV2HierarchyAlone(t *testing.T) {
	needRoot(t)
	root := Root
	if mode, _ := DetectMode(Root); mode == Hybrid {
		root = filepath.Join(Root, "unified")
	} else if mode != Unified {
		t.Skip("no v2 hierarchy on this host")
	}
	if mode, err := DetectMode(root); err != nil || mode != Unified {
		t.Fatalf("DetectMode(%s) = %v, %v; want %v", root, mode, err, Unified)
	}
	inner := fmt.Sprintf("/moat-cgroups-v2-%d", os.Getpid())
	cg, err := Create(root, inner, &specs.LinuxResources{Devices: []specs.LinuxDeviceCgroup{
		{Allow: false, Access: "rwm"},
		{Allow: true, Type: "c", Major: i64(1), Minor: i64(3), Access: "rw"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Destroy(10 * time.Second)
	if len(cg.Dirs) != 1 || cg.Dirs[unifiedKey] != filepath.Join(root, inner) {
		t.Fatalf("Dirs = %v, want only %s", cg.Dirs, filepath.Join(root, inner))
	}
	cmd := exec.Command("/bin/sh", "-c", `head -c0 /dev/null && echo null ok; head -c0 /dev/zero 2>/dev/null || echo zero denied; grep '^0::' /proc/self/cgroup; exec sleep 60`)
	rd, wr, err := os.Pipe()
	must(t, err)
	cmd.Stdout = wr
	must(t, cg.Start(cmd))
	wr.Close()
	buf := make([]byte, 4096)
	var out []byte
	for !strings.Contains(string(out), "0::") {
		n, err := rd.Read(buf)
		if err != nil {
			break
		}
		out = append(out, buf[:n]...)
	}
	rd.Close()
	// Its v2 cgroup is the sandbox's from its first instruction on.
	if want := "null ok\nzero denied\n0::" + inner + "\n"; string(out) != want {
		t.Errorf("inside: %q, want %q", out, want)
	}
	if procs, _ := cg.Procs(); !slices.Contains(procs, cmd.Process.Pid) {
		t.Errorf("Procs = %v, want %d", procs, cmd.Process.Pid)
	}
	if err := cg.Destroy(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("after Destroy the child ended %v, want killed", cmd.ProcessState)
	}
	if _, err := os.Stat(filepath.Join(root, inner)); !os.IsNotExist(err) {
		t.Errorf("%s remains: %v", filepath.Join(root, inner), err)
	}
}
