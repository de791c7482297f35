package seccomp

import "golang.org/x/sys/unix"

// Actions a filter returns, in the top 16 bits of its return value; the
// low 16 are the action's data (SECCOMP_RET_DATA): ERRNO's errno, TRAP's
// si_errno, TRACE's message.
const (
	ActKillProcess = unix.SECCOMP_RET_KILL_PROCESS
	ActKillThread  = unix.SECCOMP_RET_KILL_THREAD
	ActTrap        = unix.SECCOMP_RET_TRAP
	ActErrno       = unix.SECCOMP_RET_ERRNO
	ActUserNotif   = unix.SECCOMP_RET_USER_NOTIF
	ActTrace       = unix.SECCOMP_RET_TRACE
	ActLog         = unix.SECCOMP_RET_LOG
	ActAllow       = unix.SECCOMP_RET_ALLOW

	actionMask = unix.SECCOMP_RET_ACTION_FULL
	dataMask   = unix.SECCOMP_RET_DATA
)

// Action is the action of return value ret; RetData its data.
func Action(ret uint32) uint32  { return ret & actionMask }
func RetData(ret uint32) uint16 { return uint16(ret & dataMask) }

// Errno is the ERRNO return value for errno e.
func Errno(e unix.Errno) uint32 { return ActErrno | uint32(e)&dataMask }

// Precedes reports whether return value a wins over b when several filters
// answer one call: Linux compares the actions as signed numbers, the lower
// first, so KILL_PROCESS (negative) beats KILL_THREAD (0), which beats TRAP,
// ERRNO, USER_NOTIF, TRACE, LOG and ALLOW in that order; of two equal
// actions the one seen first (the newer filter) stays.
func Precedes(a, b uint32) bool { return int32(a&actionMask) < int32(b&actionMask) }

// Known reports whether Linux defines the action of ret. A filter that
// returns another acts as KILL_PROCESS does (seccomp's default case), with
// its own place in the precedence.
func Known(ret uint32) bool {
	switch Action(ret) {
	case ActKillProcess, ActKillThread, ActTrap, ActErrno, ActUserNotif, ActTrace, ActLog, ActAllow:
		return true
	}
	return false
}
