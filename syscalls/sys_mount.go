package syscalls

import (
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/devpts"
	"github.com/moat-sandbox/moat/sentry/fs/procfs"
	"github.com/moat-sandbox/moat/sentry/fs/sysfs"
	"github.com/moat-sandbox/moat/sentry/fs/tmpfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// mount and umount2 inside the sandbox's own tree (the caller's mount
// namespace): new tmpfs, proc, sysfs, cgroup2, mqueue and devpts
// instances, bind mounts, remounts and propagation changes, which mean
// nothing here (every mount is private). Nothing reaches the host: the
// file systems are the sentry's, and a bind mount only shows again what
// the tree already holds.

// mountPerMount are the flags a mount has of its own.
const mountPerMount = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME |
	unix.MS_NODIRATIME | unix.MS_RELATIME | unix.MS_STRICTATIME

// mountPropagation are the propagation types, one of which a propagation
// change names.
const mountPropagation = unix.MS_SHARED | unix.MS_PRIVATE | unix.MS_SLAVE | unix.MS_UNBINDABLE

// copyInMountString reads one of mount's strings: none for a null pointer.
func copyInMountString(t *kernel.Task, addr uintptr, max int) (string, error) {
	if addr == 0 {
		return "", nil
	}
	return t.CopyInString(addr, max)
}

// Mount implements Linux syscall mount(2).
func Mount(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	fstype, err := copyInMountString(t, a.Ptr(2), vfs.PathMax)
	if err != nil {
		return 0, err
	}
	source, err := copyInMountString(t, a.Ptr(0), vfs.PathMax)
	if err != nil {
		return 0, err
	}
	data, err := copyInMountString(t, a.Ptr(4), 4096)
	if err != nil {
		return 0, err
	}
	flags := int(a[3])
	if flags&unix.MS_MGC_MSK == unix.MS_MGC_VAL {
		flags &^= unix.MS_MGC_MSK
	}
	target, err := lookupAt(t, unix.AT_FDCWD, a.Ptr(1), true, 0)
	if err != nil {
		return 0, err
	}
	if flags&unix.MS_NOUSER != 0 {
		return 0, unix.EINVAL
	}
	if t.Landlocked() {
		return 0, unix.EPERM
	}
	if !t.CapableIn(t.MountOwner(), unix.CAP_SYS_ADMIN) {
		return 0, unix.EPERM
	}
	if !inOwnTree(t, target) {
		return 0, unix.EINVAL
	}
	switch {
	case flags&unix.MS_REMOUNT != 0:
		return 0, vfs.SetFlags(target, flags&mountPerMount)
	case flags&mountPropagation != 0:
		if !vfs.IsMountRoot(target) {
			return 0, unix.EINVAL
		}
		if p := flags & mountPropagation; p&(p-1) != 0 {
			return 0, unix.EINVAL // more than one type
		}
		return 0, nil
	case flags&unix.MS_BIND != 0:
		if source == "" {
			return 0, unix.ENOENT
		}
		src, err := lookupNameAt(t, unix.AT_FDCWD, source, true, 0)
		if err != nil {
			return 0, err
		}
		if !inOwnTree(t, src) {
			return 0, unix.EINVAL
		}
		_, err = vfs.BindMount(src, target, flags&(mountPerMount|unix.MS_REC))
		return 0, err
	case flags&unix.MS_MOVE != 0:
		t.Log("mount: MS_MOVE is not supported")
		return 0, unix.EINVAL
	}
	if err := mayMountFS(t, fstype); err != nil {
		return 0, err
	}
	root, shown, err := newMountFS(t, fstype, data)
	if err != nil {
		return 0, err
	}
	m, err := vfs.Attach(target, root, fstype, flags&mountPerMount)
	if err != nil {
		return 0, err
	}
	m.SetSource(source, shown)
	return 0, nil
}

// inOwnTree reports whether p lies in the caller's mount namespace, the
// only one mount(2) and umount2(2) change (Linux's check_mnt): a
// descriptor opened before unshare(CLONE_NEWNS) reaches the old tree. The
// sandbox's first namespace, with CAP_SYS_ADMIN there, is not held to it.
func inOwnTree(t *kernel.Task, p vfs.Path) bool {
	if t.Capable(unix.CAP_SYS_ADMIN) {
		return true
	}
	root, _ := t.FS().Get()
	return vfs.SameTree(root, p)
}

// mayMountFS is the privilege a new instance of fstype needs beyond
// CAP_SYS_ADMIN over the mount namespace: in a nested user namespace,
// only the kinds Linux lets one mount (FS_USERNS_MOUNT), each with
// CAP_SYS_ADMIN in the namespace owning what it shows: proc the pid
// namespace, mqueue the IPC namespace, cgroup2 the cgroup namespace;
// sysfs shows the network namespace, which is the first user
// namespace's (EPERM).
func mayMountFS(t *kernel.Task, fstype string) error {
	if t.Capable(unix.CAP_SYS_ADMIN) {
		return nil
	}
	var owner *kernel.UserNamespace
	switch fstype {
	case "tmpfs", "devpts":
		return nil
	case "proc":
		owner = t.PIDNamespace().Owner()
	case "mqueue":
		owner = kernel.IPCOwner(t.IPCNamespace())
	case "cgroup2":
		owner = t.CgroupNamespace().Owner()
	default:
		return unix.EPERM
	}
	if !t.CapableIn(owner, unix.CAP_SYS_ADMIN) {
		return unix.EPERM
	}
	return nil
}

// newMountFS makes a new instance of the file system fstype for mount(2)
// from its comma-separated options: ENODEV for a type the sandbox has no
// instance of to give, EINVAL for options it does not know. It returns the
// root and the options as mountinfo shows them.
func newMountFS(t *kernel.Task, fstype, data string) (*vfs.Dentry, string, error) {
	var opts []string
	if data != "" {
		opts = strings.Split(data, ",")
	}
	switch fstype {
	case "":
		return nil, "", unix.EINVAL
	case "tmpfs":
		o, unknown, err := tmpfs.ParseOptions(opts)
		if err != nil || len(unknown) > 0 {
			return nil, "", unix.EINVAL
		}
		if err := tmpfsOwner(t, opts, &o); err != nil {
			return nil, "", err
		}
		return tmpfs.New(t.Kernel().MemFile, o), data, nil
	case "proc":
		return procfs.New(t.Kernel(), t.PIDNamespace()), "", nil
	case "sysfs":
		return sysfs.New(t.Kernel().NumCPUs()), "", nil
	case "cgroup2":
		return sysfs.NewCgroup(t.Kernel()), "", nil
	case "mqueue":
		return vfs.NewRoot(t.IPCNamespace().MQueue().Root()), "", nil
	case "devpts":
		o, unknown, err := devpts.ParseOptions(opts)
		if err != nil || len(unknown) > 0 {
			return nil, "", unix.EINVAL
		}
		return devpts.New(o, time.Now()), o.String(), nil
	}
	return nil, "", unix.ENODEV
}

// tmpfsOwner gives a new tmpfs's root the owner Linux's shmem_fill_super
// does: the caller's fs ids, or the uid= and gid= options, ids of the
// caller's user namespace (EINVAL for one it does not map).
func tmpfsOwner(t *kernel.Task, opts []string, o *tmpfs.Options) error {
	c := t.Creds()
	c.Lock()
	uid, gid := c.FSUID, c.FSGID
	c.Unlock()
	var err error
	for _, opt := range opts {
		switch {
		case strings.HasPrefix(opt, "uid="):
			uid, err = c.KernelUIDArg(o.UID)
		case strings.HasPrefix(opt, "gid="):
			gid, err = c.KernelGIDArg(o.GID)
		}
		if err != nil || uid == ^uint32(0) || gid == ^uint32(0) {
			return unix.EINVAL
		}
	}
	o.UID, o.GID = uid, gid
	return nil
}

// Umount2 implements Linux syscall umount2(2): the mount whose root the
// path names goes (EINVAL for another path); one with mounts on it is
// EBUSY unless MNT_DETACH. MNT_FORCE and MNT_EXPIRE change nothing here.
func Umount2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := int(a.Int(1))
	if flags&^(unix.MNT_FORCE|unix.MNT_DETACH|unix.MNT_EXPIRE|unix.UMOUNT_NOFOLLOW) != 0 {
		return 0, unix.EINVAL
	}
	if !t.CapableIn(t.MountOwner(), unix.CAP_SYS_ADMIN) {
		return 0, unix.EPERM
	}
	if flags&unix.MNT_EXPIRE != 0 && flags&(unix.MNT_FORCE|unix.MNT_DETACH) != 0 {
		return 0, unix.EINVAL
	}
	p, err := lookupAt(t, unix.AT_FDCWD, a.Ptr(0), flags&unix.UMOUNT_NOFOLLOW == 0, 0)
	if err != nil {
		return 0, err
	}
	if t.Landlocked() {
		if !vfs.IsMountRoot(p) {
			return 0, unix.EINVAL // Linux checks the mount before asking Landlock
		}
		return 0, unix.EPERM
	}
	if !inOwnTree(t, p) {
		return 0, unix.EINVAL
	}
	return 0, vfs.Detach(p, flags&unix.MNT_DETACH != 0)
}

// PivotRoot implements Linux syscall pivot_root(2).
func PivotRoot(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	newRoot, err := lookupAt(t, unix.AT_FDCWD, a.Ptr(0), true, 0)
	if err != nil {
		return 0, err
	}
	putOld, err := lookupAt(t, unix.AT_FDCWD, a.Ptr(1), true, 0)
	if err != nil {
		return 0, err
	}
	if t.Landlocked() {
		return 0, unix.EPERM
	}
	return 0, t.PivotRoot(newRoot, putOld)
}
