package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/nsfs"
	"github.com/moat-sandbox/moat/sentry/fs/pidfd"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/ipc"
)

// Namespaces inside the sandbox: unshare, setns, and the UTS names
// (sethostname, setdomainname); the kernel's task_unshare.go says which
// kinds there are.

// newUTSLen is the longest host or domain name (__NEW_UTS_LEN).
const newUTSLen = 64

// Unshare implements Linux syscall unshare(2).
func Unshare(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, t.Unshare(a[0] & 0xffffffff)
}

// Setns implements Linux syscall setns(2): fd is a namespace file
// (/proc/<pid>/ns/<kind>; nstype 0 or its kind, EINVAL otherwise) or a
// pidfd, whose process's namespaces of the kinds in nstype are joined.
func Setns(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	fd, nstype := a.Int(0), uint64(uint32(a[1]))
	f, err := t.FDs().Get(fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	switch impl := f.Impl().(type) {
	case *nsfs.File:
		kind, ns := impl.Namespace()
		switch ns := ns.(type) {
		case *kernel.UTSNamespace:
			if nstype != 0 && nstype != unix.CLONE_NEWUTS {
				return 0, unix.EINVAL
			}
			return 0, t.SetNS(ns, nil, nil)
		case *ipc.Namespace:
			if nstype != 0 && nstype != unix.CLONE_NEWIPC {
				return 0, unix.EINVAL
			}
			return 0, t.SetNS(nil, ns, nil)
		case *kernel.CgroupNamespace:
			if nstype != 0 && nstype != unix.CLONE_NEWCGROUP {
				return 0, unix.EINVAL
			}
			return 0, t.SetNS(nil, nil, ns)
		case *kernel.PIDNamespace:
			if nstype != 0 && nstype != unix.CLONE_NEWPID {
				return 0, unix.EINVAL
			}
			return 0, t.SetPIDNamespace(ns)
		case nsfs.Single:
			// The caller's already: joining it changes nothing, after
			// the checks (its own user namespace cannot be joined).
			want := map[string]uint64{"net": unix.CLONE_NEWNET, "time": unix.CLONE_NEWTIME,
				"user": unix.CLONE_NEWUSER}[ns.Kind]
			if (nstype != 0 && nstype != want) || ns.Kind == "user" {
				return 0, unix.EINVAL
			}
			if !t.Capable(unix.CAP_SYS_ADMIN) {
				return 0, unix.EPERM
			}
			return 0, nil
		}
		t.Log("setns: a namespace file of kind %s", kind)
		return 0, unix.EINVAL
	case *pidfd.File:
		const kinds = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWPID |
			unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP | unix.CLONE_NEWTIME | unix.CLONE_NEWUSER
		// The caller's own user namespace cannot be joined (EINVAL);
		// the other kinds but UTS, IPC, pid and cgroup the sandbox has
		// one of, the caller's already. The pid namespace is the process's own,
		// which must be the caller's or nested in it.
		if nstype == 0 || nstype&^kinds != 0 || nstype&unix.CLONE_NEWUSER != 0 {
			return 0, unix.EINVAL
		}
		leader := impl.Process().Leader()
		if leader == nil {
			return 0, unix.ESRCH
		}
		uts, ipcns := leader.Namespaces()
		pidns := leader.PIDNamespace()
		if nstype&unix.CLONE_NEWPID != 0 && !t.PIDNamespace().IsAncestorOf(pidns) {
			return 0, unix.EINVAL
		}
		if nstype&unix.CLONE_NEWUTS == 0 {
			uts = nil
		}
		if nstype&unix.CLONE_NEWIPC == 0 {
			ipcns = nil
		}
		var cg *kernel.CgroupNamespace
		if nstype&unix.CLONE_NEWCGROUP != 0 {
			cg = leader.CgroupNamespace()
		}
		if err := t.SetNS(uts, ipcns, cg); err != nil || nstype&unix.CLONE_NEWPID == 0 {
			return 0, err
		}
		return 0, t.SetPIDNamespace(pidns)
	}
	return 0, unix.EINVAL
}

// utsName copies in a name for sethostname or setdomainname: EPERM
// without CAP_SYS_ADMIN, checked first as Linux does, EINVAL for a length
// past 64.
func utsName(t *kernel.Task, a *arch.SyscallArgs) (string, error) {
	if !t.Capable(unix.CAP_SYS_ADMIN) {
		return "", unix.EPERM
	}
	n := int32(a[1])
	if n < 0 || n > newUTSLen {
		return "", unix.EINVAL
	}
	b := make([]byte, n)
	if _, err := t.CopyIn(a.Ptr(0), b); err != nil {
		return "", err
	}
	return string(b), nil
}

// Sethostname implements Linux syscall sethostname(2), in the caller's
// UTS namespace.
func Sethostname(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	name, err := utsName(t, a)
	if err != nil {
		return 0, err
	}
	t.UTSNamespace().SetHostname(name)
	return 0, nil
}

// Setdomainname implements Linux syscall setdomainname(2), in the
// caller's UTS namespace.
func Setdomainname(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	name, err := utsName(t, a)
	if err != nil {
		return 0, err
	}
	t.UTSNamespace().SetDomainname(name)
	return 0, nil
}
