package epoll

import (
	"sync"

	"golang.org/x/sys/unix"
)

// An epoll may wait on another epoll, but Linux refuses with ELOOP an add
// that would close a loop (each instance would wake the other for ever,
// and a readiness check would never end) or make a chain of epolls deeper
// than maxNests levels, counted through the new link from the highest
// epoll above it to the lowest below.

// maxNests is EP_MAX_NESTS.
const maxNests = 4

// nestMu orders the adds of an epoll to an epoll, so that two of them
// cannot each pass the check that together they fail. It is taken before
// any epoll's mu.
var nestMu sync.Mutex

// nestCheck reports whether child may be added to ep (nestMu held).
func nestCheck(ep, child *File) error {
	if child.reaches(ep) || ep.height()+1+child.depth() > maxNests {
		return unix.ELOOP
	}
	return nil
}

// addParent counts one more (or, with n = -1, one less) item of parent
// that holds ep. parent's mu is held: an epoll's lock comes before those
// of the epolls it holds.
func (ep *File) addParent(parent *File, n int) {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if ep.parents[parent] += n; ep.parents[parent] <= 0 {
		delete(ep.parents, parent)
	}
}

// children are the epolls ep holds whose files are still open.
func (ep *File) children() []*File {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	var out []*File
	for _, it := range ep.interest {
		if c, ok := it.file.Impl().(*File); ok && !it.file.Released() {
			out = append(out, c)
		}
	}
	return out
}

func (ep *File) parentList() []*File {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	out := make([]*File, 0, len(ep.parents))
	for p := range ep.parents {
		out = append(out, p)
	}
	return out
}

// depth is how many levels of epolls lie below ep; height how many above.
func (ep *File) depth() int {
	d := 0
	for _, c := range ep.children() {
		d = max(d, 1+c.depth())
	}
	return d
}

func (ep *File) height() int {
	h := 0
	for _, p := range ep.parentList() {
		h = max(h, 1+p.height())
	}
	return h
}

// reaches reports whether target is ep or an epoll below it.
func (ep *File) reaches(target *File) bool {
	if ep == target {
		return true
	}
	for _, c := range ep.children() {
		if c.reaches(target) {
			return true
		}
	}
	return false
}
