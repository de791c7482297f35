package procfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/nsfs"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// nsDir is /proc/<pid>/ns: a magic link per namespace kind the sandbox
// has more than one of (uts, ipc), reading "kind:[inode]"; following one
// reaches the namespace's nsfs file, which setns(2) takes.
func (f *fs) nsDir(path string, get func() (*kernel.Task, error)) *node {
	link := func(kind string, of func(t *kernel.Task) (any, uint64)) child {
		inode := func() (*nsfs.Inode, error) {
			t, err := get()
			if err != nil {
				return nil, err
			}
			ns, ino := of(t)
			return &nsfs.Inode{Kind: kind, Ino: ino, NS: ns}, nil
		}
		n := f.link(path+"/"+kind, func(vfs.Caller) (string, error) {
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
		return child{kind, f.owned(n, get)}
	}
	cs := []child{
		link("ipc", func(t *kernel.Task) (any, uint64) { _, ns := t.Namespaces(); return ns, ns.ID() }),
		link("uts", func(t *kernel.Task) (any, uint64) { ns, _ := t.Namespaces(); return ns, ns.ID() }),
	}
	d := f.dir(path, false, func() []child { return cs })
	d.mode = unix.S_IFDIR | 0o511
	return d
}
