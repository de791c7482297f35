package kernel

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// ptrace(2) between the sandbox's tasks: who traces whom, attaching and
// detaching, and the tracer's requests on a stopped tracee. The tracee's
// side, its ptrace-stops, is ptrace_stop.go; its registers as the tracer
// sees them are ptrace_regs.go. A tracer and its tracee are tasks (threads),
// as on Linux: only the thread that attached may make requests, and a
// thread's tracees are detached when it exits.

// Hot-path flags of a tracee (taskPtrace.flags): the one word doSyscall
// reads to learn that a traced task needs the slow path.
const (
	ptTraced  uint32 = 1 << iota // the task has a tracer
	ptSyscall                    // stop at system call entry and exit (PTRACE_SYSCALL)
	ptSysemu                     // stop at entry and skip the call (PTRACE_SYSEMU)
	ptStep                       // single-stepping (PTRACE_SINGLESTEP)
)

// eflagsTF is the trap flag, which makes the CPU trap after an instruction.
const eflagsTF = 0x100

// taskPtrace is a task's ptrace state, as tracee and as tracer.
type taskPtrace struct {
	// tracer is the task tracing this one, nil if none. It is written
	// with both Kernel.treeMu and the task's ThreadGroup.mu held, so that
	// either lock reads it.
	tracer *Task
	// tracees are the tasks this one traces (treeMu).
	tracees map[*Task]struct{}

	flags atomic.Uint32 // ptTraced and the resume mode

	// Guarded by the task's ThreadGroup.mu: how it is traced and its stop.
	seized  bool   // attached with PTRACE_SEIZE (or inherited from one)
	options uint32 // PTRACE_O_*
	stopped bool   // in a ptrace-stop
	// code is what the tracer's wait reports of the stop (Linux's
	// exit_code: status>>8), 0 once reported; the tracer's resume puts
	// the signal to deliver in it.
	code int32
	why  int32    // CLD_TRAPPED, or CLD_STOPPED for a group-stop, for the tracer's SIGCHLD
	info *SigInfo // last_siginfo: nil in a non-seized tracee's group-stop
	msg  uint64   // PTRACE_GETEVENTMSG
	// listening: resumed with PTRACE_LISTEN, still stopped but not
	// reported, until a notification re-traps it.
	listening bool
	resumed   chan struct{} // closed when the stop ends
	// Linux's jobctl bits: stopPending, a group stop the task has not
	// taken part in yet (every task of a stopping process gets it); trapStop,
	// a trap to take (PTRACE_INTERRUPT, a seized task's first stop);
	// trapNotify, a seized tracee must re-trap to tell of a group stop's
	// end or start. stopSig is the signal of the last group stop.
	stopPending, trapStop, trapNotify bool
	stopSig                           int
	// forcedTF: the tracer's single-step set the trap flag, which the
	// guest did not, so it is hidden from the tracer and cleared on resume.
	forcedTF bool
	// debugRegs are what the tracer wrote to u_debugreg (DR0-DR3, DR6,
	// DR7); no hardware breakpoint is armed from them.
	debugRegs [8]uint64
	// trapped is closed when the task next enters a ptrace-stop or exits
	// (an attach to a stopped task waits for its transition).
	trapped chan struct{}

	// exited: the task has ended and its tracer has not reaped it yet
	// (treeMu); status is what the tracer's wait reports.
	exited     bool
	exitStatus ExitStatus

	// access is held by the tracer while it uses the stopped tracee's
	// registers and floating-point state, and taken by the tracee before
	// it goes on from a stop: a tracee killed meanwhile waits for it.
	access sync.Mutex
}

// tgPtrace is what ptrace keeps per process.
type tgPtrace struct {
	// ptracer and ptracerAny are prctl(PR_SET_PTRACER)'s exception to the
	// YAMA scope (treeMu).
	ptracer    *ThreadGroup
	ptracerAny bool
	// traced counts the process's tasks that have a tracer (mu).
	traced int
	// killed: a SIGKILL came, which ends every ptrace-stop, an exiting
	// task's PTRACE_EVENT_EXIT stop too (mu).
	killed bool
	// zombie is the process's task whose end its tracer has not reaped
	// (treeMu): until it does, the real parent does not see the process's
	// end, unless the tracer is of the parent's own process.
	zombie *Task
	// creator is the thread that made the process (treeMu): its real
	// parent as PTRACE_TRACEME names it.
	creator *Task
}

