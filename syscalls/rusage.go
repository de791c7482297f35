package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
)

// copyOutUsage writes a struct rusage for u.
func copyOutUsage(t *kernel.Task, addr uintptr, u kernel.Usage) error {
	ru := unix.Rusage{Utime: unix.NsecToTimeval(int64(u.User)), Stime: unix.NsecToTimeval(int64(u.Sys)),
		Maxrss: int64(u.MaxRSS / 1024), Minflt: int64(u.MinFlt)}
	return copyOutStruct(t, addr, &ru)
}
