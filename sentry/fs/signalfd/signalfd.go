// Package signalfd is signalfd(2): the signals of a set, taken from the
// reading task's pending signals and read as struct signalfd_siginfo.
package signalfd

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
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

// Offsets in struct signalfd_siginfo (include/uapi/linux/signalfd.h).
const (
	ssiPid     = 12
	ssiTid     = 24
	ssiOverrun = 32
	ssiStatus  = 40
	ssiInt     = 44
	ssiPtr     = 48
	ssiUtime   = 56
	ssiStime   = 64
	ssiAddr    = 72
)

// encode lays info out as struct signalfd_siginfo, taking from the union
// of siginfo_t the fields its kind has, as Linux's signalfd_copyinfo
// does by siginfo_layout; the rest stay zero.
func encode(info *kernel.SigInfo) []byte {
	b := make([]byte, infoSize)
	f := info.Fields[:]
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(info.Signo))
	le.PutUint32(b[4:], uint32(info.Errno))
	le.PutUint32(b[8:], uint32(info.Code))
	value := func() { // si_value, after the sender or the timer
		copy(b[ssiInt:ssiInt+4], f[8:12])
		copy(b[ssiPtr:ssiPtr+8], f[8:16])
	}
	switch code := info.Code; {
	case code == linuxabi.SI_TIMER:
		copy(b[ssiTid:ssiTid+4], f[0:4])
		copy(b[ssiOverrun:ssiOverrun+4], f[4:8])
		value()
	case code < 0: // sigqueue, tkill and the other calls that send
		copy(b[ssiPid:ssiPid+8], f[0:8]) // ssi_pid, ssi_uid
		value()
	case code > linuxabi.SI_USER && code < linuxabi.SI_KERNEL && info.Signo == int32(unix.SIGCHLD):
		copy(b[ssiPid:ssiPid+8], f[0:8])
		copy(b[ssiStatus:ssiStatus+4], f[8:12])
		copy(b[ssiUtime:ssiUtime+8], f[16:24])
		copy(b[ssiStime:ssiStime+8], f[24:32])
	case code > linuxabi.SI_USER && code < linuxabi.SI_KERNEL && faultSignal(info.Signo):
		copy(b[ssiAddr:ssiAddr+8], f[0:8])
	default: // kill, and signals the kernel sends
		copy(b[ssiPid:ssiPid+8], f[0:8])
	}
	return b
}

// faultSignal reports whether a signal the kernel sends with a code of its
// own carries a fault's address.
func faultSignal(sig int32) bool {
	switch unix.Signal(sig) {
	case unix.SIGSEGV, unix.SIGBUS, unix.SIGILL, unix.SIGFPE, unix.SIGTRAP:
		return true
	}
	return false
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
