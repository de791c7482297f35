package kernel

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel/ipc"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// A task's namespaces. The sandbox has UTS, IPC, mount, pid and cgroup
// namespaces of its own to give: unshare(2) and clone(2) make new ones for
// a task with CAP_SYS_ADMIN, setns(2) joins a UTS, IPC, pid or cgroup one
// (ns_cgroup.go says what a cgroup namespace is here). A mount
// namespace is a copy of the mount tree the task's root lies in
// (vfs.CopyTree), held by its file-system context, which moves into it; a
// pid namespace is the one the task's next children are made in
// (ns_pid.go). The other kinds (net, time, user) the sandbox has one of
// each: asked for a new one,
// it answers as Linux built without that kind does (EINVAL), after the
// privilege check (EPERM) Linux makes first. A task's namespaces change
// only in the task itself, under its process's mu, which others hold to
// read them (/proc/<pid>/ns).

// newNamespaces are the kinds the kernel can make.
const newNamespaces = unix.CLONE_NEWUTS | unix.CLONE_NEWIPC | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWCGROUP

// checkNewNamespaces is the check clone and unshare make of the
// namespaces flags ask for.
func (t *Task) checkNewNamespaces(flags uint64) error {
	if flags&unix.CLONE_NEWUSER != 0 {
		return unix.EINVAL // no user namespaces: Linux without CONFIG_USER_NS
	}
	if flags&cloneNamespaces == 0 {
		return nil
	}
	if !t.Capable(unix.CAP_SYS_ADMIN) {
		return unix.EPERM
	}
	if flags&cloneNamespaces&^newNamespaces != 0 {
		return unix.EINVAL
	}
	return nil
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
// flags ask (already checked).
func (t *Task) cloneNamespacesFor(child *Task, flags uint64) {
	child.utsns, child.ipcns, child.cgroupns = t.utsns, t.ipcns, t.cgroupns
	if flags&unix.CLONE_NEWCGROUP != 0 {
		child.cgroupns = newCgroupNamespace()
	}
	if flags&unix.CLONE_NEWUTS != 0 {
		child.utsns = t.utsns.copy()
	}
	if flags&unix.CLONE_NEWIPC != 0 {
		child.ipcns = t.ipcns.New()
	}
	if flags&unix.CLONE_NEWNS != 0 {
		child.fs.newMountNamespace() // a copy: CLONE_FS with CLONE_NEWNS is refused
	}
}

// newMountNamespace moves f into a mount tree of its own: a copy of the
// one its root lies in.
func (f *FSContext) newMountNamespace() {
	f.mu.Lock()
	defer f.mu.Unlock()
	remap := vfs.CopyTree(f.root)
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
	var pidns *PIDNamespace
	if flags&unix.CLONE_NEWPID != 0 {
		var err error
		if pidns, err = t.newPIDNamespaceFor(); err != nil {
			return err
		}
	}
	if flags&unix.CLONE_FS != 0 {
		t.fs = t.fs.Fork()
	}
	if flags&unix.CLONE_NEWNS != 0 {
		t.fs.newMountNamespace()
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
		uts = t.utsns.copy()
	}
	if flags&unix.CLONE_NEWIPC != 0 {
		ipcns = t.ipcns.New()
	}
	var cg *CgroupNamespace
	if flags&unix.CLONE_NEWCGROUP != 0 {
		cg = newCgroupNamespace()
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
// cgroup namespaces given (nil: not that kind), with CAP_SYS_ADMIN (EPERM
// without). Joining an IPC namespace drops the undo list, as unshare does.
func (t *Task) SetNS(uts *UTSNamespace, ipcns *ipc.Namespace, cg *CgroupNamespace) error {
	if !t.Capable(unix.CAP_SYS_ADMIN) {
		return unix.EPERM
	}
	if ipcns != nil {
		t.releaseSemUndo()
	}
	t.setNamespaces(uts, ipcns, cg)
	return nil
}

// PivotRoot implements pivot_root(2)'s change for the task: vfs.Pivot in
// its tree, then its root and working directory, where they were the old
// root, move to the new one (Linux moves every process's; the sandbox
// moves those of the tasks sharing this file-system context).
func (t *Task) PivotRoot(newRoot, putOld vfs.Path) error {
	if !t.Capable(unix.CAP_SYS_ADMIN) {
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
