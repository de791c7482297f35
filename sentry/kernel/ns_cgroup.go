package kernel

import "github.com/moat-sandbox/moat/sentry/fs/nsfs"

// CgroupNamespace is a cgroup namespace. The sandbox is one cgroup, its
// own root (/proc/<pid>/cgroup reads 0::/), so a namespace's root, the
// cgroup its maker was in, is always that one: a new namespace changes no
// path a process sees, only the identity /proc/<pid>/ns/cgroup shows and
// setns(2) joins, as on Linux for a process that never leaves the cgroup
// it made its namespace in.
type CgroupNamespace struct {
	id    uint64
	owner *UserNamespace
}

func newCgroupNamespace(owner *UserNamespace) *CgroupNamespace {
	return &CgroupNamespace{id: nsfs.NewIno(), owner: owner}
}

// Owner is the user namespace the namespace was made in.
func (c *CgroupNamespace) Owner() *UserNamespace { return c.owner }

// ID is the namespace's inode number.
func (c *CgroupNamespace) ID() uint64 { return c.id }

// CgroupNamespace is the task's cgroup namespace, for another task to
// look at (under tg.mu, as its other namespaces).
func (t *Task) CgroupNamespace() *CgroupNamespace {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.cgroupns
}
