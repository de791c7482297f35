// Package eventfd is eventfd(2): a 64-bit counter that writes add to and
// reads take, for signalling between tasks or to an event loop.
package eventfd

import (
	"encoding/binary"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

const maxCount = 1<<64 - 2 // the largest value the counter holds

// File is an eventfd.
type File struct {
	mu        sync.Mutex
	count     uint64
	semaphore bool // EFD_SEMAPHORE: a read takes one
	queue     waiter.Queue
}

// New returns an eventfd starting at initval.
func New(initval uint64, semaphore bool) *File { return &File{count: initval, semaphore: semaphore} }

// Read implements vfs.FileImpl: 8 bytes, the count (or 1), waiting while
// it is zero.
func (f *File) Read(dst *vfs.IOSeq, _ int64) (int, error) {
	if dst.Len() < 8 {
		return 0, unix.EINVAL
	}
	for {
		f.mu.Lock()
		if f.count > 0 {
			v := f.count
			if f.semaphore {
				v = 1
			}
			f.count -= v
			f.mu.Unlock()
			f.queue.Notify(waiter.WritableEvents)
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], v)
			return dst.CopyOut(b[:])
		}
		if err := f.waitLocked(dst, waiter.ReadableEvents); err != nil {
			return 0, err
		}
	}
}

// Write implements vfs.FileImpl: it adds an 8-byte value, waiting while the
// sum would overflow.
func (f *File) Write(src *vfs.IOSeq, _ int64) (int, error) {
	if src.Len() < 8 {
		return 0, unix.EINVAL
	}
	var b [8]byte
	if _, err := src.CopyIn(b[:]); err != nil {
		return 0, err
	}
	v := binary.LittleEndian.Uint64(b[:])
	if v == 1<<64-1 {
		return 0, unix.EINVAL
	}
	for {
		f.mu.Lock()
		if f.count <= maxCount-v {
			f.count += v
			f.mu.Unlock()
			if v > 0 {
				f.queue.Notify(waiter.ReadableEvents)
			}
			return 8, nil
		}
		if err := f.waitLocked(src, waiter.WritableEvents); err != nil {
			return 0, err
		}
	}
}

// Signal adds n to the count from the kernel (Linux's eventfd_signal, as
// an AIO completion does), never waiting: the count saturates instead.
func (f *File) Signal(n uint64) {
	f.mu.Lock()
	f.count += min(n, 1<<64-1-f.count)
	f.mu.Unlock()
	f.queue.Notify(waiter.ReadableEvents)
}

// waitLocked waits (f.mu held, released) for mask, or fails with EAGAIN
// for a non-blocking file.
func (f *File) waitLocked(io *vfs.IOSeq, mask waiter.EventMask) error {
	if io.NonBlocking() {
		f.mu.Unlock()
		return unix.EAGAIN
	}
	e, ch := waiter.NewChannelEntry(mask)
	f.queue.EventRegister(e)
	f.mu.Unlock()
	err := io.Context().Block(ch)
	f.queue.EventUnregister(e)
	return err
}

// Readiness implements waiter.Waitable.
func (f *File) Readiness(mask waiter.EventMask) waiter.EventMask {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ev waiter.EventMask
	if f.count > 0 {
		ev |= waiter.ReadableEvents
	}
	if f.count < maxCount {
		ev |= waiter.WritableEvents
	}
	return ev & mask
}

// EventRegister and EventUnregister implement waiter.Waitable.
func (f *File) EventRegister(e *waiter.Entry)   { f.queue.EventRegister(e) }
func (f *File) EventUnregister(e *waiter.Entry) { f.queue.EventUnregister(e) }

// Stat implements vfs.FileImpl: an anonymous inode.
func (f *File) Stat() (vfs.Stat, error) {
	return vfs.Stat{Mode: 0o600, Nlink: 1, Blksize: 4096}, nil
}

// Ioctl implements vfs.FileImpl.
func (f *File) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) { return 0, unix.ENOTTY }

// Release implements vfs.FileImpl.
func (f *File) Release() {}

// Name is what /proc/<pid>/fd shows.
func (f *File) Name() string { return "anon_inode:[eventfd]" }
