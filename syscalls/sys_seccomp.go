package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/internal/seccomp"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// seccompFilterFlags are the SECCOMP_SET_MODE_FILTER flags Linux knows.
const seccompFilterFlags = unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_LOG |
	unix.SECCOMP_FILTER_FLAG_SPEC_ALLOW | unix.SECCOMP_FILTER_FLAG_NEW_LISTENER |
	unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV

// sizeofSockFprog is struct sock_fprog: a u16 length, padding, a pointer.
const sizeofSockFprog = 16

// Seccomp implements Linux syscall seccomp(2): strict mode, filters (run by
// the sentry on each of the task's calls, kernel/seccomp.go), and the two
// queries. SECCOMP_FILTER_FLAG_NEW_LISTENER is EINVAL: no user-space
// notification.
func Seccomp(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return doSeccomp(t, a.Uint(0), a.Uint(1), a.Ptr(2))
}

func doSeccomp(t *kernel.Task, op, flags uint32, uargs uintptr) (uintptr, error) {
	switch op {
	case unix.SECCOMP_SET_MODE_STRICT:
		if flags != 0 || uargs != 0 {
			return 0, unix.EINVAL
		}
		return 0, t.SetSeccompStrict()
	case unix.SECCOMP_SET_MODE_FILTER:
		return setSeccompFilter(t, flags, uargs)
	case unix.SECCOMP_GET_ACTION_AVAIL:
		if flags != 0 {
			return 0, unix.EINVAL
		}
		var b [4]byte
		if _, err := t.CopyIn(uargs, b[:]); err != nil {
			return 0, err
		}
		action := binary.LittleEndian.Uint32(b[:])
		if action&^uint32(unix.SECCOMP_RET_ACTION_FULL) != 0 || !seccomp.Known(action) {
			return 0, unix.EOPNOTSUPP
		}
		return 0, nil
	case unix.SECCOMP_GET_NOTIF_SIZES:
		if flags != 0 {
			return 0, unix.EINVAL
		}
		var b [6]byte
		binary.LittleEndian.PutUint16(b[0:], linuxabi.SizeofSeccompNotif)
		binary.LittleEndian.PutUint16(b[2:], linuxabi.SizeofSeccompNotifResp)
		binary.LittleEndian.PutUint16(b[4:], linuxabi.SizeofSeccompData)
		_, err := t.CopyOut(uargs, b[:])
		return 0, err
	}
	return 0, unix.EINVAL
}

// setSeccompFilter is SECCOMP_SET_MODE_FILTER, its checks in Linux's
// order: the flags, the sock_fprog (EFAULT), its length (EINVAL), the
// caller's right (no_new_privs or CAP_SYS_ADMIN, else EACCES), the
// program (EFAULT, then EINVAL for one Linux's checker refuses); then
// kernel.AddSeccompFilter (EINVAL in strict mode, ENOMEM, TSYNC's
// conflicting thread).
func setSeccompFilter(t *kernel.Task, flags uint32, uargs uintptr) (uintptr, error) {
	if flags&^seccompFilterFlags != 0 {
		return 0, unix.EINVAL
	}
	tsync := flags&unix.SECCOMP_FILTER_FLAG_TSYNC != 0
	esrch := flags&unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH != 0
	listener := flags&unix.SECCOMP_FILTER_FLAG_NEW_LISTENER != 0
	if tsync && listener && !esrch {
		return 0, unix.EINVAL
	}
	if flags&unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV != 0 && !listener {
		return 0, unix.EINVAL
	}
	var fprog [sizeofSockFprog]byte
	if _, err := t.CopyIn(uargs, fprog[:]); err != nil {
		return 0, err
	}
	n := int(binary.LittleEndian.Uint16(fprog[0:]))
	if n == 0 || n > seccomp.MaxInsns {
		return 0, unix.EINVAL
	}
	if !t.Prctl().NoNewPrivs && !t.HasCap(unix.CAP_SYS_ADMIN) {
		return 0, unix.EACCES
	}
	code := make([]byte, n*seccomp.InsnSize)
	if _, err := t.CopyIn(uintptr(binary.LittleEndian.Uint64(fprog[8:])), code); err != nil {
		return 0, err
	}
	prog, err := seccomp.Decode(code)
	if err != nil || seccomp.Check(prog) != nil {
		return 0, unix.EINVAL
	}
	if listener {
		// The filter would be installed with a notification fd that
		// nothing in the sandbox can serve.
		return 0, unix.EINVAL
	}
	tid, err := t.AddSeccompFilter(prog, tsync, esrch)
	if err != nil {
		return 0, err
	}
	return uintptr(tid), nil
}

// prctlSetSeccomp is prctl(PR_SET_SECCOMP, mode, filter): strict mode (the
// filter argument ignored) or a filter without flags.
func prctlSetSeccomp(t *kernel.Task, mode uint64, filter uintptr) (uintptr, error) {
	switch mode {
	case unix.SECCOMP_MODE_STRICT:
		return doSeccomp(t, unix.SECCOMP_SET_MODE_STRICT, 0, 0)
	case unix.SECCOMP_MODE_FILTER:
		return doSeccomp(t, unix.SECCOMP_SET_MODE_FILTER, 0, filter)
	}
	return 0, unix.EINVAL
}
