package kernel

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/internal/seccomp"
)

// userDispatch is a task's syscall user dispatch (prctl
// PR_SET_SYSCALL_USER_DISPATCH): while on, a system call made from outside
// [offset, offset+length) is not run but turned into a SIGSYS the program
// handles itself (an emulator of another OS's calls, say), unless the byte
// at selector says to let calls through. Only the task touches it; a new
// thread or process starts without it, as Linux's copy_process clears it,
// and an exec keeps it.
type userDispatch struct {
	on             bool
	offset, length uint64
	selector       uintptr // 0: no selector, every call outside the range dispatches
}

// The selector byte's values.
const (
	dispatchAllow = 0 // SYSCALL_DISPATCH_FILTER_ALLOW
	dispatchBlock = 1 // SYSCALL_DISPATCH_FILTER_BLOCK
)

// sysUserDispatch is SIGSYS's si_code for a dispatched call.
const sysUserDispatch = linuxabi.SIGSYS_USER_DISPATCH

// SetSyscallUserDispatch switches the task's dispatch on (with its range and
// selector) or off; the prctl has checked the arguments.
func (t *Task) SetSyscallUserDispatch(on bool, offset, length uint64, selector uintptr) {
	t.sud = userDispatch{on: on, offset: offset, length: length, selector: selector}
}

// userDispatched reports whether the system call the task is entering was
// taken from it by its syscall user dispatch, as Linux decides before any
// tracer or seccomp filter sees the call: it is if made outside the range
// while the selector (if any) says block; then rax holds the call's number
// again and SIGSYS (SYS_USER_DISPATCH) is on its way, with the call's
// address, number and architecture. A selector that cannot be read kills
// the process with SIGSEGV, one that holds neither allow nor block with
// SIGSYS, as Linux's force_exit_sig does.
func (t *Task) userDispatched() bool {
	d := &t.sud
	if !d.on || t.regs.Rip-d.offset < d.length {
		return false
	}
	if d.selector != 0 {
		var b [1]byte
		if _, err := t.CopyIn(d.selector, b[:]); err != nil {
			t.seccompKill(int(unix.SIGSEGV), false)
			return true
		}
		switch b[0] {
		case dispatchAllow:
			return false
		case dispatchBlock:
		default:
			t.seccompKill(int(unix.SIGSYS), false)
			return true
		}
	}
	t.regs.Rax = t.regs.OrigRax
	info := SigInfo{Signo: int32(unix.SIGSYS), Code: sysUserDispatch}
	info.SetSeccomp(t.regs.Rip, int32(t.regs.OrigRax), seccomp.ArchX86_64)
	t.forceSignal(info)
	return true
}
