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
	oldValue, oldInterval := f.remainingLocked(), f.interval
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	f.expires, f.interval, f.count = time.Time{}, interval, 0
	switch {
	case value == 0:
		f.interval = 0
	case abs:
		value -= time.Duration(f.clock())
		fallthrough
	default:
		f.expires = time.Now().Add(value)
		if value > 0 {
			f.timer = time.AfterFunc(value, f.fire)
		} else {
			// Already due: it has expired once now (or, periodic, once per
			// interval gone by), and runs on from there.
			f.expireLocked(time.Now())
		}
	}
	due := f.count > 0
	f.mu.Unlock()
	if due {
		f.queue.Notify(waiter.ReadableEvents)
	}
	return oldValue, oldInterval
}

// expireLocked counts the expirations due by now and arms the timer for
// the next one, if periodic.
func (f *File) expireLocked(now time.Time) {
	f.count++
	if f.interval > 0 {
		f.expires = f.expires.Add(f.interval)
		for !f.expires.After(now) { // overruns count too
			f.count++
			f.expires = f.expires.Add(f.interval)
		}
		f.timer = time.AfterFunc(time.Until(f.expires), f.fire)
	} else {
		f.timer, f.expires = nil, time.Time{}
	}
}

// Get returns the remaining time and interval (timerfd_gettime).
func (f *File) Get() (time.Duration, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.remainingLocked(), f.interval
}

func (f *File) remainingLocked() time.Duration {
	if f.expires.IsZero() {
		return 0
	}
	return max(time.Until(f.expires), time.Nanosecond)
}

func (f *File) fire() {
	f.mu.Lock()
	if f.timer == nil {
		f.mu.Unlock()
		return
	}
	f.expireLocked(time.Now())
	f.mu.Unlock()
	f.queue.Notify(waiter.ReadableEvents)
}

// Read implements vfs.FileImpl: 8 bytes, the expirations since the last
// read, waiting for the first.
func (f *File) Read(dst *vfs.IOSeq, _ int64) (int, error) {
	if dst.Len() < 8 {
		return 0, unix.EINVAL
	}
	for {
		f.mu.Lock()
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
	if f.timer != nil {
		f.timer.Stop()
		f.timer = nil
	}
	f.mu.Unlock()
}

// Name is what /proc/<pid>/fd shows.
func (f *File) Name() string { return "anon_inode:[timerfd]" }