// Traced reports whether the task has a tracer.
func (t *Task) Traced() bool { return t.pt.flags.Load()&ptTraced != 0 }

// Tracer returns the task's tracer, or nil.
func (t *Task) Tracer() *Task {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.pt.tracer
}

// PtraceStopped reports whether the task is in a ptrace-stop (Linux's
// TASK_TRACED, "t (tracing stop)" in /proc).
func (t *Task) PtraceStopped() bool {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.pt.stopped
}

// linkLocked makes tracer trace t (treeMu and t's ThreadGroup.mu held).
func (t *Task) linkLocked(tracer *Task, seized bool, options uint32) {
	t.pt.tracer, t.pt.seized, t.pt.options = tracer, seized, options
	t.pt.flags.Store(ptTraced)
	t.tg.pt.traced++
	if tracer.pt.tracees == nil {
		tracer.pt.tracees = make(map[*Task]struct{})
	}
	tracer.pt.tracees[t] = struct{}{}
}

// PtraceTraceme implements PTRACE_TRACEME: the task's parent becomes its
// tracer. A task already traced, whose parent is outside the sandbox
// (init), or whose parent is under a Landlock domain its own was not made
// on, gets EPERM.
func (t *Task) PtraceTraceme() error {
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	tg := t.tg
	parent := tg.parent
	if parent == nil || t.pt.tracer != nil {
		return unix.EPERM
	}
	tracer := parent.creatorLocked(tg)
	if tracer == nil {
		return nil // the parent is exiting: Linux succeeds without a tracer
	}
	if !tracer.LandlockDomain().Encloses(t.LandlockDomain()) {
		return unix.EPERM
	}
	tg.mu.Lock()
	t.linkLocked(tracer, false, 0)
	tg.mu.Unlock()
	return nil
}

// creatorLocked returns the task of tg that is child's real parent: the
// thread that made it if it still lives, else another of tg's, as Linux
// hands children to another thread when theirs exits (treeMu held).
func (tg *ThreadGroup) creatorLocked(child *ThreadGroup) *Task {
	if c := child.pt.creator; c != nil && c.tg == tg && tg.k.tasks[c.tid] == c {
		return c
	}
	return tg.Leader()
}

// PtraceAttach implements PTRACE_ATTACH (seize false: the tracee is sent
// SIGSTOP) and PTRACE_SEIZE (with options, and no signal). A task of the
// caller's own process, one already traced or already gone is EPERM, as
// is one MayPtrace refuses. A tracee in a group-stop goes on to report
// it as a ptrace-stop before the attach returns.
func (t *Task) PtraceAttach(target *Task, seize bool, options uint32) error {
	if target.tg == t.tg || !t.MayPtrace(target, PtraceAttachRealCreds) {
		return unix.EPERM
	}
	k, tg := t.k, target.tg
	k.treeMu.Lock()
	if k.tasks[target.tid] != target || target.pt.tracer != nil || t.exiting.Load() {
		k.treeMu.Unlock()
		return unix.EPERM
	}
	tg.mu.Lock()
	target.linkLocked(t, seize, options)
	// A task already stopped with its process re-traps, now traced.
	var trapped chan struct{}
	if tg.stopped && target.pt.stopPending {
		trapped = make(chan struct{})
		target.pt.trapped = trapped
		target.kick()
	}
	tg.mu.Unlock()
	k.treeMu.Unlock()
	if !seize {
		// To the tracee alone, as Linux's send_sig_info: it waits in
		// that thread's queue (PTRACE_PEEKSIGINFO shows it there).
		target.SendSignal(SigInfo{Signo: int32(unix.SIGSTOP), Code: linuxabi.SI_KERNEL})
	}
	if trapped != nil {
		// As Linux's wait on JOBCTL_TRAPPING: the tracer's next wait sees
		// the stop. Only the caller's death cuts it short.
		for {
			select {
			case <-trapped:
			case <-t.interrupt:
				if !t.exiting.Load() {
					continue
				}
			}
			break
		}
	}
	return nil
}

