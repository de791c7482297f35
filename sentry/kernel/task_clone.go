package kernel

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// CloneOptions are clone(2)'s and clone3(2)'s arguments.
type CloneOptions struct {
	Flags      uint64
	Stack      uint64 // the child's stack pointer, or 0 for the parent's
	ParentTID  uintptr
	ChildTID   uintptr
	TLS        uint64
	ExitSignal int
	// PidFD, for CLONE_PIDFD, gives the parent a pidfd of the new process
	// before the child runs (and before a child sharing the table could
	// see the descriptor missing); its error fails the clone.
	PidFD func(*ThreadGroup) error
}

// Namespace flags: task_unshare.go says which are offered.
const cloneNamespaces = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWUSER |
	unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME

// Clone creates a task: a thread of this process (CLONE_THREAD), or a new
// process sharing (CLONE_VM, CLONE_FILES, ...) or copying the caller's
// memory, files and the rest. It returns the new task's id.
func (t *Task) Clone(o CloneOptions) (int32, error) {
	f := o.Flags
	switch {
	case f&unix.CLONE_THREAD != 0 && f&unix.CLONE_SIGHAND == 0,
		f&unix.CLONE_SIGHAND != 0 && f&unix.CLONE_VM == 0,
		f&unix.CLONE_FS != 0 && f&unix.CLONE_NEWNS != 0,
		// Shared handlers cannot be cleared for the child alone.
		f&unix.CLONE_SIGHAND != 0 && f&unix.CLONE_CLEAR_SIGHAND != 0,
		// Linux before 6.9 has no pidfds of threads.
		f&unix.CLONE_PIDFD != 0 && (o.PidFD == nil || f&(unix.CLONE_THREAD|unix.CLONE_DETACHED) != 0):
		return 0, unix.EINVAL
	case f&(unix.CLONE_THREAD|unix.CLONE_NEWUSER) == unix.CLONE_THREAD|unix.CLONE_NEWUSER,
		f&(unix.CLONE_FS|unix.CLONE_NEWUSER) == unix.CLONE_FS|unix.CLONE_NEWUSER,
		f&(unix.CLONE_THREAD|unix.CLONE_NEWPID) == unix.CLONE_THREAD|unix.CLONE_NEWPID,
		// A new IPC namespace cannot share the old one's undo list.
		f&(unix.CLONE_NEWIPC|unix.CLONE_SYSVSEM) == unix.CLONE_NEWIPC|unix.CLONE_SYSVSEM:
		return 0, unix.EINVAL
	case !ValidSignal(o.ExitSignal) && o.ExitSignal != 0:
		return 0, unix.EINVAL
	}
	if !t.k.mayCloneNow(t) {
		return 0, unix.EAGAIN
	}
	if err := t.checkNewNamespaces(f); err != nil {
		return 0, err
	}
	userns, err := t.newUserNamespaceFor(f)
	if err != nil {
		return 0, err
	}
	ns, err := t.clonePIDNamespace(f)
	if err != nil {
		return 0, err
	}
	if f&unix.CLONE_NEWPID != 0 {
		ns.owner = t.creds.UserNamespace()
		if userns != nil {
			ns.owner = userns
		}
	}
	if f&unix.CLONE_SETTLS != 0 && o.TLS >= uint64(t.mm.MaxAddr()) {
		// As for arch_prctl(ARCH_SET_FS): Linux refuses a base beyond user
		// space with EPERM, and the host could not load a non-canonical
		// one into the child's stub thread, which would die of it.
		return 0, unix.EPERM
	}
	k := t.k
	event := t.cloneEvent(f, o.ExitSignal) // ptrace's, from the options at the call

	// Memory, and a thread to run the child on.
	var (
		m   *mm.MemoryManager
		ctx platform.Context
	)
	if f&unix.CLONE_VM != 0 {
		m = t.mm
		if ctx, err = m.AddressSpace().NewContext(); err != nil {
			return 0, unix.EAGAIN
		}
		m.IncUsers()
	} else {
		as, err := k.Platform.NewAddressSpace()
		if err != nil {
			t.Log("clone: %v", err)
			return 0, unix.EAGAIN
		}
		m = t.mm.Fork(as, uintptr(t.regs.Rsp))
		if ctx, err = as.NewContext(); err != nil {
			m.Release()
			return 0, unix.EAGAIN
		}
	}
	copy(ctx.FPState(), t.ctx.FPState())

	child := newTask(k, nil)
	child.ctx, child.mm, child.exe, child.comm = ctx, m, t.exe, t.comm
	child.regs = t.regs
	child.regs.Rax = 0
	child.regs.Eflags = t.cloneEflags() // not the trap flag of the parent's single-step
	if o.Stack != 0 {
		child.regs.Rsp = o.Stack
	}
	if f&unix.CLONE_SETTLS != 0 {
		child.regs.FSBase = o.TLS
	}
	if f&unix.CLONE_FILES != 0 {
		child.fds = t.fds
		t.fds.IncRef()
	} else {
		child.fds = t.fds.Fork()
	}
	if f&unix.CLONE_FS != 0 {
		child.fs = t.fs
		t.fs.sharers.Add(1)
	} else {
		child.fs = t.fs.Fork()
	}
	child.creds = t.creds.Fork()
	if userns != nil {
		child.creds.enterUserNamespace(userns)
	}
	child.prctl = t.prctl
	t.inheritSeccomp(child)
	child.prctl.PdeathSig = 0
	child.prctl.DefaultTimerSlack = t.prctl.TimerSlack
	child.sched = forkSched(t.Sched())
	t.cloneNamespacesFor(child, f)
	child.altStack = t.altStack
	if f&unix.CLONE_VM != 0 && f&unix.CLONE_VFORK == 0 {
		child.altStack = AltStack{Flags: linuxabi.SS_DISABLE}
	}
	if f&unix.CLONE_CHILD_CLEARTID != 0 {
		child.clearChildTID = o.ChildTID
	}
	if f&unix.CLONE_VFORK != 0 {
		child.vforkDone = make(chan struct{})
	}
	undo := func() {
		child.fds.DecRef()
		if f&unix.CLONE_FS != 0 {
			t.fs.sharers.Add(-1)
		}
		if !m.DecUsers() {
			ctx.Release()
		}
	}

	k.treeMu.Lock()
	// An exiting process makes no child, as Linux fails a clone with EINTR
	// once a fatal signal is pending: its stub may be gone already
	// (killThreads), with the new thread in it. A thread is refused below.
	t.tg.mu.Lock()
	exiting := t.tg.exiting
	t.tg.mu.Unlock()
	if exiting && f&unix.CLONE_THREAD == 0 {
		k.treeMu.Unlock()
		undo()
		return 0, unix.EINTR
	}
	tid := k.allocTIDLocked()
	if tid == 0 {
		k.treeMu.Unlock()
		undo()
		return 0, unix.EAGAIN
	}
	child.tid = tid
	if !k.mayAddTaskLocked(child, t.tg.limits.Get(unix.RLIMIT_NPROC).Cur) || k.pidsFullLocked() {
		k.treeMu.Unlock()
		undo()
		return 0, unix.EAGAIN
	}
	if child.vtid, err = k.enterLocked(ns, tid); err != nil {
		k.treeMu.Unlock()
		undo()
		return 0, err
	}
	child.childPIDNS = ns
	if f&unix.CLONE_THREAD != 0 {
		child.tg = t.tg
	} else {
		parent, exitSignal := t.tg, o.ExitSignal
		if f&unix.CLONE_PARENT != 0 {
			// A sibling tells the parent what the caller would: Linux gives
			// it the caller's exit signal, not the one asked for.
			parent, exitSignal = t.tg.parent, t.tg.exitSignal
		}
		if parent == nil {
			k.leaveLocked(ns, tid)
			k.treeMu.Unlock()
			undo()
			return 0, unix.EINVAL // init has no parent to share
		}
		sighand := t.tg.sighand
		if f&unix.CLONE_SIGHAND == 0 {
			sighand = sighand.copyHand()
		}
		if f&unix.CLONE_CLEAR_SIGHAND != 0 {
			// clone3's CLONE_CLEAR_SIGHAND: the child's caught
			// signals are default, as after exec.
			sighand.resetCaught()
		}
		tg := newThreadGroup(k, tid, sighand)
		tg.pidns, tg.vpid = ns, child.vtid
		tg.parent, tg.pgid, tg.sid, tg.exitSignal = parent, t.tg.pgid, t.tg.sid, exitSignal
		tg.tty = t.tg.tty
		tg.container = t.tg.container
		tg.limits.setAll(t.tg.limits.all())
		tg.oom.inherit(&t.tg.oom)
		tg.pt.creator = t
		parent.children[tg] = struct{}{}
		k.tgs[tid] = tg
		child.tg = tg
		if f&unix.CLONE_PIDFD != 0 {
			if err := o.PidFD(tg); err != nil {
				delete(parent.children, tg)
				delete(k.tgs, tid)
				k.leaveLocked(ns, tid)
				k.treeMu.Unlock()
				undo()
				return 0, err
			}
		}
	}
	tg := child.tg
	if f&unix.CLONE_VM == 0 {
		m.SetLimitAS(tg.limitAS)
		m.SetLimitStack(tg.limitStack)
	}
	tg.mu.Lock()
	if tg.exiting {
		tg.mu.Unlock()
		delete(k.tgs, tid)
		k.leaveLocked(ns, tid)
		k.treeMu.Unlock()
		undo()
		return 0, unix.EINTR
	}
	child.sigMask = t.sigMask
	tg.tasks = append(tg.tasks, child)
	tg.mu.Unlock()
	k.tasks[tid] = child
	k.countTaskLocked(child, 1)
	if ns.level > 0 && ns.init == nil && tg != t.tg {
		ns.init = tg // its first process, pid 1
	}
	seen := t.tg.pidns.idOf(tid) // the id the parent gets
	if event != 0 || f&(unix.CLONE_PTRACE|unix.CLONE_UNTRACED) == unix.CLONE_PTRACE {
		t.ptraceInheritLocked(child)
	}
	k.treeMu.Unlock()

	if f&unix.CLONE_CHILD_SETTID != 0 {
		m.UpdateU32(o.ChildTID, func(uint32) (uint32, bool) { return uint32(child.vtid), true })
	}
	if f&unix.CLONE_PARENT_SETTID != 0 {
		t.mm.UpdateU32(o.ParentTID, func(uint32) (uint32, bool) { return uint32(seen), true })
	}
	// The child clears its vforkDone when it closes it: the parent takes
	// the channel before the child runs, not at each turn of its wait (a
	// nil channel, read after an interruption, would never be ready).
	vforkDone := child.vforkDone
	t.cloneSemUndo(child, f)
	t.cloneKeyrings(child, f)
	go child.run()
	if f&unix.CLONE_THREAD == 0 {
		child.tg.checkCPULimit() // inherited
	}
	if event != 0 {
		t.ptraceCloneEvent(event, child)
	}

	if vforkDone != nil {
		// The parent waits until the child execs or exits; only its own
		// death ends the wait early.
		t.park()
		for {
			select {
			case <-vforkDone:
			case <-t.interrupt:
				if !t.exiting.Load() {
					continue
				}
			}
			break
		}
		t.ptraceCloneEvent(unix.PTRACE_EVENT_VFORK_DONE, child)
	}
	return seen, nil
}

