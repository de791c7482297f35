package procfs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// pidDir is /proc/<pid> (name is how it was reached: the pid, or a tid).
// Every file reads the process's leader at the time it is read, and gives
// ESRCH once the process is gone.
func (f *fs) pidDir(tg *kernel.ThreadGroup, name string) *node {
	p := name + "/"
	leader := func() (*kernel.Task, error) {
		if t := tg.Leader(); t != nil {
			return t, nil
		}
		return nil, unix.ESRCH
	}
	gen := func(file string, fn func(t *kernel.Task) ([]byte, error)) child {
		return child{file, f.file(p+file, func() ([]byte, error) {
			t, err := leader()
			if err != nil {
				return nil, err
			}
			return fn(t)
		})}
	}
	lnk := func(file string, fn func(t *kernel.Task) (string, error)) child {
		return child{file, f.link(p+file, func(vfs.Caller) (string, error) {
			t, err := leader()
			if err != nil {
				return "", err
			}
			return fn(t)
		})}
	}
	children := []child{
		gen("status", status), gen("stat", statLine), gen("statm", statm), gen("comm", comm),
		gen("cmdline", func(t *kernel.Task) ([]byte, error) {
			l := t.MM().Layout
			return guestBytes(t, l.ArgStart, l.ArgEnd)
		}),
		gen("environ", func(t *kernel.Task) ([]byte, error) {
			l := t.MM().Layout
			return guestBytes(t, l.EnvStart, l.EnvEnd)
		}),
		gen("auxv", func(t *kernel.Task) ([]byte, error) {
			l := t.MM().Layout
			return guestBytes(t, l.AuxvStart, l.AuxvEnd)
		}),
		gen("maps", maps), gen("mounts", mounts), gen("limits", limits),
		gen("cgroup", func(*kernel.Task) ([]byte, error) { return []byte("0::/\n"), nil }),
		gen("oom_score_adj", func(*kernel.Task) ([]byte, error) { return []byte("0\n"), nil }),
		lnk("exe", func(t *kernel.Task) (string, error) { return pathName(t, t.Executable()), nil }),
		lnk("cwd", func(t *kernel.Task) (string, error) {
			_, cwd := t.FS().Get()
			return pathName(t, cwd), nil
		}),
		lnk("root", func(t *kernel.Task) (string, error) { return "/", nil }),
		{"fd", f.dir(p+"fd", true, func() []child { return f.fdChildren(tg, p+"fd/") })},
		{"task", f.dir(p+"task", true, func() []child {
			var out []child
			for _, t := range tg.Tasks() {
				tid := strconv.Itoa(int(t.TID()))
				out = append(out, child{tid, f.dir(p+"task/"+tid, false, func() []child { return nil })})
			}
			return out
		})},
	}
	return f.dir(p[:len(p)-1], false, func() []child { return children })
}

// pathName is p as the task sees it.
func pathName(t *kernel.Task, p vfs.Path) string {
	root, _ := t.FS().Get()
	return vfs.PathName(p, root)
}

// fdChildren lists /proc/<pid>/fd: a symlink per open fd.
func (f *fs) fdChildren(tg *kernel.ThreadGroup, prefix string) []child {
	t := tg.Leader()
	if t == nil {
		return nil
	}
	var out []child
	for _, e := range t.FDs().Snapshot() {
		file := e.File
		name := strconv.Itoa(int(e.FD))
		out = append(out, child{name, f.link(prefix+name, func(vfs.Caller) (string, error) {
			if n, ok := file.Impl().(interface{ Name() string }); ok && file.Path().Dentry == nil {
				return n.Name(), nil
			}
			return pathName(t, file.Path()), nil
		})})
	}
	return out
}

// guestBytes reads [start, end) of the task's memory.
func guestBytes(t *kernel.Task, start, end uintptr) ([]byte, error) {
	if end <= start {
		return nil, nil
	}
	b := make([]byte, min(end-start, 1<<20))
	n, _ := t.MM().CopyIn(start, b)
	return b[:n], nil
}

func comm(t *kernel.Task) ([]byte, error) { return []byte(t.Comm() + "\n"), nil }

