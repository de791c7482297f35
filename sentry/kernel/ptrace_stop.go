package kernel

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// A tracee's ptrace-stops, as Linux's ptrace_stop makes them: the task
// records why it stopped (the code its tracer's wait reports, a siginfo,
// an event message), tells its tracer (SIGCHLD and a wake-up of its
// waits), and sleeps until the tracer resumes it, detaches, or the task
// is killed. The kinds of stop are Linux's: signal-delivery-stops,
// group-stops and PTRACE_INTERRUPT traps (job control's, "jobctl" traps),
// system-call-stops, and event stops (fork, vfork, clone, exec, exit,
// vfork-done), each reported as wait(2) reports them.

// TRAP_TRACE is the si_code of a single-step trap (include/uapi/asm-generic/siginfo.h).
const trapTrace = 2

// ptraceStopLocked puts t in a ptrace-stop that reports code (tg.mu held,
// and released on return). It returns the code its tracer resumed it with
// (the signal to deliver), and false if it did not stop: it has no tracer
// any more, or it is being killed (an exiting task stops only for
// PTRACE_EVENT_EXIT, which exitStop says this is).
func (t *Task) ptraceStopLocked(code, why int32, info *SigInfo, msg uint64, exitStop bool) (int32, bool) {
	tg := t.tg
	tracer := t.pt.tracer
	if tracer == nil || tg.pt.killed || (!exitStop && (tg.exiting || t.exiting.Load())) {
		tg.mu.Unlock()
		return code, false
	}
	resumed := make(chan struct{})
	t.pt.stopped, t.pt.code, t.pt.why, t.pt.info, t.pt.msg, t.pt.resumed = true, code, why, info, msg, resumed
	// Any trap takes the place of a pending PTRACE_INTERRUPT trap, and a
	// PTRACE_EVENT_STOP one is the notification a seized tracee owed.
	t.pt.trapStop = false
	if info != nil && info.Code>>8 == unix.PTRACE_EVENT_STOP {
		t.pt.trapNotify = false
	}
	if why == linuxabi.CLD_STOPPED {
		t.pt.stopPending = false
	}
	if t.pt.trapped != nil {
		close(t.pt.trapped)
		t.pt.trapped = nil
	}
	stopSig := int32(tg.stopSig)
	tg.mu.Unlock()

	status := code & 0x7f
	if why == linuxabi.CLD_STOPPED {
		status = stopSig
	}
	t.notifyTracer(tracer, why, status)
	t.park()
	for done := false; !done; {
		select {
		case <-resumed:
			done = true
		case <-t.k.done:
			done = true
		case <-t.interrupt:
			// Only a death ends a stop: SIGKILL, or the process's exit
			// unless the stop is the exit's own.
			tg.mu.Lock()
			done = tg.pt.killed || (!exitStop && (tg.exiting || t.exiting.Load()))
			tg.mu.Unlock()
		}
	}
	// The tracer may still be using the registers: wait for it.
	t.pt.access.Lock()
	t.pt.access.Unlock()
	tg.mu.Lock()
	code = t.pt.code
	if t.pt.resumed == resumed { // killed, not resumed
		t.pt.stopped, t.pt.resumed = false, nil
	}
	t.pt.code, t.pt.info, t.pt.msg, t.pt.listening = 0, nil, 0, false
	tg.mu.Unlock()
	return code, true
}

// notifyTracer tells tracer that t stopped (why CLD_TRAPPED or
// CLD_STOPPED) or ended (CLD_EXITED, CLD_KILLED), as Linux's
// do_notify_parent_cldstop does for a tracer: SIGCHLD unless its
// SA_NOCLDSTOP (for stops) says not to, and a wake-up of its waits.
func (t *Task) notifyTracer(tracer *Task, why, status int32) {
	ttg := tracer.tg
	stop := why == linuxabi.CLD_TRAPPED || why == linuxabi.CLD_STOPPED
	if !stop || ttg.Action(int(unix.SIGCHLD)).Flags&linuxabi.SA_NOCLDSTOP == 0 {
		info := SigInfo{Signo: int32(unix.SIGCHLD), Code: why}
		info.SetChild(t.tidIn(tracer), t.realUID(), status)
		ttg.SendSignal(info)
	}
	ttg.childEvents.broadcast()
}

