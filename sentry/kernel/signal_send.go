package kernel

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// sendLocked queues info for the process (tg.mu held) and kicks a task that
// does not block it. Job-control signals act at once, as on Linux: SIGKILL
// ends the process, SIGCONT resumes it, and each discards the other kind.
func (tg *ThreadGroup) sendLocked(info SigInfo, target *Task) {
	sig := int(info.Signo)
	if sig == int(unix.SIGKILL) && tg.pt.traced > 0 {
		tg.ptraceKillLocked() // even an exiting tracee's PTRACE_EVENT_EXIT stop ends
	}
	if tg.exiting {
		return
	}
	switch {
	case sig == int(unix.SIGKILL):
		tg.groupExitLocked(ExitStatus{Signo: sig})
		return
	case sig == int(unix.SIGCONT):
		tg.discardStopsLocked()
		tg.continueLocked()
	case defaultActionOf(sig) == actStop:
		tg.discardLocked(int(unix.SIGCONT))
	}
	if tg.ignoredLocked(sig) {
		return
	}
	if target != nil {
		target.pending.enqueue(info)
		if target.sigMask&sigBit(sig) == 0 {
			target.kick()
		}
	} else {
		tg.pending.enqueue(info)
		for _, t := range tg.tasks {
			if t.sigMask&sigBit(sig) == 0 {
				t.kick()
				break
			}
		}
	}
	tg.sigEvents.broadcast()
	go tg.signalQueue.Notify(waiter.ReadableEvents) // its callbacks may need tg.mu
}

// ignoredLocked reports whether sig would be thrown away on delivery: its
// action ignores it (and it is not blocked, so that it stays pending for
// sigwait). Init ignores signals it has no handler for.
func (tg *ThreadGroup) ignoredLocked(sig int) bool {
	if tg.pt.traced > 0 {
		return false // a tracer sees even ignored signals
	}
	act := tg.Action(sig)
	switch {
	case act.Handler == linuxabi.SIG_IGN:
	case act.Handler != linuxabi.SIG_DFL:
		return false
	case defaultActionOf(sig) == actIgnore:
	// A SIGSTOP that reaches a nested namespace's init was sent from an
	// ancestor namespace, which forces it (UnkillableBy).
	case tg.signalImmune() && sig != int(unix.SIGKILL) && (sig != int(unix.SIGSTOP) || !tg.NamespaceInit()):
	default:
		return false
	}
	for _, t := range tg.tasks {
		if t.sigMask&sigBit(sig) != 0 {
			return false
		}
	}
	return true
}

// discardPending drops every pending instance of sig in the process.
func (tg *ThreadGroup) discardPending(sig int) {
	tg.mu.Lock()
	tg.discardLocked(sig)
	tg.mu.Unlock()
}

func (tg *ThreadGroup) discardLocked(sig int) {
	tg.pending.discard(sig)
	for _, t := range tg.tasks {
		t.pending.discard(sig)
	}
}

func (tg *ThreadGroup) discardStopsLocked() {
	for _, s := range []unix.Signal{unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU} {
		tg.discardLocked(int(s))
	}
}

// SendSignal sends info to the process (kill(2)); it is dropped for a
// process that is already gone.
func (tg *ThreadGroup) SendSignal(info SigInfo) {
	tg.mu.Lock()
	tg.sendLocked(info, nil)
	tg.mu.Unlock()
}

// SendSignal sends info to this task alone (tgkill(2)).
func (t *Task) SendSignal(info SigInfo) {
	t.tg.mu.Lock()
	t.tg.sendLocked(info, t)
	t.tg.mu.Unlock()
}

// Signal implements vfs.Context: a signal the kernel raises for the task
// (SIGPIPE), which Linux sends as if the task had sent it to itself.
func (t *Task) Signal(sig int) {
	info := SigInfo{Signo: int32(sig), Code: linuxabi.SI_USER}
	t.creds.Lock()
	uid := t.creds.UID
	t.creds.Unlock()
	info.SetSender(t.PID(), uid)
	t.SendSignal(info)
}

// forceSignal delivers a fault's signal: it cannot be blocked or ignored;
// if it is, the action becomes the default (which ends the process).
func (t *Task) forceSignal(info SigInfo) {
	sig := int(info.Signo)
	tg := t.tg
	h := tg.sighand
	h.mu.Lock()
	if h.actions[sig].Handler == linuxabi.SIG_IGN || t.sigMask&sigBit(sig) != 0 {
		h.actions[sig] = SigAction{}
	}
	h.mu.Unlock()
	tg.mu.Lock()
	t.sigMask &^= sigBit(sig)
	if tg == tg.k.init && tg.Action(sig).Handler == linuxabi.SIG_DFL {
		// A fault kills even init.
		tg.groupExitLocked(ExitStatus{Signo: sig})
	} else {
		t.pending.enqueue(info)
		t.check.Store(true)
	}
	tg.mu.Unlock()
}

