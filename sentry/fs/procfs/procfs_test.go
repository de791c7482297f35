package procfs_test

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/syscalls"
)

// The formats of /proc/<pid>'s files, field by field against proc(5) and
// what Linux prints, read by a guest program through open and read.

// sandbox returns a kerneltest sandbox with this package's /proc mounted
// at /proc, as the boot code mounts it.
func sandbox(t *testing.T) *kerneltest.Sandbox {
	t.Helper()
	s := kerneltest.New(t, syscalls.NewTable())
	point, err := vfs.MakeMountPoint(s.Root, "proc", true)
	if err != nil {
		t.Fatalf("mount point: %v", err)
	}
	if _, err := vfs.Attach(point, procfs.New(s.Kernel, s.Kernel.RootPIDNamespace()), "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC); err != nil {
		t.Fatalf("mount /proc: %v", err)
	}
	return s
}

func runIn(t *testing.T, s *kerneltest.Sandbox, in kerneltest.Init, prog fake.Program) {
	t.Helper()
	s.Start(prog, in)
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

// readProc reads the whole of a /proc file through open and read.
func readProc(t *testing.T, g *fake.Guest, name string) string {
	t.Helper()
	return readProcs(t, g, name)[0]
}

// readProcs reads several /proc files one after the other with no
// allocation between them: each file's content is made when read, and the
// guest's own mmaps, or first touches of the buffer, would change the
// memory figures of the next.
func readProcs(t *testing.T, g *fake.Guest, names ...string) []string {
	t.Helper()
	at := unix.AT_FDCWD
	paths := make([]uintptr, len(names))
	for i, name := range names {
		paths[i] = g.CString(name)
	}
	buf := g.Alloc(1 << 16)
	g.Write(buf, make([]byte, 1<<16))
	fds := make([]uintptr, len(names))
	for i, name := range names {
		fd, errno := g.Call(unix.SYS_OPENAT, uintptr(at), paths[i], unix.O_RDONLY)
		if errno != 0 {
			t.Errorf("open %s: %v", name, errno)
		}
		fds[i] = fd
	}
	out := make([]string, len(names))
	for i, fd := range fds {
		var text []byte
		for {
			n, errno := g.Call(unix.SYS_READ, fd, buf, 1<<16)
			if errno != 0 || n == 0 {
				break
			}
			b := make([]byte, n)
			g.Read(buf, b)
			text = append(text, b...)
		}
		g.Call(unix.SYS_CLOSE, fd)
		out[i] = string(text)
	}
	return out
}

// statusFields parses /proc/<pid>/status: "Key:\tvalue" lines, in order.
func statusFields(t *testing.T, text string) (keys []string, vals map[string]string) {
	t.Helper()
	vals = map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		k, v, ok := strings.Cut(line, ":\t")
		if !ok {
			t.Errorf("status line %q is not \"Key:\\tvalue\"", line)
			continue
		}
		keys = append(keys, k)
		vals[k] = v
	}
	return keys, vals
}

// statFields splits /proc/<pid>/stat: the comm is whatever lies between
// the first '(' and the last ')'.
func statFields(t *testing.T, text string) []string {
	t.Helper()
	if !strings.HasSuffix(text, "\n") || strings.Count(text, "\n") != 1 {
		t.Errorf("stat is not one line: %q", text)
	}
	open, closing := strings.IndexByte(text, '('), strings.LastIndexByte(text, ')')
	if open < 0 || closing < open {
		t.Errorf("stat has no (comm): %q", text)
		return nil
	}
	f := []string{strings.TrimSpace(text[:open]), text[open+1 : closing]}
	return append(f, strings.Fields(text[closing+1:])...)
}

func sigBit(sig unix.Signal) uint64 { return 1 << (sig - 1) }