// realUID is the task's real uid.
func (t *Task) realUID() uint32 {
	t.creds.Lock()
	defer t.creds.Unlock()
	return t.creds.UID
}

// selfNotifyInfo is the siginfo of a trap the task reports of itself
// (Linux's ptrace_do_notify): the signal, the stop's code as si_code, and
// the task as sender.
func (t *Task) selfNotifyInfo(sig, code int32) *SigInfo {
	info := &SigInfo{Signo: sig, Code: code}
	info.SetSender(t.vtid, t.realUID()) // the tracee's own view: it is the receiver
	return info
}

// ptraceTrapLocked takes the job-control stops of a traced task (tg.mu
// held): its part in a group stop, a PTRACE_INTERRUPT trap, a seized
// tracee's notification. It reports whether it stopped, having released
// tg.mu; if not, tg.mu is still held.
func (t *Task) ptraceTrapLocked() bool {
	tg := t.tg
	if t.pt.stopPending && tg.stopped {
		t.pt.stopPending = false
		t.pt.trapStop = true
	}
	if !t.pt.trapStop && !t.pt.trapNotify {
		return false
	}
	sig := int32(t.pt.stopSig)
	if sig == 0 {
		sig = int32(unix.SIGSTOP)
	}
	if t.pt.seized {
		// A seized tracee reports PTRACE_EVENT_STOP: with the stop signal
		// in a group stop, SIGTRAP otherwise.
		if !tg.stopped {
			sig = int32(unix.SIGTRAP)
		}
		code := sig | unix.PTRACE_EVENT_STOP<<8
		t.ptraceStopLocked(code, linuxabi.CLD_STOPPED, t.selfNotifyInfo(sig, code), 0, false)
	} else {
		t.pt.trapNotify = false
		t.ptraceStopLocked(sig, linuxabi.CLD_STOPPED, nil, 0, false)
	}
	return true
}

// ptraceSignalLocked makes the signal-delivery-stop of info, which t has
// dequeued (tg.mu held, and held again on return). It returns the signal
// to deliver, which the tracer chose (its siginfo possibly rewritten by
// PTRACE_SETSIGINFO), or false if none is: the tracer suppressed it, or
// the chosen signal is blocked now and was queued again.
func (t *Task) ptraceSignalLocked(info SigInfo) (SigInfo, bool) {
	tg := t.tg
	si := info
	sig, stopped := t.ptraceStopLocked(info.Signo, linuxabi.CLD_TRAPPED, &si, 0, false)
	tg.mu.Lock()
	switch {
	case !stopped:
		if tg.exiting || t.exiting.Load() {
			return SigInfo{}, false
		}
		return info, true
	case sig == 0:
		return SigInfo{}, false
	}
	if sig != si.Signo {
		// A signal the tracer chose: from it, unless it said otherwise
		// with PTRACE_SETSIGINFO.
		si = SigInfo{Signo: sig, Code: linuxabi.SI_USER}
		if tr := t.pt.tracer; tr != nil {
			si.SetSender(tr.tidIn(t), tr.realUID())
		}
	}
	if t.sigMask&sigBit(int(sig)) != 0 || tg.exiting {
		t.pending.enqueue(si)
		return SigInfo{}, false
	}
	return si, true
}

// ptraceNotify makes a trap of t's own (Linux's ptrace_notify): event
// stops and system-call-stops, with SIGTRAP. It returns the signal the
// tracer resumed it with.
func (t *Task) ptraceNotify(code int32, msg uint64, exitStop bool) int32 {
	t.tg.mu.Lock()
	sig, _ := t.ptraceStopLocked(code, linuxabi.CLD_TRAPPED, t.selfNotifyInfo(int32(unix.SIGTRAP), code), msg, exitStop)
	return sig
}

// ptraceEvent stops t at event (PTRACE_EVENT_*) if its option is set,
// reporting msg (the new task, the old thread id, the exit status).
func (t *Task) ptraceEvent(event int, msg uint64) {
	if !t.ptraceEventEnabled(eventOption(event)) {
		return
	}
	t.ptraceNotify(int32(unix.SIGTRAP)|int32(event)<<8, msg, event == unix.PTRACE_EVENT_EXIT)
}

