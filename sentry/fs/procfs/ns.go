package procfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/nsfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// nsDir is /proc/<pid>/ns: a magic link per namespace kind, reading
// "kind:[inode]"; following one reaches the namespace's nsfs file, which
// setns(2) takes. cgroup, ipc, pid, user and uts are the task's own; the other
// kinds the sandbox has one of. There is no mnt link yet: a mount tree has no
// namespace file to join it by.
func (f *fs) nsDir(path string, get func() (*kernel.Task, error)) *node {
	link := func(name, kind string, of func(t *kernel.Task) (any, uint64)) child {
		return f.nsLink(path, name, kind, get, func(t *kernel.Task) (any, uint64, error) {
			ns, ino := of(t)
			return ns, ino, nil
		})
	}
	single := func(name, kind string) child {
		return link(name, kind, func(*kernel.Task) (any, uint64) { return nsfs.Single{Kind: kind}, nsfs.SingleIno(kind) })
	}
	// Linux's order and names: a kind that has a for_children link shows
	// the namespace children will be made in, the sandbox's one.
	cs := []child{
		link("cgroup", "cgroup", func(t *kernel.Task) (any, uint64) { ns := t.CgroupNamespace(); return ns, ns.ID() }),
		link("ipc", "ipc", func(t *kernel.Task) (any, uint64) { _, ns := t.Namespaces(); return ns, ns.ID() }),
		single("net", "net"),
		link("pid", "pid", func(t *kernel.Task) (any, uint64) { ns := t.PIDNamespace(); return ns, ns.ID() }),
		f.pidForChildren(path, get),
		single("time", "time"), single("time_for_children", "time"),
		link("user", "user", func(t *kernel.Task) (any, uint64) { ns := t.Creds().UserNamespace(); return ns, ns.ID() }),
		link("uts", "uts", func(t *kernel.Task) (any, uint64) { ns, _ := t.Namespaces(); return ns, ns.ID() }),
	}
	d := f.dir(path, false, func() []child { return cs })
	d.mode = unix.S_IFDIR | 0o511
	return d
}

// nsLink is the magic link name in /proc/<pid>/ns for a namespace of kind
// that of gives of the task get returns.
func (f *fs) nsLink(path, name, kind string, get func() (*kernel.Task, error),
	of func(t *kernel.Task) (any, uint64, error)) child {
	inode := func() (*nsfs.Inode, error) {
		t, err := get()
		if err != nil {
			return nil, err
		}
		ns, ino, err := of(t)
		if err != nil {
			return nil, err
		}
		return &nsfs.Inode{Kind: kind, Ino: ino, NS: ns}, nil
	}
	n := f.link(path+"/"+name, func(vfs.Caller) (string, error) {
		in, err := inode()
		if err != nil {
			return "", err
		}
		return in.Name(), nil
	})
	n.jump = func() (vfs.Path, error) {
		in, err := inode()
		if err != nil {
			return vfs.Path{}, err
		}
		return vfs.AnonPath(in)
	}
	return child{name, f.owned(n, get)}
}

// pidForChildren is ns/pid_for_children: the pid namespace the task's
// children are made in, ENOENT while it is a new one with no process yet
// (Linux's pidns_for_children_get finds no reaper).
func (f *fs) pidForChildren(path string, get func() (*kernel.Task, error)) child {
	return f.nsLink(path, "pid_for_children", "pid", get, func(t *kernel.Task) (any, uint64, error) {
		ns := t.PIDNamespaceForChildren()
		if ns != t.PIDNamespace() && !f.k.HasInit(ns) {
			return nil, 0, unix.ENOENT
		}
		return ns, ns.ID(), nil
	})
}