// PtraceTracee returns target for a request of t: target must be traced
// by t itself (not another thread of its process) and, unless anyState,
// be in a ptrace-stop in which it is not listening; otherwise ESRCH. The
// tracee stays stopped until Done is called.
func (t *Task) PtraceTracee(target *Task, anyState bool) (*Tracee, error) {
	target.pt.access.Lock()
	tg := target.tg
	tg.mu.Lock()
	ok := target.pt.tracer == t && (anyState || (target.pt.stopped && !target.pt.listening && !tg.pt.killed))
	tg.mu.Unlock()
	if !ok {
		target.pt.access.Unlock()
		return nil, unix.ESRCH
	}
	return &Tracee{t: target, tracer: t}, nil
}

// Tracee is a traced task as its tracer's requests see it, from
// PtraceTracee until Done.
type Tracee struct {
	t, tracer *Task
}

// Task returns the traced task.
func (r *Tracee) Task() *Task { return r.t }

// Done ends the request: the tracee may go on again.
func (r *Tracee) Done() { r.t.pt.access.Unlock() }

// Options are the tracee's PTRACE_O_* options.
func (r *Tracee) Options() uint32 {
	r.t.tg.mu.Lock()
	defer r.t.tg.mu.Unlock()
	return r.t.pt.options
}

// SetOptions implements PTRACE_SETOPTIONS: bits outside PTRACE_O_MASK are
// EINVAL, as is PTRACE_O_SUSPEND_SECCOMP (which needs CAP_SYS_ADMIN in the
// host's sense: there are no guest seccomp filters to suspend).
func (r *Tracee) SetOptions(opts uint32) error {
	if opts&^unix.PTRACE_O_MASK != 0 {
		return unix.EINVAL
	}
	if opts&unix.PTRACE_O_SUSPEND_SECCOMP != 0 {
		return unix.EPERM
	}
	r.t.tg.mu.Lock()
	r.t.pt.options = opts
	r.t.tg.mu.Unlock()
	return nil
}

// EventMsg implements PTRACE_GETEVENTMSG.
func (r *Tracee) EventMsg() uint64 {
	r.t.tg.mu.Lock()
	defer r.t.tg.mu.Unlock()
	return r.t.pt.msg
}

// SigInfo implements PTRACE_GETSIGINFO: the siginfo of the stop, EINVAL
// in a group-stop that has none.
func (r *Tracee) SigInfo() (SigInfo, error) {
	r.t.tg.mu.Lock()
	defer r.t.tg.mu.Unlock()
	if r.t.pt.info == nil {
		return SigInfo{}, unix.EINVAL
	}
	return *r.t.pt.info, nil
}

// PeekSigInfo implements PTRACE_PEEKSIGINFO: up to n of the signals
// pending for the tracee's thread, or with shared for its process, in the
// order they were queued, from the off-th on.
func (r *Tracee) PeekSigInfo(shared bool, off uint64, n int) []SigInfo {
	r.t.tg.mu.Lock()
	defer r.t.tg.mu.Unlock()
	if shared {
		return r.t.tg.pending.peek(off, n)
	}
	return r.t.pending.peek(off, n)
}

// SetSigInfo implements PTRACE_SETSIGINFO: it replaces the stop's
// siginfo, which a signal-delivery-stop then delivers.
func (r *Tracee) SetSigInfo(info SigInfo) error {
	r.t.tg.mu.Lock()
	defer r.t.tg.mu.Unlock()
	if r.t.pt.info == nil {
		return unix.EINVAL
	}
	*r.t.pt.info = info
	return nil
}

