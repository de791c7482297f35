package kernel

import (
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// FDTable maps a process's file descriptors to open files. Tasks created
// with CLONE_FILES share one table.
type FDTable struct {
	refs  atomic.Int64
	mu    sync.Mutex
	files []fdEntry // index is the fd
}

type fdEntry struct {
	file    *vfs.File
	cloexec bool
}

// NewFDTable returns an empty table with one user.
func NewFDTable() *FDTable {
	t := &FDTable{}
	t.refs.Store(1)
	return t
}

// IncRef adds a user; DecRef drops one, closing every file with the last.
func (t *FDTable) IncRef() { t.refs.Add(1) }
func (t *FDTable) DecRef() {
	if t.refs.Add(-1) == 0 {
		t.CloseRange(0, ^uint32(0), false)
	}
}

// shared reports whether another task uses the table.
func (t *FDTable) shared() bool { return t.refs.Load() > 1 }

// Fork returns a copy of the table (fork without CLONE_FILES): the same
// open files, each with one more reference.
func (t *FDTable) Fork() *FDTable {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := NewFDTable()
	c.files = append([]fdEntry(nil), t.files...)
	for _, e := range c.files {
		if e.file != nil {
			e.file.IncRef()
		}
	}
	return c
}

// closeOnExec closes the files marked close-on-exec.
func (t *FDTable) closeOnExec() {
	var closed []*vfs.File
	t.mu.Lock()
	for fd := range t.files {
		if e := &t.files[fd]; e.file != nil && e.cloexec {
			closed = append(closed, e.file)
			*e = fdEntry{}
		}
	}
	t.mu.Unlock()
	for _, f := range closed {
		t.drop(f)
	}
}

// drop releases the table's reference to f, which one of its fds held,
// with the POSIX locks the table's process holds on f's file: closing any
// fd of a file drops them, as Linux's filp_close does.
func (t *FDTable) drop(f *vfs.File) {
	t.closing(f)
	f.DecRef()
}

// Flusher is implemented by files that hear of every close of one of
// their descriptors, not only the last (Linux's flush): a message queue
// drops the notification the closing process registered.
type Flusher interface{ Flush(files any) }

// closing is what closing one of t's descriptors of f does before the
// reference goes: the POSIX locks, the dnotify request and the file's
// flush.
func (t *FDTable) closing(f *vfs.File) {
	vfs.Locks.ReleasePOSIX(f, t)
	dnotifyFlush(f, t)
	if fl, ok := f.Impl().(Flusher); ok {
		fl.Flush(t)
	}
}

// Get returns the file at fd with a reference the caller must drop.
func (t *FDTable) Get(fd int32) (*vfs.File, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if fd < 0 || int(fd) >= len(t.files) || t.files[fd].file == nil {
		return nil, unix.EBADF
	}
	f := t.files[fd].file
	f.IncRef()
	return f, nil
}

// Install puts f at the lowest free fd at or above min, below limit, taking
// a reference.
func (t *FDTable) Install(f *vfs.File, min int32, cloexec bool, limit uint64) (int32, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fd := min
	for int(fd) < len(t.files) && t.files[fd].file != nil {
		fd++
	}
	if uint64(fd) >= limit {
		return -1, unix.EMFILE
	}
	t.setLocked(fd, f, cloexec)
	return fd, nil
}

// InstallAt puts f at fd, closing what was there (dup2), taking a reference.
func (t *FDTable) InstallAt(fd int32, f *vfs.File, cloexec bool, limit uint64) error {
	if fd < 0 || uint64(fd) >= limit {
		return unix.EBADF
	}
	t.mu.Lock()
	var old *vfs.File
	if int(fd) < len(t.files) {
		old = t.files[fd].file
	}
	t.setLocked(fd, f, cloexec)
	t.mu.Unlock()
	if old != nil {
		t.drop(old)
	}
	return nil
}

func (t *FDTable) setLocked(fd int32, f *vfs.File, cloexec bool) {
	for int(fd) >= len(t.files) {
		t.files = append(t.files, fdEntry{})
	}
	f.IncRef()
	t.files[fd] = fdEntry{file: f, cloexec: cloexec}
}

// Capacity is how many fds the table holds without growing, as Linux's
// max_fds: 64 (BITS_PER_LONG) at first, a power of two above the highest
// fd ever installed after. select(2) looks at no fd beyond it.
func (t *FDTable) Capacity() int {
	t.mu.Lock()
	n := len(t.files)
	t.mu.Unlock()
	c := 64
	for c < n {
		c *= 2
	}
	return c
}

// Remove takes f out of the table and returns it (with the table's
// reference, which the caller drops): close(2), which drops the POSIX
// locks the table's process holds on f's file.
func (t *FDTable) Remove(fd int32) (*vfs.File, error) {
	t.mu.Lock()
	if fd < 0 || int(fd) >= len(t.files) || t.files[fd].file == nil {
		t.mu.Unlock()
		return nil, unix.EBADF
	}
	f := t.files[fd].file
	t.files[fd] = fdEntry{}
	t.mu.Unlock()
	t.closing(f)
	return f, nil
}

// CloseRange closes fds in [first, last], or marks them close-on-exec.
func (t *FDTable) CloseRange(first, last uint32, cloexecOnly bool) {
	var closed []*vfs.File
	t.mu.Lock()
	for fd := uint64(first); fd <= uint64(last) && fd < uint64(len(t.files)); fd++ {
		e := &t.files[fd]
		if e.file == nil {
			continue
		}
		if cloexecOnly {
			e.cloexec = true
			continue
		}
		closed = append(closed, e.file)
		*e = fdEntry{}
	}
	t.mu.Unlock()
	for _, f := range closed {
		t.drop(f)
	}
}

// CloseOnExec reports fd's close-on-exec flag.
func (t *FDTable) CloseOnExec(fd int32) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if fd < 0 || int(fd) >= len(t.files) || t.files[fd].file == nil {
		return false, unix.EBADF
	}
	return t.files[fd].cloexec, nil
}

// SetCloseOnExec sets fd's close-on-exec flag.
func (t *FDTable) SetCloseOnExec(fd int32, on bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if fd < 0 || int(fd) >= len(t.files) || t.files[fd].file == nil {
		return unix.EBADF
	}
	t.files[fd].cloexec = on
	return nil
}
