package cgroups

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/mountinfo"
)

// Root is where the host's cgroup hierarchies are mounted.
const Root = "/sys/fs/cgroup"

// unifiedKey keys the v2 hierarchy's directory in Cgroup.Dirs.
const unifiedKey = ""

// Cgroup is a sandbox's cgroup on the host, as the container's state
// records it.
type Cgroup struct {
	Mode Mode `json:"mode"`
	// Dirs is the cgroup's directory in each hierarchy: a v1 one's keyed
	// by its controllers as /proc/self/cgroup lists them ("memory",
	// "cpu,cpuacct", "name=systemd"), the v2 one's by "".
	Dirs map[string]string `json:"dirs"`

	// home is the caller's own cgroup in each v1 hierarchy, where the
	// thread that Start moves returns to.
	home map[string]string
}

// Create makes the cgroup inner (Inner's result) in every hierarchy
// under root and applies r to it. On error nothing of it remains.
func Create(root, inner string, r *specs.LinuxResources) (_ *Cgroup, err error) {
	mode, err := DetectMode(root)
	if err != nil {
		return nil, err
	}
	if mode != Unified && r != nil && len(r.Unified) > 0 {
		return nil, fieldError("linux.resources.unified", fmt.Sprint(r.Unified), "needs a cgroup v2 host; this one's controllers are on v1")
	}
	mounts, err := mountinfo.Read()
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	v1, v2 := readHierarchies(mounts, root)
	self, err := openProc("cgroup")
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	own, err := ownCgroups(self)
	self.Close()
	if err != nil {
		return nil, fmt.Errorf("cgroups: /proc/self/cgroup: %w", err)
	}

	cg := &Cgroup{Mode: mode, Dirs: map[string]string{}, home: map[string]string{}}
	defer func() {
		if err != nil {
			cg.Destroy(time.Second)
		}
	}()
	if mode != Unified {
		for _, h := range v1 {
			key := joinControllers(h.controllers)
			dir := dirIn(h, inner, own[key])
			cg.home[key] = dirIn(h, own[key], "/")
			if err := cg.make(key, dir, h.mountpoint, hasController(h, "cpuset")); err != nil {
				return nil, err
			}
		}
	}
	if v2 != nil && (mode == Unified || mode == Hybrid) {
		ownV2 := own[unifiedKey]
		if mode == Unified && !filepath.IsAbs(inner) {
			// The caller's own cgroup holds processes, so none of its
			// children may enable a controller: runc takes its parent.
			ownV2 = filepath.Dir(ownV2)
		}
		dir := dirIn(*v2, inner, ownV2)
		if mode == Unified {
			if err := enableControllers(v2.mountpoint, dir); err != nil {
				return nil, err
			}
		}
		if err := cg.make(unifiedKey, dir, v2.mountpoint, false); err != nil {
			return nil, err
		}
	}
	if len(cg.Dirs) == 0 {
		return nil, fmt.Errorf("cgroups: no cgroup hierarchy is mounted under %s", root)
	}
	if r == nil {
		r = &specs.LinuxResources{}
	}
	if err := cg.apply(r, true); err != nil {
		return nil, err
	}
	// On a hybrid host v1's devices cgroup holds the allowlist already;
	// the program on the v2 cgroup holds it too, as on a v2 host.
	if dir, ok := cg.Dirs[unifiedKey]; ok {
		if err := attachDeviceProgram(dir, r.Devices); err != nil {
			return nil, err
		}
	}
	return cg, nil
}

// make creates dir (and the parents it lacks) in the hierarchy mounted at
// mnt and records it under key. A cgroup that already holds processes is
// another's and is refused. A new v1 cpuset starts with no CPU and no
// memory node, where no process may join: each new level copies its
// parent's.
func (cg *Cgroup) make(key, dir, mnt string, cpuset bool) error {
	rel, err := filepath.Rel(mnt, dir)
	if err != nil || rel == "." || rel == ".." || filepath.IsAbs(rel) || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("cgroups: %s is not inside the hierarchy at %s", dir, mnt)
	}
	cur := mnt
	for _, part := range splitPath(rel) {
		cur = filepath.Join(cur, part)
		err := os.Mkdir(cur, 0o755)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cgroups: %w", err)
		}
		if cur == dir {
			cg.Dirs[key] = dir // ours from here on, for Destroy
		}
	}
	if cpuset {
		if err := seedCpuset(mnt, splitPath(rel)); err != nil {
			return err
		}
	}
	if _, ours := cg.Dirs[key]; !ours {
		pids, err := files(dir).procs()
		if err != nil {
			return err
		}
		if len(pids) > 0 {
			return fmt.Errorf("cgroups: %s already holds processes (%d of them): it is another container's", dir, len(pids))
		}
		cg.Dirs[key] = dir
	}
	return nil
}