func TestProcPidStatHasLinuxsFiftyTwoFields(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{Argv: []string{"/bin/init", "a b", "c"}, Env: []string{"HOME=/", "X=1"}}, func(g *fake.Guest) {
		block := g.Alloc(8)
		g.WriteU64(block, sigBit(unix.SIGUSR1))
		g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, block, 0, 8)
		g.Sigaction(unix.SIGUSR2, fake.SigAction{Handler: 1}) // SIG_IGN
		g.Sigaction(unix.SIGTERM, fake.SigAction{Handler: s.Platform.Handler(func(*fake.Guest) {})})
		fds := g.Alloc(8)
		g.Call(unix.SYS_PIPE2, fds, 0)
		release, done := uintptr(g.ReadU32(fds)), uintptr(g.ReadU32(fds+4))
		byte1 := g.Alloc(1) // before the thread: its mmaps would race the reads below
		_, tidAddr, _ := g.Thread(func(g *fake.Guest) { g.Call(unix.SYS_READ, release, byte1, 1) })

		texts := readProcs(t, g, "/proc/self/stat", "/proc/self/status", "/proc/self/cmdline", "/proc/self/environ")
		f := statFields(t, texts[0])
		if len(f) != 52 {
			t.Errorf("stat has %d fields, want 52: %q", len(f), f)
			return
		}
		num := func(i int) uint64 { // field i, 1-based as in proc(5)
			v, err := strconv.ParseUint(f[i-1], 10, 64)
			if err != nil {
				v2, err2 := strconv.ParseInt(f[i-1], 10, 64)
				if err2 != nil {
					t.Errorf("stat field %d %q is not a number", i, f[i-1])
				}
				return uint64(v2)
			}
			return v
		}
		pid, _ := g.Call(unix.SYS_GETPID)
		pgrp, _ := g.Call(unix.SYS_GETPGID, 0)
		sid, _ := g.Call(unix.SYS_GETSID, 0)
		for _, c := range []struct {
			field int
			name  string
			want  uint64
		}{
			{1, "pid", uint64(pid)}, {4, "ppid", 0}, {5, "pgrp", uint64(pgrp)}, {6, "session", uint64(sid)},
			{20, "num_threads", 2}, {25, "rsslim (RLIMIT_RSS, unlimited)", 1<<64 - 1},
			{32, "blocked", sigBit(unix.SIGUSR1)}, {33, "sigignore", sigBit(unix.SIGUSR2)},
			{34, "sigcatch", sigBit(unix.SIGTERM)}, {38, "exit_signal", uint64(unix.SIGCHLD)},
		} {
			if got := num(c.field); got != c.want {
				t.Errorf("stat field %d (%s) = %d, want %d", c.field, c.name, got, c.want)
			}
		}
		if f[1] != "init" {
			t.Errorf("stat comm = %q, want init", f[1])
		}
		if len(f[2]) != 1 || !strings.Contains("RSDZTtWXxKP", f[2]) {
			t.Errorf("stat state = %q, want one of proc(5)'s letters", f[2])
		}
		// The argument and environment areas are those of cmdline and
		// environ, in the guest's own memory.
		argStart, argEnd, envStart, envEnd := num(48), num(49), num(50), num(51)
		cmdline, environ := texts[2], texts[3]
		if argEnd-argStart != uint64(len(cmdline)) || envEnd-envStart != uint64(len(environ)) {
			t.Errorf("arg area %d bytes, env area %d; cmdline %d bytes, environ %d", argEnd-argStart, envEnd-envStart, len(cmdline), len(environ))
		} else {
			b := make([]byte, len(cmdline))
			g.Read(uintptr(argStart), b)
			if string(b) != cmdline {
				t.Errorf("memory at arg_start = %q, want cmdline %q", b, cmdline)
			}
		}
		// vsize and rss are those of status, in bytes and in pages.
		_, st := statusFields(t, texts[1])
		if kb := kB(t, st["VmSize"]); num(23) != kb*1024 {
			t.Errorf("stat vsize %d, status VmSize %d kB", num(23), kb)
		}
		if start := num(22); start > 1000*100 {
			t.Errorf("stat starttime %d ticks: not since boot in USER_HZ", start)
		}
		g.Call(unix.SYS_WRITE, done, g.CString("x"), 1)
		g.Join(tidAddr)
	})
}

// kB parses a status value "%8d kB".
func kB(t *testing.T, v string) uint64 {
	t.Helper()
	if !regexp.MustCompile(`^ *\d+ kB$`).MatchString(v) || len(v) < len("       0 kB") {
		t.Errorf("status value %q is not \"%%8d kB\"", v)
	}
	n, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(v, " kB")), 10, 64)
	return n
}

