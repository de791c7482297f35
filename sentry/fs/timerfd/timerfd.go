// Package timerfd is timerfd_create(2): a timer whose expirations are read
// from a file descriptor, so an event loop can wait for it with its other
// files.
package timerfd

import (
	"encoding/binary"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// Clock reads the guest clock a timer counts on, in nanoseconds.
type Clock func() int64

// File is a timerfd.
type File struct {
	clock Clock

	mu       sync.Mutex
	timer    *time.Timer
	armed    uint64    // counts the armings: a Go timer of an earlier one that fires late is stale
	expires  time.Time // the next expiration, zero when disarmed
	interval time.Duration
	count    uint64 // expirations not read yet
	queue    waiter.Queue
}

// New returns a disarmed timer on clock.
func New(clock Clock) *File { return &File{clock: clock} }

// Set arms the timer (timerfd_settime): value is relative, or with abs an
// absolute time on the timer's clock; a zero value disarms it. It returns
// the old remaining time and interval.
func (f *File) Set(value time.Duration, abs bool, interval time.Duration) (time.Duration, time.Duration) {
	f.mu.Lock()
	now := time.Now()
	f.catchUpLocked(now)
	oldValue, oldInterval := f.remainingLocked(), f.interval
	f.expires, f.interval, f.count = time.Time{}, interval, 0
	switch {
	case value == 0:
		// Disarmed; the interval stays, for timerfd_gettime, as Linux's
		// timerfd_setup keeps it.
	case abs:
		value -= time.Duration(f.clock())
		fallthrough
	default:
		// Already due, it has expired once now (or, periodic, once per
		// interval gone by), and runs on from there.
		f.expires = now.Add(value)
		f.catchUpLocked(now)
	}
	f.armLocked(now)
	due := f.count > 0
	f.mu.Unlock()
	if due {
		f.queue.Notify(waiter.ReadableEvents)
	}
	return oldValue, oldInterval
}

// catchUpLocked counts the expirations due by now. The Go timer may fire
// late; a read, a poll or a gettime counts all that is due when it looks,
// as Linux's timerfd_read forwards its timer past the overruns.
func (f *File) catchUpLocked(now time.Time) {
	if f.expires.IsZero() || now.Before(f.expires) {
		return
	}
	if f.interval <= 0 {
		f.count++
		f.expires = time.Time{}
		return
	}
	n := now.Sub(f.expires)/f.interval + 1 // overruns count too
	f.count += uint64(n)
	f.expires = f.expires.Add(n * f.interval)
}

// armLocked starts a Go timer for the next expiration, if there is one,
// in place of the one running.
func (f *File) armLocked(now time.Time) {
	f.armed++
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	if f.expires.IsZero() {
		return
	}
	armed := f.armed
	f.timer = time.AfterFunc(f.expires.Sub(now), func() { f.fire(armed) })
}

// Get returns the remaining time and interval (timerfd_gettime).
func (f *File) Get() (time.Duration, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.catchUpLocked(time.Now())
	return f.remainingLocked(), f.interval
}

func (f *File) remainingLocked() time.Duration {
	if f.expires.IsZero() {
		return 0
	}
	return max(time.Until(f.expires), time.Nanosecond)
}

func (f *File) fire(armed uint64) {
	f.mu.Lock()
	if armed != f.armed {
		f.mu.Unlock()
		return
	}
	before := f.count
	now := time.Now()
	f.catchUpLocked(now)
	f.armLocked(now)
	due := f.count > before
	f.mu.Unlock()
	if due {
		f.queue.Notify(waiter.ReadableEvents)
	}
}

// Read implements vfs.FileImpl: 8 bytes, the expirations since the last
// read, waiting for the first.
func (f *File) Read(dst *vfs.IOSeq, _ int64) (int, error) {
	if dst.Len() < 8 {
		return 0, unix.EINVAL
	}
	for {
		f.mu.Lock()
		f.catchUpLocked(time.Now())
		if n := f.count; n > 0 {
			f.count = 0
			f.mu.Unlock()
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], n)
			return dst.CopyOut(b[:])
		}
		if dst.NonBlocking() {
			f.mu.Unlock()
			return 0, unix.EAGAIN
		}
		e, ch := waiter.NewChannelEntry(waiter.ReadableEvents)
		f.queue.EventRegister(e)
		f.mu.Unlock()
		err := dst.Context().Block(ch)
		f.queue.EventUnregister(e)
		if err != nil {
			return 0, err
		}
	}
}

// Write implements vfs.FileImpl.
func (f *File) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EINVAL }

// Readiness implements waiter.Waitable.
func (f *File) Readiness(mask waiter.EventMask) waiter.EventMask {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.catchUpLocked(time.Now())
	if f.count > 0 {
		return waiter.ReadableEvents & mask
	}
	return 0
}

// EventRegister and EventUnregister implement waiter.Waitable.
func (f *File) EventRegister(e *waiter.Entry)   { f.queue.EventRegister(e) }
func (f *File) EventUnregister(e *waiter.Entry) { f.queue.EventUnregister(e) }

// Stat implements vfs.FileImpl.
func (f *File) Stat() (vfs.Stat, error) { return vfs.Stat{Mode: 0o600, Nlink: 1, Blksize: 4096}, nil }

// Ioctl implements vfs.FileImpl.
func (f *File) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) { return 0, unix.ENOTTY }

// Release implements vfs.FileImpl: the timer stops.
func (f *File) Release() {
	f.mu.Lock()
	f.expires = time.Time{}
	f.armLocked(time.Now())
	f.mu.Unlock()
}

// Name is what /proc/<pid>/fd shows.
func (f *File) Name() string { return "anon_inode:[timerfd]" }
