package kernel

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// Exit ends the calling task (exit(2)); the process ends with its last
// task, with that task's code.
func (t *Task) Exit(code int) {
	t.exitCode = code & 0xff
	t.exiting.Store(true)
}

// ExitGroup ends every task of the process with code (exit_group(2)).
func (t *Task) ExitGroup(code int) {
	t.tg.mu.Lock()
	t.tg.groupExitLocked(ExitStatus{Code: code & 0xff})
	t.tg.mu.Unlock()
	t.killThreads()
}

// killThreads ends the exiting process's threads at once, as Linux does,
// when no other process shares its address space (a vfork parent would):
// they need not be interrupted one by one, which takes long when the guest
// keeps every CPU busy. The tasks then see their threads gone and exit.
func (t *Task) killThreads() {
	tg := t.tg
	// Both counts under tg.mu: a task leaves tg.tasks (under tg.mu) before
	// it drops its use of the memory, so read together they can only err
	// towards not killing. Read apart, a thread that left in between made
	// the users of memory shared with another process look like this
	// process's tasks alone, and that process lost its stub.
	tg.mu.Lock()
	// Traced tasks stop on their way out (PTRACE_EVENT_EXIT) with their
	// registers, so their threads must live until they exit.
	alone := t.mm.Users() == len(tg.tasks) && tg.pt.traced == 0
	tg.mu.Unlock()
	// The process is exiting, so no clone adds a user meanwhile; one that
	// was half done has added it already, and then nothing is killed.
	if alone {
		t.mm.AddressSpace().Kill()
	}
}

// exit releases the task once its loop has stopped; the last task of a
// process makes it a zombie for its parent to reap, and init's end ends
// the sandbox.
func (t *Task) exit() {
	k, tg := t.k, t.tg
	t.ptraceExitStop()
	t.exitRobustList()
	t.releaseSemUndo()
	if t.clearChildTID != 0 {
		if _, err := t.mm.UpdateU32(t.clearChildTID, func(uint32) (uint32, bool) { return 0, true }); err == nil {
			t.FutexWake(t.clearChildTID, 1, linuxabi.FUTEX_BITSET_MATCH_ANY, false)
		}
	}
	t.releaseVfork()

	// A task leaves RLIMIT_NPROC's count as it leaves its process, under
	// both locks: an exec waiting for the other tasks to go must find the
	// count without them, as Linux's release_task drops it before de_thread
	// lets the exec go on. The last task stays counted as the zombie.
	k.treeMu.Lock()
	tg.mu.Lock()
	for i, x := range tg.tasks {
		if x == t {
			tg.tasks = append(tg.tasks[:i], tg.tasks[i+1:]...)
			tg.retireCPUTimeLocked(t)
			break
		}
	}
	last := len(tg.tasks) == 0
	if !last {
		k.countTaskLocked(t, -1)
	}
	tg.taskExits.broadcast()
	if last && !tg.exiting {
		tg.exiting = true
		tg.status = ExitStatus{Code: t.exitCode}
	}
	status := tg.status
	taskStatus := t.tracedExitStatusLocked()
	tg.mu.Unlock()
	k.treeMu.Unlock()
	if last && tg.NamespaceInit() {
		t.zapNamespace()
	}

	var usage Usage
	if last {
		rss := t.mm.ResidentBytes()
		user, sys := tg.CPUTime()
		usage = Usage{MaxRSS: rss, MinFlt: rss / 4096, User: user, Sys: sys}
	}
	// Releasing the address space ends its threads: the context then has
	// nothing left to release.
	if !t.mm.DecUsers() {
		t.ctx.Release()
	}
	t.fds.DecRef()
	t.fs.sharers.Add(-1) // from 0 when alone: only a count above 0 means shared
	t.creds.Lock()
	uid := t.creds.UID
	t.creds.Unlock()

	k.treeMu.Lock()
	if k.tasks[t.tid] == t { // an exec'ing thread may have taken over the id
		delete(k.tasks, t.tid)
	}
	t.ptraceTracerExitLocked()
	if last {
		taskStatus = status
	}
	t.ptraceZombieLocked(last, taskStatus)
	k.releaseIDLocked(tg.pidns, t.tid)
	if last {
		// A zombie counts against its user's RLIMIT_NPROC until it is
		// reaped, as Linux releases a process's leader only then.
		tg.zombieNproc, tg.zombieNprocUID = true, t.nprocUID
		tg.exitUID = uid
		tg.itimer.stop()
		tg.deleteAllTimers(k)
		tg.cpuLimit.stop()
		tg.usage = usage
		tg.leaveTTYLocked()
		tg.becomeZombieLocked(status)
	}
	k.treeMu.Unlock()
	if last && tg == k.init {
		k.endSandbox(status)
	}
}

