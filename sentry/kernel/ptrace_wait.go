package kernel

import "github.com/moat-sandbox/moat/internal/linuxabi"

// What a tracer's wait(2) finds of its tracees, as Linux's ptrace_do_wait:
// every ptrace-stop once (with no need of WUNTRACED, and whatever
// __WCLONE says), and the end of each traced task, which the tracer
// reaps. A traced process's end reaches its real parent only once the
// tracer has reaped it (or stops tracing it), unless the tracer is a
// thread of the parent itself.

// findPtraceWaitableLocked looks among the tracees of tg's tasks for one
// whose stop or end o asks for (treeMu held); matched says whether any
// tracee fits o at all.
func (tg *ThreadGroup) findPtraceWaitableLocked(o WaitOptions) (res WaitResult, found, matched bool) {
	for _, w := range tg.tasks {
		for tr := range w.pt.tracees {
			if !tr.ptraceWaitMatches(o) {
				continue
			}
			matched = true
			if tr.pt.exited {
				if tr.tid == tr.tg.pid && !tr.tg.zombie {
					continue // a leader is reported once its process has ended
				}
				res = tr.tracedExitResultLocked()
				res.Pid = w.tg.pidns.idOf(res.Pid) // before the reap frees it
				if !o.NoWait {
					tr.reapTracedLocked()
				}
				return res, true, true
			}
			ttg := tr.tg
			ttg.mu.Lock()
			if tr.pt.stopped && tr.pt.code != 0 && !tr.pt.listening {
				res = WaitResult{Pid: tr.tidIn(w), Status: tr.pt.code<<8 | 0x7f, Code: linuxabi.CLD_TRAPPED,
					Info: tr.pt.code}
				if !o.NoWait {
					tr.pt.code = 0
				}
				found = true
			}
			ttg.mu.Unlock()
			if found {
				res.UID = tr.realUID()
				return res, true, true
			}
		}
	}
	return res, false, matched
}

// ptraceWaitMatches reports whether o selects tracee t: by its thread id
// or its process group; a tracee is waited for whatever its exit signal.
func (t *Task) ptraceWaitMatches(o WaitOptions) bool {
	switch {
	case o.Pid > 0 && t.tid != o.Pid, o.Process != nil && t.tg != o.Process:
		return false
	case o.PGID != 0 && t.tg.pgid != o.PGID:
		return false
	}
	return true
}

// tracedExitResultLocked is what the tracer's wait reports of t's end:
// the process's, if it was its last task, else the thread's own.
func (t *Task) tracedExitResultLocked() WaitResult {
	s := t.pt.exitStatus
	res := WaitResult{Pid: t.tid, UID: t.realUID(), Status: s.waitStatus(), Code: linuxabi.CLD_EXITED, Info: int32(s.Code)}
	if s.Signo != 0 {
		res.Code, res.Info = s.killedCode(), int32(s.Signo)
	}
	if t.tg.pt.zombie == t {
		res.Usage = t.tg.usage
	}
	return res
}

// ptraceZombieLocked records the end of t for its tracer, if it has one
// (treeMu held): the tracer is told, and its wait will report and reap
// it. The process's end (last) is held for the real parent until then,
// unless the tracer is a thread of the parent, whose one notification
// the process's end sends; it is the leader's report if the leader is a
// traced task that ended before, else this task's.
func (t *Task) ptraceZombieLocked(last bool, status ExitStatus) {
	k, tg := t.k, t.tg
	if last {
		if l := k.ptraceZombies[tg.pid]; l != nil && l.tg == tg && l.pt.exited && l.pt.tracer != nil {
			tg.pt.zombie = l
			l.pt.exitStatus = status
			if l.pt.tracer.tg != tg.parent {
				l.notifyEnd(l.pt.tracer, status)
			}
		} else if t.pt.tracer != nil {
			tg.pt.zombie = t
		}
	}
	tracer := t.pt.tracer
	if tracer == nil {
		return
	}
	t.pt.exited = true
	t.pt.exitStatus = status
	if k.ptraceZombies == nil {
		k.ptraceZombies = make(map[int32]*Task)
	}
	k.ptraceZombies[t.tid] = t
	if tg.pt.zombie == t && tracer.tg == tg.parent {
		return // becomeZombieLocked tells the parent, which is the tracer's process
	}
	t.notifyEnd(tracer, status)
}

// notifyEnd tells tracer that t ended with status.
func (t *Task) notifyEnd(tracer *Task, status ExitStatus) {
	why, st := int32(linuxabi.CLD_EXITED), int32(status.Code)
	if status.Signo != 0 {
		why, st = status.killedCode(), int32(status.Signo)
	}
	t.notifyTracer(tracer, why, st)
}

