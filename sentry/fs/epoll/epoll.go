// Package epoll is epoll(7): an interest list of files, a ready list kept
// by callbacks from the files' wait queues, and waits on the ready list,
// level- or edge-triggered.
package epoll

import (
	"cmp"
	"slices"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// Event flags beyond poll's.
const (
	EventEdge    = 1 << 31 // EPOLLET
	EventOneShot = 1 << 30 // EPOLLONESHOT
	eventWakeup  = 1 << 29 // EPOLLWAKEUP: accepted, meaningless here
	eventExcl    = 1 << 28 // EPOLLEXCLUSIVE: accepted, every waiter is woken

	// exclusiveOK are the flags EPOLLEXCLUSIVE goes with
	// (EPOLLEXCLUSIVE_OK_BITS): EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP,
	// EPOLLWAKEUP and EPOLLET.
	exclusiveOK = 0x1 | 0x4 | 0x8 | 0x10 | eventWakeup | EventEdge | eventExcl
)

// Event is one reported event: what happened and the caller's data.
type Event struct {
	Events uint32
	Data   uint64
}

// item is one file of the interest list.
type item struct {
	file   *vfs.File
	fd     int32
	events uint32
	data   uint64
	entry  *waiter.Entry
	ready  bool // on the ready list
	off    bool // a one-shot item that fired: silent until EPOLL_CTL_MOD
}

type key struct {
	file *vfs.File
	fd   int32
}

// File is an epoll instance.
type File struct {
	mu       sync.Mutex
	interest map[key]*item
	readyq   []*item
	spare    []*item      // the ready list's other array: collect builds the next list in it
	queue    waiter.Queue // wakes epoll_wait, and those polling the epoll fd
	// parents counts the items of other epolls that hold this one
	// (nest.go).
	parents map[*File]int
}

// Target is the file of the n-th item registered with descriptor fd, in
// the order of the items' files, as Linux's ep_find_tfd counts them for
// kcmp's KCMP_EPOLL_TFD; nil if there are not that many.
func (ep *File) Target(fd int32, n uint64) *vfs.File {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	var files []*vfs.File
	for k := range ep.interest {
		if k.fd == fd {
			files = append(files, k.file)
		}
	}
	if n >= uint64(len(files)) {
		return nil
	}
	slices.SortFunc(files, func(a, b *vfs.File) int {
		return cmp.Compare(uintptr(unsafe.Pointer(a)), uintptr(unsafe.Pointer(b)))
	})
	return files[n]
}

// New returns an empty epoll instance.
func New() *File { return &File{interest: make(map[key]*item), parents: make(map[*File]int)} }

// Add implements EPOLL_CTL_ADD.
func (ep *File) Add(fd int32, f *vfs.File, ev Event) error {
	w, ok := f.Impl().(waiter.Waitable)
	if !ok {
		return unix.EPERM // regular files and directories cannot be waited on
	}
	if f.Impl() == ep {
		return unix.EINVAL
	}
	child, nested := f.Impl().(*File)
	if ev.Events&eventExcl != 0 && (nested || ev.Events&^exclusiveOK != 0) {
		return unix.EINVAL
	}
	if nested {
		nestMu.Lock()
		defer nestMu.Unlock()
		if err := nestCheck(ep, child); err != nil {
			return err
		}
	}
	ep.mu.Lock()
	k := key{f, fd}
	if _, ok := ep.interest[k]; ok {
		ep.mu.Unlock()
		return unix.EEXIST
	}
	it := &item{file: f, fd: fd, events: ev.Events, data: ev.Data}
	it.entry = &waiter.Entry{Mask: ^waiter.EventMask(0), Callback: func(m waiter.EventMask) { ep.markReady(it, m) }}
	ep.interest[k] = it
	if nested {
		child.addParent(ep, 1)
	}
	w.EventRegister(it.entry)
	ready := w.Readiness(mask(it.events)) != 0
	if ready {
		ep.readyLocked(it)
	}
	ep.mu.Unlock()
	if ready {
		ep.wake()
	}
	return nil
}

// Modify implements EPOLL_CTL_MOD.
func (ep *File) Modify(fd int32, f *vfs.File, ev Event) error {
	ep.mu.Lock()
	it, ok := ep.interest[key{f, fd}]
	if !ok {
		ep.mu.Unlock()
		return unix.ENOENT
	}
	if ev.Events&eventExcl != 0 || it.events&eventExcl != 0 {
		ep.mu.Unlock()
		return unix.EINVAL // an exclusive wake-up is set once, at EPOLL_CTL_ADD
	}
	it.events, it.data, it.off = ev.Events, ev.Data, false
	ready := f.Impl().(waiter.Waitable).Readiness(mask(it.events)) != 0
	if ready {
		ep.readyLocked(it)
	}
	ep.mu.Unlock()
	if ready {
		ep.wake()
	}
	return nil
}

// Delete implements EPOLL_CTL_DEL.
func (ep *File) Delete(fd int32, f *vfs.File) error {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	it, ok := ep.interest[key{f, fd}]
	if !ok {
		return unix.ENOENT
	}
	ep.removeLocked(it)
	return nil
}

func (ep *File) removeLocked(it *item) {
	it.file.Impl().(waiter.Waitable).EventUnregister(it.entry)
	delete(ep.interest, key{it.file, it.fd})
	it.off = true
	if child, ok := it.file.Impl().(*File); ok {
		child.addParent(ep, -1)
	}
}

// mask is the poll events an item waits for: what it asked, plus errors
// and hang-ups, which are always reported.
func mask(events uint32) waiter.EventMask {
	return waiter.EventMask(events&0xffff) | waiter.EventErr | waiter.EventHUp
}

// markReady is the callback of every item's entry: only events the item
// waits for make it ready, as Linux's ep_poll_callback has it (a read of a
// pipe wakes its writers, which is no edge for an edge-triggered reader).
func (ep *File) markReady(it *item, m waiter.EventMask) {
	ep.mu.Lock()
	if it.off || m&mask(it.events) == 0 {
		ep.mu.Unlock()
		return
	}
	ep.readyLocked(it)
	ep.mu.Unlock()
	ep.wake()
}

// wake tells those in epoll_wait, and those polling the epoll fd (a
// parent epoll among them), that an item became ready. EPOLL_CTL_ADD and
// EPOLL_CTL_MOD of a file that is ready already must too, as Linux's
// ep_insert and ep_modify do: another thread may be waiting in
// epoll_wait (Go's netpoller always is while a goroutine connects), and
// without the wake-up it would sleep through an event until its timeout.
func (ep *File) wake() { ep.queue.Notify(waiter.ReadableEvents) }

func (ep *File) readyLocked(it *item) {
	if !it.ready && !it.off {
		it.ready = true
		ep.readyq = append(ep.readyq, it)
	}
}

// collect takes up to max events off the ready list. A level-triggered
// item that is still ready goes back on it, behind those not reached (so
// that a small max goes round them all, as on Linux); an edge-triggered
// one waits for its file's next notification; a one-shot one goes silent.
// The events are appended to out; the ready list is rebuilt in the
// spare array, so that a wait allocates nothing once the arrays are
// grown.
func (ep *File) collect(out []Event, max int) []Event {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	old, keep := ep.readyq, ep.spare[:0]
	for i, it := range old {
		if len(out) == max {
			keep = append(append([]*item(nil), old[i:]...), keep...)
			break
		}
		it.ready = false
		if it.off || it.file.Released() {
			if it.file.Released() {
				ep.removeLocked(it)
			}
			continue
		}
		r := it.file.Impl().(waiter.Waitable).Readiness(mask(it.events))
		if r == 0 {
			continue
		}
		out = append(out, Event{Events: uint32(r), Data: it.data})
		switch {
		case it.events&EventOneShot != 0:
			it.off = true
		case it.events&EventEdge == 0:
			it.ready = true
			keep = append(keep, it)
		}
	}
	clear(old)
	ep.readyq, ep.spare = keep, old[:0]
	return out
}

// Wait implements epoll_wait: events, appended to out, or none at the
// deadline (nil: wait forever; in the past: do not wait). It waits on the
// queue only when nothing was ready at first: an event loop's calls
// mostly find events and should cost no waiter.
func (ep *File) Wait(ctx vfs.Context, out []Event, max int, deadline *time.Time) ([]Event, error) {
	if evs := ep.collect(out, max); len(evs) > 0 || deadline != nil && !time.Now().Before(*deadline) {
		return evs, nil
	}
	e, ch := waiter.NewChannelEntry(waiter.ReadableEvents)
	ep.queue.EventRegister(e)
	defer ep.queue.EventUnregister(e)
	for {
		// Again once registered: an event that came before would
		// otherwise wake no one.
		if evs := ep.collect(out, max); len(evs) > 0 {
			return evs, nil
		}
		if deadline != nil && !time.Now().Before(*deadline) {
			return out, nil
		}
		var err error
		if deadline == nil {
			err = ctx.Block(ch)
		} else {
			err = blockUntil(ctx, ch, *deadline)
		}
		if err == unix.ETIMEDOUT {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// DeadlineBlocker is a context that can wait with a deadline.
type DeadlineBlocker interface {
	BlockUntil(ch <-chan struct{}, deadline time.Time) error
}

func blockUntil(ctx vfs.Context, ch <-chan struct{}, deadline time.Time) error {
	if b, ok := ctx.(DeadlineBlocker); ok {
		return b.BlockUntil(ch, deadline)
	}
	return ctx.Block(ch)
}

// Readiness implements waiter.Waitable: an epoll fd is readable when an
// event is ready.
func (ep *File) Readiness(m waiter.EventMask) waiter.EventMask {
	ep.mu.Lock()
	ready := ep.readyq
	ep.mu.Unlock()
	for _, it := range ready {
		if !it.off && it.file.Impl().(waiter.Waitable).Readiness(mask(it.events)) != 0 {
			return waiter.ReadableEvents & m
		}
	}
	return 0
}

// EventRegister and EventUnregister implement waiter.Waitable.
func (ep *File) EventRegister(e *waiter.Entry)   { ep.queue.EventRegister(e) }
func (ep *File) EventUnregister(e *waiter.Entry) { ep.queue.EventUnregister(e) }

// Read and Write implement vfs.FileImpl: an epoll fd has no data.
func (ep *File) Read(*vfs.IOSeq, int64) (int, error)  { return 0, unix.EINVAL }
func (ep *File) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EINVAL }

// Stat implements vfs.FileImpl.
func (ep *File) Stat() (vfs.Stat, error) { return vfs.Stat{Mode: 0o600, Nlink: 1, Blksize: 4096}, nil }

// Ioctl implements vfs.FileImpl.
func (ep *File) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) { return 0, unix.ENOTTY }

// Release implements vfs.FileImpl: the interest list goes.
func (ep *File) Release() {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	for _, it := range ep.interest {
		ep.removeLocked(it)
	}
	ep.readyq = nil
}

// Name is what /proc/<pid>/fd shows.
func (ep *File) Name() string { return "anon_inode:[eventpoll]" }
