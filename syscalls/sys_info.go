package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Uname implements Linux syscall uname(2).
func Uname(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	var u [6][65]byte
	for i, s := range []string{kernel.OSType, t.Kernel().Hostname, kernel.Release, kernel.Version, kernel.Machine, "(none)"} {
		copy(u[i][:64], s)
	}
	return 0, copyOutStruct(t, a.Ptr(0), &u)
}

// Sysinfo implements Linux syscall sysinfo(2): memory figures are the
// host's, uptime and the process count the sandbox's.
func Sysinfo(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, err
	}
	si.Uptime = int64(t.Kernel().Uptime().Seconds()) + 1
	si.Loads = [3]uint64{}
	si.Procs = uint16(t.Kernel().NumTasks())
	return 0, copyOutStruct(t, a.Ptr(0), &si)
}

// getrandom flags.
const (
	grndNonblock = 1
	grndRandom   = 2
	grndInsecure = 4
)

// Getrandom implements Linux syscall getrandom(2), from the host's pool.
func Getrandom(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := a.Uint(2)
	if flags&^(grndNonblock|grndRandom|grndInsecure) != 0 || flags&(grndRandom|grndInsecure) == grndRandom|grndInsecure {
		return 0, unix.EINVAL
	}
	n := int(min(a[1], 1<<25))
	buf := make([]byte, n)
	got, err := unix.Getrandom(buf, 0)
	if err != nil {
		return 0, err
	}
	w, err := t.CopyOut(a.Ptr(0), buf[:got])
	if w == 0 && err != nil {
		return 0, err
	}
	return uintptr(w), nil
}
