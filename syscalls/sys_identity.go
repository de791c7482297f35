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
	return credField(t, func(c *kernel.Credentials) uint32 { return c.UIDOf(c.UID) })
}

// Geteuid implements Linux syscall geteuid(2).
func Geteuid(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	return credField(t, func(c *kernel.Credentials) uint32 { return c.UIDOf(c.EUID) })
}

// Getgid implements Linux syscall getgid(2).
func Getgid(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	return credField(t, func(c *kernel.Credentials) uint32 { return c.GIDOf(c.GID) })
}

// Getegid implements Linux syscall getegid(2).
func Getegid(t *kernel.Task, _ *arch.SyscallArgs) (uintptr, error) {
	return credField(t, func(c *kernel.Credentials) uint32 { return c.GIDOf(c.EGID) })
}

// Getresuid implements Linux syscall getresuid(2).
func Getresuid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	c := t.Creds()
	c.Lock()
	ids := [3]uint32{c.UIDOf(c.UID), c.UIDOf(c.EUID), c.UIDOf(c.SUID)}
	c.Unlock()
	return 0, copyOutIDs(t, a, ids)
}

// Getresgid implements Linux syscall getresgid(2).
func Getresgid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	c := t.Creds()
	c.Lock()
	ids := [3]uint32{c.GIDOf(c.GID), c.GIDOf(c.EGID), c.GIDOf(c.SGID)}
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
	groups := make([]uint32, len(c.Groups))
	for i, g := range c.Groups {
		groups[i] = c.GIDOf(g)
	}
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

// uidArgs and gidArgs are the kernel ids of a set*id call's arguments in
// the caller's user namespace (-1 kept): EINVAL for one it does not map.
func uidArgs(t *kernel.Task, a *arch.SyscallArgs, n int) ([3]uint32, error) {
	return idArgs(a, n, t.Creds().KernelUIDArg)
}

func gidArgs(t *kernel.Task, a *arch.SyscallArgs, n int) ([3]uint32, error) {
	return idArgs(a, n, t.Creds().KernelGIDArg)
}

func idArgs(a *arch.SyscallArgs, n int, conv func(uint32) (uint32, error)) ([3]uint32, error) {
	var ids [3]uint32
	for i := 0; i < n; i++ {
		id, err := conv(a.Uint(i))
		if err != nil {
			return ids, err
		}
		ids[i] = id
	}
	return ids, nil
}

// Setuid implements Linux syscall setuid(2).
func Setuid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a.Uint(0) == ^uint32(0) {
		return 0, unix.EINVAL
	}
	ids, err := uidArgs(t, a, 1)
	if err != nil {
		return 0, err
	}
	return 0, t.SetUID(ids[0])
}

// Setgid implements Linux syscall setgid(2).
func Setgid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a.Uint(0) == ^uint32(0) {
		return 0, unix.EINVAL
	}
	ids, err := gidArgs(t, a, 1)
	if err != nil {
		return 0, err
	}
	return 0, t.Creds().SetGID(ids[0])
}

// Setreuid implements Linux syscall setreuid(2).
func Setreuid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	ids, err := uidArgs(t, a, 2)
	if err != nil {
		return 0, err
	}
	return 0, t.SetREUID(ids[0], ids[1])
}

// Setregid implements Linux syscall setregid(2).
func Setregid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	ids, err := gidArgs(t, a, 2)
	if err != nil {
		return 0, err
	}
	return 0, t.Creds().SetREGID(ids[0], ids[1])
}

// Setresuid implements Linux syscall setresuid(2).
func Setresuid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	ids, err := uidArgs(t, a, 3)
	if err != nil {
		return 0, err
	}
	return 0, t.SetUIDs(ids[0], ids[1], ids[2])
}

// Setresgid implements Linux syscall setresgid(2).
func Setresgid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	ids, err := gidArgs(t, a, 3)
	if err != nil {
		return 0, err
	}
	return 0, t.Creds().SetGIDs(ids[0], ids[1], ids[2])
}

// Setfsuid implements Linux syscall setfsuid(2): it answers the old fsuid
// as the caller's namespace shows it; an id it does not map changes
// nothing.
func Setfsuid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	c := t.Creds()
	id, err := c.KernelUIDArg(a.Uint(0))
	if err != nil || id == ^uint32(0) {
		c.Lock()
		defer c.Unlock()
		return uintptr(c.UIDOf(c.FSUID)), nil
	}
	return uintptr(c.UIDOf(c.SetFSUID(id))), nil
}

// Setfsgid implements Linux syscall setfsgid(2), as Setfsuid.
func Setfsgid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	c := t.Creds()
	id, err := c.KernelGIDArg(a.Uint(0))
	if err != nil || id == ^uint32(0) {
		c.Lock()
		defer c.Unlock()
		return uintptr(c.GIDOf(c.FSGID)), nil
	}
	return uintptr(c.GIDOf(c.SetFSGID(id))), nil
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
		k, ok := t.Creds().UserNamespace().KernelGID(g)
		if !ok {
			return 0, unix.EINVAL
		}
		groups[i] = k
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
