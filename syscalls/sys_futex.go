package syscalls

import (
	"time"
	"unsafe"

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
		n, err := t.FutexRequeue(addr, addr2, int(val), nMove, cmd == linuxabi.FUTEX_CMP_REQUEUE, val3, private, private)
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
	return clockDeadline(t, clock, ts)
}

// clockDeadline converts an absolute time on the guest's clock (one that
// advances with wall time: realtime, monotonic, boot time, TAI) into the
// sentry's.
func clockDeadline(t *kernel.Task, clock int32, ts unix.Timespec) time.Time {
	now, _ := t.Kernel().ClockGettime(clock, t)
	return time.Now().Add(timespecDuration(ts) - timespecDuration(now))
}

// futex2 flags (Linux's <linux/futex.h>).
const (
	futex2SizeMask = 0x03
	futex2SizeU32  = 0x02
	futex2NUMA     = 0x04
	futex2MPOL     = 0x08
	futex2Private  = linuxabi.FUTEX_PRIVATE_FLAG
	futex2Valid    = futex2SizeMask | futex2NUMA | futex2MPOL | futex2Private
	futexNoNode    = 0xffffffff // FUTEX_NO_NODE: a NUMA futex's node word, not yet chosen
	futexWaitvMax  = 128
)

// futex2Flags checks the flags of a futex2 call: a 32-bit futex (the only
// size Linux implements) and no unknown flag. It reports whether the
// futex is private.
func futex2Flags(flags uint32) (private bool, err error) {
	if flags&^futex2Valid != 0 || flags&futex2SizeMask != futex2SizeU32 {
		return false, unix.EINVAL
	}
	return flags&futex2Private != 0, nil
}

// fitsU32 is Linux's futex_validate_input for a 32-bit futex: a value or
// mask wider than the futex is EINVAL.
func fitsU32(v uint64) bool { return v>>32 == 0 }

// futex2Node checks the node word that follows a FUTEX2_NUMA futex: the
// pair is 8-byte aligned, and the node is the sandbox's one node (0), or
// FUTEX_NO_NODE, which Linux replaces with the caller's node.
func futex2Node(t *kernel.Task, addr uintptr, flags uint32) error {
	if flags&futex2NUMA == 0 {
		return nil
	}
	if addr%8 != 0 {
		return unix.EINVAL
	}
	node, err := t.MM().LoadU32(addr + 4)
	switch {
	case err != nil:
		return err
	case node == futexNoNode:
		_, err = t.MM().UpdateU32(addr+4, func(v uint32) (uint32, bool) { return 0, v == futexNoNode })
		return err
	case node != 0:
		return unix.EINVAL
	}
	return nil
}

// futex2Deadline reads a futex2 call's absolute timeout on clock (only
// CLOCK_MONOTONIC and CLOCK_REALTIME), the zero time for none.
func futex2Deadline(t *kernel.Task, addr uintptr, clock int32) (time.Time, error) {
	if addr == 0 {
		return time.Time{}, nil
	}
	if clock != unix.CLOCK_MONOTONIC && clock != unix.CLOCK_REALTIME {
		return time.Time{}, unix.EINVAL
	}
	ts, err := copyInTimespec(t, addr)
	if err != nil {
		return time.Time{}, err
	}
	return absoluteDeadline(t, clock == unix.CLOCK_REALTIME, ts), nil
}

// FutexWake2 implements Linux syscall futex_wake(2): a FUTEX_WAKE_BITSET
// whose count is strict (0 wakes no one).
func FutexWake2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	addr, mask, n, flags := a.Ptr(0), a[1], a.Int(2), a.Uint(3)
	private, err := futex2Flags(flags)
	if err != nil {
		return 0, err
	}
	if !fitsU32(mask) || mask == 0 {
		return 0, unix.EINVAL
	}
	if err := futex2Node(t, addr, flags); err != nil {
		return 0, err
	}
	if n == 0 {
		_, err := t.MM().FutexKey(addr, private) // the address is checked all the same
		return 0, err
	}
	woken, err := t.FutexWake(addr, int(n), uint32(mask), private)
	return retErr(uintptr(woken), err)
}

