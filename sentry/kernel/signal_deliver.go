package kernel

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// groupExitLocked ends every task of the process with status s (tg.mu
// held): exit_group, a fatal signal, or init's end.
func (tg *ThreadGroup) groupExitLocked(s ExitStatus) {
	if tg.exiting {
		return
	}
	tg.exiting = true
	tg.status = s
	tg.continueLocked() // a stopped process must run to die
	for _, t := range tg.tasks {
		t.exiting.Store(true)
		t.kick()
	}
}

// stopLocked stops the process for signal sig (tg.mu held). Every task
// takes part (a traced one as a ptrace group-stop, ptrace_stop.go); a
// traced task its tracer let run on starts another group stop of the
// stopped process, as Linux lets it.
func (tg *ThreadGroup) stopLocked(sig int) {
	if tg.exiting {
		return
	}
	if tg.stopped {
		tg.restopTracedLocked(sig)
		return
	}
	tg.stopped, tg.stopSig, tg.stopReported, tg.continued = true, sig, false, false
	tg.contCh = make(chan struct{})
	for _, t := range tg.tasks {
		t.groupStopLocked(sig)
	}
	go tg.notifyParent(linuxabi.CLD_STOPPED, sig)
}

// continueLocked resumes a stopped process (tg.mu held).
func (tg *ThreadGroup) continueLocked() {
	tg.ptraceContinueLocked()
	if !tg.stopped {
		return
	}
	tg.stopped, tg.continued = false, true
	close(tg.contCh)
	go tg.notifyParent(linuxabi.CLD_CONTINUED, int(unix.SIGCONT))
}

// notifyParent tells the parent about a stop or continue: a SIGCHLD unless
// it asked not to (SA_NOCLDSTOP), and a wake-up of its waiters. It runs on
// its own goroutine: its callers hold the process's lock, which comes after
// the tree lock it needs.
func (tg *ThreadGroup) notifyParent(code int32, status int) {
	k := tg.k
	k.treeMu.Lock()
	parent := tg.parent
	var seen int32 // the child's pid as the parent sees it
	if parent != nil {
		seen = tg.pidIn(parent.pidns)
	}
	k.treeMu.Unlock()
	if parent == nil {
		return
	}
	k.treeMu.Lock()
	tracedByParent := code == linuxabi.CLD_STOPPED && tg.childHeldByPtraceLocked(parent, true)
	k.treeMu.Unlock()
	if tracedByParent {
		return // the parent, its tracer, hears of each task's stop instead
	}
	if parent.Action(int(unix.SIGCHLD)).Flags&linuxabi.SA_NOCLDSTOP == 0 {
		info := SigInfo{Signo: int32(unix.SIGCHLD), Code: code}
		info.SetChild(seen, tg.uid(), int32(status))
		parent.SendSignal(info)
	}
	parent.childEvents.broadcast()
}

// handleSignals runs before the task returns to guest code whenever its
// check flag is set: it ends the task if its process is exiting, waits
// while the process is stopped, and delivers one pending signal.
func (t *Task) handleSignals() {
	tg := t.tg
	for {
		tg.mu.Lock()
		t.check.Store(false)
		select { // a stale wake-up must not cut the next blocking call short
		case <-t.interrupt:
		default:
		}
		if tg.exiting || t.exiting.Load() {
			t.exiting.Store(true)
			tg.mu.Unlock()
			return
		}
		if t.pt.tracer != nil {
			if t.ptraceTrapLocked() { // ptrace_stop.go
				continue
			}
		} else if tg.stopped {
			cont := tg.contCh
			tg.mu.Unlock()
			t.park()
			select {
			case <-cont:
			case <-t.interrupt:
			}
			continue
		}
		info, ok := t.pending.dequeue(t.sigMask)
		if !ok {
			info, ok = tg.pending.dequeue(t.sigMask)
		}
		if ok && info.Code == linuxabi.SI_TIMER {
			tg.mu.Unlock()
			tg.timerSignalTaken(&info) // posix_timer.go
			tg.mu.Lock()
		}
		if !ok {
			if t.haveSavedMask {
				// A temporary mask (rt_sigsuspend) outlives its call only
				// until a handler runs.
				t.haveSavedMask = false
				t.setSigMaskLocked(t.savedMask)
			}
			tg.mu.Unlock()
			t.finishRestart(false, 0)
			return
		}
		sig := int(info.Signo)
		if t.pt.tracer != nil && sig != int(unix.SIGKILL) {
			// The tracer sees the signal first, and chooses what to deliver.
			var deliver bool
			if info, deliver = t.ptraceSignalLocked(info); !deliver {
				tg.mu.Unlock()
				continue
			}
			sig = int(info.Signo)
		}
		act := tg.Action(sig)
		switch {
		case act.Handler == linuxabi.SIG_IGN:
			tg.mu.Unlock()
			continue
		case act.Handler != linuxabi.SIG_DFL:
			t.check.Store(true) // look again once the frame is set up
			stepping := t.stopStepLocked()
			tg.mu.Unlock()
			t.finishRestart(true, act.Flags)
			if err := t.deliverHandler(&info, act); err != nil {
				t.Log("signal %d: cannot write the signal frame: %v", sig, err)
				t.forceSignal(SigInfo{Signo: int32(unix.SIGSEGV), Code: linuxabi.SI_KERNEL})
			} else if stepping {
				t.ptraceStepIntoHandler()
			}
			return
		}
		switch defaultActionOf(sig) {
		case actIgnore, actContinue:
			tg.mu.Unlock()
		case actStop:
			tg.stopLocked(sig)
			tg.mu.Unlock()
		default:
			if tg.signalImmune() && info.Code != linuxabi.SI_KERNEL && !isFault(sig) {
				tg.mu.Unlock() // init is immune to signals it has no handler for
				continue
			}
			first := !tg.exiting
			tg.groupExitLocked(ExitStatus{Signo: sig})
			tg.mu.Unlock()
			if first && defaultActionOf(sig) == actCore && t.dumpCore(&info) {
				tg.mu.Lock()
				tg.status.Core = true
				tg.mu.Unlock()
			}
			t.killThreads()
			return
		}
	}
}

func isFault(sig int) bool { return syncSignals&sigBit(sig) != 0 }

// finishRestart settles a system call that returned a restart code: with
// a handler about to run, EINTR unless the call may restart; without, the
// call is run again.
func (t *Task) finishRestart(handler bool, flags uint64) {
	errno := unix.Errno(t.restart)
	t.restart = 0
	// As Linux decides from the registers: a tracer that changed the
	// result, or the call number to -1, at the system call's exit-stop
	// has cancelled the restart.
	if errno == 0 || t.regs.Rax != errnoReturn(errno) || int32(t.regs.OrigRax) < 0 {
		return
	}
	restart := !handler || errno == ERESTARTNOINTR || (errno == ERESTARTSYS && flags&linuxabi.SA_RESTART != 0)
	if restart {
		t.regs.Rax = t.regs.OrigRax
		t.regs.Rip -= 2 // the syscall instruction is two bytes
	} else {
		t.regs.Rax = errnoReturn(unix.EINTR)
	}
}

// errnoReturn is the value rax holds when a system call fails with errno.
func errnoReturn(errno unix.Errno) uint64 { return uint64(-int64(errno)) }