func TestProcPidStatusIsKeyTabValueLinesInLinuxsOrder(t *testing.T) {
	s := sandbox(t)
	caps := [4]uint64{1 << unix.CAP_CHOWN, 1<<unix.CAP_CHOWN | 1<<unix.CAP_KILL, 1 << unix.CAP_KILL,
		1<<unix.CAP_CHOWN | 1<<unix.CAP_KILL | 1<<unix.CAP_SETUID | 1<<unix.CAP_SETGID}
	// A non-root program's exec leaves it its ambient capabilities only:
	// root starts with the bounding set and becomes uid 1000 keeping some.
	in := kerneltest.Init{Caps: &[4]uint64{caps[3], caps[3], 0, caps[3]}}
	runIn(t, s, in, func(g *fake.Guest) {
		groups := g.Alloc(8)
		g.WriteU32(groups, 4)
		g.WriteU32(groups+4, 27)
		g.Call(unix.SYS_SETGROUPS, 2, groups)
		g.Call(unix.SYS_SETRESGID, 100, 100, 100)
		g.Call(unix.SYS_PRCTL, unix.PR_SET_KEEPCAPS, 1, 0, 0, 0)
		g.Call(unix.SYS_SETRESUID, 1000, 1000, 1000)
		hdr, data := g.Alloc(8), g.Alloc(24)
		g.WriteU32(hdr, unix.LINUX_CAPABILITY_VERSION_3)
		g.WriteU32(data, uint32(caps[0]))
		g.WriteU32(data+4, uint32(caps[1]))
		g.WriteU32(data+8, uint32(caps[2]))
		if _, errno := g.Call(unix.SYS_CAPSET, hdr, data); errno != 0 {
			t.Errorf("capset: %v", errno)
		}
		g.Call(unix.SYS_UMASK, 0o027)
		block := g.Alloc(8)
		g.WriteU64(block, sigBit(unix.SIGUSR1)|sigBit(unix.SIGHUP))
		g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, block, 0, 8)
		g.Sigaction(unix.SIGUSR2, fake.SigAction{Handler: 1})
		g.Call(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
		text := readProc(t, g, "/proc/self/status")
		keys, v := statusFields(t, text)
		order := []string{"Name", "Umask", "State", "Tgid", "Ngid", "Pid", "PPid", "TracerPid", "Uid", "Gid",
			"FDSize", "Groups", "NStgid", "NSpid", "NSpgid", "NSsid", "VmPeak", "VmSize", "VmLck", "VmPin",
			"VmHWM", "VmRSS", "VmData", "VmStk", "Threads", "SigQ", "SigPnd", "ShdPnd", "SigBlk", "SigIgn",
			"SigCgt", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp",
			"voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"}
		at := 0
		for _, k := range keys {
			if at < len(order) && k == order[at] {
				at++
			}
		}
		if at != len(order) {
			t.Errorf("status keys %q: %q is missing or out of Linux's order", keys, order[at])
		}
		pid, _ := g.Call(unix.SYS_GETPID)
		hex := func(x uint64) string { return fmt.Sprintf("%016x", x) }
		for key, want := range map[string]string{
			"Name": "init", "Umask": "0027", "Tgid": strconv.Itoa(int(pid)), "Pid": strconv.Itoa(int(pid)), "PPid": "0",
			"Uid": "1000\t1000\t1000\t1000", "Gid": "100\t100\t100\t100",
			"Groups":  "4 27 ", // each group followed by a space, as Linux prints them
			"Threads": "1", "SigBlk": hex(sigBit(unix.SIGUSR1) | sigBit(unix.SIGHUP)), "SigIgn": hex(sigBit(unix.SIGUSR2)),
			"SigCgt": hex(0), "CapEff": hex(caps[0]), "CapPrm": hex(caps[1]), "CapInh": hex(caps[2]),
			"CapBnd": hex(caps[3]), "CapAmb": hex(0), "NoNewPrivs": "1", "Seccomp": "0",
		} {
			if v[key] != want {
				t.Errorf("status %s = %q, want %q", key, v[key], want)
			}
		}
		if !regexp.MustCompile(`^[RSDZTtXI] \(`).MatchString(v["State"]) {
			t.Errorf("status State = %q, want a letter and its word", v["State"])
		}
		for _, k := range []string{"VmPeak", "VmSize", "VmLck", "VmPin", "VmHWM", "VmRSS", "VmData", "VmStk"} {
			kB(t, v[k])
		}
		if !regexp.MustCompile(`^\d+/\d+$`).MatchString(v["SigQ"]) {
			t.Errorf("status SigQ = %q, want queued/limit", v["SigQ"])
		}
	})
}

