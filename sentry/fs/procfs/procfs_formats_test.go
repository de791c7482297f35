package procfs_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// More of /proc's formats, field by field against proc(5) and what Linux
// prints: fdinfo, mountinfo, task/, smaps_rollup and the machine's files.

func fstat(g *fake.Guest, fd uintptr) unix.Stat_t {
	const size = 144 // struct stat on x86-64
	buf := g.Alloc(size)
	g.Call(unix.SYS_FSTAT, fd, buf)
	b := make([]byte, size)
	g.Read(buf, b)
	var st unix.Stat_t
	st.Dev = leU64(b[0:])
	st.Ino = leU64(b[8:])
	return st
}

func leU64(b []byte) uint64 {
	var v uint64
	for i := 7; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// mountIDOf returns the mount id of the mountinfo line for point.
func mountIDOf(t *testing.T, mountinfo, point string) string {
	t.Helper()
	for _, line := range strings.Split(mountinfo, "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == point {
			return f[0]
		}
	}
	t.Errorf("no mountinfo line for %s in %q", point, mountinfo)
	return ""
}

func TestFDInfoIsPosFlagsMountIDAndInodeThenTheKindsLines(t *testing.T) {
	s := sandbox(t)
	s.WriteFile("/tmp/f", 0o644, []byte("0123456789"))
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		at := unix.AT_FDCWD
		fd, _ := g.Call(unix.SYS_OPENAT, uintptr(at), g.CString("/tmp/f"), unix.O_RDONLY|unix.O_APPEND)
		g.Call(unix.SYS_LSEEK, fd, 3, unix.SEEK_SET)
		ino := fstat(g, fd).Ino
		efd, _ := g.Call(unix.SYS_EVENTFD2, 5, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
		ep, _ := g.Call(unix.SYS_EPOLL_CREATE1, 0)
		ev := g.Alloc(12)
		g.WriteU32(ev, unix.EPOLLIN|unix.EPOLLET)
		g.WriteU64(ev+4, 0x1234)
		g.Call(unix.SYS_EPOLL_CTL, ep, unix.EPOLL_CTL_ADD, efd, ev)
		mask := g.Alloc(8)
		g.WriteU64(mask, sigBit(unix.SIGUSR1)|sigBit(unix.SIGINT))
		sfd, _ := g.Call(unix.SYS_SIGNALFD4, ^uintptr(0), mask, 8, 0)

		texts := readProcs(t, g, fmt.Sprintf("/proc/self/fdinfo/%d", fd), fmt.Sprintf("/proc/self/fdinfo/%d", efd),
			fmt.Sprintf("/proc/self/fdinfo/%d", ep), fmt.Sprintf("/proc/self/fdinfo/%d", sfd), "/proc/self/mountinfo")
		tmpID := mountIDOf(t, texts[4], "/")
		// O_LARGEFILE (0100000) is in every file's flags on x86-64, as open
		// sets it; O_APPEND is 02000.
		if want := fmt.Sprintf("pos:\t3\nflags:\t0102000\nmnt_id:\t%s\nino:\t%d\n", tmpID, ino); texts[0] != want {
			t.Errorf("fdinfo of a file = %q, want %q", texts[0], want)
		}
		// A close-on-exec fd shows O_CLOEXEC (02000000); O_NONBLOCK is
		// 04000; eventfds are read-write (02). The count is hexadecimal
		// in 16 columns.
		head := regexp.MustCompile(`^pos:\t0\nflags:\t02004002\nmnt_id:\t\d+\nino:\t\d+\n`)
		if !head.MatchString(texts[1]) || !strings.Contains(texts[1], "eventfd-count:                5\n") ||
			!strings.HasSuffix(texts[1], "eventfd-semaphore: 0\n") {
			t.Errorf("fdinfo of an eventfd = %q", texts[1])
		}
		// events has EPOLLERR and EPOLLHUP, which epoll_ctl adds.
		tfd := regexp.MustCompile(fmt.Sprintf(`(?m)^tfd: %8d events: 80000019 data:             1234  pos:0 ino:[0-9a-f]+ sdev:[0-9a-f]+$`, efd))
		if !strings.HasPrefix(texts[2], "pos:\t0\nflags:\t02\n") || !tfd.MatchString(texts[2]) {
			t.Errorf("fdinfo of an epoll = %q", texts[2])
		}
		if !strings.HasSuffix(texts[3], "sigmask:\t0000000000000202\n") {
			t.Errorf("fdinfo of a signalfd = %q, want sigmask:\\t0000000000000202", texts[3])
		}
		if _, errno := g.Call(unix.SYS_OPENAT, uintptr(at), g.CString("/proc/self/fdinfo/99"), unix.O_RDONLY); errno != unix.ENOENT {
			t.Errorf("fdinfo of a closed fd: %v, want ENOENT", errno)
		}
	})
}

