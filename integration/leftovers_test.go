package integration

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/ocirun"
)

// reapDelay is how long a deleted container's processes and cgroups may take
// to disappear: the runtime may return just before an orphan is reaped.
const reapDelay = 2 * time.Second

// leftovers lists what a deleted container still holds, after allowing
// reapDelay for it to go. pids are processes the container had.
func (r *realRunner) leftovers(id string, pids []int) []string {
	deadline := time.Now().Add(reapDelay)
	for {
		problems := r.leftoversNow(id, pids)
		if len(problems) == 0 || time.Now().After(deadline) {
			return problems
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *realRunner) leftoversNow(id string, pids []int) []string {
	var problems []string
	// The state root: a container the runtime still lists.
	entries, _ := os.ReadDir(r.rt.Dir)
	for _, e := range entries {
		problems = append(problems, "state "+filepath.Join(r.rt.Dir, e.Name()))
	}
	// Mounts: the runtimes mount in the container's own mount namespace,
	// so nothing of theirs may show in this one.
	for _, dir := range []string{r.rootfs, r.bundle, r.rt.Dir} {
		mounts, err := ocirun.MountsUnder(dir)
		if err != nil {
			return append(problems, err.Error())
		}
		for _, m := range mounts {
			problems = append(problems, "mount "+m)
		}
	}
	// Cgroups: runc makes one named after the container in every
	// hierarchy, and removes it only once it holds no process, so a
	// remaining one means remaining processes.
	filepath.WalkDir("/sys/fs/cgroup", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == id {
			problems = append(problems, "cgroup "+path)
		}
		return nil
	})
	for _, pid := range pids {
		if ocirun.Alive(pid) {
			problems = append(problems, fmt.Sprintf("process %d %q", pid, cmdline(pid)))
		}
	}
	// moat's gofer names the rootfs it serves; none may serve it once no
	// container runs. (Two test processes running moat at once on the
	// cached rootfs would see each other's.)
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		var pid int
		fmt.Sscan(filepath.Base(p), &pid)
		args := cmdline(pid)
		if len(args) >= 2 && args[1] == "gofer" {
			if i := slices.Index(args, "--rootfs"); i >= 0 && i+1 < len(args) && args[i+1] == r.rootfs && ocirun.Alive(pid) {
				problems = append(problems, fmt.Sprintf("gofer %d %q", pid, args))
			}
		}
	}
	return problems
}

// TestLeftoversSeen: the check that follows every run does see a container
// that is still there (its state, its cgroups, its process), so that its
// silence after a run means something.
func TestLeftoversSeen(t *testing.T) {
	runc, dir := realSetup(t)
	r := newRuncRunner(t, runc, dir)
	id := r.newContainer(t, []string{"sleep", "600"})
	// Created, not started: runc's init waits in the container, keeping
	// create's stdio.
	out := newOutput(t)
	if err := r.rt.Create(r.bundle, id, out.Stdio()); err != nil {
		stdout, stderr, _ := out.Read()
		t.Fatalf("%v: %s%s", err, stdout, stderr)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			r.rt.Delete(id)
		}
	})
	st, err := r.rt.State(id)
	must(t, err)

	problems := strings.Join(r.leftoversNow(id, []int{st.Pid}), "\n")
	for _, want := range []string{"state " + filepath.Join(r.rt.Dir, id), "cgroup ", fmt.Sprintf("process %d ", st.Pid)} {
		if !strings.Contains(problems, want) {
			t.Errorf("a live container's leftovers do not show %q:\n%s", want, problems)
		}
	}

	if err := r.rt.Delete(id); err != nil {
		t.Fatal(err)
	}
	deleted = true
	if problems := r.leftovers(id, []int{st.Pid}); len(problems) > 0 {
		t.Errorf("after delete --force: %q", problems)
	}
}