func TestProcPidStatusGroupsIsATabAndASpaceWithoutGroups(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		if _, v := statusFields(t, readProc(t, g, "/proc/self/status")); v["Groups"] != " " {
			t.Errorf("status Groups = %q, want \" \" (Linux's trailing space)", v["Groups"])
		}
	})
}

func TestProcPidStatmIsSevenPageCountsMatchingStatus(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		g.Alloc(10 * 4096)
		texts := readProcs(t, g, "/proc/self/statm", "/proc/self/status")
		statm := texts[0]
		_, st := statusFields(t, texts[1])
		if !regexp.MustCompile(`^\d+ \d+ \d+ \d+ \d+ \d+ \d+\n$`).MatchString(statm) {
			t.Errorf("statm = %q, want seven numbers", statm)
			return
		}
		var size, resident, shared, text, lib, data, dt uint64
		fmt.Sscan(statm, &size, &resident, &shared, &text, &lib, &data, &dt)
		if size*4 != kB(t, st["VmSize"]) {
			t.Errorf("statm size %d pages, status VmSize %s", size, st["VmSize"])
		}
		if resident*4 != kB(t, st["VmRSS"]) {
			t.Errorf("statm resident %d pages, status VmRSS %s", resident, st["VmRSS"])
		}
		// data counts the stack too (Linux's data_vm + stack_vm).
		if want := kB(t, st["VmData"]) + kB(t, st["VmStk"]); data*4 != want {
			t.Errorf("statm data %d pages, want VmData+VmStk = %d kB", data, want)
		}
		if lib != 0 || dt != 0 {
			t.Errorf("statm lib %d, dt %d: Linux has printed 0 for both since 2.6", lib, dt)
		}
	})
}

func TestProcPidCmdlineAndEnvironAreNULTerminatedStrings(t *testing.T) {
	s := sandbox(t)
	in := kerneltest.Init{Argv: []string{"/bin/init", "a b", "", "c"}, Env: []string{"HOME=/", "X=1"}}
	runIn(t, s, in, func(g *fake.Guest) {
		if got := readProc(t, g, "/proc/self/cmdline"); got != "/bin/init\x00a b\x00\x00c\x00" {
			t.Errorf("cmdline = %q", got)
		}
		if got := readProc(t, g, "/proc/self/environ"); got != "HOME=/\x00X=1\x00" {
			t.Errorf("environ = %q", got)
		}
	})
}

func TestProcPidCommIsTheFirstFifteenBytesOfTheName(t *testing.T) {
	s := sandbox(t)
	s.AddProgram("/bin/averyveryverylongname", func(g *fake.Guest) {
		if got := readProc(t, g, "/proc/self/comm"); got != "averyveryverylo\n" {
			t.Errorf("comm after exec = %q, want the name's first 15 bytes and a newline", got)
		}
		name := g.CString("x) y")
		g.Call(unix.SYS_PRCTL, unix.PR_SET_NAME, name, 0, 0, 0)
		if got := readProc(t, g, "/proc/self/comm"); got != "x) y\n" {
			t.Errorf("comm after PR_SET_NAME = %q", got)
		}
		if f := statFields(t, readProc(t, g, "/proc/self/stat")); len(f) != 52 || f[1] != "x) y" {
			t.Errorf("stat with a ')' in the name: %d fields, comm %q", len(f), f[1:2])
		}
	})
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		if got := readProc(t, g, "/proc/self/comm"); got != "init\n" {
			t.Errorf("comm = %q, want \"init\\n\"", got)
		}
		g.Call(unix.SYS_EXECVE, g.CString("/bin/averyveryverylongname"), g.CStrings([]string{"x"}), 0)
		t.Errorf("execve returned")
	})
}

// mapsLine is a maps line as Linux's show_map_vma prints it: the fields
// end with a space, and a name, if any, starts at column 74.
var mapsLine = regexp.MustCompile(`^([0-9a-f]{8,})-([0-9a-f]{8,}) [r-][w-][x-][ps] [0-9a-f]{8} [0-9a-f]{2}:[0-9a-f]{2} \d+ (| +\S.*)$`)

