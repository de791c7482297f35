// Package pidfd is a file descriptor that refers to a process
// (pidfd_open(2), clone's CLONE_PIDFD): it polls readable once the
// process has ended, and pidfd_send_signal, pidfd_getfd and waitid's
// P_PIDFD act on the process it holds, never on a later holder of its pid.
package pidfd

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// File is a pidfd.
type File struct {
	tg *kernel.ThreadGroup
}

// New returns a pidfd of tg.
func New(tg *kernel.ThreadGroup) *File { return &File{tg: tg} }

// Process is the process the pidfd refers to.
func (f *File) Process() *kernel.ThreadGroup { return f.tg }

// Read and Write implement vfs.FileImpl: a pidfd has neither, which
// Linux answers with EINVAL.
func (f *File) Read(*vfs.IOSeq, int64) (int, error)  { return 0, unix.EINVAL }
func (f *File) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EINVAL }

// Readiness implements waiter.Waitable as Linux's pidfd_poll: readable
// once every task of the process has exited, hung up too once it has been
// reaped.
func (f *File) Readiness(mask waiter.EventMask) waiter.EventMask {
	var r waiter.EventMask
	switch {
	case f.tg.Reaped():
		r = waiter.ReadableEvents | waiter.EventHUp
	case f.tg.Ended():
		r = waiter.ReadableEvents
	}
	return r & mask
}

// EventRegister and EventUnregister implement waiter.Waitable.
func (f *File) EventRegister(e *waiter.Entry)   { f.tg.ExitQueue().EventRegister(e) }
func (f *File) EventUnregister(e *waiter.Entry) { f.tg.ExitQueue().EventUnregister(e) }

// Stat implements vfs.FileImpl: an anonymous inode's.
func (f *File) Stat() (vfs.Stat, error) { return vfs.Stat{Mode: 0o600, Nlink: 1, Blksize: 4096}, nil }

// Ioctl implements vfs.FileImpl: Linux 6.1's pidfd has no ioctls.
func (f *File) Ioctl(uint32, uintptr, vfs.IoctlIO) (uintptr, error) { return 0, unix.ENOTTY }

// Release implements vfs.FileImpl.
func (f *File) Release() {}

// Name is what /proc/<pid>/fd shows.
func (f *File) Name() string { return "anon_inode:[pidfd]" }

// FDInfoIn is what Linux's pidfd_show_fdinfo adds to
// /proc/<pid>/fdinfo/<fd> of a /proc whose pid namespace is ns: the pid
// there, then the pids in each namespace below it down to the process's
// own; 0 for a process outside ns, -1 once it is reaped.
func (f *File) FDInfoIn(ns *kernel.PIDNamespace) string {
	if f.tg.Reaped() {
		return "Pid:\t-1\nNSpid:\t-1\n"
	}
	ids := f.tg.PIDsIn(ns)
	if len(ids) == 0 || ids[0] == 0 {
		return "Pid:\t0\nNSpid:\t0\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Pid:\t%d\nNSpid:", ids[0])
	for _, id := range ids {
		fmt.Fprintf(&b, "\t%d", id)
	}
	b.WriteString("\n")
	return b.String()
}
