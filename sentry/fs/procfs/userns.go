package procfs

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// /proc/<pid>/uid_map, gid_map and setgroups: the user namespace of the
// process, as user_namespaces(7) has them (kernel/ns_user.go keeps the
// rules). What a read shows depends on the opener's namespace, and a
// write is checked against the opener's credentials as they were at the
// open as well as the writer's, so that a descriptor handed to a more
// privileged program cannot be used to write what its opener could not.

// userNSNode is one of the three files of the task get returns: text
// gives its content for an opener, write takes a write.
func (f *fs) userNSNode(path string, get func() (*kernel.Task, error),
	text func(ns *kernel.UserNamespace, opener *kernel.Task) string,
	write func(ns *kernel.UserNamespace, data []byte, opener, writer *kernel.Credentials) error) child {
	n := f.file(path, nil)
	n.mode = unix.S_IFREG | 0o644
	n.openAs = func(c vfs.Context, flags int) (vfs.FileImpl, error) {
		t, opener, err := taskAndOpener(c, get)
		if err != nil {
			return nil, err
		}
		ns := t.Creds().UserNamespace()
		return &userNSFile{snapshot: snapshot{node: n, data: []byte(text(ns, opener))}, ns: ns,
			opener: opener.Creds().Fork(), write: write}, nil
	}
	return child{path[len(path)-len(lastName(path)):], f.owned(n, get)}
}

func lastName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}

// userNSFile is an open uid_map, gid_map or setgroups.
type userNSFile struct {
	snapshot
	ns     *kernel.UserNamespace
	opener *kernel.Credentials
	write  func(ns *kernel.UserNamespace, data []byte, opener, writer *kernel.Credentials) error
}

// pageSize bounds a write: Linux takes an id map in one write of less
// than a page.
const pageSize = 4096

// Write implements vfs.FileImpl: one write at offset 0 of less than a
// page (EINVAL otherwise).
func (u *userNSFile) Write(src *vfs.IOSeq, off int64) (int, error) {
	w, ok := src.Context().(*kernel.Task)
	if !ok {
		return 0, unix.EINVAL
	}
	count := src.Len()
	if off != 0 || count >= pageSize {
		return 0, unix.EINVAL
	}
	data := make([]byte, count)
	if _, err := src.CopyIn(data); err != nil {
		return 0, unix.EFAULT
	}
	if err := u.write(u.ns, data, u.opener, w.Creds()); err != nil {
		return 0, err
	}
	return count, nil
}

// userNSFiles are the three files of a process under prefix p.
func (f *fs) userNSFiles(p string, get func() (*kernel.Task, error)) []child {
	idMap := func(gid bool) (func(*kernel.UserNamespace, *kernel.Task) string,
		func(*kernel.UserNamespace, []byte, *kernel.Credentials, *kernel.Credentials) error) {
		return func(ns *kernel.UserNamespace, o *kernel.Task) string {
				return ns.MapText(gid, o.Creds().UserNamespace())
			}, func(ns *kernel.UserNamespace, data []byte, opener, writer *kernel.Credentials) error {
				return ns.WriteMap(gid, data, opener, writer)
			}
	}
	ut, uw := idMap(false)
	gt, gw := idMap(true)
	return []child{
		f.userNSNode(p+"uid_map", get, ut, uw),
		f.userNSNode(p+"gid_map", get, gt, gw),
		f.userNSNode(p+"setgroups", get, func(ns *kernel.UserNamespace, _ *kernel.Task) string { return ns.SetgroupsText() },
			func(ns *kernel.UserNamespace, data []byte, opener, _ *kernel.Credentials) error {
				return ns.WriteSetgroups(data, opener)
			}),
	}
}