// becomeZombieLocked (treeMu held) hands the process's children to the
// nearest subreaper or init, and tells the parent (tellParentLocked).
func (tg *ThreadGroup) becomeZombieLocked(status ExitStatus) {
	tg.zombie = true
	go tg.exitQueue.Notify(waiter.ReadableEvents) // its callbacks may need the tree lock
	// The reaper is in the namespace of the process that ends: its init
	// or a subreaper there.
	reaper := tg.pidns.init
	for a := tg.parent; a != nil && a.pidns == tg.pidns; a = a.parent {
		if a.ChildSubreaper() && !a.zombie {
			reaper = a
			break
		}
	}
	var signals []childSignal
	for c := range tg.children {
		delete(tg.children, c)
		if reaper == nil || reaper == tg {
			continue
		}
		c.parent = reaper
		// Its exit signal becomes SIGCHLD, as Linux's reparent_leader makes
		// it: what an orphan chose must not slay its new parent.
		c.exitSignal = int(unix.SIGCHLD)
		reaper.children[c] = struct{}{}
		if leader := c.Leader(); leader != nil {
			if sig := leader.Prctl().PdeathSig; sig != 0 {
				go c.SendSignal(SigInfo{Signo: int32(sig), Code: linuxabi.SI_USER})
			}
		}
		if c.zombie {
			// The new parent hears of a zombie it inherits, as of a child
			// that ends (reparent_leader), before this process's own end.
			c.mu.Lock()
			st := c.status
			c.mu.Unlock()
			signals = c.tellParentLocked(st, signals)
		}
	}
	if tg.parent != nil && !tg.ptraceHoldsEndLocked() {
		signals = tg.tellParentLocked(status, signals)
	} else if tg.outsideDone != nil {
		tg.reapLocked()
		close(tg.outsideDone)
	}
	if len(signals) > 0 {
		go func() {
			for _, s := range signals {
				s.to.SendSignal(s.info)
			}
		}()
	}
}

// childSignal is a signal for a parent about a child's end, sent once the
// tree lock is released, in order.
type childSignal struct {
	to   *ThreadGroup
	info SigInfo
}

// tellParentLocked tells the parent of tg, a zombie, that it has ended
// (treeMu held), as Linux's do_notify_parent: its exit signal, appended to
// signals, and a wake-up of the parent's waiters. A parent that ignores
// SIGCHLD is not sent it, one with SA_NOCLDWAIT is; neither waits for the
// zombie, which is reaped at once.
func (tg *ThreadGroup) tellParentLocked(status ExitStatus, signals []childSignal) []childSignal {
	parent := tg.parent
	act := parent.Action(int(unix.SIGCHLD))
	sig := tg.exitSignal
	// A traced process's end waits for its tracer's wait, whatever the
	// parent does with SIGCHLD.
	autoreap := sig == int(unix.SIGCHLD) && (act.Handler == linuxabi.SIG_IGN || act.Flags&linuxabi.SA_NOCLDWAIT != 0) &&
		tg.pt.zombie == nil
	if autoreap && act.Handler == linuxabi.SIG_IGN {
		sig = 0
	}
	if sig != 0 && !parent.Unkillable(sig) {
		info := SigInfo{Signo: int32(sig), Code: linuxabi.CLD_EXITED}
		st := int32(status.Code)
		if status.Signo != 0 {
			info.Code, st = status.killedCode(), int32(status.Signo)
		}
		info.SetChild(tg.pidIn(parent.pidns), tg.exitUID, st)
		signals = append(signals, childSignal{parent, info})
	}
	if autoreap {
		tg.reapLocked()
	}
	parent.childEvents.broadcast()
	return signals
}

// reapLocked removes a zombie for good (treeMu held): its pid is free, and
// what it used counts for its parent's children.
func (tg *ThreadGroup) reapLocked() {
	if tg.zombieNproc {
		tg.k.countUIDLocked(tg.zombieNprocUID, -1)
		tg.zombieNproc = false
	}
	if p := tg.parent; p != nil {
		delete(p.children, tg)
		p.childUsage.MaxRSS = max(p.childUsage.MaxRSS, tg.usage.MaxRSS, tg.childUsage.MaxRSS)
		p.childUsage.MinFlt += tg.usage.MinFlt + tg.childUsage.MinFlt
		p.childUsage.User += tg.usage.User + tg.childUsage.User
		p.childUsage.Sys += tg.usage.Sys + tg.childUsage.Sys
	}
	delete(tg.k.tgs, tg.pid)
	tg.k.releaseIDLocked(tg.pidns, tg.pid)
}

// endSandbox ends every process when init has ended: the sandbox is over.
func (k *Kernel) endSandbox(status ExitStatus) {
	k.treeMu.Lock()
	var all []*ThreadGroup
	for _, tg := range k.tgs {
		all = append(all, tg)
	}
	k.treeMu.Unlock()
	for _, tg := range all {
		tg.mu.Lock()
		tg.groupExitLocked(ExitStatus{Signo: int(unix.SIGKILL)})
		tg.mu.Unlock()
	}
	k.finish(status)
}

// Kill ends the sandbox at once as signal sig would: init's death ends
// every process, and no task blocked in the sentry is waited for.
func (k *Kernel) Kill(sig int) {
	k.endSandbox(ExitStatus{Signo: sig})
}

// InitHandles reports whether init has a handler (not SIG_DFL or SIG_IGN)
// for sig.
func (k *Kernel) InitHandles(sig int) bool {
	k.treeMu.Lock()
	init := k.init
	k.treeMu.Unlock()
	return init != nil && init.handles(sig)
}

// handles reports whether tg has a handler (not SIG_DFL or SIG_IGN) for
// sig.
func (tg *ThreadGroup) handles(sig int) bool {
	if !ValidSignal(sig) {
		return false
	}
	h := tg.Action(sig).Handler
	return h != linuxabi.SIG_DFL && h != linuxabi.SIG_IGN
}

// SignalInit sends sig to init from outside the sandbox (`moat kill`).
func (k *Kernel) SignalInit(sig int) {
	k.treeMu.Lock()
	init := k.init
	k.treeMu.Unlock()
	if init != nil {
		init.SendSignal(SigInfo{Signo: int32(sig), Code: linuxabi.SI_USER})
	}
}

func u64bytes(v []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*8)
}

// SignalAll sends sig to every process from outside the sandbox (`moat
// kill --all`).
func (k *Kernel) SignalAll(sig int) {
	for _, tg := range k.ThreadGroups() {
		tg.SendSignal(SigInfo{Signo: int32(sig), Code: linuxabi.SI_USER})
	}
}
