package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Fadvise64 implements Linux syscall fadvise64(2): how the caller will
// read a file, which on Linux tunes the page cache alone and never what a
// read returns. The sentry keeps no page cache that advice would tune, so
// valid advice is taken and changes nothing; the errors are Linux's
// (generic_fadvise): a pipe or FIFO is ESPIPE, a negative length or an
// unknown advice EINVAL.
func Fadvise64(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, err := t.FDs().Get(a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if f.Flags()&unix.O_PATH != 0 {
		return 0, unix.EBADF
	}
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFIFO {
		return 0, unix.ESPIPE
	}
	if a.Int64(2) < 0 {
		return 0, unix.EINVAL
	}
	switch a.Int(3) {
	case unix.FADV_NORMAL, unix.FADV_RANDOM, unix.FADV_SEQUENTIAL, unix.FADV_WILLNEED, unix.FADV_DONTNEED, unix.FADV_NOREUSE:
		return 0, nil
	}
	return 0, unix.EINVAL
}
