package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// What a sandbox costs the host, read from /proc and the memory cgroup.

// memoryCgroup is the hierarchy that holds the memory controller: a v1
// one (memory.usage_in_bytes) or v2 (memory.current). On a hybrid host
// such as this one the controller is on v1 and the v2 hierarchy at
// /sys/fs/cgroup/unified has none.
type memoryCgroup struct {
	cgroupHierarchy
}

// findMemoryCgroup finds the memory controller's hierarchy in this
// process's mountinfo.
func findMemoryCgroup() (memoryCgroup, error) {
	h, err := findHierarchy("memory")
	return memoryCgroup{h}, err
}

// usage is the memory the cgroup at path is charged, in bytes.
func (mc memoryCgroup) usage(path string) (uint64, error) {
	file := "memory.usage_in_bytes"
	if mc.v2 {
		file = "memory.current"
	}
	return mc.counter(path, file)
}

// procs lists the processes in the cgroup at path and in every cgroup
// below it.
func (mc memoryCgroup) procs(path string) ([]int, error) {
	var pids []int
	err := filepath.WalkDir(mc.dir(path), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		data, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
		if err != nil {
			return err
		}
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				return fmt.Errorf("%s/cgroup.procs: %w", p, err)
			}
			pids = append(pids, pid)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("memory cgroup: %w", err)
	}
	return pids, nil
}

// descendants lists pid and every process below it, from the children
// files of each of its threads (a child belongs to the thread that forked
// it).
func descendants(pid int) []int {
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", out[i]))
		for _, t := range tasks {
			data, _ := os.ReadFile(t) // a process that has exited has none
			for _, f := range strings.Fields(string(data)) {
				if c, err := strconv.Atoi(f); err == nil && !slices.Contains(out, c) {
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// sandboxProcs lists the host processes of a sandbox whose cgroup is path
// and whose runtime reports pid as its process: those in the cgroup, and
// pid's descendants. The cgroup is where every runtime here puts all it
// starts for the sandbox, processes that do not descend from pid among
// them (moat's gofer and usernet and runsc's gofer are started beside the
// sentry, by create, and reparented to init when it exits); pid's
// descendants add what a runtime might leave outside its cgroup. moat's
// and runsc's stubs are the sentry's children, in its cgroup.
func sandboxProcs(mc memoryCgroup, path string, pid int) ([]int, error) {
	pids, err := mc.procs(path)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(pids, pid) {
		return nil, fmt.Errorf("the runtime's process %d is not in cgroup %s", pid, path)
	}
	for _, d := range descendants(pid) {
		if !slices.Contains(pids, d) {
			pids = append(pids, d)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// processPSS is one host process's name and proportional set size.
type processPSS struct {
	name string
	pss  rollup
}

// rollup is the proportional set size of smaps_rollup, in KiB: the whole
// and its anonymous, file-backed and shared-memory parts.
type rollup struct {
	total, anon, file, shmem uint64
}

// readProcess reads pid's PSS from /proc/PID/smaps_rollup and its name
// (processName) from its command line.
func readProcess(pid int) (processPSS, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return processPSS{}, err
	}
	defer f.Close()
	pss, err := parseRollup(f)
	if err != nil {
		return processPSS{}, fmt.Errorf("/proc/%d/smaps_rollup: %w", pid, err)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return processPSS{}, err
	}
	return processPSS{name: processName(cmdline), pss: pss}, nil
}

// parseRollup reads the Pss lines of smaps_rollup
// (proc_pid_smaps_rollup(5)): the process's resident pages, each divided
// by the number of processes that map it, so that summing them over
// processes counts a shared page once. Pss is required; its parts are
// missing before Linux 5.8, and then read as 0.
func parseRollup(r io.Reader) (rollup, error) {
	var ro rollup
	fields := map[string]*uint64{"Pss:": &ro.total, "Pss_Anon:": &ro.anon, "Pss_File:": &ro.file, "Pss_Shmem:": &ro.shmem}
	seen := false
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[2] != "kB" || fields[f[0]] == nil {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return rollup{}, fmt.Errorf("%s: %w", sc.Text(), err)
		}
		*fields[f[0]] = v
		seen = seen || f[0] == "Pss:"
	}
	if err := sc.Err(); err != nil {
		return rollup{}, err
	}
	if !seen {
		return rollup{}, fmt.Errorf("no Pss line")
	}
	return ro, nil
}

// stubName names the processes without a command line: the stubs that
// moat's and runsc's platforms run guest code in.
const stubName = "stub"

// processName is what the reports call a process with command line
// cmdline (NUL-separated): its program's base name and, when the next word
// is no flag, that word, the subcommand that says what a runtime's process
// is ("moat boot" is the sentry, "moat gofer" its gofer; runsc's are
// runsc-sandbox and runsc-gofer).
func processName(cmdline []byte) string {
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if args[0] == "" {
		return stubName
	}
	name := filepath.Base(args[0])
	if len(args) > 1 && args[1] != "" && !strings.HasPrefix(args[1], "-") {
		name += " " + args[1]
	}
	return name
}
