package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/nsfs"
	"github.com/moat-sandbox/moat/sentry/fs/pidfd"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/ipc"
	"github.com/moat-sandbox/moat/sentry/vfs"
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
		case *kernel.UserNamespace:
			if nstype != 0 && nstype != unix.CLONE_NEWUSER {
				return 0, unix.EINVAL
			}
			return 0, t.SetUserNamespace(ns)
		case nsfs.Single:
			// The caller's already: joining it changes nothing, after
			// the checks.
			want := map[string]uint64{"net": unix.CLONE_NEWNET, "time": unix.CLONE_NEWTIME}[ns.Kind]
			if nstype != 0 && nstype != want {
				return 0, unix.EINVAL
			}
			// They are the first user namespace's.
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
// without CAP_SYS_ADMIN in the user namespace owning the caller's UTS
// namespace, checked first as Linux does, EINVAL for a length
// past 64.
func utsName(t *kernel.Task, a *arch.SyscallArgs) (string, error) {
	if !t.CapableIn(t.UTSNamespace().Owner(), unix.CAP_SYS_ADMIN) {
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

// nsIoctl answers the nsfs requests on a namespace file (ioctl_ns(2)):
// NS_GET_USERNS a descriptor of the user namespace owning it (of a user
// namespace, its parent), NS_GET_PARENT that of the pid or user namespace
// it is nested in, each EPERM if it lies outside what the caller's own
// namespace sees; NS_GET_NSTYPE its CLONE_NEW* kind; NS_GET_OWNER_UID a
// user namespace's creator's uid in the caller's namespace.
func nsIoctl(t *kernel.Task, f *nsfs.File, cmd uint32, arg uintptr) (uintptr, error) {
	kind, ns := f.Namespace()
	switch cmd {
	case unix.NS_GET_NSTYPE:
		return uintptr(map[string]uint64{"cgroup": unix.CLONE_NEWCGROUP, "ipc": unix.CLONE_NEWIPC,
			"mnt": unix.CLONE_NEWNS, "net": unix.CLONE_NEWNET, "pid": unix.CLONE_NEWPID,
			"time": unix.CLONE_NEWTIME, "user": unix.CLONE_NEWUSER, "uts": unix.CLONE_NEWUTS}[kind]), nil
	case unix.NS_GET_OWNER_UID:
		u, ok := ns.(*kernel.UserNamespace)
		if !ok {
			return 0, unix.EINVAL
		}
		return 0, copyOutU32(t, arg, t.Creds().UIDOf(u.OwnerUID()))
	case unix.NS_GET_USERNS, unix.NS_GET_PARENT:
	default:
		return 0, unix.ENOTTY
	}
	if pidns, ok := ns.(*kernel.PIDNamespace); ok && cmd == unix.NS_GET_PARENT {
		p := pidns.Parent()
		if p == nil || !t.PIDNamespace().IsAncestorOf(p) {
			return 0, unix.EPERM
		}
		return installNSFile(t, "pid", p, p.ID())
	}
	if _, ok := ns.(*kernel.UserNamespace); !ok && cmd == unix.NS_GET_PARENT {
		return 0, unix.EINVAL
	}
	var owner *kernel.UserNamespace
	switch ns := ns.(type) {
	case *kernel.UserNamespace:
		owner = ns.Parent()
	case *kernel.PIDNamespace:
		owner = ns.Owner()
	case *kernel.UTSNamespace:
		owner = ns.Owner()
	case *ipc.Namespace:
		owner = kernel.IPCOwner(ns)
	case *kernel.CgroupNamespace:
		owner = ns.Owner()
	default: // the sandbox's one network and time namespaces
		owner = kernel.RootUserNamespace()
	}
	if owner == nil || !t.Creds().UserNamespace().IsAncestorOf(owner) {
		return 0, unix.EPERM
	}
	return installNSFile(t, "user", owner, owner.ID())
}

// installNSFile gives t a close-on-exec descriptor of namespace ns.
func installNSFile(t *kernel.Task, kind string, ns any, ino uint64) (uintptr, error) {
	in := &nsfs.Inode{Kind: kind, Ino: ino, NS: ns}
	p, err := vfs.AnonPath(in)
	if err != nil {
		return 0, err
	}
	impl, err := in.Open(unix.O_RDONLY)
	if err != nil {
		return 0, err
	}
	f := vfs.NewFile(impl, p, unix.O_RDONLY)
	defer f.DecRef()
	fd, err := t.FDs().Install(f, 0, true, nofile(t))
	return uintptr(fd), err
}