func status(t *kernel.Task) ([]byte, error) {
	c := t.Creds()
	c.Lock()
	uid := fmt.Sprintf("%d\t%d\t%d\t%d", c.UID, c.EUID, c.SUID, c.FSUID)
	gid := fmt.Sprintf("%d\t%d\t%d\t%d", c.GID, c.EGID, c.SGID, c.FSGID)
	// Each group is followed by a space, the last too, as Linux prints them.
	var groups strings.Builder
	for _, g := range c.Groups {
		groups.WriteString(strconv.Itoa(int(g)) + " ")
	}
	if len(c.Groups) == 0 {
		groups.WriteString(" ")
	}
	capInh, capPrm, capEff, capBnd := c.CapInheritable, c.CapPermitted, c.CapEffective, c.CapBounding
	c.Unlock()
	u := t.MM().Usage()
	rss := t.MM().ResidentBytes()
	ign, cgt := signalDispositions(t.ThreadGroup())
	noNewPrivs := 0
	if t.Prctl().NoNewPrivs {
		noNewPrivs = 1
	}
	var b strings.Builder
	kb := func(name string, v uint64) { fmt.Fprintf(&b, "%s:\t%8d kB\n", name, v/1024) }
	fmt.Fprintf(&b, "Name:\t%s\nUmask:\t%04o\nState:\t%s\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\nTracerPid:\t0\n",
		t.Comm(), t.FS().Umask(), taskState(t), t.PID(), t.PID(), t.PPID())
	fmt.Fprintf(&b, "Uid:\t%s\nGid:\t%s\nFDSize:\t64\nGroups:\t%s\n", uid, gid, groups.String())
	fmt.Fprintf(&b, "NStgid:\t%d\nNSpid:\t%d\nNSpgid:\t%d\nNSsid:\t%d\n", t.PID(), t.PID(), t.PGID(), t.SID())
	kb("VmPeak", u.Size)
	kb("VmSize", u.Size)
	kb("VmLck", u.Locked)
	kb("VmPin", 0)
	kb("VmHWM", rss)
	kb("VmRSS", rss)
	kb("VmData", u.Data)
	kb("VmStk", u.Stack)
	fmt.Fprintf(&b, "Threads:\t%d\nSigQ:\t0/%d\nSigPnd:\t%016x\nShdPnd:\t%016x\nSigBlk:\t%016x\nSigIgn:\t%016x\nSigCgt:\t%016x\n",
		len(t.ThreadGroup().Tasks()), t.Limits().Get(unix.RLIMIT_SIGPENDING).Cur, 0, 0, t.SigMask(), ign, cgt)
	fmt.Fprintf(&b, "CapInh:\t%016x\nCapPrm:\t%016x\nCapEff:\t%016x\nCapBnd:\t%016x\nCapAmb:\t%016x\n",
		capInh, capPrm, capEff, capBnd, 0)
	fmt.Fprintf(&b, "NoNewPrivs:\t%d\nSeccomp:\t0\nSeccomp_filters:\t0\n", noNewPrivs)
	fmt.Fprintf(&b, "voluntary_ctxt_switches:\t0\nnonvoluntary_ctxt_switches:\t0\n")
	return []byte(b.String()), nil
}

// signalDispositions returns the ignored and caught signal sets.
func signalDispositions(tg *kernel.ThreadGroup) (ign, cgt uint64) {
	for sig := 1; sig <= 64; sig++ {
		switch h := tg.Action(sig).Handler; h {
		case linuxabi.SIG_DFL:
		case linuxabi.SIG_IGN:
			ign |= 1 << (sig - 1)
		default:
			cgt |= 1 << (sig - 1)
		}
	}
	return ign, cgt
}

// taskState is the process state letter and word.
func taskState(t *kernel.Task) string { return "S (sleeping)" }

func statLine(t *kernel.Task) ([]byte, error) {
	u := t.MM().Usage()
	l := t.MM().Layout
	start := ticks(t.StartTime().Sub(t.Kernel().BootTime()) + time.Second)
	user, sys := t.ThreadGroup().CPUTime()
	children := t.ThreadGroup().ChildUsage()
	ign, cgt := signalDispositions(t.ThreadGroup())
	rss := t.MM().ResidentBytes() / mm.PageSize
	fields := []any{
		t.PID(), "(" + t.Comm() + ")", taskState(t)[:1], t.PPID(), t.PGID(), t.SID(), 0, -1, 0,
		0, 0, 0, 0, ticks(user), ticks(sys), ticks(children.User), ticks(children.Sys), 20, 0, len(t.ThreadGroup().Tasks()), 0, start, u.Size, rss,
		t.Limits().Get(unix.RLIMIT_RSS).Cur, 0, 0, l.StackTop, 0, 0, 0, t.SigMask(), ign, cgt, 0, 0, 0, 17, 0,
		0, 0, 0, 0, 0, 0, 0, 0, l.ArgStart, l.ArgEnd, l.EnvStart, l.EnvEnd, 0,
	}
	var b strings.Builder
	for i, v := range fields {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, v)
	}
	b.WriteByte('\n')
	return []byte(b.String()), nil
}