// FutexWait2 implements Linux syscall futex_wait(2): a FUTEX_WAIT_BITSET
// with an absolute timeout on the clock named.
func FutexWait2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	addr, val, mask, flags, timeout, clock := a.Ptr(0), a[1], a[2], a.Uint(3), a.Ptr(4), a.Int(5)
	private, err := futex2Flags(flags)
	if err != nil {
		return 0, err
	}
	if !fitsU32(val) || !fitsU32(mask) || mask == 0 {
		return 0, unix.EINVAL
	}
	deadline, err := futex2Deadline(t, timeout, clock)
	if err != nil {
		return 0, err
	}
	if err := futex2Node(t, addr, flags); err != nil {
		return 0, err
	}
	// A signal restarts the call: its timeout is absolute.
	return 0, t.FutexWait(addr, uint32(val), uint32(mask), private, deadline)
}

// futexWaitv is struct futex_waitv.
type futexWaitv struct {
	Val      uint64
	Uaddr    uint64
	Flags    uint32
	Reserved uint32
}

// copyInWaitv reads n futex_waitv entries, checking each as Linux's
// futex_parse_waitv does, in order (NUMA futexes are not for lists). It
// returns them with the flags of each.
func copyInWaitv(t *kernel.Task, addr uintptr, n int) ([]kernel.FutexWaitEntry, []uint32, error) {
	es := make([]kernel.FutexWaitEntry, n)
	flags := make([]uint32, n)
	for i := range es {
		var v futexWaitv
		if err := copyInStruct(t, addr+uintptr(i)*unsafe.Sizeof(v), &v); err != nil {
			return nil, nil, err
		}
		private, err := futex2Flags(v.Flags)
		if err != nil || v.Reserved != 0 || v.Flags&futex2NUMA != 0 || !fitsU32(v.Val) {
			return nil, nil, unix.EINVAL
		}
		es[i] = kernel.FutexWaitEntry{Addr: uintptr(v.Uaddr), Val: uint32(v.Val), Private: private}
		flags[i] = v.Flags
	}
	return es, flags, nil
}

// FutexWaitv implements Linux syscall futex_waitv(2): a wait on up to 128
// futexes at once, returning the index of the one woken.
func FutexWaitv(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	addr, n, flags, timeout, clock := a.Ptr(0), a.Uint(1), a.Uint(2), a.Ptr(3), a.Int(4)
	if flags != 0 || n == 0 || n > futexWaitvMax || addr == 0 {
		return 0, unix.EINVAL
	}
	deadline, err := futex2Deadline(t, timeout, clock)
	if err != nil {
		return 0, err
	}
	es, _, err := copyInWaitv(t, addr, int(n))
	if err != nil {
		return 0, err
	}
	i, err := t.FutexWaitv(es, deadline)
	return retErr(uintptr(i), err)
}

// FutexRequeue2 implements Linux syscall futex_requeue(2): a
// FUTEX_CMP_REQUEUE from the first futex of two (compared with its value)
// to the second, both of one kind (as futex(2)'s are, for now).
func FutexRequeue2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	addr, flags, nWake, nMove := a.Ptr(0), a.Uint(1), a.Int(2), a.Int(3)
	if flags != 0 {
		return 0, unix.EINVAL
	}
	es, fl, err := copyInWaitv(t, addr, 2)
	if err != nil {
		return 0, err
	}
	if fl[0] != fl[1] || nWake < 0 || nMove < 0 {
		return 0, unix.EINVAL
	}
	n, err := t.FutexRequeue(es[0].Addr, es[1].Addr, int(nWake), int(nMove), true, es[0].Val, es[0].Private, es[1].Private)
	return retErr(uintptr(n), err)
}