func TestMountinfoHasLinuxsFieldsForEveryMount(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		text := readProc(t, g, "/proc/self/mountinfo")
		ids := map[string]bool{}
		var lines [][]string
		for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			f := strings.Split(line, " ")
			sep := -1
			for i, x := range f {
				if x == "-" {
					sep = i
					break
				}
			}
			// id parent major:minor root point options [optional...] - type source superoptions
			if sep < 6 || len(f) != sep+4 {
				t.Errorf("mountinfo line %q does not have Linux's fields", line)
				continue
			}
			if !regexp.MustCompile(`^\d+:\d+$`).MatchString(f[2]) || !strings.HasPrefix(f[3], "/") ||
				!regexp.MustCompile(`^r[ow](,|$)`).MatchString(f[5]) || !regexp.MustCompile(`^r[ow](,|$)`).MatchString(f[sep+3]) {
				t.Errorf("mountinfo line %q: bad dev, root or options", line)
			}
			if ids[f[0]] {
				t.Errorf("mount id %s twice", f[0])
			}
			ids[f[0]] = true
			lines = append(lines, f)
		}
		for i, f := range lines {
			if i == 0 {
				if f[4] != "/" || ids[f[1]] {
					t.Errorf("first mountinfo line %q: want / with a parent outside the list", f)
				}
			} else if !ids[f[1]] {
				t.Errorf("%s's parent %s is not listed", f[4], f[1])
			}
		}
		// The major:minor is the st_dev of files on the mount.
		at := unix.AT_FDCWD
		for _, f := range lines {
			if f[4] != "/proc" {
				continue
			}
			fd, _ := g.Call(unix.SYS_OPENAT, uintptr(at), g.CString("/proc/self/stat"), unix.O_RDONLY)
			st := fstat(g, fd)
			g.Call(unix.SYS_CLOSE, fd)
			if want := fmt.Sprintf("%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev)); f[2] != want {
				t.Errorf("/proc's major:minor %s, want %s", f[2], want)
			}
			if f[5] != "rw,nosuid,nodev,noexec,relatime" || f[len(f)-3] != "proc" || f[len(f)-1] != "rw" {
				t.Errorf("/proc's mountinfo line %q", f)
			}
		}
	})
}

func TestTaskDirHasADirectoryPerThreadWithItsOwnIDs(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		fds := g.Alloc(8)
		g.Call(unix.SYS_PIPE2, fds, 0)
		release := uintptr(g.ReadU32(fds))
		tid, tidAddr, _ := g.Thread(func(g *fake.Guest) { g.Call(unix.SYS_READ, release, g.Alloc(1), 1) })
		pid, _ := g.Call(unix.SYS_GETPID)
		dir := fmt.Sprintf("/proc/self/task/%d/", tid)
		texts := readProcs(t, g, dir+"stat", dir+"status", "/proc/self/stat")
		if f := statFields(t, texts[0]); len(f) < 1 || f[0] != strconv.Itoa(tid) {
			t.Errorf("a thread's stat starts %q, want its tid %d", f, tid)
		}
		_, vals := statusFields(t, texts[1])
		if vals["Pid"] != strconv.Itoa(tid) || vals["Tgid"] != strconv.Itoa(int(pid)) || vals["Threads"] != "2" {
			t.Errorf("a thread's status: Pid %s Tgid %s Threads %s; want %d, %d, 2", vals["Pid"], vals["Tgid"], vals["Threads"], tid, pid)
		}
		if f := statFields(t, texts[2]); len(f) < 1 || f[0] != strconv.Itoa(int(pid)) {
			t.Errorf("the process's stat starts %q, want pid %d", f, pid)
		}
		for _, name := range []string{"fd", "fdinfo", "maps", "comm", "cmdline", "mountinfo", "limits"} {
			buf := g.Alloc(256)
			at := unix.AT_FDCWD
			if _, errno := g.Call(unix.SYS_NEWFSTATAT, uintptr(at), g.CString(dir+name), buf, 0); errno != 0 {
				t.Errorf("%s%s: %v", dir, name, errno)
			}
		}
		g.Call(unix.SYS_CLOSE, uintptr(g.ReadU32(fds+4)))
		g.Join(tidAddr)
	})
}