func statm(t *kernel.Task) ([]byte, error) {
	u := t.MM().Usage()
	rss := t.MM().ResidentBytes()
	// data is the data and the stack, as Linux's data_vm + stack_vm.
	return []byte(fmt.Sprintf("%d %d 0 0 0 %d 0\n", u.Size/mm.PageSize, rss/mm.PageSize, (u.Data+u.Stack)/mm.PageSize)), nil
}

func maps(t *kernel.Task) ([]byte, error) {
	var b strings.Builder
	for _, m := range t.MM().Maps() {
		perm := []byte("---p")
		if m.Prot&platform.ProtRead != 0 {
			perm[0] = 'r'
		}
		if m.Prot&platform.ProtWrite != 0 {
			perm[1] = 'w'
		}
		if m.Prot&platform.ProtExec != 0 {
			perm[2] = 'x'
		}
		if m.Shared {
			perm[3] = 's'
		}
		// The fields end with a space; a name is padded to column 74,
		// as Linux's show_map_vma prints it.
		line := fmt.Sprintf("%08x-%08x %s %08x 00:00 0 ", m.Start, m.End, perm, m.Offset)
		if m.Name != "" {
			line = fmt.Sprintf("%-72s %s", line, m.Name)
		}
		b.WriteString(line + "\n")
	}
	return []byte(b.String()), nil
}

func mounts(t *kernel.Task) ([]byte, error) {
	root, _ := t.FS().Get()
	var b strings.Builder
	for _, m := range vfs.Mounts(root) {
		opts := "rw"
		if m.Flags&unix.MS_RDONLY != 0 {
			opts = "ro"
		}
		if m.Flags&unix.MS_NOSUID != 0 {
			opts += ",nosuid"
		}
		if m.Flags&unix.MS_NODEV != 0 {
			opts += ",nodev"
		}
		if m.Flags&unix.MS_NOEXEC != 0 {
			opts += ",noexec"
		}
		fmt.Fprintf(&b, "%s %s %s %s 0 0\n", m.Type, m.Path, m.Type, opts)
	}
	return []byte(b.String()), nil
}

// limitRows name the rows of /proc/<pid>/limits, in Linux's order.
var limitRows = []struct {
	name, unit string
	res        int
}{
	{"Max cpu time", "seconds", unix.RLIMIT_CPU}, {"Max file size", "bytes", unix.RLIMIT_FSIZE},
	{"Max data size", "bytes", unix.RLIMIT_DATA}, {"Max stack size", "bytes", unix.RLIMIT_STACK},
	{"Max core file size", "bytes", unix.RLIMIT_CORE}, {"Max resident set", "bytes", unix.RLIMIT_RSS},
	{"Max processes", "processes", unix.RLIMIT_NPROC}, {"Max open files", "files", unix.RLIMIT_NOFILE},
	{"Max locked memory", "bytes", unix.RLIMIT_MEMLOCK}, {"Max address space", "bytes", unix.RLIMIT_AS},
	{"Max file locks", "locks", unix.RLIMIT_LOCKS}, {"Max pending signals", "signals", unix.RLIMIT_SIGPENDING},
	{"Max msgqueue size", "bytes", unix.RLIMIT_MSGQUEUE}, {"Max nice priority", "", unix.RLIMIT_NICE},
	{"Max realtime priority", "", unix.RLIMIT_RTPRIO}, {"Max realtime timeout", "us", unix.RLIMIT_RTTIME},
}

func limits(t *kernel.Task) ([]byte, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "%-25s %-20s %-20s %-10s\n", "Limit", "Soft Limit", "Hard Limit", "Units")
	show := func(v uint64) string {
		if v == kernel.Infinity {
			return "unlimited"
		}
		return strconv.FormatUint(v, 10)
	}
	for _, r := range limitRows {
		l := t.Limits().Get(r.res)
		fmt.Fprintf(&b, "%-25s %-20s %-20s ", r.name, show(l.Cur), show(l.Max))
		if r.unit != "" {
			fmt.Fprintf(&b, "%-10s", r.unit) // a row without a unit ends after the space
		}
		b.WriteString("\n")
	}
	return []byte(b.String()), nil
}
