package procfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/nsfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// nsDir is /proc/<pid>/ns: a magic link per namespace kind, reading
// "kind:[inode]"; following one reaches the namespace's nsfs file, which
// setns(2) takes. uts and ipc are the task's own; the other kinds the
// sandbox has one of. There is no mnt link yet: a mount tree has no
// namespace file to join it by.
func (f *fs) nsDir(path string, get func() (*kernel.Task, error)) *node {
	link := func(name, kind string, of func(t *kernel.Task) (any, uint64)) child {
		inode := func() (*nsfs.Inode, error) {
			t, err := get()
			if err != nil {
				return nil, err
			}
			ns, ino := of(t)
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
	single := func(name, kind string) child {
		return link(name, kind, func(*kernel.Task) (any, uint64) { return nsfs.Single{Kind: kind}, nsfs.SingleIno(kind) })
	}
	// Linux's order and names: a kind that has a for_children link shows
	// the namespace children will be made in, the sandbox's one.
	cs := []child{
		single("cgroup", "cgroup"),
		link("ipc", "ipc", func(t *kernel.Task) (any, uint64) { _, ns := t.Namespaces(); return ns, ns.ID() }),
		single("net", "net"), single("pid", "pid"), single("pid_for_children", "pid"),
		single("time", "time"), single("time_for_children", "time"), single("user", "user"),
		link("uts", "uts", func(t *kernel.Task) (any, uint64) { ns, _ := t.Namespaces(); return ns, ns.ID() }),
	}
	d := f.dir(path, false, func() []child { return cs })
	d.mode = unix.S_IFDIR | 0o511
	return d
}
