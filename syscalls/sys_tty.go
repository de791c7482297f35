package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// ptyMaster is a pty master that can open its replica (TIOCGPTPEER).
type ptyMaster interface {
	OpenPeer(t *kernel.Task, flags int) (vfs.FileImpl, string, error)
}

// terminalIoctl answers the ioctl(2) requests of a terminal that job
// control owns: the controlling terminal (TIOCSCTTY, TIOCNOTTY), the
// foreground group and session (TIOCGPGRP, TIOCSPGRP, TIOCGSID) and a pty
// master's TIOCGPTPEER; and it stops a background process that changes
// the terminal's settings (SIGTTOU) before the terminal sees the request.
// handled is false for requests the terminal answers itself.
func terminalIoctl(t *kernel.Task, f *vfs.File, term kernel.Terminal, cmd uint32, arg uintptr) (handled bool, ret uintptr, err error) {
	tty, viaMaster, terr := term.Terminal()
	switch cmd {
	case unix.TCSETS, unix.TCSETSW, unix.TCSETSF, unix.TCSETS2, unix.TCSETSW2, unix.TCSETSF2,
		unix.TCFLSH, unix.TCXONC:
		if terr == nil {
			if err := tty.CheckChange(t, int(unix.SIGTTOU)); err != nil {
				return true, 0, err
			}
		}
		return false, 0, nil
	case unix.TIOCSCTTY, unix.TIOCNOTTY, unix.TIOCGPGRP, unix.TIOCSPGRP, unix.TIOCGSID:
	case unix.TIOCGPTPEER:
		m, ok := f.Impl().(ptyMaster)
		if !ok {
			return true, 0, unix.ENOTTY
		}
		fd, err := openPeer(t, f, m, int(arg))
		return true, uintptr(fd), err
	default:
		return false, 0, nil
	}
	if terr != nil {
		if cmd == unix.TIOCSPGRP {
			return true, 0, unix.ENOTTY // a hung-up terminal's answer
		}
		return true, 0, terr
	}
	switch cmd {
	case unix.TIOCSCTTY:
		return true, 0, tty.SetControlling(t, arg == 1, f.Readable())
	case unix.TIOCNOTTY:
		if viaMaster {
			return true, 0, unix.ENOTTY // a master is no one's terminal
		}
		return true, 0, tty.Disassociate(t)
	case unix.TIOCGPGRP:
		pgid, err := tty.ForegroundGroup(t, viaMaster)
		if err != nil {
			return true, 0, err
		}
		return true, 0, copyOutU32(t, arg, uint32(pgid))
	case unix.TIOCGSID:
		sid, err := tty.SessionID(t, viaMaster)
		if err != nil {
			return true, 0, err
		}
		return true, 0, copyOutU32(t, arg, uint32(sid))
	}
	var pgid int32
	if err := copyInStruct(t, arg, &pgid); err != nil {
		return true, 0, err
	}
	return true, 0, tty.SetForegroundGroup(t, pgid)
}

// openPeer opens a pty master's replica with open(2)'s flags and installs
// it (TIOCGPTPEER): the file is the replica's node in the master's devpts
// mount, whatever name the caller could see.
func openPeer(t *kernel.Task, master *vfs.File, m ptyMaster, flags int) (int32, error) {
	impl, name, err := m.OpenPeer(t, flags)
	if err != nil {
		return 0, err
	}
	mnt := master.Path().Mount
	var p vfs.Path
	if mnt != nil {
		p, _ = vfs.Resolver{Root: mnt.Root(), Start: mnt.Root(), Caller: t, Creds: vfs.KernelCreds}.Lookup(name, false)
	}
	f := vfs.NewFile(impl, p, flags&unix.O_ACCMODE|flags&fileStatusFlags)
	defer f.DecRef()
	return t.FDs().Install(f, 0, flags&unix.O_CLOEXEC != 0, nofile(t))
}
