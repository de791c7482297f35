package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Getpid implements Linux syscall getpid(2).
func Getpid(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) { return uintptr(t.PID()), nil }

// Getppid implements Linux syscall getppid(2).
func Getppid(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) { return uintptr(t.PPID()), nil }

// Gettid implements Linux syscall gettid(2).
func Gettid(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) { return uintptr(t.TID()), nil }

// Getpgrp implements Linux syscall getpgrp(2).
func Getpgrp(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) { return uintptr(t.PGID()), nil }

// Getpgid implements Linux syscall getpgid(2).
func Getpgid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	tg, err := processArg(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	return uintptr(tg.PGIDIn(t.PIDNamespace())), nil
}

// Getsid implements Linux syscall getsid(2).
func Getsid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	tg, err := processArg(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	return uintptr(tg.SIDIn(t.PIDNamespace())), nil
}

// processArg is the process a pid argument names: 0 is the caller's.
func processArg(t *kernel.Task, pid int32) (*kernel.ThreadGroup, error) {
	if pid == 0 {
		return t.ThreadGroup(), nil
	}
	tg := t.LookupProcess(pid)
	if tg == nil {
		return nil, unix.ESRCH
	}
	return tg, nil
}

// Setpgid implements Linux syscall setpgid(2).
func Setpgid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.Setpgid(a.Int(0), a.Int(1))
}

// Setsid implements Linux syscall setsid(2).
func Setsid(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	sid, err := t.Setsid()
	return retErr(uintptr(sid), err)
}

// credField reads one credential under the lock.
func credField(t *kernel.Task, get func(c *kernel.Credentials) uint32) (uintptr, error) {
	c := t.Creds()
	c.Lock()
	defer c.Unlock()
	return uintptr(get(c)), nil
}

// Getuid implements Linux syscall getuid(2).
func Getuid(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	return credField(t, func(c *kernel.Credentials) uint32 { return c.UID })
}

// Geteuid implements Linux syscall geteuid(2).
func Geteuid(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	return credField(t, func(c *kernel.Credentials) uint32 { return c.EUID })
}

// Getgid implements Linux syscall getgid(2).
func Getgid(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	return credField(t, func(c *kernel.Credentials) uint32 { return c.GID })
}

// Getegid implements Linux syscall getegid(2).
func Getegid(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	return credField(t, func(c *kernel.Credentials) uint32 { return c.EGID })
}

// Getresuid implements Linux syscall getresuid(2).
func Getresuid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	c := t.Creds()
	c.Lock()
	ids := [3]uint32{c.UID, c.EUID, c.SUID}
	c.Unlock()
	return 0, copyOutIDs(t, a, ids)
}

// Getresgid implements Linux syscall getresgid(2).
func Getresgid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	c := t.Creds()
	c.Lock()
	ids := [3]uint32{c.GID, c.EGID, c.SGID}
	c.Unlock()
	return 0, copyOutIDs(t, a, ids)
}

func copyOutIDs(t *kernel.Task, a *arch.SyscallArgs, ids [3]uint32) error {
	for i, id := range ids {
		if err := copyOutU32(t, a.Ptr(i), id); err != nil {
			return err
		}
	}
	return nil
}

// Getgroups implements Linux syscall getgroups(2).
func Getgroups(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	size := a.Int(0)
	c := t.Creds()
	c.Lock()
	groups := append([]uint32(nil), c.Groups...)
	c.Unlock()
	if size < 0 {
		return 0, unix.EINVAL
	}
	if size == 0 {
		return uintptr(len(groups)), nil
	}
	if int(size) < len(groups) {
		return 0, unix.EINVAL
	}
	for i, g := range groups {
		if err := copyOutU32(t, a.Ptr(1)+uintptr(4*i), g); err != nil {
			return 0, err
		}
	}
	return uintptr(len(groups)), nil
}

// Setuid implements Linux syscall setuid(2).
func Setuid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.SetUID(a.Uint(0))
}

// Setgid implements Linux syscall setgid(2).
func Setgid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.Creds().SetGID(a.Uint(0))
}

// Setreuid implements Linux syscall setreuid(2).
func Setreuid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.SetREUID(a.Uint(0), a.Uint(1))
}

