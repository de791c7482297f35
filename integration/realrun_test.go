package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// killGrace is how long `run` may take to return once its container was
// killed, before the test kills it and its helpers itself.
const killGrace = 5 * time.Second

// outcome is how one container run ended.
type outcome struct {
	exit     int // the runtime's exit status: the guest's, 128+N for signal N
	stdout   string
	stderr   string
	timedOut bool
	took     time.Duration
	log      string // what the runtime logged during the run
}

// realRunner runs command lines, one container at a time, in a bundle
// whose rootfs is the cached Debian tree, under one runc-compatible runtime.
type realRunner struct {
	name    string // "runc" or "moat", as in the subtests' names
	rootfs  string
	bundle  string
	root    string                         // the runtime's --root
	log     string                         // the runtime's --log, "" if none
	command func(args ...string) *exec.Cmd // the runtime with its global flags
	runs    int
}

// newBareEnv is newEnv without the busybox tree: the bundle holds only the
// config.json that each run writes.
func newBareEnv(t *testing.T) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{t: t, moat: moatBinary(t), root: filepath.Join(dir, "state"), bundle: filepath.Join(dir, "bundle"),
		log: filepath.Join(dir, "moat.log")}
	must(t, os.Mkdir(e.bundle, 0o755))
	t.Cleanup(e.checkClean)
	return e
}

func newMoatRunner(t *testing.T, rootfs string) *realRunner {
	e := newBareEnv(t)
	return &realRunner{name: "moat", rootfs: rootfs, bundle: e.bundle, root: e.root, log: e.log, command: e.command}
}

func newRuncRunner(t *testing.T, runc, rootfs string) *realRunner {
	dir := t.TempDir()
	r := &realRunner{name: "runc", rootfs: rootfs, bundle: filepath.Join(dir, "bundle"), root: filepath.Join(dir, "state")}
	r.command = func(args ...string) *exec.Cmd {
		return exec.Command(runc, append([]string{"--root", r.root}, args...)...)
	}
	must(t, os.Mkdir(r.bundle, 0o755))
	return r
}

// realSpec is the container of every run: the shared rootfs read-only, a
// writable /tmp of its own, root in fresh namespaces.
func realSpec(rootfs string, args []string) *specs.Spec {
	return &specs.Spec{
		Version: specs.Version,
		Process: &specs.Process{
			User: specs.User{UID: 0, GID: 0},
			Args: args,
			Env:  []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"},
			Cwd:  "/",
		},
		// Absolute: the tree is shared by every bundle (and runc refuses
		// a rootfs reached through a symlink).
		Root:     &specs.Root{Path: rootfs, Readonly: true},
		Hostname: "moat-realprogs",
		Mounts: []specs.Mount{
			// runc needs /proc. /dev is a tmpfs so that the runtime
			// makes its devices there and not in the shared image.
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "mode=755", "size=1m"}},
			// Python's multiprocessing makes its semaphores here.
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "nodev", "mode=1777", "size=16m"}},
			// Executable: gcc's output runs from it.
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", "size=256m"}},
		},
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace},
				{Type: specs.MountNamespace},
				{Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace},
				{Type: specs.NetworkNamespace},
			},
		},
	}
}

// newContainer writes the bundle's config.json for args and returns a
// new container id.
func (r *realRunner) newContainer(t *testing.T, args []string) string {
	r.runs++
	data, err := json.Marshal(realSpec(r.rootfs, args))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(r.bundle, "config.json"), data, 0o644))
	// The pid keeps ids apart between test processes: runc names cgroups,
	// which are machine-wide, after the id.
	return fmt.Sprintf("realprogs-%d-%d", os.Getpid(), r.runs)
}

// run runs args in a new container with `run`, stdin empty, and returns
// how it ended. When timeout passes, the container is killed. Either way it
// is then deleted with --force, and the run must have left nothing behind.
func (r *realRunner) run(t *testing.T, args []string, timeout time.Duration) outcome {
	t.Helper()
	id := r.newContainer(t, args)
	logStart := fileSize(r.log)

	// Files, not pipes: a container left running would keep a pipe open,
	// and reading it would hang the test instead of failing it.
	dir := t.TempDir()
	outF, err := os.Create(filepath.Join(dir, "stdout"))
	must(t, err)
	defer outF.Close()
	errF, err := os.Create(filepath.Join(dir, "stderr"))
	must(t, err)
	defer errF.Close()

	cmd := r.command("run", "--bundle", r.bundle, id)
	cmd.Stdout, cmd.Stderr = outF, errF
	// A group of its own, so that a runtime that ignores the kill can be
	// killed together with whatever it started.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s run: %v", r.name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()

	var o outcome
	var pids []int
	select {
	case <-done:
	case <-time.After(timeout):
		o.timedOut = true
		pids = r.kill(t, id, cmd, done)
	}
	o.took = time.Since(start)
	o.exit = cmd.ProcessState.ExitCode()
	if out, err := r.command("delete", "--force", id).CombinedOutput(); err != nil {
		t.Errorf("%s delete --force %s: %v: %s", r.name, id, err, out)
	}
	stdout, err := os.ReadFile(outF.Name())
	must(t, err)
	stderr, err := os.ReadFile(errF.Name())
	must(t, err)
	o.stdout, o.stderr = string(stdout), string(stderr)
	o.log = readFrom(r.log, logStart)
	for _, problem := range r.leftovers(id, pids) {
		t.Errorf("%s left behind after container %s: %s", r.name, id, problem)
	}
	return o
}

// kill ends a container that outlived its timeout as its user would: the
// runtime kills it, and `run` returns. It returns the container's pid, which
// must be gone once the container is deleted.
func (r *realRunner) kill(t *testing.T, id string, cmd *exec.Cmd, done <-chan struct{}) []int {
	var pids []int
	if out, err := r.command("state", id).Output(); err != nil {
		t.Errorf("%s state %s of a running container: %v", r.name, id, err)
	} else {
		var st specs.State
		must(t, json.Unmarshal(out, &st))
		pids = append(pids, st.Pid)
	}
	if out, err := r.command("kill", id, "KILL").CombinedOutput(); err != nil {
		t.Errorf("%s kill %s KILL: %v: %s", r.name, id, err, out)
	}
	select {
	case <-done:
	case <-time.After(killGrace):
		t.Errorf("%s run %s did not return %v after its container was killed; killing its process group", r.name, id, killGrace)
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	return pids
}

// fileSize returns the size of the file at path, 0 if there is none.
func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// readFrom returns the last lines of the file at path from offset on:
// what the runtime logged during one run, where it says why the run went
// wrong.
func readFrom(path string, offset int64) string {
	data, _ := os.ReadFile(path)
	if offset > int64(len(data)) {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data[offset:]), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-30):], "\n")
}
