package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
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
	entries, _ := os.ReadDir(r.root)
	for _, e := range entries {
		problems = append(problems, "state "+filepath.Join(r.root, e.Name()))
	}
	// Mounts: the runtimes mount in the container's own mount namespace,
	// so nothing of theirs may show in this one.
	mounts, err := mountPoints()
	if err != nil {
		return append(problems, err.Error())
	}
	for _, m := range mounts {
		for _, dir := range []string{r.rootfs, r.bundle, r.root} {
			if m == dir || strings.HasPrefix(m, dir+"/") {
				problems = append(problems, "mount "+m)
			}
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
		if alive(pid) {
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
			if i := slices.Index(args, "--rootfs"); i >= 0 && i+1 < len(args) && args[i+1] == r.rootfs && alive(pid) {
				problems = append(problems, fmt.Sprintf("gofer %d %q", pid, args))
			}
		}
	}
	return problems
}

// alive reports whether pid runs: it exists and is not a zombie, which
// holds nothing but its pid.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and
	// may itself contain ") ".
	s := string(b)
	i := strings.LastIndex(s, ") ")
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// mountPoints lists the mount points of this process's mount namespace.
func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The kernel escapes these four characters in paths as octal.
	unescape := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	var points []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Fields: mount id, parent id, major:minor, root, mount point, ...
		if f := strings.Fields(sc.Text()); len(f) >= 5 {
			points = append(points, unescape.Replace(f[4]))
		}
	}
	return points, sc.Err()
}

// TestLeftoversSeen: the check that follows every run does see a container
// that is still there (its state, its cgroups, its process), so that its
// silence after a run means something.
func TestLeftoversSeen(t *testing.T) {
	runc, dir := realSetup(t)
	r := newRuncRunner(t, runc, dir)
	id := r.newContainer(t, []string{"sleep", "600"})
	// Created, not started: runc's init waits in the container. It keeps
	// create's stdio, so they are a file: a pipe would never see EOF.
	create := r.command("create", "--bundle", r.bundle, id)
	out, err := os.Create(filepath.Join(t.TempDir(), "create.out"))
	must(t, err)
	defer out.Close()
	create.Stdout, create.Stderr = out, out
	if err := create.Run(); err != nil {
		msg, _ := os.ReadFile(out.Name())
		t.Fatalf("runc create: %v: %s", err, msg)
	}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			r.command("delete", "--force", id).Run()
		}
	})
	state, err := r.command("state", id).Output()
	must(t, err)
	var st specs.State
	must(t, json.Unmarshal(state, &st))

	problems := strings.Join(r.leftoversNow(id, []int{st.Pid}), "\n")
	for _, want := range []string{"state " + filepath.Join(r.root, id), "cgroup ", fmt.Sprintf("process %d ", st.Pid)} {
		if !strings.Contains(problems, want) {
			t.Errorf("a live container's leftovers do not show %q:\n%s", want, problems)
		}
	}

	if out, err := r.command("delete", "--force", id).CombinedOutput(); err != nil {
		t.Fatalf("runc delete --force: %v: %s", err, out)
	}
	deleted = true
	if problems := r.leftovers(id, []int{st.Pid}); len(problems) > 0 {
		t.Errorf("after delete --force: %q", problems)
	}
}