// CanSignal reports whether t may send a signal to tg (kill(2)'s
// permission rule: root, or a real or effective uid matching the target's
// real or saved uid).
func (t *Task) CanSignal(tg *ThreadGroup) bool {
	c := t.creds
	c.Lock()
	uid, euid := c.UID, c.EUID
	c.Unlock()
	target := tg.Leader()
	if target == nil {
		return true // a zombie: a signal does nothing to it
	}
	// CAP_KILL counts in the target's user namespace (kill_ok_by_cred).
	if t.CapableIn(target.creds.UserNamespace(), unix.CAP_KILL) {
		return true
	}
	tc := target.creds
	tc.Lock()
	defer tc.Unlock()
	return uid == tc.UID || uid == tc.SUID || euid == tc.UID || euid == tc.SUID
}

// MaySignal reports whether t may send a signal to target (a process's
// leader for a signal to the process): CanSignal, and, as Linux's Landlock
// hook adds, not out of a domain that scopes signals to a task outside it.
// A thread of t's own process is always reached.
func (t *Task) MaySignal(target *Task) bool {
	if !t.CanSignal(target.tg) {
		return false
	}
	return target.tg == t.tg || !t.LandlockDomain().Scopes(target.LandlockDomain(), unix.LANDLOCK_SCOPE_SIGNAL)
}

// MaySignalProcess is MaySignal for a signal to the process tg.
func (t *Task) MaySignalProcess(tg *ThreadGroup) bool {
	if target := tg.Leader(); target != nil {
		return t.MaySignal(target)
	}
	return t.CanSignal(tg) // a zombie: a signal does nothing to it
}

// SigMask and SetSigMask are the blocked-signal set (rt_sigprocmask).
func (t *Task) SigMask() uint64 {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.sigMask
}

// SetSigMask replaces the mask; unblocking a pending signal makes the task
// look at it before it returns to the guest.
func (t *Task) SetSigMask(m uint64) {
	t.tg.mu.Lock()
	t.setSigMaskLocked(m)
	t.tg.mu.Unlock()
}

func (t *Task) setSigMaskLocked(m uint64) {
	t.sigMask = m &^ unblockable
	if (t.pending.mask|t.tg.pending.mask)&^t.sigMask != 0 {
		t.check.Store(true)
	}
}

// Pending returns the signals pending for the task or its process
// (rt_sigpending).
func (t *Task) Pending() uint64 {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.pending.mask | t.tg.pending.mask
}

// SetTemporaryMask sets a mask to wait with (rt_sigsuspend); the current
// one comes back when a handler returns.
func (t *Task) SetTemporaryMask(m uint64) {
	t.tg.mu.Lock()
	t.savedMask, t.haveSavedMask = t.sigMask, true
	t.setSigMaskLocked(m)
	t.tg.mu.Unlock()
}

// WaitSignal takes a pending signal of set, waiting for one until deadline
// (rt_sigtimedwait, signalfd). It gives ETIMEDOUT at the deadline and
// ERESTARTSYS when another signal interrupts.
func (t *Task) WaitSignal(set uint64, deadline time.Time) (SigInfo, error) {
	tg := t.tg
	set &^= unblockable
	for {
		tg.mu.Lock()
		info, ok := t.takeSignalLocked(set)
		ch := tg.sigEvents.wait()
		tg.mu.Unlock()
		if ok {
			if info.Code == linuxabi.SI_TIMER {
				tg.timerSignalTaken(&info) // posix_timer.go
			}
			return info, nil
		}
		if err := t.BlockUntil(ch, deadline); err != nil {
			return SigInfo{}, err
		}
	}
}

// takeSignalLocked dequeues the first pending signal of set, the task's
// own first.
func (t *Task) takeSignalLocked(set uint64) (SigInfo, bool) {
	if info, ok := t.pending.dequeue(^set); ok {
		return info, true
	}
	return t.tg.pending.dequeue(^set)
}

// PendingIn reports whether a signal of set is pending for the task.
func (t *Task) PendingIn(set uint64) bool {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return (t.pending.mask|t.tg.pending.mask)&set != 0
}

// RestoreTemporaryMask puts back the mask SetTemporaryMask replaced, when
// the call that set it returns without a handler having run.
func (t *Task) RestoreTemporaryMask() {
	t.tg.mu.Lock()
	if t.haveSavedMask {
		t.haveSavedMask = false
		t.setSigMaskLocked(t.savedMask)
	}
	t.tg.mu.Unlock()
}
