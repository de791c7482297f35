package confine

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// securebits (include/uapi/linux/securebits.h), which x/sys/unix lacks.
const (
	secbitNoroot                  = 1 << 0
	secbitNorootLocked            = 1 << 1
	secbitNoSetuidFixup           = 1 << 2
	secbitNoSetuidFixupLocked     = 1 << 3
	secbitKeepCapsLocked          = 1 << 5
	secbitNoCapAmbientRaise       = 1 << 6
	secbitNoCapAmbientRaiseLocked = 1 << 7

	// lockedSecurebits: uid 0 gains no capabilities by exec or setuid,
	// none are dropped or kept by uid changes behind the caller's back,
	// and none can be made ambient; locked, so for good.
	lockedSecurebits = secbitNoroot | secbitNorootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoCapAmbientRaise | secbitNoCapAmbientRaiseLocked
)

// IDs are the user, group and supplementary groups a process becomes.
type IDs struct {
	UID, GID uint32
	Groups   []uint32
}

// DropPrivileges leaves every thread of the process with only the
// capabilities in keep (a mask of CAP_* bits), in the effective, permitted
// and bounding sets, none inheritable or ambient; locks the securebits so
// that no exec or uid change brings others back; with ids, makes it that
// user and group (keeping keep: the securebits say a uid change drops
// nothing); sets no_new_privs; and makes the process not dumpable, so that
// no process of its user may ptrace it or open its /proc/<pid>/mem.
// Credentials are per thread on Linux, so each change is made on every
// thread (AllThreadsSyscall, and Go's set*id, which use it): a thread left
// with a capability would pass it to the threads it starts.
func DropPrivileges(keep uint64, ids *IDs) error {
	steps := []struct {
		what string
		do   func() syscall.Errno
	}{
		{"lock the securebits", func() syscall.Errno {
			return allThreads(unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, lockedSecurebits, 0)
		}},
		{"clear the ambient set", func() syscall.Errno {
			return allThreads(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0)
		}},
		{"drop the bounding set", func() syscall.Errno {
			// What capdrop dropped already (ThroughCapdrop) is gone from
			// every thread: all were made from the thread it exec'd.
			for c := 0; c <= unix.CAP_LAST_CAP; c++ {
				if keep&(1<<c) == 0 && inBoundingSet(c) {
					if e := allThreads(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0); e != 0 {
						return e
					}
				}
			}
			return 0
		}},
		{"change user", func() syscall.Errno {
			if ids == nil {
				return 0
			}
			groups := make([]int, len(ids.Groups))
			for i, g := range ids.Groups {
				groups[i] = int(g)
			}
			for _, err := range []error{syscall.Setgroups(groups), syscall.Setresgid(int(ids.GID), int(ids.GID), int(ids.GID)),
				syscall.Setresuid(int(ids.UID), int(ids.UID), int(ids.UID))} {
				if err != nil {
					return err.(syscall.Errno)
				}
			}
			return 0
		}},
		{"set the capabilities", func() syscall.Errno {
			hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
			var data [2]unix.CapUserData
			for i := range data {
				data[i].Effective = uint32(keep >> (32 * i))
				data[i].Permitted = uint32(keep >> (32 * i))
			}
			return allThreads(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0)
		}},
		{"set no_new_privs", func() syscall.Errno {
			return allThreads(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0)
		}},
		{"make the process not dumpable", func() syscall.Errno {
			_, _, e := syscall.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_DUMPABLE, 0, 0)
			return e
		}},
	}
	for _, s := range steps {
		if e := s.do(); e != 0 {
			return fmt.Errorf("confine: %s: %w", s.what, e)
		}
	}
	return nil
}

func allThreads(trap, a1, a2, a3 uintptr) syscall.Errno {
	_, _, e := syscall.AllThreadsSyscall(trap, a1, a2, a3)
	return e
}
