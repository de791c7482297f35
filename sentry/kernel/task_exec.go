package kernel

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform"
)

// Execve replaces the process's program (execve(2), execveat(2)) with the
// one target names. Until the new program is loaded, nothing changes and
// errors go back to the caller; then the other threads are ended, and the
// task starts the new program.
func (t *Task) Execve(target ExecTarget, argv, envv []string) error {
	k, tg := t.k, t.tg
	target.NoRandomize = t.Prctl().Personality&linuxabi.ADDR_NO_RANDOMIZE != 0
	img, err := k.loadProgram(target, t.creds, t.execUnsafe(), argv, envv)
	if err != nil {
		return err
	}
	// The new program's address space. A vfork child's memory stays its
	// parent's, so it gets a fresh one, made now, while a failure can
	// still go back to the caller.
	var ctx platform.Context
	if t.sharesMemoryWithOtherProcess() {
		if ctx, err = k.attachFresh(img.mm); err != nil {
			img.mm.Release()
			t.Log("execve: %v", err)
			return unix.ENOMEM
		}
	}
	if !t.endOtherThreads() {
		img.mm.Release()
		return ErrNoReturn // killed meanwhile: the task is exiting
	}

	tg.forgetAIO()
	t.dropExecKeyrings()
	old, oldCtx := t.mm, t.ctx
	if ctx == nil {
		if as := old.Recycle(); as != nil {
			// A process that had its memory to itself (fork, then exec:
			// every command a shell runs) keeps its address space, emptied,
			// and its thread: no stub is made or destroyed.
			img.mm.Attach(as)
			ctx = oldCtx
			resetFPState(ctx.FPState())
		} else if ctx, err = k.attachFresh(img.mm); err != nil {
			// Its memory became shared meanwhile, and there is no address
			// space to be had: past the point of no return, the exec
			// fails as Linux's does then.
			img.mm.Release()
			t.Log("execve: %v", err)
			t.forceSignal(SigInfo{Signo: int32(unix.SIGSEGV), Code: linuxabi.SI_KERNEL})
			return ErrNoReturn
		}
	}
	// The call's number stays in orig_rax, as Linux's start_thread leaves
	// it, for a tracer's system-call-exit-stop.
	nr := t.regs.OrigRax
	t.mm, t.regs = img.mm, img.regs
	t.regs.OrigRax = nr
	comm := img.comm
	if len(comm) > 15 {
		comm = comm[:15]
	}
	changed := t.creds.changedForExec(img.creds)
	tg.mu.Lock() // others read them: the context for the process's CPU time, the rest for /proc
	t.ctx, t.exe, t.comm = ctx, img.exe, comm
	// A program running with other ids than its real ones cannot be
	// dumped or traced by its user (execve(2)); one whose credentials
	// changed does not get its parent's death signal (prctl(2)).
	t.prctl.Dumpable = 1
	if img.creds.EUID != img.creds.UID || img.creds.EGID != img.creds.GID {
		t.prctl.Dumpable = 0
	}
	if img.secure || changed {
		t.prctl.PdeathSig = 0
	}
	t.prctl.KeepCaps = false // prctl(2): "reset to 0 on subsequent calls to execve"
	tg.mu.Unlock()
	t.creds.replaceWith(img.creds)
	t.mm.SetLimitAS(tg.limitAS)
	t.mm.SetLimitStack(tg.limitStack)
	if ctx != oldCtx && !old.DecUsers() {
		oldCtx.Release()
	}
	t.releaseVfork()

	// What execve resets: a file table of its own without close-on-exec
	// files, caught signals back to default (in a table of its own),
	// the alternate stack, the robust list.
	if t.fds.shared() {
		fds := t.fds.Fork()
		t.fds.DecRef()
		t.fds = fds
	}
	t.fds.closeOnExec()
	tg.sighand = tg.sighand.copyHand()
	tg.sighand.resetCaught()
	t.altStack = AltStack{Flags: linuxabi.SS_DISABLE}
	t.robustList, t.clearChildTID = 0, 0
	tg.deleteAllTimers(k)

	k.treeMu.Lock()
	tg.execed = true
	oldTID := t.tid
	if t.tid != tg.pid {
		// The thread that execs takes over the process id, as on Linux.
		delete(k.tasks, t.tid)
		k.dropTracedZombieLocked(tg.pid)
		t.tid, t.vtid = tg.pid, tg.vpid
		k.tasks[t.tid] = t
	}
	k.treeMu.Unlock()
	t.ptraceExec(oldTID)
	if oldTID != t.tid && tg.pidns.level > 0 {
		k.treeMu.Lock()
		k.releaseIDLocked(tg.pidns, oldTID) // after the tracer is told it
		k.treeMu.Unlock()
	}
	return ErrNoReturn
}

// sharesMemoryWithOtherProcess reports whether a task outside the process
// uses its memory (a vfork child's parent).
func (t *Task) sharesMemoryWithOtherProcess() bool {
	t.tg.mu.Lock() // see killThreads
	defer t.tg.mu.Unlock()
	return t.mm.Users() > len(t.tg.tasks)
}

// endOtherThreads kills the process's other tasks and waits until they are
// gone. It reports false if the calling task itself was killed meanwhile.
func (t *Task) endOtherThreads() bool {
	tg := t.tg
	for {
		tg.mu.Lock()
		if tg.exiting || t.exiting.Load() {
			tg.mu.Unlock()
			return false
		}
		if len(tg.tasks) == 1 {
			tg.mu.Unlock()
			return true
		}
		for _, o := range tg.tasks {
			if o != t {
				o.exiting.Store(true)
				o.kick()
			}
		}
		ch := tg.taskExits.wait()
		tg.mu.Unlock()
		select {
		case <-ch:
		case <-t.interrupt:
		}
	}
}

// execUnsafe is what would make a privilege gain by this task's exec
// unsafe: no_new_privs, or a tracer that lacks CAP_SYS_PTRACE.
func (t *Task) execUnsafe() execUnsafe {
	tr := t.Tracer()
	return execUnsafe{NoNewPrivs: t.Prctl().NoNewPrivs, UncapableTracer: tr != nil && !tr.Capable(unix.CAP_SYS_PTRACE)}
}
