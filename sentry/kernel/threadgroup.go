package kernel

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/waiter"
)

// ThreadGroup is a guest process: the tasks sharing a pid.
type ThreadGroup struct {
	k   *Kernel
	pid int32 // in the sandbox's pid namespace (ns_pid.go)
	// pidns is the pid namespace the process is in, vpid its pid there;
	// both are set before the process runs and never change.
	pidns *PIDNamespace
	vpid  int32

	// Guarded by k.treeMu: the process tree, sessions and process groups,
	// and the life cycle a parent waits on.
	parent     *ThreadGroup // nil for init, whose parent is outside the sandbox
	children   map[*ThreadGroup]struct{}
	pgid, sid  int32
	exitSignal int    // what the parent gets when this process ends (usually SIGCHLD)
	zombie     bool   // every task has exited; the parent has not reaped it
	usage      Usage  // what the process used, measured when it ended
	exitUID    uint32 // the real uid of its last task, for wait and SIGCHLD
	childUsage Usage  // summed over the children this process reaped (RUSAGE_CHILDREN)
	execed     bool   // setpgid on a child that has exec'd gives EACCES
	tty        *TTY   // the controlling terminal (tty.go), nil for none
	// zombieNproc: the zombie still counts as a task of zombieNprocUID
	// for RLIMIT_NPROC, until it is reaped.
	zombieNproc    bool
	zombieNprocUID uint32
	// outsideDone, for a process started from outside the sandbox
	// (exec_process.go), is closed when it ends: it has no parent to reap
	// it, so it is reaped then.
	outsideDone chan struct{}
	// container is the pod's container the process belongs to
	// (InitSpec.Container), "" for the sandbox's own; set before the
	// process runs, and never changed.
	container string

	// Guarded by mu: tasks, signals, exit and stop state.
	mu      sync.Mutex
	tasks   []*Task
	sighand *SigHand
	pending sigQueue // signals for any task of the process
	exiting bool     // a group exit is under way
	status  ExitStatus
	// The CPU time of the tasks that have exited (cputime.go).
	exitedUser, exitedSys time.Duration
	// Job control: stopped while a stop signal holds the process; the
	// parent's wait sees each change once.
	stopped      bool
	stopSig      int
	stopReported bool
	continued    bool
	contCh       chan struct{} // closed when the process continues

	limits    Limits
	subreaper bool

	aio aioTable // Linux AIO contexts (aio.go)
	// processKeyring is the process keyring (keys.go), under the kernel's
	// key table lock.
	processKeyring *Key
	itimer         itimer      // ITIMER_REAL and alarm
	ptimers        posixTimers // timer_create's (posix_timer.go)
	cpuLimit       cpuLimit    // RLIMIT_CPU
	oom            oomScore    // oom_score_adj (oom.go)

	// childEvents wakes the process's waiters when a child changes state.
	childEvents notifier
	// sigEvents wakes tasks waiting for a pending signal (sigtimedwait,
	// signalfd).
	sigEvents notifier
	// taskExits wakes an exec waiting for the other tasks to go.
	taskExits notifier
	// signalQueue notifies signalfds polled by the process's tasks.
	signalQueue waiter.Queue
	// exitQueue notifies pidfds of the process's end (pidfd.go).
	exitQueue waiter.Queue

	pt tgPtrace // the process's ptrace state (ptrace.go)
}

// SignalQueue is notified whenever a signal is queued for the process.
func (tg *ThreadGroup) SignalQueue() *waiter.Queue { return &tg.signalQueue }

// newThreadGroup returns a process with no tasks.
func newThreadGroup(k *Kernel, pid int32, sighand *SigHand) *ThreadGroup {
	return &ThreadGroup{k: k, pid: pid, pidns: k.rootPIDNS, vpid: pid, children: make(map[*ThreadGroup]struct{}), sighand: sighand,
		exitSignal: 17 /* SIGCHLD */}
}

// notifier wakes every goroutine waiting on it at once.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel that is closed at the next broadcast.
func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

// broadcast wakes everyone waiting.
func (n *notifier) broadcast() {
	n.mu.Lock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
	n.mu.Unlock()
}

// Limits are the process's resource limits.
func (tg *ThreadGroup) Limits() *Limits { return &tg.limits }

// Usage is what getrusage and wait4 report of a process.
type Usage struct {
	MaxRSS uint64 // bytes
	MinFlt uint64 // pages first touched (each a minor fault on Linux)
	User   time.Duration
	Sys    time.Duration
}

// uid is the real uid of the process's first living task (0 once none is
// left), which SIGCHLD and wait report of a stop or continue.
func (tg *ThreadGroup) uid() uint32 {
	t := tg.Leader()
	if t == nil {
		return 0
	}
	t.creds.Lock()
	defer t.creds.Unlock()
	return t.creds.UID
}

// ChildUsage returns the usage summed over the reaped children.
func (tg *ThreadGroup) ChildUsage() Usage {
	tg.k.treeMu.Lock()
	defer tg.k.treeMu.Unlock()
	return tg.childUsage
}

// limitAS is the process's RLIMIT_AS, for its memory manager.
func (tg *ThreadGroup) limitAS() uint64 { return tg.limits.Get(unix.RLIMIT_AS).Cur }

// limitStack is the process's RLIMIT_STACK, for its memory manager.
func (tg *ThreadGroup) limitStack() uint64 { return tg.limits.Get(unix.RLIMIT_STACK).Cur }