// seedCpuset gives each level of a v1 cpuset path below mnt whose CPUs or
// memory nodes are empty its parent's, top down.
func seedCpuset(mnt string, parts []string) error {
	parent := mnt
	for _, part := range parts {
		cur := filepath.Join(parent, part)
		for _, name := range []string{"cpuset.cpus", "cpuset.mems"} {
			if v, err := files(cur).read(name); err != nil || v != "" {
				if err != nil {
					return err
				}
				continue
			}
			v, err := files(parent).read(name)
			if err == nil {
				err = files(cur).write(name, v)
			}
			if err != nil {
				return err
			}
		}
		parent = cur
	}
	return nil
}

// splitPath is a relative path's components.
func splitPath(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

// enableControllers enables, in each cgroup from the v2 root down to
// dir's parent, every controller the level has, so that dir gets them.
func enableControllers(mnt, dir string) error {
	rel, err := filepath.Rel(mnt, filepath.Dir(dir))
	if err != nil {
		return err
	}
	cur := mnt
	levels := append([]string{""}, splitPath(rel)...)
	for _, part := range levels {
		cur = filepath.Join(cur, part)
		if _, err := os.Stat(cur); errors.Is(err, os.ErrNotExist) {
			if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return fmt.Errorf("cgroups: %w", err)
			}
		}
		have, err := files(cur).read("cgroup.controllers")
		if err != nil {
			return err
		}
		var enable string
		for _, c := range splitFields(have) {
			enable += " +" + c
		}
		if enable == "" {
			continue
		}
		if err := files(cur).write("cgroup.subtree_control", enable[1:]); err != nil {
			return err
		}
	}
	return nil
}

// Apply writes r into the cgroup; fields r leaves unset keep their value.
// The device allowlist is made once, by Create, as runc's update leaves it
// too.
func (cg *Cgroup) Apply(r *specs.LinuxResources) error {
	if cg == nil {
		return nil // a sandbox without a cgroup (cmd/moat's rootless case)
	}
	if r == nil {
		r = &specs.LinuxResources{}
	}
	return cg.apply(r, false)
}

