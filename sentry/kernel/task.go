package kernel

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel/ipc"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Task is one guest thread.
type Task struct {
	k   *Kernel
	tid int32 // in the sandbox's pid namespace: the kernel's key for it
	// vtid is the thread id in the task's own pid namespace (gettid);
	// childPIDNS the namespace its children are made in, its own unless
	// unshare or setns changed it (under tg.mu; ns_pid.go).
	vtid       int32
	childPIDNS *PIDNamespace
	tg         *ThreadGroup
	regs       arch.Registers
	args       arch.SyscallArgs // the current call's, here so that no call allocates them
	ctx        platform.Context

	mm    *mm.MemoryManager
	exe   vfs.Path // the program's file, for /proc/<pid>/exe (tg.mu, as comm)
	fds   *FDTable
	fs    *FSContext
	creds *Credentials
	// nprocUID is the real uid the task is counted under for
	// RLIMIT_NPROC (treeMu).
	nprocUID uint32

	// Signal state, guarded by tg.mu except where noted.
	sigMask  uint64
	pending  sigQueue
	altStack AltStack // only the task touches it
	// The CPU's report of the task's last fault (trap number, error code,
	// address), which every signal frame's sigcontext carries after, as
	// Linux's thread.trap_nr, error_code and cr2 do. Only the task touches it.
	lastFault struct{ trapno, err, addr uint64 }
	sud       userDispatch // syscall user dispatch (sud.go); only the task touches it
	// savedMask is restored when a handler returns, after a call that
	// waited with a temporary mask (rt_sigsuspend, ppoll, pselect6).
	savedMask     uint64
	haveSavedMask bool
	// restart is the restart code the last system call returned, which
	// signal delivery turns into EINTR or a restart (only the task).
	restart int

	// check is set when the task must look at signals, a stop or its exit
	// before it next runs guest code: the one flag the hot path tests.
	check atomic.Bool
	// interrupt wakes the task from a blocking call (capacity 1).
	interrupt chan struct{}
	exiting   atomic.Bool
	exitCode  int // exit(2)'s code, the process's if this task is its last

	clearChildTID uintptr
	robustList    uintptr
	// comm (the name prctl(PR_GET_NAME) and /proc/<pid>/comm give), exe
	// and prctl change only in the task itself (prctl, exec), and are read
	// by others (/proc, a parent's exit): under tg.mu.
	comm    string
	prctl   Prctl
	sched   Sched // task_sched.go, under tg.mu as prctl
	started time.Time
	// ipcns and semUndo (task_ipc.go) change only in the task itself,
	// ipcns, utsns and cgroupns under tg.mu (task_unshare.go).
	ipcns    *ipc.Namespace
	utsns    *UTSNamespace
	cgroupns *CgroupNamespace
	semUndo  *ipc.UndoList
	// The task's thread and session keyrings (keys.go), under the
	// kernel's key table lock.
	threadKeyring, sessionKeyring *Key
	// userTime and sysTime are the task's CPU time in ns (cputime.go);
	// userShown is the most user time a reading of it has returned.
	userTime, sysTime atomic.Int64
	userShown         atomic.Int64
	// vforkDone is closed when this task, a vfork child, execs or exits.
	vforkDone chan struct{}
	// pt is the task's ptrace state, as tracee and tracer (ptrace.go).
	pt taskPtrace
	// sc is the task's seccomp mode and filters (seccomp.go).
	sc taskSeccomp
}

// newTask returns a task of tg, not yet registered or running.
func newTask(k *Kernel, tg *ThreadGroup) *Task {
	return &Task{k: k, tg: tg, childPIDNS: k.rootPIDNS, interrupt: make(chan struct{}, 1), started: time.Now(), ipcns: k.ipcns, utsns: k.utsns, cgroupns: k.cgroupns,
		prctl: Prctl{Dumpable: 1, TimerSlack: linuxabi.DEFAULT_TIMER_SLACK_NS, DefaultTimerSlack: linuxabi.DEFAULT_TIMER_SLACK_NS}, altStack: AltStack{Flags: linuxabi.SS_DISABLE}}
}

// Kernel returns the task's kernel.
func (t *Task) Kernel() *Kernel { return t.k }