// eventOption is the PTRACE_O_* option that enables event.
func eventOption(event int) uint32 {
	return 1 << event // PTRACE_O_TRACEFORK is 1 << PTRACE_EVENT_FORK, and so on
}

// ptraceSyscallStop makes a system-call-stop at entry or exit: SIGTRAP,
// with 0x80 under PTRACE_O_TRACESYSGOOD. A signal the tracer resumes it
// with is sent to the task anew, as from the kernel.
func (t *Task) ptraceSyscallStop(exit bool) {
	code := int32(unix.SIGTRAP)
	if t.ptraceEventEnabled(unix.PTRACE_O_TRACESYSGOOD) {
		code |= 0x80
	}
	msg := uint64(unix.PTRACE_EVENTMSG_SYSCALL_ENTRY)
	if exit {
		msg = unix.PTRACE_EVENTMSG_SYSCALL_EXIT
	}
	if sig := t.ptraceNotify(code, msg, false); sig != 0 && ValidSignal(int(sig)) {
		t.SendSignal(SigInfo{Signo: sig, Code: linuxabi.SI_KERNEL})
	}
}

// doSyscallTraced is doSyscall for a traced task: system-call-stops at
// entry (rax -ENOSYS, the call in orig_rax, both the tracer's to change:
// orig_rax -1 skips the call) and exit, PTRACE_SYSEMU's skipped calls,
// and the trap a single-step takes right after a syscall instruction.
func (t *Task) doSyscallTraced() {
	f := t.pt.flags.Load()
	emu := f&ptSysemu != 0
	if f&(ptSyscall|ptSysemu) != 0 {
		t.regs.Rax = errnoReturn(unix.ENOSYS)
		t.ptraceSyscallStop(false)
		if t.exiting.Load() {
			return // killed at the stop: the call is not made
		}
	}
	// A tracer skips the call by making its number -1 (the low 32 bits,
	// which are what Linux looks at), leaving rax as it set it.
	if nr := t.regs.OrigRax; !emu && int32(nr) != -1 {
		t.callSyscall(syscallNr(nr))
	}
	f = t.pt.flags.Load()
	switch {
	case f&ptStep != 0 && !emu:
		// The CPU traps after the syscall instruction, before the next.
		if t.restart == 0 {
			t.regs.OrigRax = ^uint64(0)
			info := SigInfo{Signo: int32(unix.SIGTRAP), Code: trapTrace}
			info.SetAddr(t.regs.Rip)
			t.forceSignal(info)
		}
	case f&ptSyscall != 0:
		t.ptraceSyscallStop(true)
	}
}

// ptraceExec reports an exec of the traced task whose thread id was
// oldTID: PTRACE_EVENT_EXEC with PTRACE_O_TRACEEXEC, else, for a tracee
// not seized, the SIGTRAP Linux sends.
func (t *Task) ptraceExec(oldTID int32) {
	if !t.Traced() {
		return
	}
	t.tg.mu.Lock()
	tracer, opts, seized := t.pt.tracer, t.pt.options, t.pt.seized
	t.tg.mu.Unlock()
	switch {
	case tracer == nil:
	case opts&unix.PTRACE_O_TRACEEXEC != 0:
		msg := uint64(t.k.tidIn(oldTID, tracer))
		t.ptraceNotify(int32(unix.SIGTRAP)|unix.PTRACE_EVENT_EXEC<<8, msg, false)
	case !seized:
		info := SigInfo{Signo: int32(unix.SIGTRAP), Code: linuxabi.SI_USER}
		info.SetSender(t.PID(), t.realUID())
		t.SendSignal(info)
	}
}

// ptraceExitStop is PTRACE_EVENT_EXIT, at the start of the task's exit:
// its registers are still there for the tracer, and the event message is
// the exit status as wait would report it. A task killed by SIGKILL does
// not stop.
func (t *Task) ptraceExitStop() {
	if !t.ptraceEventEnabled(unix.PTRACE_O_TRACEEXIT) {
		return
	}
	tg := t.tg
	tg.mu.Lock()
	status := ExitStatus{Code: t.exitCode}
	if tg.exiting {
		status = tg.status
	}
	tg.mu.Unlock()
	t.ptraceEvent(unix.PTRACE_EVENT_EXIT, uint64(status.waitStatus()))
}

