package syscalls

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// futexCmdMask leaves the command of a futex op, without its flags.
const futexCmdMask = ^(linuxabi.FUTEX_PRIVATE_FLAG | linuxabi.FUTEX_CLOCK_REALTIME)

// Futex implements Linux syscall futex(2). The priority-inheritance
// operations answer ENOSYS.
func Futex(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	addr, op, val, timeout, addr2, val3 := a.Ptr(0), int(a.Int(1)), a.Uint(2), a.Ptr(3), a.Ptr(4), a.Uint(5)
	private := op&linuxabi.FUTEX_PRIVATE_FLAG != 0
	cmd := op & futexCmdMask
	switch cmd {
	case linuxabi.FUTEX_WAIT, linuxabi.FUTEX_WAIT_BITSET:
		bitset, err := futexBitset(cmd == linuxabi.FUTEX_WAIT_BITSET, val3)
		if err != nil {
			return 0, err
		}
		var deadline time.Time
		if timeout != 0 {
			ts, err := copyInTimespec(t, timeout)
			if err != nil {
				return 0, err
			}
			if cmd == linuxabi.FUTEX_WAIT {
				deadline = time.Now().Add(timespecDuration(ts))
			} else {
				deadline = absoluteDeadline(t, op&linuxabi.FUTEX_CLOCK_REALTIME != 0, ts)
			}
		}
		err = t.FutexWait(addr, val, bitset, private, deadline)
		if err == kernel.ERESTARTSYS && timeout != 0 {
			err = unix.EINTR // a timed wait is not restarted with its old timeout
		}
		return 0, err
	case linuxabi.FUTEX_WAKE, linuxabi.FUTEX_WAKE_BITSET:
		bitset, err := futexBitset(cmd == linuxabi.FUTEX_WAKE_BITSET, val3)
		if err != nil {
			return 0, err
		}
		n, err := t.FutexWake(addr, int(int32(val)), bitset, private)
		return retErr(uintptr(n), err)
	case linuxabi.FUTEX_REQUEUE, linuxabi.FUTEX_CMP_REQUEUE:
		nMove := int(int32(timeout)) // val2, passed where the timeout goes
		if int32(val) < 0 || nMove < 0 {
			return 0, unix.EINVAL
		}
		n, err := t.FutexRequeue(addr, addr2, int(val), nMove, cmd == linuxabi.FUTEX_CMP_REQUEUE, val3, private)
		return retErr(uintptr(n), err)
	case linuxabi.FUTEX_WAKE_OP:
		n, err := t.FutexWakeOp(addr, addr2, int(int32(val)), int(int32(timeout)), val3, private)
		return retErr(uintptr(n), err)
	}
	return 0, unix.ENOSYS
}

// futexBitset is the bitset of a *_BITSET operation (val3, which must not
// be empty), or the one that matches every waiter.
func futexBitset(withBitset bool, val3 uint32) (uint32, error) {
	if !withBitset {
		return linuxabi.FUTEX_BITSET_MATCH_ANY, nil
	}
	if val3 == 0 {
		return 0, unix.EINVAL
	}
	return val3, nil
}

// absoluteDeadline converts an absolute time on the guest's monotonic (or
// realtime) clock into the sentry's.
func absoluteDeadline(t *kernel.Task, realtime bool, ts unix.Timespec) time.Time {
	clock := int32(unix.CLOCK_MONOTONIC)
	if realtime {
		clock = unix.CLOCK_REALTIME
	}
	now, _ := t.Kernel().ClockGettime(clock, t)
	return time.Now().Add(timespecDuration(ts) - timespecDuration(now))
}