func TestProcPidMapsListsEachMappingAsLinuxPrintsIt(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		addr := g.Alloc(3 * 4096)
		g.Call(unix.SYS_MPROTECT, addr+4096, 4096, unix.PROT_READ)
		maps := readProc(t, g, "/proc/self/maps")
		type vma struct {
			start, end uint64
			perm       string
		}
		var prev uint64
		var vmas []vma
		for _, line := range strings.Split(strings.TrimSuffix(maps, "\n"), "\n") {
			m := mapsLine.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("maps line %q is not in Linux's format", line)
				continue
			}
			if m[3] != "" && len(line)-len(strings.TrimLeft(m[3], " ")) != 73 {
				t.Errorf("maps line %q: the name starts at column %d, want 74", line, len(line)-len(strings.TrimLeft(m[3], " "))+1)
			}
			start, _ := strconv.ParseUint(m[1], 16, 64)
			end, _ := strconv.ParseUint(m[2], 16, 64)
			if start >= end || start < prev {
				t.Errorf("maps line %q: not an increasing range", line)
			}
			prev = end
			vmas = append(vmas, vma{start, end, line[len(m[1])+len(m[2])+2:][:4]})
		}
		// mprotect cut the mapping in three: a read-only page between two
		// read-write ones (which may have merged with their neighbours).
		a := uint64(addr)
		for _, want := range []struct {
			at   uint64
			perm string
			cut  func(v vma) bool
		}{
			{a, "rw-p", func(v vma) bool { return v.end == a+4096 }},
			{a + 4096, "r--p", func(v vma) bool { return v.start == a+4096 && v.end == a+8192 }},
			{a + 8192, "rw-p", func(v vma) bool { return v.start == a+8192 }},
		} {
			ok := false
			for _, v := range vmas {
				ok = ok || (v.start <= want.at && want.at < v.end && v.perm == want.perm && want.cut(v))
			}
			if !ok {
				t.Errorf("maps has no %s mapping at %#x cut where mprotect cut it:\n%s", want.perm, want.at, maps)
			}
		}
	})
}

func TestProcPidLimitsIsLinuxsTable(t *testing.T) {
	s := sandbox(t)
	limits := map[int]kernel.Limit{unix.RLIMIT_NOFILE: {Cur: 100, Max: 200}, unix.RLIMIT_NICE: {Cur: 0, Max: 0}}
	runIn(t, s, kerneltest.Init{Limits: limits}, func(g *fake.Guest) {
		text := readProc(t, g, "/proc/self/limits")
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		if want := fmt.Sprintf("%-25s %-20s %-20s %-10s", "Limit", "Soft Limit", "Hard Limit", "Units"); lines[0] != want {
			t.Errorf("limits header = %q, want %q", lines[0], want)
		}
		if len(lines) != 17 {
			t.Errorf("limits has %d rows, want 16 after the header", len(lines)-1)
			return
		}
		row := func(name, soft, hard, unit string) string {
			if unit == "" {
				return fmt.Sprintf("%-25s %-20s %-20s ", name, soft, hard)
			}
			return fmt.Sprintf("%-25s %-20s %-20s %-10s", name, soft, hard, unit)
		}
		want := map[int]string{
			1:  row("Max cpu time", "unlimited", "unlimited", "seconds"),
			8:  row("Max open files", "100", "200", "files"),
			14: row("Max nice priority", "0", "0", ""),
		}
		for i, w := range want {
			if lines[i] != w {
				t.Errorf("limits row %d = %q, want %q", i, lines[i], w)
			}
		}
		names := []string{"Max cpu time", "Max file size", "Max data size", "Max stack size", "Max core file size",
			"Max resident set", "Max processes", "Max open files", "Max locked memory", "Max address space",
			"Max file locks", "Max pending signals", "Max msgqueue size", "Max nice priority",
			"Max realtime priority", "Max realtime timeout"}
		for i, n := range names {
			if !strings.HasPrefix(lines[i+1], fmt.Sprintf("%-25s ", n)) {
				t.Errorf("limits row %d = %q, want %s", i+1, lines[i+1], n)
			}
		}
	})
}