// ptraceStepIntoHandler is the trap a single-stepping tracee takes at the
// first instruction of a signal handler it enters (Linux's
// signal_setup_done): stepping ends, and the tracer may step on.
func (t *Task) ptraceStepIntoHandler() {
	t.ptraceNotify(int32(unix.SIGTRAP), 0, false)
}

// stopStepLocked ends single-stepping before a signal frame is written, so
// that the frame does not hold the trap flag the tracer set (tg.mu held).
func (t *Task) stopStepLocked() bool {
	f := t.pt.flags.Load()
	if f&ptStep == 0 {
		return false
	}
	t.setStepLocked(false)
	t.pt.flags.Store(f &^ ptStep)
	return true
}

// waitStatus is s as wait(2)'s status word encodes it: the signal (with
// 0x80 when it dumped core), or the exit code in the second byte.
func (s ExitStatus) waitStatus() int32 {
	if s.Core {
		return int32(s.Signo) | 0x80 // WCOREDUMP
	}
	if s.Signo != 0 {
		return int32(s.Signo)
	}
	return int32(s.Code&0xff) << 8
}

// groupStopLocked gives t its part in its process's group stop for sig
// (tg.mu held): an untraced task stops with the process, a traced one
// reports a group-stop to its tracer (ptraceTrapLocked), a seized one
// being notified even while listening.
func (t *Task) groupStopLocked(sig int) {
	t.pt.stopPending, t.pt.stopSig = true, sig
	if t.pt.seized {
		t.pt.trapNotify = true
		if t.pt.listening {
			t.endStopLocked()
		}
	}
	t.kick()
}

// restopTracedLocked is a stop signal delivered to a process already
// stopped, by a traced task its tracer let run (tg.mu held): the traced
// tasks take part in a new group stop; the others are stopped already.
func (tg *ThreadGroup) restopTracedLocked(sig int) {
	for _, t := range tg.tasks {
		if t.pt.tracer != nil {
			t.groupStopLocked(sig)
		}
	}
}

// ptraceContinueLocked is SIGCONT's part for traced tasks (tg.mu held): a
// group stop not yet taken part in is off, and seized tracees are owed a
// notification, which ends a PTRACE_LISTEN.
func (tg *ThreadGroup) ptraceContinueLocked() {
	for _, t := range tg.tasks {
		t.pt.stopPending = false
		if t.pt.seized {
			t.pt.trapNotify = true
			if t.pt.listening {
				t.endStopLocked()
			}
			t.kick()
		}
	}
}

// cloneEvent is the ptrace event a clone with flags and exitSignal
// reports, or 0: vfork, clone (a child that does not send SIGCHLD, a
// thread too) or fork, if the tracer asked for it and CLONE_UNTRACED
// does not refuse it. The child is then traced too.
func (t *Task) cloneEvent(flags uint64, exitSignal int) int {
	if flags&unix.CLONE_UNTRACED != 0 || !t.Traced() {
		return 0
	}
	ev := unix.PTRACE_EVENT_FORK
	switch {
	case flags&unix.CLONE_VFORK != 0:
		ev = unix.PTRACE_EVENT_VFORK
	case exitSignal != int(unix.SIGCHLD):
		ev = unix.PTRACE_EVENT_CLONE
	}
	if !t.ptraceEventEnabled(eventOption(ev)) {
		return 0
	}
	return ev
}

// ptraceCloneEvent stops t at a clone event, reporting child's id as its
// tracer sees it.
func (t *Task) ptraceCloneEvent(event int, child *Task) {
	tracer := t.Tracer()
	if tracer == nil {
		return
	}
	t.ptraceEvent(event, uint64(child.tidIn(tracer)))
}

// cloneEflags is the eflags a child of t starts with: t's, without the
// trap flag its tracer's single-step set, as Linux's copy_process clears
// single-stepping.
func (t *Task) cloneEflags() uint64 {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	if t.pt.forcedTF {
		return t.regs.Eflags &^ eflagsTF
	}
	return t.regs.Eflags
}