// SigMask and SetSigMask implement PTRACE_GETSIGMASK and
// PTRACE_SETSIGMASK; SIGKILL and SIGSTOP stay unblockable.
func (r *Tracee) SigMask() uint64 { return r.t.SigMask() }
func (r *Tracee) SetSigMask(m uint64) {
	r.t.tg.mu.Lock()
	r.t.sigMask = m &^ unblockable
	r.t.tg.mu.Unlock()
}

// Resume modes of a tracee, as the requests that end a ptrace-stop set them.
const (
	ResumeCont ResumeMode = iota
	ResumeSyscall
	ResumeSysemu
	ResumeStep
	ResumeSysemuStep
)

// ResumeMode says what stops a resumed tracee next.
type ResumeMode int

// Resume implements PTRACE_CONT, PTRACE_SYSCALL, PTRACE_SINGLESTEP,
// PTRACE_SYSEMU and PTRACE_SYSEMU_SINGLESTEP: the tracee goes on, with
// signal sig delivered if the stop was a signal-delivery-stop (sent anew
// from a system-call-stop, ignored elsewhere). A signal that is not one
// (nor 0) is EIO.
func (r *Tracee) Resume(mode ResumeMode, sig int) error {
	if sig != 0 && !ValidSignal(sig) {
		return unix.EIO
	}
	t := r.t
	tg := t.tg
	tg.mu.Lock()
	defer tg.mu.Unlock()
	f := ptTraced
	switch mode {
	case ResumeSyscall:
		f |= ptSyscall
	case ResumeSysemu:
		f |= ptSysemu
	case ResumeStep:
		f |= ptStep
	case ResumeSysemuStep:
		f |= ptSysemu | ptStep
	}
	t.setStepLocked(f&ptStep != 0)
	t.pt.flags.Store(f)
	t.pt.code = int32(sig)
	t.endStopLocked()
	return nil
}

// setStepLocked turns single-stepping on or off: the trap flag in the
// guest's eflags, remembered as forced when the guest had not set it.
func (t *Task) setStepLocked(on bool) {
	switch {
	case on && t.regs.Eflags&eflagsTF == 0:
		t.regs.Eflags |= eflagsTF
		t.pt.forcedTF = true
	case !on && t.pt.forcedTF:
		t.regs.Eflags &^= eflagsTF
		t.pt.forcedTF = false
	}
}

// endStopLocked wakes the stopped tracee (tg.mu held).
func (t *Task) endStopLocked() {
	if t.pt.stopped {
		t.pt.stopped = false
		if t.pt.resumed != nil {
			close(t.pt.resumed)
			t.pt.resumed = nil
		}
	}
}

// Listen implements PTRACE_LISTEN: a seized tracee in a group-stop
// (PTRACE_EVENT_STOP) stays stopped, no longer reported, until a
// notification (SIGCONT, a new group stop, PTRACE_INTERRUPT) re-traps
// it. Any other stop is EIO.
func (r *Tracee) Listen() error {
	t := r.t
	tg := t.tg
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if !t.pt.seized || t.pt.info == nil || t.pt.info.Code>>8 != unix.PTRACE_EVENT_STOP {
		return unix.EIO
	}
	t.pt.listening = true
	if t.pt.trapNotify {
		t.endStopLocked()
	}
	return nil
}

// Detach implements PTRACE_DETACH: the tracee goes on untraced, with sig
// as a signal-delivery-stop's signal. A signal that is not one is EIO.
func (r *Tracee) Detach(sig int) error {
	if sig != 0 && !ValidSignal(sig) {
		return unix.EIO
	}
	t := r.t
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	t.tg.mu.Lock()
	t.pt.code = int32(sig)
	t.tg.mu.Unlock()
	t.unlinkLocked()
	return nil
}

// PtraceInterrupt implements PTRACE_INTERRUPT: a seized tracee traps
// (PTRACE_EVENT_STOP) at its next chance, a blocking call interrupted
// and restarted after; one listening re-traps. Any other is EIO.
func (t *Task) PtraceInterrupt(target *Task) error {
	tg := target.tg
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if target.pt.tracer != t {
		return unix.ESRCH
	}
	if !target.pt.seized {
		return unix.EIO
	}
	target.pt.trapStop = true
	if target.pt.listening {
		target.endStopLocked()
	}
	target.kick()
	return nil
}

