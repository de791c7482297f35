package kernel

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// WaitOptions are wait4's and waitid's choices, decoded.
type WaitOptions struct {
	// Which children: Pid > 0 that one, Pid == -1 any, PGID != 0 that
	// process group.
	Pid, PGID int32
	// Process, when set (waitid's P_PIDFD), is the one child waited for,
	// whatever now has its pid.
	Process   *ThreadGroup
	Exited    bool // WEXITED (always for wait4)
	Stopped   bool // WUNTRACED / WSTOPPED
	Continued bool // WCONTINUED
	NoHang    bool // WNOHANG
	NoWait    bool // WNOWAIT: leave the child waitable
	// Clone children (exit signal other than SIGCHLD): __WCLONE selects
	// only them, __WALL both.
	Clone, All bool
}

// WaitResult is what a wait found.
type WaitResult struct {
	Pid    int32
	UID    uint32
	Status int32 // wait4's status word
	Code   int32 // waitid's si_code: CLD_EXITED, CLD_KILLED, CLD_STOPPED, CLD_CONTINUED
	Info   int32 // waitid's si_status: the exit code or the signal
	Usage  Usage // the child's, for an exited child
}

// Wait waits for a child to change state, as wait4 and waitid do. It gives
// ECHILD when no child matches, a zero result with NoHang when none has
// changed, and ERESTARTSYS if a signal interrupts it.
func (t *Task) Wait(o WaitOptions) (WaitResult, error) {
	k, tg := t.k, t.tg
	// The ids o names are the caller's; the kernel's are the root
	// namespace's (ns_pid.go). The result is the caller's again.
	if o.Pid > 0 {
		o.Pid = t.rootIDOrUnseen(o.Pid)
	}
	if o.PGID > 0 {
		o.PGID = t.rootIDOrUnseen(o.PGID)
	}
	for {
		k.treeMu.Lock()
		ch := tg.childEvents.wait()
		res, found, matched := tg.findWaitableLocked(o)
		if !found {
			// And the tasks the process's threads trace (ptrace_wait.go).
			var m bool
			res, found, m = tg.findPtraceWaitableLocked(o)
			matched = matched || m
		}
		k.treeMu.Unlock()
		switch {
		case found:
			return res, nil
		case !matched:
			return WaitResult{}, unix.ECHILD
		case o.NoHang:
			return WaitResult{}, nil
		}
		if err := t.Block(ch); err != nil {
			return WaitResult{}, err
		}
	}
}

// findWaitableLocked looks for a child whose change o asks for (treeMu
// held); matched says whether any child fits o at all.
func (tg *ThreadGroup) findWaitableLocked(o WaitOptions) (res WaitResult, found, matched bool) {
	for c := range tg.children {
		if !c.waitMatches(o) {
			continue
		}
		matched = true
		if c.zombie && c.childHeldByPtraceLocked(tg, false) {
			continue // for its tracer to reap first
		}
		if c.zombie && o.Exited {
			c.mu.Lock()
			s := c.status
			c.mu.Unlock()
			res = WaitResult{Pid: c.pidIn(tg.pidns), UID: c.exitUID, Status: int32(s.Code << 8), Code: linuxabi.CLD_EXITED,
				Info: int32(s.Code), Usage: c.usage}
			if s.Signo != 0 {
				res.Status, res.Code, res.Info = s.waitStatus(), s.killedCode(), int32(s.Signo)
			}
			if !o.NoWait {
				c.reapLocked()
			}
			return res, true, true
		}
		tracedHere := o.Stopped && c.childHeldByPtraceLocked(tg, true)
		c.mu.Lock()
		switch {
		case o.Stopped && c.stopped && !c.stopReported && !tracedHere:
			res = WaitResult{Pid: c.pidIn(tg.pidns), Status: int32(c.stopSig<<8 | 0x7f), Code: linuxabi.CLD_STOPPED, Info: int32(c.stopSig)}
			if !o.NoWait {
				c.stopReported = true
			}
			found = true
		case o.Continued && c.continued:
			res = WaitResult{Pid: c.pidIn(tg.pidns), Status: 0xffff, Code: linuxabi.CLD_CONTINUED, Info: int32(unix.SIGCONT)}
			if !o.NoWait {
				c.continued = false
			}
			found = true
		}
		c.mu.Unlock()
		if found {
			res.UID = c.uid()
			return res, true, true
		}
	}
	return res, false, matched
}

// waitMatches reports whether child c is one that o selects.
func (c *ThreadGroup) waitMatches(o WaitOptions) bool {
	switch {
	case o.Pid > 0 && c.pid != o.Pid, o.Process != nil && c != o.Process:
		return false
	case o.PGID != 0 && c.pgid != o.PGID:
		return false
	}
	clone := c.exitSignal != int(unix.SIGCHLD)
	return o.All || clone == o.Clone
}
