package boot

import (
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/devpts"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// attachConsole makes the container's terminal (process.terminal, when
// the sentry's stdin is the host terminal the CLI made): a pty of the
// devpts at /dev/pts that the sentry joins to the host terminal
// (devpts.Console). Its replica replaces the guest's stdio, one open file
// on fds 0, 1 and 2 as runc gives, and becomes the controlling terminal of
// init's session.
func attachConsole(root vfs.Path, in *kernel.InitSpec) error {
	if _, err := unix.IoctlGetTermios(0, unix.TCGETS); err != nil {
		return nil // not a terminal: the CLI's stdio as it is
	}
	host, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return fmt.Errorf("process.terminal: %w", err)
	}
	con, f, err := newConsole(root, host)
	if err != nil {
		return err
	}
	for i, old := range in.Stdio {
		if old != nil {
			old.DecRef()
		}
		if i > 0 {
			f.IncRef()
		}
		in.Stdio[i] = f
	}
	in.Console = con.TTY()
	return nil
}

// newConsole joins the host terminal host (a descriptor it takes over) to
// a new pty of the devpts at /dev/pts and opens the pty's replica: one
// open file, for the process's fds 0, 1 and 2.
func newConsole(root vfs.Path, host int) (*devpts.Console, *vfs.File, error) {
	res := vfs.Resolver{Root: root, Start: root, Creds: vfs.KernelCreds}
	pts, err := res.Lookup("/dev/pts", true)
	fs := (*devpts.FS)(nil)
	if err == nil {
		fs = devpts.Of(pts.Dentry)
	}
	if fs == nil {
		unix.Close(host)
		return nil, nil, fmt.Errorf("process.terminal: no devpts at /dev/pts")
	}
	con, err := fs.NewConsole(host)
	if err != nil {
		unix.Close(host)
		return nil, nil, fmt.Errorf("process.terminal: %w", err)
	}
	name := "/dev/pts/" + strconv.Itoa(con.Index())
	p, err := res.Lookup(name, true)
	if err != nil {
		con.Close()
		return nil, nil, fmt.Errorf("process.terminal: %s: %w", name, err)
	}
	impl, err := p.Dentry.Inode().Open(unix.O_RDWR)
	if err != nil {
		con.Close()
		return nil, nil, fmt.Errorf("process.terminal: %s: %w", name, err)
	}
	return con, vfs.NewFile(impl, p, unix.O_RDWR), nil
}
