package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/moat-sandbox/moat/internal/ocirun"
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
	rt     ocirun.Root // the runtime ("runc" or "moat", as in the subtests' names) at its --root
	rootfs string
	bundle string
	log    string // the runtime's --log, "" if none
	runs   int
	// workspace is the host directory bind-mounted at /work, as an
	// agent's workspace is: emptied before each run.
	workspace string
	// writableRoot makes the root file system writable (realSpec's is
	// read-only): moat's overlay then keeps the image clean, and runc
	// must be given a rootfs that is an overlay of its own.
	writableRoot bool
}

func newMoatRunner(t *testing.T, rootfs string) *realRunner {
	e := newMoatEnv(t)
	return &realRunner{rt: e.moat, rootfs: rootfs, bundle: e.bundle, log: e.log, workspace: t.TempDir()}
}

func newRuncRunner(t *testing.T, runc, rootfs string) *realRunner {
	dir := t.TempDir()
	rt := &ocirun.Runtime{Name: "runc", Path: runc}
	r := &realRunner{rt: rt.At(filepath.Join(dir, "state")), rootfs: rootfs, bundle: filepath.Join(dir, "bundle"),
		workspace: t.TempDir()}
	must(t, os.Mkdir(r.bundle, 0o755))
	return r
}

// realSpec is the container of every run: the shared rootfs read-only, a
// writable /tmp of its own, the workspace at /work, root in fresh
// namespaces.
func realSpec(rootfs, workspace string, args []string) *specs.Spec {
	spec := ocirun.Spec(args, []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}, "moat-realprogs")
	// Absolute: the tree is shared by every bundle (and runc refuses a
	// rootfs reached through a symlink).
	spec.Root.Path = rootfs
	spec.Mounts = []specs.Mount{
		// runc needs /proc. /dev is a tmpfs so that the runtime makes its
		// devices there and not in the shared image.
		ocirun.Proc(),
		ocirun.Tmpfs("/dev", "nosuid", "mode=755", "size=1m"),
		// The pseudo-terminals, as runc's default config mounts them.
		ocirun.Devpts(),
		// Python's multiprocessing makes its semaphores here.
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "nodev", "mode=1777", "size=16m"}},
		// Executable: gcc's output runs from it.
		ocirun.Tmpfs("/tmp", "nosuid", "nodev", "mode=1777", "size=256m"),
		{Destination: "/work", Type: "bind", Source: workspace, Options: []string{"rbind", "rw"}},
	}
	return spec
}

// newContainer writes the bundle's config.json for args, whose process
// holds the capabilities caps (the spec gives it none otherwise), and
// returns a new container id.
func (r *realRunner) newContainer(t *testing.T, args []string, caps ...string) string {
	r.runs++
	clearDir(t, r.workspace)
	spec := realSpec(r.rootfs, r.workspace, args)
	spec.Root.Readonly = !r.writableRoot
	if len(caps) > 0 {
		spec.Process.Capabilities = &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps}
	}
	must(t, ocirun.WriteSpec(r.bundle, spec))
	// The pid keeps ids apart between test processes: runc names cgroups,
	// which are machine-wide, after the id.
	return fmt.Sprintf("realprogs-%d-%d", os.Getpid(), r.runs)
}

// run runs args in a new container with `run` (its process holding the
// capabilities caps), stdin empty, and returns
// how it ended. When timeout passes, the container is killed. Either way it
// is then deleted with --force, and the run must have left nothing behind.
func (r *realRunner) run(t *testing.T, args []string, timeout time.Duration, caps ...string) outcome {
	t.Helper()
	id := r.newContainer(t, args, caps...)
	logStart := fileSize(r.log)
	// Files, not pipes: a container left running would keep a pipe open,
	// and reading it would hang the test instead of failing it.
	out := newOutput(t)
	var pids []int
	x := r.rt.Run(context.Background(), r.bundle, id, out.Stdio(), ocirun.Limits{
		Timeout: timeout,
		Stop:    func() { pids = r.kill(t, id) },
		Grace:   killGrace,
	})
	if x.StartErr != nil {
		t.Fatalf("%s run: %v", r.rt.Name, x.StartErr)
	}
	if x.Forced {
		t.Errorf("%s run %s did not return %v after its container was killed; its process group was killed", r.rt.Name, id, killGrace)
	}
	o := outcome{exit: x.Code, timedOut: x.TimedOut, took: x.Took}
	if err := r.rt.Delete(id); err != nil {
		t.Error(err)
	}
	var err error
	o.stdout, o.stderr, err = out.Read()
	must(t, err)
	o.log = readFrom(r.log, logStart)
	for _, problem := range r.leftovers(id, pids) {
		t.Errorf("%s left behind after container %s: %s", r.rt.Name, id, problem)
	}
	return o
}

// kill ends a container that outlived its timeout as its user would: the
// runtime kills it, and `run` returns. It returns the container's pid, which
// must be gone once the container is deleted.
func (r *realRunner) kill(t *testing.T, id string) []int {
	var pids []int
	if st, err := r.rt.State(id); err != nil {
		t.Errorf("%v, of a running container", err)
	} else {
		pids = append(pids, st.Pid)
	}
	if err := r.rt.Kill(id, "KILL"); err != nil {
		t.Error(err)
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
