package kernel

import (
	"sync"
	"sync/atomic"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// FSContext is a task's root directory, working directory and umask.
type FSContext struct {
	mu    sync.Mutex
	root  vfs.Path
	cwd   vfs.Path
	umask uint32
	// sharers counts the other live tasks holding the context (CLONE_FS),
	// which setns of a user namespace refuses.
	sharers atomic.Int32
}

// shared reports whether another live task holds f.
func (f *FSContext) shared() bool { return f.sharers.Load() > 0 }

// NewFSContext returns a context rooted at root with cwd as working directory.
func NewFSContext(root, cwd vfs.Path, umask uint32) *FSContext {
	return &FSContext{root: root, cwd: cwd, umask: umask}
}

// Get returns the root and working directory.
func (f *FSContext) Get() (root, cwd vfs.Path) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.root, f.cwd
}

// SetCwd changes the working directory.
func (f *FSContext) SetCwd(p vfs.Path) {
	f.mu.Lock()
	f.cwd = p
	f.mu.Unlock()
}

// SwapUmask sets the umask and returns the old one.
func (f *FSContext) SwapUmask(m uint32) uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.umask
	f.umask = m & 0o777
	return old
}

// Fork returns a copy (fork without CLONE_FS).
func (f *FSContext) Fork() *FSContext {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &FSContext{root: f.root, cwd: f.cwd, umask: f.umask}
}
