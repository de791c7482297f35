// Package kernel is the sentry's model of a Linux kernel for one sandbox:
// tasks (guest threads) and thread groups, their memory, files, credentials,
// limits and signal state, and the loop that runs each task on the platform
// and hands its system calls to the syscall table. It never imports a
// platform implementation and never opens a host file.
package kernel

import (
	"fmt"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel/ipc"
	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// What uname and /proc report about the kernel. The release is one whose
// features moat's syscall table follows; programs compare it, so it must
// look like a real kernel's.
const (
	OSType  = "Linux"
	Release = "6.1.0"
	Version = "#1 SMP PREEMPT_DYNAMIC moat"
	Machine = "x86_64"
)

// SyscallTable serves system calls; the syscalls package provides it.
type SyscallTable interface {
	// Call runs system call nr for t. The result goes to the guest's rax:
	// a value, or -errno for an error that is a unix.Errno. ErrNoReturn
	// leaves the registers as the handler set them.
	Call(t *Task, nr uintptr, args *arch.SyscallArgs) (uintptr, error)
}

// Config is what a kernel is built from.
type Config struct {
	Platform platform.Platform
	MemFile  *memfile.File
	Syscalls SyscallTable
	// Root is the sandbox's root file system tree.
	Root vfs.Path
	// Hostname is what uname reports as the node name.
	Hostname string
	// CPU facts the auxiliary vector reports (AT_HWCAP, AT_HWCAP2,
	// AT_MINSIGSTKSZ).
	HWCap, HWCap2, MinSigStackSize uint64
	// Log receives the kernel's diagnostics (unsupported calls and the like).
	Log func(format string, args ...any)
}

// Kernel is one sandbox's kernel.
type Kernel struct {
	Config
	bootMono int64 // host CLOCK_MONOTONIC at boot, in ns: the guest's zero
	bootTime time.Time
	vdso     *vdsoPages

	// treeMu guards the process tree: which tasks and processes exist
	// (tasks, tgs, nextTID) and every ThreadGroup's tree fields.
	treeMu  sync.Mutex
	nextTID int32
	tasks   map[int32]*Task        // living tasks by tid
	nproc   map[uint32]int         // living tasks and unreaped zombies by real uid (RLIMIT_NPROC)
	tgs     map[int32]*ThreadGroup // processes by pid, zombies included
	init    *ThreadGroup
	// rootPIDNS is the sandbox's pid namespace, in which tasks and tgs
	// are keyed (ns_pid.go).
	rootPIDNS *PIDNamespace
	// initPlainSignals is init's InitSpec.PlainSignals, set before any
	// task runs.
	initPlainSignals bool
	// ptraceZombies are traced tasks that have ended and whose tracers
	// have not reaped them, by thread id (ptrace_wait.go): their ids are
	// not free yet.
	ptraceZombies map[int32]*Task

	futexes futexTable
	kcmp    kcmpCookies    // kcmp.go
	keys    keyTable       // keys.go
	ipcns   *ipc.Namespace // the sandbox's IPC namespace (task_ipc.go)
	utsns   *UTSNamespace  // the sandbox's UTS namespace (ns_uts.go)
	// cgroupns is the sandbox's first cgroup namespace (ns_cgroup.go).
	cgroupns *CgroupNamespace
	freezer  freezer // pause.go
	// sigCharges counts each user's POSIX timers against
	// RLIMIT_SIGPENDING (posix_timer.go).
	sigCharges sigCharges
	// sbLimits are the sandbox's cgroup limits (sandbox_limits.go), mem
	// its memory controller (memcg.go).
	sbLimits sandboxLimits
	mem      memCgroup

	done       chan struct{} // closed when the sandbox ends
	doneOnce   sync.Once
	exitStatus ExitStatus
}

// ExitStatus is how a thread group ended: an exit code, or the signal that
// killed it.
type ExitStatus struct {
	Code  int
	Signo int
	Core  bool // the signal dumped core (coredump.go)
}

// HostCode is the status a host process reports for s: the code, or 128+N
// for signal N, as shells and runc do.
func (s ExitStatus) HostCode() int {
	if s.Signo != 0 {
		return 128 + s.Signo
	}
	return s.Code
}

// New returns a kernel with no tasks.
func New(c Config) (*Kernel, error) {
	if c.Log == nil {
		c.Log = func(string, ...any) {}
	}
	c.Log = (&logLimiter{out: c.Log, now: time.Now}).log
	k := &Kernel{Config: c, bootMono: hostMonotonic(), bootTime: time.Now(), nextTID: 1,
		tasks: make(map[int32]*Task), nproc: make(map[uint32]int), tgs: make(map[int32]*ThreadGroup), done: make(chan struct{})}
	var err error
	if k.vdso, err = k.newVDSO(); err != nil {
		return nil, err
	}
	k.rootPIDNS = newRootPIDNamespace()
	k.ipcns = k.newRootIPC()
	k.utsns = newUTSNamespace(c.Hostname, defaultDomain, rootUserNS)
	k.cgroupns = newCgroupNamespace(rootUserNS)
	k.sbLimits.wake = make(chan struct{}, 1)
	return k, nil
}

// maxTID is Linux's pid_max limit on 64-bit.
const maxTID = 1 << 22

// allocTIDLocked returns a free thread id (not a living task's, nor a
// process's, zombies included), or 0 if none is left.
func (k *Kernel) allocTIDLocked() int32 {
	for i := 0; i < maxTID; i++ {
		tid := k.nextTID
		k.nextTID++
		if k.nextTID >= maxTID {
			k.nextTID = 2 // pid 1 is init's alone
		}
		_, task := k.tasks[tid]
		_, proc := k.tgs[tid]
		if !task && !proc && !k.tidHeldLocked(tid) {
			return tid
		}
	}
	return 0
}

// Start runs the init task created by CreateInit.
func (k *Kernel) Start() error {
	k.treeMu.Lock()
	tg := k.init
	k.treeMu.Unlock()
	if tg == nil {
		return fmt.Errorf("kernel: no init process")
	}
	go tg.tasks[0].run()
	go k.watchMemory()
	tg.checkCPULimit() // the config's RLIMIT_CPU
	return nil
}

// Done is closed when the sandbox has ended (its init exited, or it was
// killed); ExitStatus then says how.
func (k *Kernel) Done() <-chan struct{} { return k.done }

// ExitStatus is the sandbox's final status; valid once Done is closed.
func (k *Kernel) ExitStatus() ExitStatus { return k.exitStatus }

// finish ends the sandbox with status s.
func (k *Kernel) finish(s ExitStatus) {
	k.doneOnce.Do(func() {
		k.exitStatus = s
		close(k.done)
	})
}

// Uptime is the time since the sandbox booted.
func (k *Kernel) Uptime() time.Duration { return time.Duration(hostMonotonic() - k.bootMono) }

// NumTasks is how many guest threads exist.
func (k *Kernel) NumTasks() int {
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	return len(k.tasks)
}