// PtraceKill implements PTRACE_KILL: SIGKILL to the tracee's process.
func (t *Task) PtraceKill(target *Task) error {
	if target.Tracer() != t {
		return unix.ESRCH
	}
	target.tg.SendSignal(SigInfo{Signo: int32(unix.SIGKILL), Code: linuxabi.SI_KERNEL})
	return nil
}

// unlinkLocked ends t's tracing (treeMu held): it goes on untraced, with
// the code its stop holds as the signal to deliver (0 once the tracer has
// seen the stop, or set by the tracer's detach). A tracee that has
// exited is reaped as its tracer's exit or detach would.
func (t *Task) unlinkLocked() {
	tracer := t.pt.tracer
	if tracer == nil {
		return
	}
	delete(tracer.pt.tracees, t)
	tg := t.tg
	tg.mu.Lock()
	t.pt.tracer, t.pt.seized, t.pt.options = nil, false, 0
	t.pt.flags.Store(0)
	tg.pt.traced--
	t.pt.trapStop, t.pt.trapNotify, t.pt.listening = false, false, false
	t.setStepLocked(false)
	t.endStopLocked()
	t.check.Store(true) // a group stop in effect holds it again
	tg.mu.Unlock()
	if t.pt.exited {
		t.releaseTracedZombieLocked(tracer)
	}
}

// ptraceTracerExitLocked detaches the tasks t traces, as it exits
// (treeMu held): those with PTRACE_O_EXITKILL are killed first, so that
// they run no code untraced.
func (t *Task) ptraceTracerExitLocked() {
	for tr := range t.pt.tracees {
		tg := tr.tg
		tg.mu.Lock()
		if tr.pt.options&unix.PTRACE_O_EXITKILL != 0 && !tr.pt.exited {
			tg.sendLocked(SigInfo{Signo: int32(unix.SIGKILL), Code: linuxabi.SI_KERNEL}, nil)
		}
		tg.mu.Unlock()
		tr.unlinkLocked()
	}
}

// ptraceInheritLocked makes child, which clone is making, traced as t is
// (treeMu held, the child not yet running): by t's tracer, with t's
// options, trapping first as a seized task does, or with a SIGSTOP
// pending as Linux gives an attached one.
func (t *Task) ptraceInheritLocked(child *Task) {
	tracer := t.pt.tracer
	if tracer == nil || tracer.exiting.Load() {
		return
	}
	child.tg.mu.Lock()
	child.linkLocked(tracer, t.pt.seized, t.pt.options)
	if t.pt.seized {
		child.pt.trapStop = true
	} else {
		child.pending.enqueue(SigInfo{Signo: int32(unix.SIGSTOP), Code: linuxabi.SI_USER})
	}
	child.check.Store(true)
	child.tg.mu.Unlock()
}

// ptraceEventEnabled reports whether option (PTRACE_O_*) is set on the
// traced task.
func (t *Task) ptraceEventEnabled(option uint32) bool {
	if !t.Traced() {
		return false
	}
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.pt.tracer != nil && t.pt.options&option != 0
}

// Tracees returns the tasks t traces.
func (t *Task) Tracees() []*Task {
	t.k.treeMu.Lock()
	defer t.k.treeMu.Unlock()
	out := make([]*Task, 0, len(t.pt.tracees))
	for tr := range t.pt.tracees {
		out = append(out, tr)
	}
	return out
}

// StopState says what holds the task, as /proc/<pid>/status's State line
// tells it: a ptrace-stop ("t (tracing stop)"), a group stop of an
// untraced task ("T (stopped)"), or neither.
func (t *Task) StopState() (traced, stopped bool) {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	if t.pt.stopped {
		return true, false
	}
	return false, t.pt.tracer == nil && t.tg.stopped
}
