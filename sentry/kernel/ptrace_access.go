package kernel

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/mm"
)

// Who may inspect or control another task: Linux's ptrace_may_access, the
// one rule behind ptrace attach, /proc/<pid>/mem and process_vm_readv and
// process_vm_writev, with the sandbox's YAMA ptrace_scope of 1 on top.

// PtraceMode is how a task means to reach another, as Linux's
// PTRACE_MODE_* flags say: to read its state or to control it, judged by
// the caller's real ids or by its file-system ids.
type PtraceMode uint32

// PtraceMode bits, with Linux's values.
const (
	PtraceModeRead      PtraceMode = 0x01
	PtraceModeAttach    PtraceMode = 0x02
	PtraceModeFSCreds   PtraceMode = 0x08
	PtraceModeRealCreds PtraceMode = 0x10

	// The combinations Linux's callers use: ptrace(2) attach and
	// process_vm_readv/writev judge by real ids, /proc/<pid>/mem by
	// file-system ids.
	PtraceAttachRealCreds = PtraceModeAttach | PtraceModeRealCreds
	PtraceAttachFSCreds   = PtraceModeAttach | PtraceModeFSCreds
	PtraceReadFSCreds     = PtraceModeRead | PtraceModeFSCreds
	PtraceReadRealCreds   = PtraceModeRead | PtraceModeRealCreds
)

// PtraceScope is the sandbox's kernel.yama.ptrace_scope: 1, "restricted
// ptrace", as Ubuntu and many distributions ship it. A process may attach
// only to its descendants, or to a process that named it (or one of its
// ancestors) with prctl(PR_SET_PTRACER), unless it has CAP_SYS_PTRACE.
const PtraceScope = 1

// MayPtrace reports whether t may reach target in mode (Linux's
// ptrace_may_access). A thread of the same process always may. Otherwise
// the caller's ids (real or file-system ones, as mode says) must be the
// target's real, effective and saved ids, and its gid likewise, and the
// target must be dumpable; CAP_SYS_PTRACE overrides both. Attaching
// (PtraceModeAttach) is further limited by the YAMA scope. Whatever the
// capabilities, a task under Landlock reaches only tasks in its domain or
// one made on it.
func (t *Task) MayPtrace(target *Task, mode PtraceMode) bool {
	if target.tg == t.tg {
		return true
	}
	if !t.LandlockDomain().Encloses(target.LandlockDomain()) {
		return false
	}
	c := t.creds
	c.Lock()
	uid, gid := c.UID, c.GID
	if mode&PtraceModeFSCreds != 0 {
		uid, gid = c.FSUID, c.FSGID
	}
	c.Unlock()
	// CAP_SYS_PTRACE counts in the target's user namespace
	// (ptrace_has_cap).
	hasCap := t.CapableIn(target.creds.UserNamespace(), unix.CAP_SYS_PTRACE)
	if !hasCap {
		tc := target.creds
		tc.Lock()
		same := uid == tc.UID && uid == tc.EUID && uid == tc.SUID && gid == tc.GID && gid == tc.EGID && gid == tc.SGID
		tc.Unlock()
		if !same || target.Prctl().Dumpable != 1 {
			return false
		}
	}
	if mode&PtraceModeAttach == 0 || hasCap {
		return true
	}
	return t.yamaMayAttach(target)
}

// yamaMayAttach is YAMA's relational rule: target's process is t's or a
// descendant of it, or it named t's process (or one of t's ancestors) as
// its tracer with PR_SET_PTRACER, or it accepts any tracer.
func (t *Task) yamaMayAttach(target *Task) bool {
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	if isDescendantLocked(t.tg, target.tg) {
		return true
	}
	tg := target.tg
	if tg.pt.ptracerAny {
		return true
	}
	if tr := tg.pt.ptracer; tr != nil && !tr.zombie {
		return isDescendantLocked(tr, t.tg)
	}
	return false
}

// isDescendantLocked reports whether tg is anc or below it in the process
// tree (treeMu held).
func isDescendantLocked(anc, tg *ThreadGroup) bool {
	for p := tg; p != nil; p = p.parent {
		if p == anc {
			return true
		}
	}
	return false
}

// SetPtracer implements prctl(PR_SET_PTRACER): pid names the process that
// may attach to the caller's (with its descendants) despite the YAMA
// scope; 0 takes the exception back and any (PR_SET_PTRACER_ANY) lets
// every process attach. A pid that names no process is EINVAL.
func (t *Task) SetPtracer(pid int32, any bool) error {
	k := t.k
	var tracer *ThreadGroup
	if !any && pid != 0 {
		target := t.LookupTask(pid)
		if target == nil {
			return unix.EINVAL
		}
		tracer = target.tg
	}
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	t.tg.pt.ptracer, t.tg.pt.ptracerAny = tracer, any
	return nil
}

// MemoryOf is the address space of the task with id tid, for a call that
// reaches into it as process_vm_readv and process_vm_writev do (Linux's
// mm_access): ESRCH if there is no such task or it has none left, EACCES
// if MayPtrace refuses mode.
func (t *Task) MemoryOf(tid int32, mode PtraceMode) (*mm.MemoryManager, error) {
	target := t.LookupTask(tid)
	if target == nil || target.exiting.Load() {
		return nil, unix.ESRCH
	}
	m := target.MM()
	if m != t.mm && !t.MayPtrace(target, mode) {
		return nil, unix.EACCES
	}
	if m == nil || m.Users() == 0 {
		return nil, unix.ESRCH
	}
	return m, nil
}
