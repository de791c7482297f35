package e2b

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// openPTY opens a host terminal: the master stays with the server, whose
// reads and writes go through Go's poller (it is non-blocking and never
// switched back), and the replica goes to the sentry, which joins it to a
// terminal of the sandbox's own for the process (sentry/boot/exec.go).
func openPTY(cols, rows uint16) (master, replica *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open a pty: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0) // unlock the replica
	}
	if err == nil && cols > 0 && rows > 0 {
		err = unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
	}
	if err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("set up a pty: %w", err)
	}
	master = os.NewFile(uintptr(fd), "ptmx")
	replica, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("open the pty's replica: %w", err)
	}
	return master, replica, nil
}

// resize sets the terminal's size; the sentry polls it.
func resize(master *os.File, cols, rows uint16) error {
	rc, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
	})
	if err != nil {
		return err
	}
	return ioErr
}