// TID is the task's thread id; PID its process id (the thread group's),
// both as the task sees them, in its own pid namespace.
func (t *Task) TID() int32 { return t.vtid }
func (t *Task) PID() int32 { return t.tg.vpid }

// RootTID is the task's thread id in the sandbox's pid namespace.
func (t *Task) RootTID() int32 { return t.tid }

// PPID is the parent process's id as the task sees it: 0 for init, and
// for a parent outside the task's pid namespace, as on Linux.
func (t *Task) PPID() int32 {
	t.k.treeMu.Lock()
	defer t.k.treeMu.Unlock()
	if t.tg.parent == nil {
		return 0
	}
	return t.tg.parent.pidIn(t.tg.pidns)
}

// PGID and SID are the process group and session as the task sees them.
func (t *Task) PGID() int32 {
	t.k.treeMu.Lock()
	defer t.k.treeMu.Unlock()
	return t.tg.pidns.idOf(t.tg.pgid)
}
func (t *Task) SID() int32 {
	t.k.treeMu.Lock()
	defer t.k.treeMu.Unlock()
	return t.tg.pidns.idOf(t.tg.sid)
}

// RootPGID and RootSID are the task's process group and session as the
// sandbox's pid namespace numbers them.
func (t *Task) RootPGID() int32 {
	t.k.treeMu.Lock()
	defer t.k.treeMu.Unlock()
	return t.tg.pgid
}
func (t *Task) RootSID() int32 {
	t.k.treeMu.Lock()
	defer t.k.treeMu.Unlock()
	return t.tg.sid
}

// ThreadGroup returns the task's process.
func (t *Task) ThreadGroup() *ThreadGroup { return t.tg }

// Regs gives the task's registers, for handlers that change more than the
// return value (arch_prctl, execve, rt_sigreturn).
func (t *Task) Regs() *arch.Registers { return &t.regs }

// MM is the task's memory.
func (t *Task) MM() *mm.MemoryManager { return t.mm }

// FDs is the task's file descriptor table.
func (t *Task) FDs() *FDTable { return t.fds }

// FS is the task's root, working directory and umask.
func (t *Task) FS() *FSContext { return t.fs }

// Creds are the task's credentials.
func (t *Task) Creds() *Credentials { return t.creds }

// Limits are the task's resource limits (its process's).
func (t *Task) Limits() *Limits { return &t.tg.limits }

// SetClearChildTID records set_tid_address's address.
func (t *Task) SetClearChildTID(addr uintptr) { t.clearChildTID = addr }

// SetRobustList records set_robust_list's head.
func (t *Task) SetRobustList(addr uintptr) { t.robustList = addr }

// RobustList returns the robust list head.
func (t *Task) RobustList() uintptr { return t.robustList }

// Comm and SetComm are the task's name (at most 15 bytes).
func (t *Task) Comm() string {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.comm
}
func (t *Task) SetComm(s string) {
	if len(s) > 15 {
		s = s[:15]
	}
	t.tg.mu.Lock()
	t.comm = s
	t.tg.mu.Unlock()
}

// Resolver resolves paths relative to start for this task, with its
// file-system credentials.
func (t *Task) Resolver(start vfs.Path) vfs.Resolver {
	root, _ := t.fs.Get()
	return vfs.Resolver{Root: root, Start: start, Caller: t, Creds: t.FSCreds()}
}

// CopyIn, CopyOut and CopyInString move data across the guest boundary.
func (t *Task) CopyIn(addr uintptr, dst []byte) (int, error)  { return t.mm.CopyIn(addr, dst) }
func (t *Task) CopyOut(addr uintptr, src []byte) (int, error) { return t.mm.CopyOut(addr, src) }
func (t *Task) CopyInString(addr uintptr, max int) (string, error) {
	return t.mm.CopyInString(addr, max)
}

// Log writes a kernel diagnostic about this task.
func (t *Task) Log(format string, args ...any) {
	t.k.Log("[%d] "+format, append([]any{t.tid}, args...)...)
}

// FileSizeLimit implements vfs.Context: the task's RLIMIT_FSIZE.
func (t *Task) FileSizeLimit() uint64 { return t.tg.limits.Get(unix.RLIMIT_FSIZE).Cur }
