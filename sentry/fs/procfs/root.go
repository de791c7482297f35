package procfs

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// rootDir is /proc: a directory per process, self and thread-self, and the
// machine-wide files.
func (f *fs) rootDir() *node {
	file := func(name string, content func() ([]byte, error)) child {
		n := f.file(name, content)
		n.noWrite = unix.EIO // proc_reg_write of a file without a write method
		return child{name, n}
	}
	static := []child{
		{"self", f.link("self", func(c vfs.Caller) (string, error) {
			t, ok := c.(*kernel.Task)
			if !ok || f.k.IDIn(f.ns, t.ThreadGroup().PID()) == 0 {
				return "", unix.ENOENT // no caller, or one outside this /proc's namespace
			}
			return strconv.Itoa(int(f.k.IDIn(f.ns, t.ThreadGroup().PID()))), nil
		})},
		{"thread-self", f.link("thread-self", func(c vfs.Caller) (string, error) {
			t, ok := c.(*kernel.Task)
			if !ok || f.k.IDIn(f.ns, t.RootTID()) == 0 {
				return "", unix.ENOENT
			}
			return fmt.Sprintf("%d/task/%d", f.k.IDIn(f.ns, t.ThreadGroup().PID()), f.k.IDIn(f.ns, t.RootTID())), nil
		})},
		{"mounts", f.link("mounts", func(vfs.Caller) (string, error) { return "self/mounts", nil })},
		file("meminfo", f.meminfo),
		file("cpuinfo", func() ([]byte, error) { return firstCPUs(f.cpuinfo, f.k.NumCPUs()), nil }),
		file("stat", f.stat),
		file("uptime", f.uptime),
		file("loadavg", f.loadavg),
		file("version", func() ([]byte, error) {
			return []byte(fmt.Sprintf("%s version %s (moat) %s\n", kernel.OSType, kernel.Release, kernel.Version)), nil
		}),
		file("filesystems", func() ([]byte, error) { return filesystems(), nil }),
		file("locks", f.locks),
		{"net", f.netDir()}, // net.go
		{"sys", f.sysDir()},
		{"sysvipc", f.sysvipcDir()},
	}
	return f.dir("", true, func() []child {
		out := append([]child(nil), static...)
		for _, tg := range f.k.ThreadGroupsIn(f.ns) {
			name := strconv.Itoa(int(f.k.IDIn(f.ns, tg.PID())))
			out = append(out, child{name, f.pidDir(tg, name)})
		}
		return out
	})
}

// filesystems lists the file system types of the sandbox's tree, "nodev"
// for those with no device, as /proc/filesystems does.
func filesystems() []byte {
	var b []byte
	for _, name := range vfs.FilesystemTypes {
		b = append(b, "nodev\t"+name+"\n"...)
	}
	return b
}

// meminfo is the host's /proc/meminfo, as a runc container sees it, while
// the sandbox has no memory limit; under one (memory.max), the sandbox's
// own figures (sandboxMeminfo). Where the host's file cannot be read, the
// figures sysinfo(2) gives stand in.
func (f *fs) meminfo() ([]byte, error) {
	var si unix.Sysinfo_t
	if total, free, ok := f.k.MemoryView(); ok {
		if err := unix.Sysinfo(&si); err != nil {
			return nil, err
		}
		return sandboxMeminfo(total, free, si.Totalram*uint64(si.Unit)), nil
	}
	if b, err := readHostMeminfo(); err == nil && bytes.HasPrefix(b, []byte("MemTotal:")) {
		return b, nil
	}
	if err := unix.Sysinfo(&si); err != nil {
		return nil, err
	}
	kb := func(v uint64) uint64 { return v * uint64(si.Unit) / 1024 }
	return formatMeminfo([]meminfoLine{
		{"MemTotal", kb(si.Totalram)}, {"MemFree", kb(si.Freeram)}, {"MemAvailable", kb(si.Freeram + si.Bufferram)},
		{"Buffers", kb(si.Bufferram)}, {"Cached", 0}, {"SwapCached", 0}, {"Active", 0}, {"Inactive", 0},
		{"SwapTotal", kb(si.Totalswap)}, {"SwapFree", kb(si.Freeswap)}, {"Shmem", kb(si.Sharedram)},
		{"Committed_AS", 0},
	}), nil
}

// sandboxMeminfo is /proc/meminfo under a memory limit, as lxcfs makes it
// for a container: MemTotal is the limit (no more than the host's RAM,
// hostRAM bytes), MemFree and MemAvailable what the charge leaves of it.
// The sandbox has no swap (memory.swap is the host cgroup's alone).
func sandboxMeminfo(total, free, hostRAM uint64) []byte {
	if hostRAM != 0 && total > hostRAM {
		free -= min(free, total-hostRAM)
		total = hostRAM
	}
	return formatMeminfo([]meminfoLine{
		{"MemTotal", total / 1024}, {"MemFree", free / 1024}, {"MemAvailable", free / 1024},
		{"Buffers", 0}, {"Cached", 0}, {"SwapCached", 0}, {"Active", 0}, {"Inactive", 0},
		{"SwapTotal", 0}, {"SwapFree", 0}, {"Shmem", 0}, {"Committed_AS", 0},
	})
}

