package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Clone implements Linux syscall clone(2): on x86-64 its arguments are
// flags, stack, parent_tid, child_tid, tls.
func Clone(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	// Linux's clone takes the low 32 bits of its flags: the clone3-only
	// ones above them (CLONE_CLEAR_SIGHAND, CLONE_INTO_CGROUP) are not
	// clone's.
	o := kernel.CloneOptions{Flags: a[0] & 0xffffff00, ExitSignal: int(a[0] & 0xff), Stack: a[1],
		ParentTID: a.Ptr(2), ChildTID: a.Ptr(3), TLS: a[4]}
	if o.Flags&unix.CLONE_PIDFD != 0 {
		// The pidfd goes where the parent's tid would.
		if o.Flags&unix.CLONE_PARENT_SETTID != 0 {
			return 0, unix.EINVAL
		}
		o.PidFD = clonePidfd(t, o.ParentTID)
	}
	return retErr(cloneRet(t.Clone(o)))
}

// Fork implements Linux syscall fork(2).
func Fork(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	return retErr(cloneRet(t.Clone(kernel.CloneOptions{ExitSignal: int(unix.SIGCHLD)})))
}

// Vfork implements Linux syscall vfork(2).
func Vfork(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	return retErr(cloneRet(t.Clone(kernel.CloneOptions{Flags: unix.CLONE_VM | unix.CLONE_VFORK,
		ExitSignal: int(unix.SIGCHLD)})))
}

func cloneRet(tid int32, err error) (uintptr, error) { return uintptr(tid), err }

// clone3Flags are the flags clone3 knows: clone's 32 and
// CLONE_CLEAR_SIGHAND and CLONE_INTO_CGROUP (Linux's clone3_args_valid:
// EINVAL for any other).
const clone3Flags = 0xffffffff | unix.CLONE_CLEAR_SIGHAND | unix.CLONE_INTO_CGROUP

// Clone3 implements Linux syscall clone3(2).
func Clone3(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	size := a[1]
	if size < unix.CLONE_ARGS_SIZE_VER0 || size > 4096 {
		return 0, unix.EINVAL
	}
	buf := make([]byte, size)
	if _, err := t.CopyIn(a.Ptr(0), buf); err != nil {
		return 0, err
	}
	field := func(i int) uint64 {
		if (i+1)*8 > len(buf) {
			return 0
		}
		return binary.LittleEndian.Uint64(buf[i*8:])
	}
	// flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size,
	// tls, set_tid, set_tid_size, cgroup
	for i := 11; i*8 < len(buf); i++ {
		if field(i) != 0 {
			return 0, unix.E2BIG // fields this kernel does not know must be zero
		}
	}
	flags, exitSignal, stack, stackSize := field(0), field(4), field(5), field(6)
	if flags&unix.CSIGNAL != 0 || flags&^clone3Flags != 0 || exitSignal > linuxabi.NSIG || field(8) != 0 || field(9) != 0 || field(10) != 0 ||
		(stack == 0) != (stackSize == 0) {
		return 0, unix.EINVAL
	}
	o := kernel.CloneOptions{Flags: flags, ExitSignal: int(exitSignal), ChildTID: uintptr(field(2)),
		ParentTID: uintptr(field(3)), TLS: field(7)}
	if flags&unix.CLONE_PIDFD != 0 {
		if flags&unix.CLONE_PARENT_SETTID != 0 && field(1) == field(3) {
			return 0, unix.EINVAL // the pidfd and the tid would share a word
		}
		o.PidFD = clonePidfd(t, uintptr(field(1)))
	}
	if stack != 0 {
		o.Stack = stack + stackSize // the stack grows down from its top
	}
	return retErr(cloneRet(t.Clone(o)))
}
