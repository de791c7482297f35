package kernel

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel/ipc"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// A task's namespaces. The sandbox has UTS, IPC, mount, pid, cgroup and
// user namespaces of its own to give: unshare(2) and clone(2) make new
// ones for a task with CAP_SYS_ADMIN in its user namespace (a new user
// namespace needs none, and its creator has that capability in it, where
// the other namespaces of the same call are made), setns(2) joins a UTS,
// IPC, pid, cgroup or user one (ns_cgroup.go says what a cgroup
// namespace is here, ns_user.go a user namespace). Each namespace records
// the user namespace it was made in, its owner: the privilege over it is
// CAP_SYS_ADMIN there. A mount namespace is a copy of the mount tree the
// task's root lies in (vfs.CopyTree), held by its file-system context,
// which moves into it; a copy for a less privileged owner has its mounts
// locked in place. A pid namespace is the one the task's next children
// are made in (ns_pid.go). The other kinds (net, time) the sandbox has
// one of each: asked for a new one, it answers as Linux built without
// that kind does (EINVAL), after the privilege check (EPERM) Linux makes
// first. A task's namespaces change only in the task itself, under its
// process's mu, which others hold to read them (/proc/<pid>/ns).

// newNamespaces are the kinds the kernel can make.
const newNamespaces = unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
	unix.CLONE_NEWCGROUP | unix.CLONE_NEWUSER

// checkNewNamespaces is the check clone and unshare make of the
// namespaces flags ask for.
func (t *Task) checkNewNamespaces(flags uint64) error {
	others := flags & cloneNamespaces &^ unix.CLONE_NEWUSER
	if others == 0 {
		return nil
	}
	if flags&unix.CLONE_NEWUSER == 0 && !t.CapableInOwn(unix.CAP_SYS_ADMIN) {
		return unix.EPERM
	}
	if others&^newNamespaces != 0 {
		return unix.EINVAL
	}
	return nil
}

// newUserNamespaceFor makes the user namespace CLONE_NEWUSER in flags
// asks for (nil without it), nested in the task's.
func (t *Task) newUserNamespaceFor(flags uint64) (*UserNamespace, error) {
	if flags&unix.CLONE_NEWUSER == 0 {
		return nil, nil
	}
	c := t.creds
	c.Lock()
	defer c.Unlock()
	return c.userns.newChild(c.EUID, c.EGID, c.hasCapLocked(unix.CAP_SETFCAP))
}

// mountOwner is the user namespace of the mount tree p lies in.
func mountOwner(p vfs.Path) *UserNamespace {
	if ns, ok := vfs.Owner(p).(*UserNamespace); ok {
		return ns
	}
	return rootUserNS
}

// MountOwner is the user namespace owning the task's mount namespace,
// which mount(2) asks for CAP_SYS_ADMIN in.
func (t *Task) MountOwner() *UserNamespace {
	root, _ := t.fs.Get()
	return mountOwner(root)
}

// UTSNamespace is the task's UTS namespace.
func (t *Task) UTSNamespace() *UTSNamespace { return t.utsns }

// RootUTSNamespace is the sandbox's first UTS namespace.
func (k *Kernel) RootUTSNamespace() *UTSNamespace { return k.utsns }

// Namespaces returns task's UTS and IPC namespaces, for another task to
// look at.
func (t *Task) Namespaces() (*UTSNamespace, *ipc.Namespace) {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.utsns, t.ipcns
}

// setNamespaces changes the task's namespaces (nil: the same).
func (t *Task) setNamespaces(uts *UTSNamespace, ipcns *ipc.Namespace, cg *CgroupNamespace) {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	if uts != nil {
		t.utsns = uts
	}
	if ipcns != nil {
		t.ipcns = ipcns
	}
	if cg != nil {
		t.cgroupns = cg
	}
}

// cloneNamespacesFor gives child its namespaces: t's, or new ones as
// flags ask (already checked), owned by the child's user namespace.
func (t *Task) cloneNamespacesFor(child *Task, flags uint64) {
	owner := child.creds.userns
	child.utsns, child.ipcns, child.cgroupns = t.utsns, t.ipcns, t.cgroupns
	if flags&unix.CLONE_NEWCGROUP != 0 {
		child.cgroupns = newCgroupNamespace(owner)
	}
	if flags&unix.CLONE_NEWUTS != 0 {
		child.utsns = t.utsns.copy(owner)
	}
	if flags&unix.CLONE_NEWIPC != 0 {
		child.ipcns = t.ipcns.New()
		child.ipcns.Owner = owner
	}
	if flags&unix.CLONE_NEWNS != 0 {
		child.fs.newMountNamespace(owner) // a copy: CLONE_FS with CLONE_NEWNS is refused
	}
}

// newMountNamespace moves f into a mount tree of its own owned by owner:
// a copy of the one its root lies in, locked if owner is not that one's.
func (f *FSContext) newMountNamespace(owner *UserNamespace) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var o any
	if owner != rootUserNS {
		o = owner
	}
	remap := vfs.CopyTree(f.root, o, owner != mountOwner(f.root))
	f.root, f.cwd = remap(f.root), remap(f.cwd)
}

// unshareFlags are those unshare(2) knows.
const unshareFlags = unix.CLONE_THREAD | unix.CLONE_FS | unix.CLONE_SIGHAND | unix.CLONE_VM | unix.CLONE_FILES |
	unix.CLONE_SYSVSEM | cloneNamespaces

