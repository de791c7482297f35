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

// Getpgid implements Linux syscall getpgid(2) for the caller's own process.
func Getpgid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if pid := a.Int(0); pid != 0 && pid != t.PID() {
		return 0, unix.ESRCH
	}
	return uintptr(t.PGID()), nil
}

// Getsid implements Linux syscall getsid(2) for the caller's own process.
func Getsid(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if pid := a.Int(0); pid != 0 && pid != t.PID() {
		return 0, unix.ESRCH
	}
	return uintptr(t.SID()), nil
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
