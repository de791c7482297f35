// Package signalfd is signalfd(2): the signals of a set, taken from the
// reading task's pending signals and read as struct signalfd_siginfo.
package signalfd

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// infoSize is sizeof(struct signalfd_siginfo).
const infoSize = 128

// zeroTime is no deadline.
var zeroTime time.Time

// File is a signalfd.
type File struct {
	mask  atomic.Uint64
	owner *kernel.Task // whose signals poll looks at
}

// New returns a signalfd for mask, polled on behalf of owner.
func New(owner *kernel.Task, mask uint64) *File {
	f := &File{owner: owner}
	f.mask.Store(mask)
	return f
}

// SetMask replaces the set (signalfd4 on an existing signalfd).
func (f *File) SetMask(mask uint64) { f.mask.Store(mask) }

// Read implements vfs.FileImpl: as many pending signals of the set as fit,
// waiting for one if none is.
func (f *File) Read(dst *vfs.IOSeq, _ int64) (int, error) {
	if dst.Len() < infoSize {
		return 0, unix.EINVAL
	}
	t, ok := dst.Context().(*kernel.Task)
	if !ok {
		return 0, unix.EAGAIN
	}
	mask := f.mask.Load()
	var out []byte
	for len(out)+infoSize <= dst.Len() {
		var info kernel.SigInfo
		var err error
		if len(out) > 0 || dst.NonBlocking() {
			if !t.PendingIn(mask) {
				if len(out) == 0 {
					return 0, unix.EAGAIN
				}
				break
			}
		}
		info, err = t.WaitSignal(mask, zeroTime)
		if err != nil {
			if len(out) > 0 {
				break
			}
			return 0, err
		}
		out = append(out, encode(&info)...)
	}
	return dst.CopyOut(out)
}

// encode lays info out as struct signalfd_siginfo.
func encode(info *kernel.SigInfo) []byte {
	b := make([]byte, infoSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(info.Signo))
	le.PutUint32(b[4:], uint32(info.Errno))
	le.PutUint32(b[8:], uint32(info.Code))
	le.PutUint32(b[12:], uint32(info.Pid()))         // ssi_pid
	le.PutUint32(b[16:], le.Uint32(info.Fields[4:])) // ssi_uid
	le.PutUint32(b[44:], le.Uint32(info.Fields[8:])) // ssi_status, for SIGCHLD
	le.PutUint32(b[48:], le.Uint32(info.Fields[8:])) // ssi_int, for sigqueue
	le.PutUint64(b[56:], le.Uint64(info.Fields[8:])) // ssi_ptr
	le.PutUint64(b[80:], le.Uint64(info.Fields[0:])) // ssi_addr, for faults
	return b
}

// Readiness implements waiter.Waitable, for the owner's signals.
func (f *File) Readiness(mask waiter.EventMask) waiter.EventMask {
	if f.owner.PendingIn(f.mask.Load()) {
		return waiter.ReadableEvents & mask
	}
	return 0
}

// EventRegister and EventUnregister implement waiter.Waitable.
func (f *File) EventRegister(e *waiter.Entry) { f.owner.ThreadGroup().SignalQueue().EventRegister(e) }
func (f *File) EventUnregister(e *waiter.Entry) {
	f.owner.ThreadGroup().SignalQueue().EventUnregister(e)
}

// Write implements vfs.FileImpl.
func (f *File) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EINVAL }

// Stat implements vfs.FileImpl.
func (f *File) Stat() (vfs.Stat, error) { return vfs.Stat{Mode: 0o600, Nlink: 1, Blksize: 4096}, nil }

// Ioctl implements vfs.FileImpl.
func (f *File) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) { return 0, unix.ENOTTY }

// Release implements vfs.FileImpl.
func (f *File) Release() {}

// Name is what /proc/<pid>/fd shows.
func (f *File) Name() string { return "anon_inode:[signalfd]" }