// Setregid implements Linux syscall setregid(2).
func Setregid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.Creds().SetREGID(a.Uint(0), a.Uint(1))
}

// Setresuid implements Linux syscall setresuid(2).
func Setresuid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.SetUIDs(a.Uint(0), a.Uint(1), a.Uint(2))
}

// Setresgid implements Linux syscall setresgid(2).
func Setresgid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.Creds().SetGIDs(a.Uint(0), a.Uint(1), a.Uint(2))
}

// Setfsuid implements Linux syscall setfsuid(2).
func Setfsuid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return uintptr(t.Creds().SetFSUID(a.Uint(0))), nil
}

// Setfsgid implements Linux syscall setfsgid(2).
func Setfsgid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return uintptr(t.Creds().SetFSGID(a.Uint(0))), nil
}

// Setgroups implements Linux syscall setgroups(2).
func Setgroups(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	n := a.Int(0)
	if n < 0 || n > 65536 {
		return 0, unix.EINVAL
	}
	groups := make([]uint32, n)
	for i := range groups {
		var g uint32
		if err := copyInStruct(t, a.Ptr(1)+uintptr(4*i), &g); err != nil {
			return 0, err
		}
		groups[i] = g
	}
	return 0, t.Creds().SetGroups(groups)
}

// capHeader is struct __user_cap_header_struct; capData one of
// __user_cap_data_struct (versions 2 and 3 have two).
type capHeader struct {
	Version uint32
	Pid     int32
}

type capData struct{ Effective, Permitted, Inheritable uint32 }

// capVersion checks the header and says how many data structs follow; a
// wrong version is answered with the kernel's in the header and EINVAL.
func capVersion(t *kernel.Task, addr uintptr) (capHeader, int, error) {
	var h capHeader
	if err := copyInStruct(t, addr, &h); err != nil {
		return h, 0, err
	}
	switch h.Version {
	case unix.LINUX_CAPABILITY_VERSION_1:
		return h, 1, nil
	case unix.LINUX_CAPABILITY_VERSION_2, unix.LINUX_CAPABILITY_VERSION_3:
		return h, 2, nil
	}
	h.Version = unix.LINUX_CAPABILITY_VERSION_3
	if err := copyOutStruct(t, addr, &h); err != nil {
		return h, 0, err
	}
	return h, 0, unix.EINVAL
}

// Capget implements Linux syscall capget(2). With no data, it only says
// (in the header) which version to use.
func Capget(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	h, n, err := capVersion(t, a.Ptr(0))
	if err != nil {
		if err == unix.EINVAL && a[1] == 0 {
			return 0, nil
		}
		return 0, err
	}
	if h.Pid < 0 {
		return 0, unix.EINVAL
	}
	target := t
	if h.Pid != 0 && h.Pid != t.TID() {
		if target = t.LookupTask(h.Pid); target == nil {
			return 0, unix.ESRCH
		}
	}
	if a[1] == 0 {
		return 0, nil
	}
	c := target.Creds()
	c.Lock()
	e, p, i := c.CapEffective, c.CapPermitted, c.CapInheritable
	c.Unlock()
	for k := 0; k < n; k++ {
		d := capData{uint32(e >> (32 * k)), uint32(p >> (32 * k)), uint32(i >> (32 * k))}
		if err := copyOutStruct(t, a.Ptr(1)+uintptr(12*k), &d); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// Capset implements Linux syscall capset(2) for the caller.
func Capset(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	h, n, err := capVersion(t, a.Ptr(0))
	if err != nil {
		return 0, err
	}
	if h.Pid != 0 && h.Pid != t.TID() {
		return 0, unix.EPERM
	}
	var e, p, i uint64
	for k := 0; k < n; k++ {
		var d capData
		if err := copyInStruct(t, a.Ptr(1)+uintptr(12*k), &d); err != nil {
			return 0, err
		}
		e |= uint64(d.Effective) << (32 * k)
		p |= uint64(d.Permitted) << (32 * k)
		i |= uint64(d.Inheritable) << (32 * k)
	}
	return 0, t.Creds().SetCaps(e, p, i)
}
