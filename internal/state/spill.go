package state

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// SpillFile makes the unnamed file in the state directory that an overlay
// root's upper layer spills file data to (sentry/mm/spill.go). Having no
// name, it is gone with the last descriptor: whatever ends the sandbox, it
// leaves nothing behind.
func (d *Dir) SpillFile() (*os.File, error) {
	fd, err := unix.Openat(int(d.f.Fd()), ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
	if err == unix.EOPNOTSUPP || err == unix.EISDIR {
		// A file system without O_TMPFILE: a name, removed at once.
		name := fmt.Sprintf(".spill-%d", os.Getpid())
		fd, err = unix.Openat(int(d.f.Fd()), name, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC, 0o600)
		if err == nil {
			err = unix.Unlinkat(int(d.f.Fd()), name, 0)
			if err != nil {
				unix.Close(fd)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("overlay spill file in %s: %w", d.path, err)
	}
	return os.NewFile(uintptr(fd), "overlay-spill"), nil
}
