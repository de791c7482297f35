// Package waiter is how the sentry waits for files: a file that can block
// (a pipe, an eventfd, an epoll instance) has a Queue and reports its
// readiness as poll(2) events; a reader that finds nothing to read
// registers an Entry and sleeps until the file notifies it. poll, select
// and epoll are built on the same two pieces.
package waiter

import "sync"

// EventMask is a set of poll(2) events, with Linux's bit values.
type EventMask uint32

// Events.
const (
	EventIn     EventMask = 0x001 // POLLIN
	EventPri    EventMask = 0x002 // POLLPRI
	EventOut    EventMask = 0x004 // POLLOUT
	EventErr    EventMask = 0x008 // POLLERR
	EventHUp    EventMask = 0x010 // POLLHUP
	EventNVal   EventMask = 0x020 // POLLNVAL
	EventRdNorm EventMask = 0x040 // POLLRDNORM
	EventWrNorm EventMask = 0x100 // POLLWRNORM
	EventRdHUp  EventMask = 0x2000
)

// ReadableEvents and WritableEvents are what "readable" and "writable"
// mean to poll.
const (
	ReadableEvents = EventIn | EventRdNorm
	WritableEvents = EventOut | EventWrNorm
)

// Waitable is a file that can report readiness.
type Waitable interface {
	// Readiness returns the events of mask that hold now.
	Readiness(mask EventMask) EventMask
	// EventRegister adds e to the file's queue; EventUnregister removes it.
	EventRegister(e *Entry)
	EventUnregister(e *Entry)
}

// Entry is one waiter: Callback runs (without the queue's lock order
// guarantees: it must not call back into the queue) whenever the file
// notifies events that overlap Mask.
type Entry struct {
	Mask     EventMask
	Callback func(EventMask)
}

// NewChannelEntry returns an entry that makes ch (capacity 1) ready on any
// of mask's events: the usual way to sleep on a file.
func NewChannelEntry(mask EventMask) (*Entry, chan struct{}) {
	ch := make(chan struct{}, 1)
	return &Entry{Mask: mask, Callback: func(EventMask) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}}, ch
}

// Queue is the set of entries waiting on one file.
type Queue struct {
	mu      sync.Mutex
	entries map[*Entry]struct{}
}

// EventRegister adds e.
func (q *Queue) EventRegister(e *Entry) {
	q.mu.Lock()
	if q.entries == nil {
		q.entries = make(map[*Entry]struct{})
	}
	q.entries[e] = struct{}{}
	q.mu.Unlock()
}

// EventUnregister removes e.
func (q *Queue) EventUnregister(e *Entry) {
	q.mu.Lock()
	delete(q.entries, e)
	q.mu.Unlock()
}

// Notify runs the callbacks of the entries interested in any of mask.
func (q *Queue) Notify(mask EventMask) {
	q.mu.Lock()
	var call []*Entry
	for e := range q.entries {
		if e.Mask&mask != 0 {
			call = append(call, e)
		}
	}
	q.mu.Unlock()
	for _, e := range call {
		e.Callback(mask & e.Mask)
	}
}
