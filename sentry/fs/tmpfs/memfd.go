package tmpfs

import (
	"math"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/memfile"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// memfdFS holds memfd_create's files, a tmpfs whose files have no name,
// per memory file (one per sandbox; tests make several).
var memfdFS struct {
	mu  sync.Mutex
	dev uint64
	fs  map[*memfile.File]*fs
}

func memfds(mf *memfile.File) *fs {
	m := &memfdFS
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fs == nil {
		m.dev = vfs.NewAnonDev()
		m.fs = make(map[*memfile.File]*fs)
	}
	f := m.fs[mf]
	if f == nil {
		f = &fs{dev: m.dev, mf: mf, maxPages: math.MaxInt64}
		m.fs[mf] = f
	}
	return f
}

// memFile is an open memfd: a tmpfs file with no name.
type memFile struct {
	*file
	name string
}

// NewMemFD returns a new anonymous regular file, open (memfd_create), its
// data in mf: it lives while a descriptor or a mapping holds it.
func NewMemFD(mf *memfile.File, name string, uid, gid uint32) vfs.FileImpl {
	n := memfds(mf).newInode(unix.S_IFREG|0o777, uid, gid, now())
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
