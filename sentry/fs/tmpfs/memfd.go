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
// data in mf: it lives while a descriptor or a mapping holds it. Without
// allowSealing it holds F_SEAL_SEAL from the start; with noExec, mode 0666
// and F_SEAL_EXEC (MFD_NOEXEC_SEAL).
func NewMemFD(mf *memfile.File, name string, uid, gid uint32, allowSealing, noExec bool) vfs.FileImpl {
	mode := uint32(0o777)
	if noExec {
		mode = 0o666
	}
	n := memfds(mf).newInode(unix.S_IFREG|mode, uid, gid, vfs.RealtimeNow())
	n.nlink = 0
	n.opens = 1
	if !allowSealing {
		n.seals = unix.F_SEAL_SEAL
	}
	if noExec {
		n.seals |= unix.F_SEAL_EXEC
	}
	n.memfd = name
	return &memFile{file: &file{n: n}, name: name}
}

// Reopen implements vfs.Reopener: a memfd opens again through
// /proc/<pid>/fd/N, as a new open of the same file.
func (m *memFile) Reopen() (vfs.Inode, error) { return m.n, nil }

// Name is what /proc/<pid>/fd shows.
func (m *memFile) Name() string { return "/memfd:" + m.name + " (deleted)" }

// SetSize implements vfs.Resizer.
func (m *memFile) SetSize(size int64) error {
	n := m.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.sealedResize(size); err != nil {
		return err
	}
	n.truncateLocked(size)
	t := vfs.RealtimeNow()
	n.mtime, n.ctime = t, t
	return nil
}
