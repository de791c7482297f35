package tmpfs

import (
	"math"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// memfdFS holds memfd_create's files: a tmpfs whose files have no name.
var memfdFS = &fs{dev: vfs.NewAnonDev(), maxPages: math.MaxInt64}

// memFile is an open memfd: a tmpfs file with no name.
type memFile struct {
	*file
	name string
}

// NewMemFD returns a new anonymous regular file, open (memfd_create): it
// lives while a descriptor or a mapping holds it.
func NewMemFD(name string, uid, gid uint32) vfs.FileImpl {
	n := memfdFS.newInode(unix.S_IFREG|0o777, uid, gid, now())
	n.nlink = 0
	n.opens = 1
	return &memFile{file: &file{n: n}, name: name}
}

// Name is what /proc/<pid>/fd shows.
func (m *memFile) Name() string { return "/memfd:" + m.name + " (deleted)" }

// SetSize implements vfs.Resizer.
func (m *memFile) SetSize(size int64) error {
	n := m.n
	n.mu.Lock()
	defer n.mu.Unlock()
	n.truncateLocked(size)
	t := now()
	n.mtime, n.ctime = t, t
	return nil
}