// Unshare implements unshare(2): a file table, a file-system context and
// namespaces of the task's own, and its semaphore undo list dropped
// (CLONE_SYSVSEM, which CLONE_NEWIPC implies). CLONE_THREAD, CLONE_SIGHAND
// and CLONE_VM are accepted while nothing shares them, as on Linux.
func (t *Task) Unshare(flags uint64) error {
	if flags&^unshareFlags != 0 {
		return unix.EINVAL
	}
	if flags&unix.CLONE_NEWUSER != 0 {
		flags |= unix.CLONE_THREAD | unix.CLONE_FS
	}
	if flags&unix.CLONE_VM != 0 {
		flags |= unix.CLONE_SIGHAND
	}
	if flags&unix.CLONE_SIGHAND != 0 {
		flags |= unix.CLONE_THREAD
	}
	if flags&unix.CLONE_NEWNS != 0 {
		flags |= unix.CLONE_FS
	}
	if flags&(unix.CLONE_THREAD|unix.CLONE_SIGHAND|unix.CLONE_VM) != 0 {
		t.tg.mu.Lock()
		alone := len(t.tg.tasks) == 1
		t.tg.mu.Unlock()
		if !alone {
			return unix.EINVAL
		}
		// A signal table is shared only along with the memory
		// (CLONE_SIGHAND needs CLONE_VM), so one question answers both.
		if flags&(unix.CLONE_SIGHAND|unix.CLONE_VM) != 0 && t.mm.Users() > 1 {
			return unix.EINVAL
		}
	}
	if err := t.checkNewNamespaces(flags); err != nil {
		return err
	}
	userns, err := t.newUserNamespaceFor(flags)
	if err != nil {
		return err
	}
	owner := t.creds.UserNamespace()
	if userns != nil {
		owner = userns
	}
	var pidns *PIDNamespace
	if flags&unix.CLONE_NEWPID != 0 {
		if pidns, err = t.newPIDNamespaceFor(); err != nil {
			return err
		}
		pidns.owner = owner
	}
	if userns != nil {
		t.creds.enterUserNamespace(userns)
	}
	if flags&unix.CLONE_FS != 0 {
		old := t.fs
		t.fs = old.Fork()
		old.sharers.Add(-1)
	}
	if flags&unix.CLONE_NEWNS != 0 {
		t.fs.newMountNamespace(owner)
	}
	if flags&unix.CLONE_FILES != 0 && t.fds.shared() {
		fds := t.fds.Fork()
		t.fds.DecRef()
		t.fds = fds
	}
	if flags&(unix.CLONE_SYSVSEM|unix.CLONE_NEWIPC) != 0 {
		t.releaseSemUndo()
	}
	var uts *UTSNamespace
	var ipcns *ipc.Namespace
	if flags&unix.CLONE_NEWUTS != 0 {
		uts = t.utsns.copy(owner)
	}
	if flags&unix.CLONE_NEWIPC != 0 {
		ipcns = t.ipcns.New()
		ipcns.Owner = owner
	}
	var cg *CgroupNamespace
	if flags&unix.CLONE_NEWCGROUP != 0 {
		cg = newCgroupNamespace(owner)
	}
	t.setNamespaces(uts, ipcns, cg)
	if pidns != nil {
		t.tg.mu.Lock()
		t.childPIDNS = pidns
		t.tg.mu.Unlock()
	}
	return nil
}

// SetNS implements setns(2) on namespace files: joining the UTS, IPC and
// cgroup namespaces given (nil: not that kind), with CAP_SYS_ADMIN in the
// task's own user namespace and in each one's owner (EPERM without).
// Joining an IPC namespace drops the undo list, as unshare does.
func (t *Task) SetNS(uts *UTSNamespace, ipcns *ipc.Namespace, cg *CgroupNamespace) error {
	if !t.CapableInOwn(unix.CAP_SYS_ADMIN) {
		return unix.EPERM
	}
	if uts != nil && !t.CapableIn(uts.owner, unix.CAP_SYS_ADMIN) ||
		ipcns != nil && !t.CapableIn(IPCOwner(ipcns), unix.CAP_SYS_ADMIN) ||
		cg != nil && !t.CapableIn(cg.owner, unix.CAP_SYS_ADMIN) {
		return unix.EPERM
	}
	if ipcns != nil {
		t.releaseSemUndo()
	}
	t.setNamespaces(uts, ipcns, cg)
	return nil
}

// IPCOwner is the user namespace owning ns.
func IPCOwner(ns *ipc.Namespace) *UserNamespace {
	if o, ok := ns.Owner.(*UserNamespace); ok {
		return o
	}
	return rootUserNS
}

// SetUserNamespace is setns(2) of a user namespace (Linux's
// userns_install): EINVAL for the task's own, or for a task sharing its
// process or file-system context; EPERM without CAP_SYS_ADMIN in ns. The
// task then has every capability in ns, as its creator did.
func (t *Task) SetUserNamespace(ns *UserNamespace) error {
	if ns == t.creds.UserNamespace() {
		return unix.EINVAL
	}
	t.tg.mu.Lock()
	alone := len(t.tg.tasks) == 1
	t.tg.mu.Unlock()
	if !alone || t.fs.shared() {
		return unix.EINVAL
	}
	if !t.CapableIn(ns, unix.CAP_SYS_ADMIN) {
		return unix.EPERM
	}
	t.creds.enterUserNamespace(ns)
	return nil
}

// PivotRoot implements pivot_root(2)'s change for the task: vfs.Pivot in
// its tree, then its root and working directory, where they were the old
// root, move to the new one (Linux moves every process's; the sandbox
// moves those of the tasks sharing this file-system context).
func (t *Task) PivotRoot(newRoot, putOld vfs.Path) error {
	if !t.CapableIn(t.MountOwner(), unix.CAP_SYS_ADMIN) {
		return unix.EPERM
	}
	f := t.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.root
	root, err := vfs.Pivot(old, newRoot, putOld)
	if err != nil {
		return err
	}
	f.root = root
	if f.cwd == old {
		f.cwd = root
	}
	return nil
}
