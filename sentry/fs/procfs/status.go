package procfs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// status is /proc/<pid>/status, or with thread /proc/<pid>/task/<tid>/status:
// Pid is then the thread's id and Name its name.
func (f *fs) status(t *kernel.Task, thread bool) ([]byte, error) {
	c := t.Creds()
	c.Lock()
	// The ids as the process's own user namespace shows them (Linux:
	// the reader's; the two differ only for a reader in another).
	uidOf, gidOf := c.UIDOf, c.GIDOf
	uid := fmt.Sprintf("%d\t%d\t%d\t%d", uidOf(c.UID), uidOf(c.EUID), uidOf(c.SUID), uidOf(c.FSUID))
	gid := fmt.Sprintf("%d\t%d\t%d\t%d", gidOf(c.GID), gidOf(c.EGID), gidOf(c.SGID), gidOf(c.FSGID))
	// Each group is followed by a space, the last too, as Linux prints them.
	var groups strings.Builder
	for _, id := range c.Groups {
		groups.WriteString(strconv.Itoa(int(gidOf(id))) + " ")
	}
	if len(c.Groups) == 0 {
		groups.WriteString(" ")
	}
	capInh, capPrm, capEff, capBnd, capAmb := c.CapInheritable, c.CapPermitted, c.CapEffective, c.CapBounding, c.CapAmbient
	c.Unlock()
	u := t.MM().Usage()
	rss := t.MM().ResidentBytes()
	ign, cgt := signalDispositions(t.ThreadGroup())
	noNewPrivs := 0
	if t.Prctl().NoNewPrivs {
		noNewPrivs = 1
	}
	ids := f.k.TaskIDsIn(f.ns, t)
	pid, rootPID := ids.PID, t.ThreadGroup().PID()
	if thread {
		pid, rootPID = ids.TID, t.RootTID()
	}
	var b strings.Builder
	kb := func(name string, v uint64) { fmt.Fprintf(&b, "%s:\t%8d kB\n", name, v/1024) }
	tracerPid := int32(0)
	if tr := t.Tracer(); tr != nil {
		tracerPid = f.k.IDIn(f.ns, tr.RootTID())
	}
	fmt.Fprintf(&b, "Name:\t%s\nUmask:\t%04o\nState:\t%s\nTgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\nTracerPid:\t%d\n",
		t.Comm(), t.FS().Umask(), taskState(t), ids.PID, pid, ids.PPID, tracerPid)
	fmt.Fprintf(&b, "Uid:\t%s\nGid:\t%s\nFDSize:\t64\nGroups:\t%s\n", uid, gid, groups.String())
	// The ids in each namespace from this /proc's down to the task's own.
	leaf := t.PIDNamespace()
	for _, l := range []struct {
		name string
		id   int32
	}{{"NStgid", t.ThreadGroup().PID()}, {"NSpid", rootPID}, {"NSpgid", t.RootPGID()}, {"NSsid", t.RootSID()}} {
		b.WriteString(l.name + ":")
		for _, id := range f.k.IDsIn(f.ns, leaf, l.id) {
			fmt.Fprintf(&b, "\t%d", id)
		}
		b.WriteString("\n")
	}
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
		capInh, capPrm, capEff, capBnd, capAmb)
	fmt.Fprintf(&b, "NoNewPrivs:\t%d\nSeccomp:\t%d\nSeccomp_filters:\t%d\n", noNewPrivs, t.SeccompMode(), t.SeccompFilters())
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

// taskState is the process state letter and word: a stop, by ptrace or
// job control, as Linux shows it; otherwise sleeping, as the sentry does
// not tell a task running guest code from one blocked.
func taskState(t *kernel.Task) string {
	switch traced, stopped := t.StopState(); {
	case traced:
		return "t (tracing stop)"
	case stopped:
		return "T (stopped)"
	}
	return "S (sleeping)"
}

// statLine is /proc/<pid>/stat, or with thread the thread's own: its id,
// name and CPU times rather than the process's.
func (f *fs) statLine(t *kernel.Task, thread bool) ([]byte, error) {
	u := t.MM().Usage()
	l := t.MM().Layout
	start := ticks(t.StartTime().Sub(t.Kernel().BootTime()) + time.Second)
	ids := f.k.TaskIDsIn(f.ns, t)
	pid := ids.PID
	user, sys := t.ThreadGroup().CPUTime()
	children := t.ThreadGroup().ChildUsage()
	if thread {
		pid = ids.TID
		user, sys = t.CPUTime()
		children = kernel.Usage{}
	}
	ign, cgt := signalDispositions(t.ThreadGroup())
	rss := t.MM().ResidentBytes() / mm.PageSize
	// tty_nr and tpgid: the controlling terminal and its foreground group.
	var ttyNr uint32
	tty, tpgid := t.ThreadGroup().TTYState()
	if tty != nil {
		ttyNr = tty.EncodedDev()
	}
	if tpgid > 0 {
		tpgid = f.k.IDIn(f.ns, tpgid)
	}
	// priority is Linux's prio less 100: 20 plus the nice value, or
	// under a real-time policy -1 less its priority.
	sched := t.Sched()
	prio := 20 + sched.Nice
	if sched.Priority > 0 {
		prio = -1 - sched.Priority
	}
	fields := []any{
		pid, "(" + t.Comm() + ")", taskState(t)[:1], ids.PPID, ids.PGID, ids.SID, ttyNr, tpgid, 0,
		0, 0, 0, 0, ticks(user), ticks(sys), ticks(children.User), ticks(children.Sys), prio, sched.Nice, len(t.ThreadGroup().Tasks()), 0, start, u.Size, rss,
		t.Limits().Get(unix.RLIMIT_RSS).Cur, 0, 0, l.StackTop, 0, 0, 0, t.SigMask(), ign, cgt, 0, 0, 0, 17, 0,
		sched.Priority, sched.Policy, 0, 0, 0, 0, 0, 0, l.ArgStart, l.ArgEnd, l.EnvStart, l.EnvEnd, 0,
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
