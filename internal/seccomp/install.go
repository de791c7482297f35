package seccomp

import (
	"runtime"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install loads prog into the host kernel as a filter of every thread of
// this process (SECCOMP_FILTER_FLAG_TSYNC, which also gives them all the
// caller's no_new_privs), with flags added. The caller must have set
// no_new_privs or hold CAP_SYS_ADMIN. It cannot be undone.
func Install(prog []Insn, flags uintptr) error {
	if err := Check(prog); err != nil {
		return err
	}
	return installFlags(prog, flags)
}

// installRaw installs prog as it is (nil: a program of no instructions).
func installRaw(prog []Insn) error { return installFlags(prog, 0) }

func installFlags(prog []Insn, flags uintptr) error {
	b := Encode(prog)
	var fprog unix.SockFprog
	if len(b) > 0 {
		fprog = unix.SockFprog{Len: uint16(len(prog)), Filter: (*unix.SockFilter)(unsafe.Pointer(&b[0]))}
	}
	// TSYNC names the first thread it could not move in its return value.
	r, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC|flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(b)
	switch {
	case errno != 0:
		return errno
	case r != 0:
		return &TsyncError{TID: int(r)}
	}
	return nil
}

// TsyncError is a thread Install could not put under the filter: one that
// has a filter of its own the caller's does not descend from.
type TsyncError struct{ TID int }

func (e *TsyncError) Error() string {
	return "seccomp: thread " + strconv.Itoa(e.TID) + " has a filter of its own"
}
