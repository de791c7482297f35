package procfs

import (
	"fmt"
	"runtime"
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
	static := []child{
		{"self", f.link("self", func(c vfs.Caller) (string, error) {
			if c == nil {
				return "", unix.ENOENT
			}
			return strconv.Itoa(int(c.PID())), nil
		})},
		{"thread-self", f.link("thread-self", func(c vfs.Caller) (string, error) {
			if c == nil {
				return "", unix.ENOENT
			}
			return fmt.Sprintf("%d/task/%d", c.PID(), c.TID()), nil
		})},
		{"mounts", f.link("mounts", func(vfs.Caller) (string, error) { return "self/mounts", nil })},
		{"meminfo", f.file("meminfo", f.meminfo)},
		{"cpuinfo", f.file("cpuinfo", cpuinfo)},
		{"stat", f.file("stat", f.stat)},
		{"uptime", f.file("uptime", f.uptime)},
		{"loadavg", f.file("loadavg", f.loadavg)},
		{"version", f.file("version", func() ([]byte, error) {
			return []byte(fmt.Sprintf("%s version %s (moat) %s\n", kernel.OSType, kernel.Release, kernel.Version)), nil
		})},
		{"filesystems", f.file("filesystems", func() ([]byte, error) {
			return []byte("nodev\tsysfs\nnodev\ttmpfs\nnodev\tproc\nnodev\tdevtmpfs\nnodev\t9p\n"), nil
		})},
		{"locks", f.file("locks", locks)},
		{"sys", f.sysDir()},
	}
	return f.dir("", true, func() []child {
		out := append([]child(nil), static...)
		for _, tg := range f.k.ThreadGroups() {
			name := strconv.Itoa(int(tg.PID()))
			out = append(out, child{name, f.pidDir(tg, name)})
		}
		return out
	})
}

func (f *fs) meminfo() ([]byte, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return nil, err
	}
	kb := func(v uint64) uint64 { return v * uint64(si.Unit) / 1024 }
	var b strings.Builder
	for _, l := range []struct {
		name string
		v    uint64
	}{
		{"MemTotal", kb(si.Totalram)}, {"MemFree", kb(si.Freeram)}, {"MemAvailable", kb(si.Freeram + si.Bufferram)},
		{"Buffers", kb(si.Bufferram)}, {"Cached", 0}, {"SwapCached", 0}, {"Active", 0}, {"Inactive", 0},
		{"SwapTotal", kb(si.Totalswap)}, {"SwapFree", kb(si.Freeswap)}, {"Shmem", kb(si.Sharedram)},
		{"Committed_AS", 0}, {"HugePages_Total", 0}, {"HugePages_Free", 0},
	} {
		if strings.HasPrefix(l.name, "HugePages") {
			fmt.Fprintf(&b, "%-15s %8d\n", l.name+":", l.v)
		} else {
			fmt.Fprintf(&b, "%-15s %8d kB\n", l.name+":", l.v)
		}
	}
	b.WriteString("Hugepagesize:       2048 kB\n")
	return []byte(b.String()), nil
}

func cpuinfo() ([]byte, error) {
	var b strings.Builder
	n := runtime.NumCPU()
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "processor\t: %d\nvendor_id\t: moat\nmodel name\t: moat virtual CPU\n"+
			"physical id\t: 0\nsiblings\t: %d\ncore id\t\t: %d\ncpu cores\t: %d\nflags\t\t: %s\n\n",
			i, n, i, n, cpuFlags())
	}
	return []byte(b.String()), nil
}

func (f *fs) stat() ([]byte, error) {
	var b strings.Builder
	b.WriteString("cpu  0 0 0 0 0 0 0 0 0 0\n")
	for i := 0; i < runtime.NumCPU(); i++ {
		fmt.Fprintf(&b, "cpu%d 0 0 0 0 0 0 0 0 0 0\n", i)
	}
	tgs := f.k.ThreadGroups()
	fmt.Fprintf(&b, "intr 0\nctxt 0\nbtime %d\nprocesses %d\nprocs_running 1\nprocs_blocked 0\nsoftirq 0\n",
		f.k.BootTime().Unix(), len(tgs))
	return []byte(b.String()), nil
}

func (f *fs) uptime() ([]byte, error) {
	up := f.k.Uptime().Seconds() + 1
	return []byte(fmt.Sprintf("%.2f %.2f\n", up, up*float64(runtime.NumCPU()))), nil
}

func (f *fs) loadavg() ([]byte, error) {
	tgs := f.k.ThreadGroups()
	last := int32(1)
	if len(tgs) > 0 {
		last = tgs[len(tgs)-1].PID()
	}
	return []byte(fmt.Sprintf("0.00 0.00 0.00 1/%d %d\n", f.k.NumTasks(), last)), nil
}

// sysDir is /proc/sys: the sysctls programs read to learn limits.
func (f *fs) sysDir() *node {
	value := func(path, v string) child {
		name := path[strings.LastIndexByte(path, '/')+1:]
		return child{name, f.file("sys/"+path, func() ([]byte, error) { return []byte(v + "\n"), nil })}
	}
	dir := func(path string, cs ...child) child {
		name := path[strings.LastIndexByte(path, '/')+1:]
		return child{name, f.dir("sys/"+path, false, func() []child { return cs })}
	}
	bootID := randomUUID()
	kernelDir := dir("kernel",
		child{"hostname", f.file("sys/kernel/hostname", func() ([]byte, error) { return []byte(f.k.Hostname + "\n"), nil })},
		value("kernel/osrelease", kernel.Release), value("kernel/ostype", kernel.OSType),
		value("kernel/version", kernel.Version), value("kernel/pid_max", "4194304"),
		value("kernel/ngroups_max", "65536"), value("kernel/cap_last_cap", "40"),
		value("kernel/threads-max", "1048576"),
		dir("kernel/random", value("kernel/random/boot_id", bootID),
			child{"uuid", f.file("sys/kernel/random/uuid", func() ([]byte, error) { return []byte(randomUUID() + "\n"), nil })}),
	)
	return f.dir("sys", false, func() []child {
		return []child{
			kernelDir,
			dir("vm", value("vm/overcommit_memory", "0"), value("vm/max_map_count", "65530")),
			dir("fs", value("fs/nr_open", "1048576"), value("fs/file-max", "9223372036854775807")),
			dir("net", dir("net/core", value("net/core/somaxconn", "4096"))),
		}
	})
}

func randomUUID() string {
	var b [16]byte
	unix.Getrandom(b[:], 0)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// ticks converts a duration to clock ticks (USER_HZ a second).
func ticks(d time.Duration) int64 { return int64(d / (time.Second / linuxabi.USER_HZ)) }