type meminfoLine struct {
	name string
	kb   uint64
}

// formatMeminfo lays the lines out as Linux does, then the huge page
// lines a sandbox without huge pages shows.
func formatMeminfo(lines []meminfoLine) []byte {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%-15s %8d kB\n", l.name+":", l.kb)
	}
	b.WriteString("HugePages_Total:       0\nHugePages_Free:        0\nHugepagesize:       2048 kB\n")
	return []byte(b.String())
}

// cpuTimes is the sandbox's CPU time in clock ticks: user and system time
// of its processes (living, and the reaped ones their parents account
// for), and the rest of every CPU's time since boot as idle. Each figure
// is a counter that never goes back, as Linux's per-CPU counters do: a
// task's CPU time is accounted in steps, and a process whose usage nobody
// reaps leaves the sum, so each is held at the highest value shown.
func (f *fs) cpuTimes() (user, sys, idle int64) {
	user, sys, idle = f.cpuEstimate()
	f.timesMu.Lock()
	defer f.timesMu.Unlock()
	f.shownUser = max(f.shownUser, user)
	f.shownSys = max(f.shownSys, sys)
	f.shownIdle = max(f.shownIdle, idle)
	return f.shownUser, f.shownSys, f.shownIdle
}

// cpuEstimate is cpuTimes's figures as the sandbox's processes give them
// at this moment.
func (f *fs) cpuEstimate() (user, sys, idle int64) {
	var u, s time.Duration
	for _, tg := range f.k.ThreadGroups() {
		tu, ts := tg.CPUTime()
		c := tg.ChildUsage()
		u += tu + c.User
		s += ts + c.Sys
	}
	total := ticks(f.k.Uptime()+time.Second) * int64(f.k.NumCPUs())
	user, sys = ticks(u), ticks(s)
	return user, sys, max(total-user-sys, 0)
}

// stat is /proc/stat: the "cpu" line and one per CPU (user nice system
// idle iowait irq softirq steal guest guest_nice, in clock ticks: the
// sandbox's time shared evenly among the CPUs it sees), then the
// counters Linux prints after them. The sentry does not count interrupts
// or context switches (zero); processes is the number of processes made
// since boot, as far as the pid allocator tells (the highest pid in use).
func (f *fs) stat() ([]byte, error) {
	user, sys, idle := f.cpuTimes()
	n := int64(f.k.NumCPUs())
	var b strings.Builder
	fmt.Fprintf(&b, "cpu  %d 0 %d %d 0 0 0 0 0 0\n", user, sys, idle)
	for i := int64(0); i < n; i++ {
		share := func(v int64) int64 { return v/n + btoi(i < v%n) }
		fmt.Fprintf(&b, "cpu%d %d 0 %d %d 0 0 0 0 0 0\n", i, share(user), share(sys), share(idle))
	}
	last := f.lastPID()
	fmt.Fprintf(&b, "intr 0\nctxt 0\nbtime %d\nprocesses %d\nprocs_running 1\nprocs_blocked 0\nsoftirq 0 0 0 0 0 0 0 0 0 0 0\n",
		f.k.BootTime().Unix(), last)
	return []byte(b.String()), nil
}

func btoi(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// uptime is /proc/uptime: seconds since boot, and the idle time summed
// over the CPUs (the idle of /proc/stat).
func (f *fs) uptime() ([]byte, error) {
	up := ticks(f.k.Uptime() + time.Second)
	_, _, idle := f.cpuTimes()
	// Hundredths cut, not rounded, as Linux prints them.
	return []byte(fmt.Sprintf("%d.%02d %d.%02d\n", up/100, up%100, idle/100, idle%100)), nil
}

// loadavg is /proc/loadavg: the sentry keeps no load averages (zero), the
// running and total task counts, and the newest pid.
func (f *fs) loadavg() ([]byte, error) {
	last := f.lastPID()
	return []byte(fmt.Sprintf("0.00 0.00 0.00 1/%d %d\n", f.k.NumTasks(), last)), nil
}

// ticks converts a duration to clock ticks (USER_HZ a second).
func ticks(d time.Duration) int64 { return int64(d / (time.Second / linuxabi.USER_HZ)) }

// lastPID is the highest pid in use in this /proc's namespace, 1 when
// there is none.
func (f *fs) lastPID() int32 {
	tgs := f.k.ThreadGroupsIn(f.ns)
	if len(tgs) == 0 {
		return 1
	}
	return f.k.IDIn(f.ns, tgs[len(tgs)-1].PID())
}