func TestSmapsRollupIsOneHeaderAndLinuxsFieldsSummingRss(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		texts := readProcs(t, g, "/proc/self/smaps_rollup", "/proc/self/status")
		lines := strings.Split(strings.TrimSuffix(texts[0], "\n"), "\n")
		header := regexp.MustCompile(`^[0-9a-f]{8,}-[0-9a-f]{8,} ---p 00000000 00:00 0 {26,}\[rollup\]$`)
		if len(lines) == 0 || !header.MatchString(lines[0]) || len(lines[0]) != 73+len("[rollup]") {
			t.Errorf("smaps_rollup header %q", lines[0])
		}
		want := []string{"Rss", "Pss", "Pss_Dirty", "Pss_Anon", "Pss_File", "Pss_Shmem", "Shared_Clean", "Shared_Dirty",
			"Private_Clean", "Private_Dirty", "Referenced", "Anonymous", "KSM", "LazyFree", "AnonHugePages",
			"ShmemPmdMapped", "FilePmdMapped", "Shared_Hugetlb", "Private_Hugetlb", "Swap", "SwapPss", "Locked"}
		vals := map[string]uint64{}
		line := regexp.MustCompile(`^([A-Za-z_]+): +(\d+) kB$`)
		for i, l := range lines[1:] {
			m := line.FindStringSubmatch(l)
			if m == nil || len(l) != 16+8+len(" kB") {
				t.Errorf("smaps_rollup line %q is not %%-16s%%8d kB", l)
				continue
			}
			if i < len(want) && m[1] != want[i] {
				t.Errorf("smaps_rollup field %d is %s, want %s", i, m[1], want[i])
			}
			v, _ := strconv.ParseUint(m[2], 10, 64)
			vals[m[1]] = v
		}
		if len(lines)-1 != len(want) {
			t.Errorf("smaps_rollup has %d fields, want %d", len(lines)-1, len(want))
		}
		if sum := vals["Shared_Clean"] + vals["Shared_Dirty"] + vals["Private_Clean"] + vals["Private_Dirty"]; sum != vals["Rss"] {
			t.Errorf("clean and dirty sum to %d kB, Rss is %d", sum, vals["Rss"])
		}
		_, status := statusFields(t, texts[1])
		if rss := strings.TrimSpace(strings.TrimSuffix(status["VmRSS"], "kB")); rss != strconv.FormatUint(vals["Rss"], 10) {
			t.Errorf("smaps_rollup Rss %d kB, status VmRSS %s kB", vals["Rss"], rss)
		}
	})
}

// affinityCount is how many CPUs sched_getaffinity gives the guest.
func affinityCount(g *fake.Guest) int {
	buf := g.Alloc(128)
	n, _ := g.Call(unix.SYS_SCHED_GETAFFINITY, 0, 128, buf)
	b := make([]byte, n)
	g.Read(buf, b)
	count := 0
	for _, x := range b {
		for ; x != 0; x &= x - 1 {
			count++
		}
	}
	return count
}

func TestCPUInfoAndStatListTheCPUsSchedGetaffinityGives(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		n := affinityCount(g)
		texts := readProcs(t, g, "/proc/cpuinfo", "/proc/stat", "/proc/uptime")
		procs := regexp.MustCompile(`(?m)^processor\t: (\d+)$`).FindAllStringSubmatch(texts[0], -1)
		if len(procs) != n {
			t.Errorf("cpuinfo has %d processors, sched_getaffinity %d", len(procs), n)
		}
		for i, p := range procs {
			if p[1] != strconv.Itoa(i) {
				t.Errorf("cpuinfo's processor %d is numbered %s", i, p[1])
			}
		}
		if !regexp.MustCompile(`(?m)^flags\t\t: .*\bsse2\b`).MatchString(texts[0]) {
			t.Errorf("cpuinfo has no flags line with sse2")
		}
		lines := strings.Split(strings.TrimSuffix(texts[1], "\n"), "\n")
		cpu := regexp.MustCompile(`^cpu(\d*) +(\d+)( \d+){9}$`)
		var sums [10]uint64
		for i := 0; i <= n && i < len(lines); i++ {
			m := cpu.FindStringSubmatch(lines[i])
			if m == nil || (i == 0) != (m[1] == "") || i > 0 && m[1] != strconv.Itoa(i-1) {
				t.Errorf("/proc/stat line %d %q is not cpu%d with ten counters", i, lines[i], i-1)
				continue
			}
			if i == 0 {
				if !strings.HasPrefix(lines[0], "cpu  ") {
					t.Errorf("/proc/stat's total line %q does not start \"cpu  \"", lines[0])
				}
				continue
			}
			for j, v := range strings.Fields(lines[i])[1:] {
				x, _ := strconv.ParseUint(v, 10, 64)
				sums[j] += x
			}
		}
		if got, want := strings.Join(strings.Fields(lines[0])[1:], " "), strings.Trim(fmt.Sprint(sums), "[]"); got != want {
			t.Errorf("the cpu line %s is not the sum of the cpuN lines, %s", got, want)
		}
		var keys []string
		for _, l := range lines[n+1:] {
			keys = append(keys, strings.Fields(l)[0])
		}
		if want := "intr ctxt btime processes procs_running procs_blocked softirq"; strings.Join(keys, " ") != want {
			t.Errorf("/proc/stat after the cpu lines: %q, want %q", keys, want)
		}
		up := strings.Fields(texts[2])
		if len(up) != 2 || !regexp.MustCompile(`^\d+\.\d\d$`).MatchString(up[0]) || !regexp.MustCompile(`^\d+\.\d\d$`).MatchString(up[1]) {
			t.Errorf("/proc/uptime = %q, want two numbers with two decimals", texts[2])
		}
	})
}