func TestProcPidMountsListsEachMountWithItsOptions(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		mounts := readProc(t, g, "/proc/self/mounts")
		byPoint := map[string][]string{}
		for _, line := range strings.Split(strings.TrimSuffix(mounts, "\n"), "\n") {
			f := strings.Split(line, " ")
			if len(f) != 6 || f[4] != "0" || f[5] != "0" {
				t.Errorf("mounts line %q: want \"source point type options 0 0\"", line)
				continue
			}
			byPoint[f[1]] = f
		}
		if f := byPoint["/"]; f == nil || f[2] != "tmpfs" || !strings.HasPrefix(f[3], "rw") {
			t.Errorf("mounts has no read-write tmpfs at /: %q", mounts)
		}
		// relatime is Linux's default for a mount made without noatime
		// or strictatime.
		if f := byPoint["/proc"]; f == nil || f[2] != "proc" || f[3] != "rw,nosuid,nodev,noexec,relatime" {
			t.Errorf("mounts for /proc = %q, want proc with rw,nosuid,nodev,noexec,relatime", f)
		}
		if link := readProc(t, g, "/proc/mounts"); link != mounts {
			t.Errorf("/proc/mounts differs from /proc/self/mounts")
		}
	})
}

func TestProcSelfIsTheReadersOwnPid(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		buf := g.Alloc(64)
		at := unix.AT_FDCWD
		n, errno := g.Call(unix.SYS_READLINKAT, uintptr(at), g.CString("/proc/self"), buf, 64)
		b := make([]byte, n)
		g.Read(buf, b)
		pid, _ := g.Call(unix.SYS_GETPID)
		if errno != 0 || string(b) != strconv.Itoa(int(pid)) {
			t.Errorf("readlink /proc/self = %q, %v; want %d", b, errno, pid)
		}
		child, _ := g.Fork(func(g *fake.Guest) {
			n, _ := g.Call(unix.SYS_READLINKAT, uintptr(at), g.CString("/proc/self"), buf, 64)
			b := make([]byte, n)
			g.Read(buf, b)
			me, _ := g.Call(unix.SYS_GETPID)
			if string(b) != strconv.Itoa(int(me)) {
				t.Errorf("the child's /proc/self = %q, want %d", b, me)
			}
			if f := statFields(t, readProc(t, g, "/proc/self/stat")); len(f) > 3 && f[3] != strconv.Itoa(int(pid)) {
				t.Errorf("the child's stat ppid = %s, want %d", f[3], pid)
			}
		})
		g.Wait(child, 0)
	})
}

// A /proc file's content is generated anew at a read from offset 0 (pread
// or after lseek), as Linux's seq_file does, and kept while a reader goes
// on where its last read ended, so that a file read in pieces is whole.
func TestProcFileRereadAtOffsetZeroSeesNewContent(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		if _, errno := writeProc(g, "/proc/self/comm", "before"); errno != 0 {
			t.Fatalf("write comm: %v", errno)
		}
		at := unix.AT_FDCWD
		fd, errno := g.Call(unix.SYS_OPENAT, uintptr(at), g.CString("/proc/self/comm"), unix.O_RDONLY)
		if errno != 0 {
			t.Fatalf("open comm: %v", errno)
		}
		defer g.Call(unix.SYS_CLOSE, fd)
		buf := g.Alloc(64)
		read := func(nr, count, off uintptr) string {
			n, errno := g.Call(nr, fd, buf, count, off)
			if errno != 0 {
				t.Fatalf("read comm: %v", errno)
			}
			b := make([]byte, n)
			g.Read(buf, b)
			return string(b)
		}
		if got := read(unix.SYS_READ, 3, 0); got != "bef" {
			t.Errorf("first read = %q, want \"bef\"", got)
		}
		if _, errno := writeProc(g, "/proc/self/comm", "after"); errno != 0 {
			t.Fatalf("write comm: %v", errno)
		}
		if got := read(unix.SYS_READ, 64, 0); got != "ore\n" {
			t.Errorf("read on from offset 3 = %q, want the rest of the first content \"ore\\n\"", got)
		}
		if got := read(unix.SYS_PREAD64, 64, 0); got != "after\n" {
			t.Errorf("pread at 0 = %q, want the new content \"after\\n\"", got)
		}
		if _, errno := writeProc(g, "/proc/self/comm", "again"); errno != 0 {
			t.Fatalf("write comm: %v", errno)
		}
		if _, errno := g.Call(unix.SYS_LSEEK, fd, 0, unix.SEEK_SET); errno != 0 {
			t.Fatalf("lseek: %v", errno)
		}
		if got := read(unix.SYS_READ, 64, 0); got != "again\n" {
			t.Errorf("read after lseek to 0 = %q, want \"again\\n\"", got)
		}
	})
}
