package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Uname implements Linux syscall uname(2): the names are the caller's
// UTS namespace's.
func Uname(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	var u [6][65]byte
	hostname, domain := t.UTSNamespace().Names()
	for i, s := range []string{kernel.OSType, hostname, kernel.Release, kernel.Version, kernel.Machine, domain} {
		copy(u[i][:64], s)
	}
	return 0, copyOutStruct(t, a.Ptr(0), &u)
}

// Sysinfo implements Linux syscall sysinfo(2): memory figures are the
// host's, or the sandbox's under a memory limit; uptime and the process
// count the sandbox's.
func Sysinfo(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0, err
	}
	if total, free, ok := t.Kernel().MemoryView(); ok {
		// Under a memory limit, the sandbox's memory (as /proc/meminfo
		// shows it): no more than the host's RAM, no swap, nothing shared
		// or in buffers that the charge does not already hold.
		unit := uint64(max(si.Unit, 1))
		if host := si.Totalram * unit; total > host {
			free -= min(free, total-host)
			total = host
		}
		si.Totalram, si.Freeram = total/unit, free/unit
		si.Sharedram, si.Bufferram, si.Totalswap, si.Freeswap = 0, 0, 0, 0
	}
	si.Uptime = int64(t.Kernel().Uptime().Seconds()) + 1
	si.Loads = [3]uint64{}
	si.Procs = uint16(t.Kernel().NumTasks())
	return 0, copyOutStruct(t, a.Ptr(0), &si)
}

// getrandomChunk is how many bytes getrandom makes and copies at a time:
// between chunks it looks for a signal, as Linux does once a page.
const getrandomChunk = 4096

// Getrandom implements Linux syscall getrandom(2), from the host's pool.
// A long request (up to 2 GiB) ends early, with what it has copied, when a
// signal is pending or the task must exit; bytes that cannot be copied end
// it too, EFAULT if there are none.
func Getrandom(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := a.Uint(2)
	if flags&^(unix.GRND_NONBLOCK|unix.GRND_RANDOM|unix.GRND_INSECURE) != 0 || flags&(unix.GRND_RANDOM|unix.GRND_INSECURE) == unix.GRND_RANDOM|unix.GRND_INSECURE {
		return 0, unix.EINVAL
	}
	addr, n := a.Ptr(0), min(a[1], linuxabi.MAX_RW_COUNT)
	var buf [getrandomChunk]byte
	done := uint64(0)
	for done < n {
		if done > 0 && t.Interrupted() {
			break
		}
		chunk := buf[:min(n-done, getrandomChunk)]
		if _, err := unix.Getrandom(chunk, 0); err != nil {
			return 0, err
		}
		w, err := t.CopyOut(addr+uintptr(done), chunk)
		done += uint64(w)
		if err != nil {
			if done == 0 {
				return 0, err
			}
			break
		}
	}
	return uintptr(done), nil
}
