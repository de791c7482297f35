// Package inotify is an inotify(7) instance: the file inotify_init1 returns,
// holding the queue of events its watches (kept by vfs, which reports the
// changes the guest makes) have seen, read as struct inotify_event records.
// It never looks at the host: only what happens through the sentry's vfs
// is reported.
package inotify

import (
	"encoding/binary"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// MaxQueuedEvents is the queue's length, as /proc/sys/fs/inotify shows it
// (Linux's default).
const MaxQueuedEvents = 16384

// eventSize is sizeof(struct inotify_event) before the name.
const eventSize = 16

// Instance is one inotify instance.
type Instance struct {
	mu     sync.Mutex
	events []vfs.WatchEvent
	bytes  int // the size of the queued events as read(2) hands them out
	max    int // max_queued_events when the instance was made
	// overflowed: the IN_Q_OVERFLOW event is in the queue (once at most).
	overflowed bool

	queue waiter.Queue
}

// New returns an instance whose queue holds at most maxEvents events
// (then one IN_Q_OVERFLOW).
func New(maxEvents int) *Instance { return &Instance{max: maxEvents} }

// recordSize is the size of ev as read(2) hands it out: the name with at
// least one NUL, padded to a multiple of the header's size.
func recordSize(ev *vfs.WatchEvent) int {
	if ev.Name == "" {
		return eventSize
	}
	return eventSize + (len(ev.Name)+1+eventSize-1)/eventSize*eventSize
}

// Queue implements vfs.WatchOwner. As Linux's fsnotify_insert_event, a
// full queue takes one IN_Q_OVERFLOW event instead (wd -1), and an event
// equal to the last one queued (same watch, mask, cookie and name) is
// merged into it.
func (in *Instance) Queue(ev vfs.WatchEvent) {
	in.mu.Lock()
	if len(in.events) >= in.max {
		if in.overflowed {
			in.mu.Unlock()
			return
		}
		ev = vfs.WatchEvent{WD: -1, Mask: unix.IN_Q_OVERFLOW}
		in.overflowed = true
	} else if n := len(in.events); n > 0 && in.events[n-1] == ev {
		in.mu.Unlock()
		return
	}
	in.events = append(in.events, ev)
	in.bytes += recordSize(&ev)
	in.mu.Unlock()
	in.queue.Notify(waiter.ReadableEvents)
}

// Read implements vfs.FileImpl: as many whole events as fit, EINVAL if the
// first does not, waiting for one when the queue is empty (EAGAIN with
// O_NONBLOCK).
func (in *Instance) Read(dst *vfs.IOSeq, _ int64) (int, error) {
	for {
		in.mu.Lock()
		if len(in.events) > 0 {
			buf, err := in.takeLocked(dst.Len())
			in.mu.Unlock()
			if err != nil {
				return 0, err
			}
			return dst.CopyOut(buf)
		}
		if dst.NonBlocking() {
			in.mu.Unlock()
			return 0, unix.EAGAIN
		}
		e, ch := waiter.NewChannelEntry(waiter.ReadableEvents)
		in.queue.EventRegister(e)
		in.mu.Unlock()
		err := dst.Context().Block(ch)
		in.queue.EventUnregister(e)
		if err != nil {
			return 0, err
		}
	}
}

// takeLocked removes the events that fit in n bytes and returns them as
// struct inotify_event records.
func (in *Instance) takeLocked(n int) ([]byte, error) {
	size, k := 0, 0
	for ; k < len(in.events); k++ {
		s := recordSize(&in.events[k])
		if size+s > n {
			break
		}
		size += s
	}
	if k == 0 {
		return nil, unix.EINVAL
	}
	buf := make([]byte, size)
	off := 0
	for _, ev := range in.events[:k] {
		s := recordSize(&ev)
		binary.LittleEndian.PutUint32(buf[off:], uint32(ev.WD))
		binary.LittleEndian.PutUint32(buf[off+4:], ev.Mask)
		binary.LittleEndian.PutUint32(buf[off+8:], ev.Cookie)
		binary.LittleEndian.PutUint32(buf[off+12:], uint32(s-eventSize))
		copy(buf[off+eventSize:], ev.Name)
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			in.overflowed = false
		}
		off += s
	}
	in.events = append(in.events[:0:0], in.events[k:]...)
	in.bytes -= size
	return buf, nil
}

// Write implements vfs.FileImpl: an instance cannot be written.
func (in *Instance) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EINVAL }

// Stat implements vfs.FileImpl: an anonymous inode.
func (in *Instance) Stat() (vfs.Stat, error) {
	return vfs.Stat{Mode: 0o600, Nlink: 1, Blksize: 4096}, nil
}

// Ioctl implements vfs.FileImpl: FIONREAD is the size of the queued
// events.
func (in *Instance) Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	if cmd != linuxabi.FIONREAD {
		return 0, unix.ENOTTY
	}
	in.mu.Lock()
	n := in.bytes
	in.mu.Unlock()
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(n))
	_, err := io.CopyOut(arg, b[:])
	return 0, err
}

// Release implements vfs.FileImpl: the watches go with the instance.
func (in *Instance) Release() { vfs.RemoveOwner(in) }

// Readiness implements waiter.Waitable: readable while events wait.
func (in *Instance) Readiness(mask waiter.EventMask) waiter.EventMask {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.events) > 0 {
		return waiter.ReadableEvents & mask
	}
	return 0
}

// EventRegister and EventUnregister implement waiter.Waitable.
func (in *Instance) EventRegister(e *waiter.Entry)   { in.queue.EventRegister(e) }
func (in *Instance) EventUnregister(e *waiter.Entry) { in.queue.EventUnregister(e) }

// Name is what /proc/<pid>/fd shows.
func (in *Instance) Name() string { return "anon_inode:inotify" }