// tracedExitStatusLocked is what a traced task's end reports: the process's
// status when it exits with it (exit_group, a fatal signal), else the
// task's own exit code.
func (t *Task) tracedExitStatusLocked() ExitStatus {
	if t.tg.exiting {
		return t.tg.status
	}
	return ExitStatus{Code: t.exitCode}
}

// reapTracedLocked is the tracer's wait reaping t's end (treeMu held).
// A tracer of the parent's own process reaps the process's end with it
// when t is its leader, whose one report is the process's; a thread that
// held the end lets it go to the parent's next wait, as Linux reports a
// leader once its other threads are reaped (delay_group_leader).
func (t *Task) reapTracedLocked() {
	tracer := t.pt.tracer
	delete(tracer.pt.tracees, t)
	tg := t.tg
	process := tg.pt.zombie == t
	tg.mu.Lock()
	t.pt.tracer = nil
	t.pt.flags.Store(0)
	tg.pt.traced--
	tg.mu.Unlock()
	if process && tracer.tg == tg.parent && t.tid == tg.pid {
		t.pt.exited = false
		delete(t.k.ptraceZombies, t.tid)
		tg.pt.zombie = nil
		tg.reapLocked()
		return
	}
	t.releaseTracedZombieLocked(tracer)
}

// releaseTracedZombieLocked lets t's end go, now that tracer has reaped it
// or stopped tracing it (treeMu held): if it held its process's end, the
// real parent is told of it now, unless the tracer was the parent's,
// which was told already.
func (t *Task) releaseTracedZombieLocked(tracer *Task) {
	t.pt.exited = false
	if t.k.ptraceZombies[t.tid] == t {
		delete(t.k.ptraceZombies, t.tid)
		t.k.releaseIDLocked(t.tg.pidns, t.tid)
	}
	tg := t.tg
	if tg.pt.zombie != t {
		return
	}
	tg.pt.zombie = nil
	if tg.parent == nil {
		return
	}
	if tracer.tg == tg.parent {
		tg.parent.childEvents.broadcast() // told already: its wait may reap it now
		return
	}
	tg.mu.Lock()
	status := tg.status
	tg.mu.Unlock()
	// At once, as Linux's wait_task_zombie: the parent must have its
	// SIGCHLD by the time it can reap the child, which is now.
	for _, s := range tg.tellParentLocked(status, nil) {
		s.to.SendSignal(s.info)
	}
}

// childHeldByPtrace reports whether child c's end or stops are for a
// tracer's wait rather than the parent's children (treeMu held): its end
// while a tracer has not reaped it, its stops when a thread of tg itself
// traces it.
func (c *ThreadGroup) childHeldByPtraceLocked(tg *ThreadGroup, stop bool) bool {
	if !stop {
		return c.pt.zombie != nil
	}
	l := c.Leader()
	if l == nil || !l.Traced() {
		return false
	}
	tr := l.Tracer()
	return tr != nil && tr.tg == tg
}

// dropTracedZombieLocked forgets, without a report, the traced zombie
// whose thread id tid is about to be taken over by an exec of another
// thread of its process, as Linux releases the old leader then (treeMu
// held).
func (k *Kernel) dropTracedZombieLocked(tid int32) {
	z := k.ptraceZombies[tid]
	if z == nil {
		return
	}
	if tracer := z.pt.tracer; tracer != nil {
		delete(tracer.pt.tracees, z)
		z.tg.mu.Lock()
		z.pt.tracer = nil
		z.pt.flags.Store(0)
		z.tg.pt.traced--
		z.tg.mu.Unlock()
	}
	z.pt.exited = false
	delete(k.ptraceZombies, tid)
	k.releaseIDLocked(z.tg.pidns, tid)
}

// tidHeldLocked reports whether tid belongs to a traced task that has
// ended but that its tracer has not reaped: it is not free yet.
func (k *Kernel) tidHeldLocked(tid int32) bool {
	_, held := k.ptraceZombies[tid]
	return held
}

// ptraceKillLocked marks the process killed by SIGKILL while it exits
// (tg.mu held): its tasks' PTRACE_EVENT_EXIT stops end.
func (tg *ThreadGroup) ptraceKillLocked() {
	tg.pt.killed = true
	for _, t := range tg.tasks {
		if t.pt.stopped {
			t.kick()
		}
	}
}

// ptraceHoldsEndLocked reports whether a tracer other than one of the
// parent's threads must reap the process's end before the parent hears of
// it (treeMu held).
func (tg *ThreadGroup) ptraceHoldsEndLocked() bool {
	z := tg.pt.zombie
	return z != nil && z.pt.tracer != nil && z.pt.tracer.tg != tg.parent
}
