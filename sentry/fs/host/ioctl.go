package host

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// termiosSize is the kernel's struct termios, which TCGETS and TCSETS
// copy: unix.Termios is the larger termios2.
const termiosSize = 36

// Ioctl implements vfs.FileImpl. Only a terminal answers, and only the
// terminal-attribute and window-size requests reach the host; job-control
// requests are answered for the sandbox, whose only session is its init's.
func (f *File) Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	if !f.isTTY {
		return 0, unix.ENOTTY
	}
	switch cmd {
	case unix.TCGETS:
		t, err := unix.IoctlGetTermios(f.fd, unix.TCGETS)
		if err != nil {
			return 0, err
		}
		return 0, copyOutStruct(io, arg, unsafe.Pointer(t), termiosSize)
	case unix.TCSETS, unix.TCSETSW, unix.TCSETSF:
		t, err := unix.IoctlGetTermios(f.fd, unix.TCGETS)
		if err != nil {
			return 0, err
		}
		if err := copyInStruct(io, arg, unsafe.Pointer(t), termiosSize); err != nil {
			return 0, err
		}
		return 0, unix.IoctlSetTermios(f.fd, uint(cmd), t)
	case unix.TIOCGWINSZ:
		w, err := unix.IoctlGetWinsize(f.fd, unix.TIOCGWINSZ)
		if err != nil {
			return 0, err
		}
		return 0, copyOutStruct(io, arg, unsafe.Pointer(w), unsafe.Sizeof(*w))
	case unix.TIOCSWINSZ:
		var w unix.Winsize
		if err := copyInStruct(io, arg, unsafe.Pointer(&w), unsafe.Sizeof(w)); err != nil {
			return 0, err
		}
		return 0, unix.IoctlSetWinsize(f.fd, unix.TIOCSWINSZ, &w)
	case unix.TIOCGPGRP:
		// The sandbox's foreground process group is its init's.
		var pgrp int32 = 1
		return 0, copyOutStruct(io, arg, unsafe.Pointer(&pgrp), 4)
	case unix.TIOCSPGRP:
		return 0, nil
	}
	return 0, unix.ENOTTY
}

func copyOutStruct(io vfs.IoctlIO, addr uintptr, p unsafe.Pointer, size uintptr) error {
	_, err := io.CopyOut(addr, unsafe.Slice((*byte)(p), size))
	return err
}

func copyInStruct(io vfs.IoctlIO, addr uintptr, p unsafe.Pointer, size uintptr) error {
	_, err := io.CopyIn(addr, unsafe.Slice((*byte)(p), size))
	return err
}