func TestBootIDStaysAndUUIDChangesAtEachRead(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\n$`)
		texts := readProcs(t, g, "/proc/sys/kernel/random/boot_id", "/proc/sys/kernel/random/boot_id",
			"/proc/sys/kernel/random/uuid", "/proc/sys/kernel/random/uuid")
		for _, x := range texts {
			if !uuid.MatchString(x) {
				t.Errorf("%q is not a version 4 UUID", x)
			}
		}
		if texts[0] != texts[1] || texts[2] == texts[3] {
			t.Errorf("boot_id %q then %q, uuid %q then %q: want boot_id fixed and uuid new", texts[0], texts[1], texts[2], texts[3])
		}
	})
}

func TestProcSysHasTheLimitsProgramsRead(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		for _, c := range []struct{ name, want string }{
			{"kernel/cap_last_cap", strconv.Itoa(unix.CAP_LAST_CAP)}, {"kernel/pid_max", "4194304"},
			{"kernel/ngroups_max", "65536"}, {"fs/nr_open", "1048576"}, {"fs/pipe-max-size", "1048576"},
			{"vm/overcommit_memory", "0"}, {"vm/mmap_min_addr", "65536"}, {"fs/inotify/max_user_instances", "128"},
		} {
			if got := readProc(t, g, "/proc/sys/"+c.name); got != c.want+"\n" {
				t.Errorf("/proc/sys/%s = %q, want %s", c.name, got, c.want)
			}
		}
		if got := readProc(t, g, "/proc/sys/kernel/hostname"); got != s.Kernel.Hostname+"\n" {
			t.Errorf("hostname = %q, want the kernel's %q", got, s.Kernel.Hostname)
		}
	})
}

func TestFDInfoOfAnInotifyHasALinePerWatchNewestFirst(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		in, errno := g.Call(unix.SYS_INOTIFY_INIT1, 0)
		if errno != 0 {
			t.Errorf("inotify_init1: %v", errno)
			return
		}
		g.Call(unix.SYS_INOTIFY_ADD_WATCH, in, g.CString("/tmp"), unix.IN_CREATE|unix.IN_DELETE)
		g.Call(unix.SYS_INOTIFY_ADD_WATCH, in, g.CString("/bin"), unix.IN_OPEN|unix.IN_ONESHOT)
		at := unix.AT_FDCWD
		fd, _ := g.Call(unix.SYS_OPENAT, uintptr(at), g.CString("/tmp"), unix.O_RDONLY)
		st := fstat(g, fd)
		text := readProc(t, g, fmt.Sprintf("/proc/self/fdinfo/%d", in))
		dev := uint64(unix.Major(st.Dev))<<20 | uint64(unix.Minor(st.Dev))
		lines := regexp.MustCompile(`(?m)^inotify .*$`).FindAllString(text, -1)
		want1 := fmt.Sprintf("inotify wd:1 ino:%x sdev:%x mask:300 ignored_mask:0 ", st.Ino, dev)
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "inotify wd:2 ") || !strings.HasSuffix(lines[0], " mask:80000020 ignored_mask:0 ") ||
			lines[1] != want1 {
			t.Errorf("inotify fdinfo lines %q; want wd 2 (IN_OPEN|IN_ONESHOT) then %q", lines, want1)
		}
	})
}