// clonePIDNamespace is the pid namespace a child made with flags goes in
// (ns_pid.go): a new one for CLONE_NEWPID, else the one the task's
// children are made in, which a thread's must be its own (EINVAL after
// an unshare or setns of one, as on Linux). A namespace's init makes no
// sibling (CLONE_PARENT), since no reaper would then be its parent.
func (t *Task) clonePIDNamespace(f uint64) (*PIDNamespace, error) {
	if f&unix.CLONE_NEWPID != 0 {
		return t.newPIDNamespaceFor()
	}
	ns := t.PIDNamespaceForChildren()
	switch {
	case f&unix.CLONE_THREAD != 0 && ns != t.tg.pidns:
		return nil, unix.EINVAL
	case f&unix.CLONE_PARENT != 0 && t.tg.NamespaceInit():
		return nil, unix.EINVAL
	}
	return ns, nil
}

// releaseVfork lets a vfork parent go on (the child execs or exits).
// mayCloneNow is the limits' verdict on a new task before any of it is
// made, as Linux checks RLIMIT_NPROC before copying the memory: on the
// host a new address space or thread is a stub process or thread, so a
// fork bomb pressing on pids.max would otherwise make and kill a stub for
// every refused fork, at the host's cost and past the host cgroup's
// pids backstop (dying stubs count there until reaped). Clone asks again
// under the same lock once the task is made, for the forks racing it.
func (k *Kernel) mayCloneNow(t *Task) bool {
	limit := t.tg.limits.Get(unix.RLIMIT_NPROC).Cur
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	_, ok := k.nprocRoomLocked(t.creds, limit)
	return ok && !k.pidsFullLocked()
}

func (t *Task) releaseVfork() {
	if t.vforkDone != nil {
		close(t.vforkDone)
		t.vforkDone = nil
	}
}