func (cg *Cgroup) apply(r *specs.LinuxResources, devices bool) error {
	for _, key := range cg.keys() {
		f := files(cg.Dirs[key])
		if key == unifiedKey {
			if cg.Mode == Unified {
				if err := applyV2(f, r); err != nil {
					return err
				}
			}
			continue
		}
		for _, ctrl := range splitControllers(key) {
			if ctrl == "devices" && !devices {
				continue
			}
			if err := applyV1(ctrl, f, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// keys are Dirs' keys in a fixed order, so that errors are repeatable.
func (cg *Cgroup) keys() []string {
	keys := make([]string, 0, len(cg.Dirs))
	for k := range cg.Dirs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Start starts cmd inside the cgroup, so that the process and all it
// forks are in it from their first instruction: none of it runs, nor
// makes its namespaces (its cgroup namespace is rooted at its cgroup),
// outside. On v1 a thread of this process joins the cgroup alone, forks
// cmd and returns; the thread then ends with its goroutine, never to run
// other Go code. On v2 clone3 puts the child in the cgroup
// (CLONE_INTO_CGROUP), as v2 lets no thread leave its process's cgroup.
// Only a Cgroup that Create returned can Start.
func (cg *Cgroup) Start(cmd *exec.Cmd) error {
	if dir, ok := cg.Dirs[unifiedKey]; ok {
		fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cgroups: %w", err)
		}
		defer unix.Close(fd)
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	if cg.Mode == Unified {
		return cmd.Start()
	}
	// exec.Cmd opens /dev/null for the stdio it is not given, on the
	// thread that starts it: here, so that the device controller, which
	// denies it inside, never sees the open.
	if cmd.Stdin == nil || cmd.Stdout == nil || cmd.Stderr == nil {
		null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer null.Close()
		if cmd.Stdin == nil {
			cmd.Stdin = null
		}
		if cmd.Stdout == nil {
			cmd.Stdout = null
		}
		if cmd.Stderr == nil {
			cmd.Stderr = null
		}
	}
	done := make(chan error, 1)
	go func() {
		// Never unlocked: the thread exits with this goroutine.
		runtime.LockOSThread()
		err := cg.moveThread(cg.Dirs)
		if err == nil {
			err = cmd.Start()
		}
		// Back home before the caller goes on, so that no later look at
		// the cgroup finds this process in it while the thread exits.
		if homeErr := cg.moveThread(cg.home); err == nil && homeErr != nil {
			err = homeErr
		}
		done <- err
	}()
	return <-done
}

// moveThread moves the calling thread into each v1 directory of dirs. It
// writes "0", the writer itself, not its thread id: the kernel moves a
// thread that names itself so without the lock that keeps every thread
// group of the host from forking or exiting meanwhile, whose first taker
// after a quiet spell waits for an RCU grace period: on every sandbox's
// start, as sandboxes start seldom enough for the spell to pass.
func (cg *Cgroup) moveThread(dirs map[string]string) error {
	for _, key := range cg.keys() {
		if dir, ok := dirs[key]; ok && key != unifiedKey {
			if err := files(dir).write("tasks", "0"); err != nil {
				return err
			}
		}
	}
	return nil
}

// Procs lists the processes in the cgroup (in every hierarchy: on v1 a
// process may have been moved out of some).
func (cg *Cgroup) Procs() ([]int, error) {
	seen := map[int]bool{}
	var all []int
	for _, key := range cg.keys() {
		pids, err := files(cg.Dirs[key]).procs()
		if isNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, p := range pids {
			if !seen[p] {
				seen[p] = true
				all = append(all, p)
			}
		}
	}
	sort.Ints(all)
	return all, nil
}

// Destroy kills every process left in the cgroup (the whole sandbox, if
// its sentry died and left stubs or the gofer), waits up to timeout for
// them to be gone and removes the cgroup's directories. A cgroup that
// is already gone is no error.
func (cg *Cgroup) Destroy(timeout time.Duration) error {
	if cg == nil {
		return nil
	}
	if dir, ok := cg.Dirs[unifiedKey]; ok && files(dir).has("cgroup.kill") {
		// One write kills every process, including any forked meanwhile.
		if err := files(dir).write("cgroup.kill", "1"); err != nil && !isNotExist(err) {
			return err
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		pids, err := cg.Procs()
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			break
		}
		// Each pid is read from the cgroup just now: a process that
		// exited since leaves it, and its pid is not reused until it is
		// reaped, by its parent, which is in here too or is init.
		for _, pid := range pids {
			if pid != os.Getpid() { // never this process, whose thread Start moved
				unix.Kill(pid, unix.SIGKILL)
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroups: processes %v still run in the container's cgroup %s after %s", pids, timeout, cg.Dirs[cg.keys()[0]])
		}
		time.Sleep(10 * time.Millisecond)
	}
	var errs []error
	for _, key := range cg.keys() {
		if err := removeDir(cg.Dirs[key], deadline); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removeDir removes a cgroup's directory: rmdir, with the busy retried
// until deadline, while the last exited tasks leave it.
func removeDir(dir string, deadline time.Time) error {
	for {
		err := unix.Rmdir(dir)
		switch {
		case err == nil || errors.Is(err, unix.ENOENT):
			return nil
		case errors.Is(err, unix.EBUSY) && time.Now().Before(deadline):
			time.Sleep(10 * time.Millisecond)
		default:
			return fmt.Errorf("cgroups: remove %s: %w", dir, err)
		}
	}
}

func hasController(h hierarchy, name string) bool {
	for _, c := range h.controllers {
		if c == name {
			return true
		}
	}
	return false
}
