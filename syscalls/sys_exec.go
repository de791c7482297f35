package syscalls

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/loader"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Execve implements Linux syscall execve(2).
func Execve(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, execveAt(t, unix.AT_FDCWD, a.Ptr(0), a.Ptr(1), a.Ptr(2), 0)
}

// Execveat implements Linux syscall execveat(2).
func Execveat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, execveAt(t, a.Int(0), a.Ptr(1), a.Ptr(2), a.Ptr(3), int(a.Int(4)))
}

func execveAt(t *kernel.Task, dirfd int32, pathAddr, argvAddr, envpAddr uintptr, flags int) error {
	if flags&^(unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW) != 0 {
		return unix.EINVAL
	}
	name, err := copyInPath(t, pathAddr)
	if err != nil {
		return err
	}
	target := kernel.ExecTarget{Name: name, Filename: name, NoFollow: flags&unix.AT_SYMLINK_NOFOLLOW != 0}
	var start vfs.Path
	switch {
	case name == "" && flags&unix.AT_EMPTY_PATH != 0:
		f, err := t.FDs().Get(dirfd)
		if err != nil {
			return err
		}
		p := f.Path()
		f.DecRef()
		if p.Dentry == nil {
			return unix.EACCES
		}
		target.Path = &p
		target.Filename = fmt.Sprintf("/dev/fd/%d", dirfd)
	case name == "":
		return unix.ENOENT
	case name[0] != '/':
		if start, err = dirPath(t, dirfd); err != nil {
			return err
		}
		if dirfd != unix.AT_FDCWD {
			target.Filename = fmt.Sprintf("/dev/fd/%d/%s", dirfd, name)
		}
	}
	if target.Filename != name {
		// Named through a file descriptor: if it closes on exec, a script's
		// interpreter will not find it.
		cloexec, err := t.FDs().CloseOnExec(dirfd)
		if err != nil {
			return err
		}
		target.PathInaccessible = cloexec
	}
	_, cwd := t.FS().Get()
	target.Res, target.Cwd = t.Resolver(start), t.Resolver(cwd)
	total := 0
	argv, err := copyInStrings(t, argvAddr, &total)
	if err != nil {
		return err
	}
	envv, err := copyInStrings(t, envpAddr, &total)
	if err != nil {
		return err
	}
	return t.Execve(target, argv, envv)
}

// maxArgStrings is moat's bound on how many argument or environment
// strings execve reads; Linux's MAX_ARG_STRINGS (0x7FFFFFFF) is never what
// stops a real execve, the size limits are.
const maxArgStrings = 1 << 20

// copyInStrings reads a NULL-terminated array of strings (argv, envp),
// adding their sizes to *total; it gives E2BIG past Linux's limits. A NULL
// array is empty, as Linux allows.
func copyInStrings(t *kernel.Task, addr uintptr, total *int) ([]string, error) {
	var out []string
	for addr != 0 {
		var p [8]byte
		if _, err := t.CopyIn(addr, p[:]); err != nil {
			return nil, err
		}
		sp := uintptr(binary.LittleEndian.Uint64(p[:]))
		if sp == 0 {
			break
		}
		if len(out) == maxArgStrings {
			return nil, unix.E2BIG
		}
		s, err := t.CopyInString(sp, loader.MaxArgStrlen)
		if err == unix.ENAMETOOLONG {
			return nil, unix.E2BIG
		}
		if err != nil {
			return nil, err
		}
		if *total += len(s) + 1; *total > loader.MaxArgTotal {
			return nil, unix.E2BIG
		}
		out = append(out, s)
		addr += 8
	}
	return out, nil
}
