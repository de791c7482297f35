package kernel

import (
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/internal/seccomp"
)

// Guest seccomp: the mode and filters of each task (seccomp(2),
// prctl(PR_SET_SECCOMP), the container's linux.seccomp), run by the sentry
// on every system call the task makes, before the call's handler, with
// Linux's semantics. Nothing of it is ever installed in the host: the
// host's filter of a stub traps every guest call anyway.
//
// A task's state is written by the task itself and, for TSYNC, by another
// thread of its process (under the process's mu); the hot path reads it
// with one atomic load.
type taskSeccomp struct {
	mode  atomic.Int32 // SECCOMP_MODE_*; DISABLED on the hot path costs one load
	chain atomic.Pointer[seccomp.Chain]
}

// SeccompMode is the task's seccomp mode (SECCOMP_MODE_DISABLED, _STRICT
// or _FILTER), as PR_GET_SECCOMP and /proc/PID/status report it.
func (t *Task) SeccompMode() int { return int(t.sc.mode.Load()) }

// SeccompFilters is how many filters the task carries.
func (t *Task) SeccompFilters() int { return t.sc.chain.Load().Len() }

// inheritSeccomp gives a new task its creator's mode and filters: clone
// and fork copy them, exec keeps them.
func (t *Task) inheritSeccomp(child *Task) {
	child.sc.chain.Store(t.sc.chain.Load())
	child.sc.mode.Store(t.sc.mode.Load())
}

// SetSeccompStrict puts the task in strict mode: from now on only read,
// write, exit and rt_sigreturn (SECCOMP_SET_MODE_STRICT). A task in filter
// mode cannot change mode: EINVAL.
func (t *Task) SetSeccompStrict() error {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	if m := t.sc.mode.Load(); m != unix.SECCOMP_MODE_DISABLED && m != unix.SECCOMP_MODE_STRICT {
		return unix.EINVAL
	}
	t.sc.mode.Store(unix.SECCOMP_MODE_STRICT)
	return nil
}

// AddSeccompFilter pushes prog (which passed seccomp.Check) on the task's
// filters, as SECCOMP_SET_MODE_FILTER does once the program is checked and
// the caller allowed: EINVAL in strict mode, ENOMEM past the chain's
// length limit. With tsync every other thread of the process gets the same
// filters and mode (and no_new_privs, if the caller has it), provided
// each has no filter or an ancestor of the caller's: if one has not, no
// thread changes and its thread id is returned (with errESRCH, ESRCH).
func (t *Task) AddSeccompFilter(prog []seccomp.Insn, tsync, errESRCH bool) (failedTID int32, err error) {
	tg := t.tg
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if t.sc.mode.Load() == unix.SECCOMP_MODE_STRICT {
		return 0, unix.EINVAL
	}
	old := t.sc.chain.Load()
	chain, ok := old.Push(prog)
	if !ok {
		return 0, unix.ENOMEM
	}
	if tsync {
		for _, o := range tg.tasks {
			if o == t {
				continue
			}
			m := o.sc.mode.Load()
			if m == unix.SECCOMP_MODE_DISABLED || (m == unix.SECCOMP_MODE_FILTER && old.Contains(o.sc.chain.Load())) {
				continue
			}
			if errESRCH {
				return 0, unix.ESRCH
			}
			return o.vtid, nil // as the caller, in the same process, sees it
		}
	}
	t.sc.chain.Store(chain)
	t.sc.mode.Store(unix.SECCOMP_MODE_FILTER)
	if tsync {
		for _, o := range tg.tasks {
			if o == t {
				continue
			}
			o.sc.chain.Store(chain)
			o.sc.mode.Store(unix.SECCOMP_MODE_FILTER)
			if t.prctl.NoNewPrivs {
				o.prctl.NoNewPrivs = true
			}
		}
	}
	return 0, nil
}

// seccompAllows runs the task's seccomp mode on the call it is about to
// make (t.args loaded) and reports whether the call goes ahead. When not,
// the call's outcome is already decided: a return value in rax (ERRNO,
// and TRACE and USER_NOTIF, which have no tracer or listener here), a
// SIGSYS on its way (TRAP), or the thread or process ending.
func (t *Task) seccompAllows(nr uintptr) bool {
	if t.sc.mode.Load() == unix.SECCOMP_MODE_STRICT {
		switch nr {
		case unix.SYS_READ, unix.SYS_WRITE, unix.SYS_EXIT, unix.SYS_RT_SIGRETURN:
			return true
		}
		t.seccompKill(int(unix.SIGKILL), true)
		return false
	}
	d := seccomp.Data{Nr: int32(nr), Arch: seccomp.ArchX86_64, IP: t.regs.Rip}
	for i, a := range t.args {
		d.Args[i] = uint64(a)
	}
	ret := t.sc.chain.Load().Evaluate(&d)
	data := uint32(seccomp.RetData(ret))
	switch seccomp.Action(ret) {
	case seccomp.ActAllow:
		return true
	case seccomp.ActLog:
		t.Log("seccomp: pid %d made call %d, which its filter logs", t.tg.pid, nr)
		return true
	case seccomp.ActErrno:
		// Linux caps the errno at MAX_ERRNO; 0 is a success.
		t.regs.Rax = errnoReturn(unix.Errno(min(data, linuxabi.MAX_ERRNO)))
	case seccomp.ActTrace, seccomp.ActUserNotif:
		t.regs.Rax = errnoReturn(unix.ENOSYS)
	case seccomp.ActTrap:
		// The handler sees the call's registers as they were, rax the
		// call's number (Linux's syscall_rollback).
		t.regs.Rax = t.regs.OrigRax
		info := SigInfo{Signo: int32(unix.SIGSYS), Errno: int32(data), Code: linuxabi.SIGSYS_SECCOMP}
		info.SetSeccomp(t.regs.Rip, int32(nr), seccomp.ArchX86_64)
		t.forceSignal(info)
	case seccomp.ActKillThread:
		t.seccompKill(int(unix.SIGSYS), true)
	default: // KILL_PROCESS, and any action Linux does not know
		t.seccompKill(int(unix.SIGSYS), false)
	}
	return false
}

// seccompKill ends the task's thread (onlyThread) or its whole process,
// dying of sig: a thread that is its process's last takes the process.
func (t *Task) seccompKill(sig int, onlyThread bool) {
	tg := t.tg
	tg.mu.Lock()
	if !onlyThread || len(tg.tasks) == 1 {
		tg.groupExitLocked(ExitStatus{Signo: sig})
		tg.mu.Unlock()
		t.killThreads()
		return
	}
	tg.mu.Unlock()
	t.Exit(sig)
}
