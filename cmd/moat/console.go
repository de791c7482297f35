package main

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// checkConsole applies runc's rules for --console-socket: a container that
// wants a terminal and whose CLI detaches must be given a socket to send the
// terminal to, and a socket is refused when it would not be used.
func checkConsole(terminal, detached bool, consoleSocket string) error {
	if detached && terminal && consoleSocket == "" {
		return fmt.Errorf("cannot allocate tty if moat will detach without setting console socket")
	}
	if (!detached || !terminal) && consoleSocket != "" {
		return fmt.Errorf("cannot use console socket if moat will not detach or allocate tty")
	}
	return nil
}

// openPTY opens a new pseudoterminal on the host's devpts and returns its
// master and replica ends.
func openPTY() (master, replica *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	fd := int(master.Fd()) // also puts the master back in blocking mode, as its receiver expects
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err == nil {
		err = unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0) // unlock the replica
	}
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("set up pty: %w", err)
	}
	replica, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("open pty replica: %w", err)
	}
	return master, replica, nil
}

// consoleProcAttr starts the sentry as the leader of a new session whose
// controlling terminal is its stdin, the console's replica (which must be
// opened without O_NOCTTY's effect elsewhere: the CLI's own session never
// acquires it). The host terminal then tells the sentry of resizes with
// SIGWINCH and of its master's close with SIGHUP; the sentry puts it in raw
// mode, so no key makes a host signal: job control is the guest's own pty's
// (sentry/fs/devpts/console.go).
func consoleProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
}

// sendConsole hands master to whoever listens on the console socket, in the
// message runc sends: the master's name ("/dev/ptmx") as the data and the
// descriptor as one SCM_RIGHTS right.
func sendConsole(socketPath string, master *os.File) error {
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: socketPath, Net: "unix"})
	if err != nil {
		return fmt.Errorf("console socket: %w", err)
	}
	defer conn.Close()
	if _, _, err := conn.WriteMsgUnix([]byte(master.Name()), unix.UnixRights(int(master.Fd())), nil); err != nil {
		return fmt.Errorf("send console to %s: %w", socketPath, err)
	}
	return nil
}
