package devpts

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// termiosSize is the kernel's struct termios, which TCGETS and TCSETS
// copy; termios2Size is struct termios2 (unix.Termios), with the speeds.
const (
	termiosSize  = 36
	termios2Size = 44
)

// Ioctl implements vfs.FileImpl: the master's requests act on the
// replica's settings, as Linux's do. Job-control requests (TIOCSCTTY,
// TIOCSPGRP, ...) are the kernel's, through kernel.Terminal.
func (m *Master) Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	p := m.p
	switch cmd {
	case unix.TIOCGPTN:
		return 0, putU32(io, arg, uint32(p.index))
	case unix.TIOCSPTLCK:
		v, err := getU32(io, arg)
		if err != nil {
			return 0, err
		}
		p.mu.Lock()
		p.locked = v != 0
		p.mu.Unlock()
		return 0, nil
	case unix.TIOCGPTLCK:
		p.mu.Lock()
		locked := p.locked
		p.mu.Unlock()
		return 0, putU32(io, arg, boolU32(locked))
	case unix.TIOCPKT:
		// Packet mode is not implemented: turning it off is all there is.
		v, err := getU32(io, arg)
		if err != nil {
			return 0, err
		}
		if v != 0 {
			return 0, unix.EINVAL
		}
		return 0, nil
	case unix.TIOCGPKT:
		return 0, putU32(io, arg, 0)
	case linuxabi.FIONREAD:
		p.mu.Lock()
		n := len(p.ld.out)
		p.mu.Unlock()
		return 0, putU32(io, arg, uint32(n))
	case unix.TCFLSH:
		// The master's input is the replica's output; what it writes is
		// taken into the replica's input at once, so there is no output
		// of its own to flush.
		switch arg {
		case unix.TCIFLUSH, unix.TCIOFLUSH:
			p.mu.Lock()
			p.ld.flushOutput()
			p.mu.Unlock()
			p.notifyAll()
		case unix.TCOFLUSH:
		default:
			return 0, unix.EINVAL
		}
		return 0, nil
	}
	return p.ioctl(cmd, arg, io)
}

// Ioctl implements vfs.FileImpl. A hung-up replica answers EIO (TIOCSPGRP
// ENOTTY, which the kernel's side gives).
func (r *Replica) Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	p := r.p
	p.mu.Lock()
	hungUp := p.hungUp
	p.mu.Unlock()
	if hungUp {
		return 0, unix.EIO
	}
	switch cmd {
	case linuxabi.FIONREAD:
		p.mu.Lock()
		n := p.ld.pendingInput()
		p.mu.Unlock()
		return 0, putU32(io, arg, uint32(n))
	case unix.TCFLSH:
		switch arg {
		case unix.TCIFLUSH:
			p.mu.Lock()
			p.ld.flushInput()
			p.mu.Unlock()
		case unix.TCOFLUSH:
			p.mu.Lock()
			p.ld.flushOutput()
			p.mu.Unlock()
		case unix.TCIOFLUSH:
			p.mu.Lock()
			p.ld.flushInput()
			p.ld.flushOutput()
			p.mu.Unlock()
		default:
			return 0, unix.EINVAL
		}
		p.notifyAll()
		return 0, nil
	}
	return p.ioctl(cmd, arg, io)
}

// ioctl answers the requests both ends share: the settings, the window
// size, flow control.
func (p *pair) ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	switch cmd {
	case unix.TCGETS, unix.TCGETS2:
		p.mu.Lock()
		t := p.ld.termios
		p.mu.Unlock()
		size := uintptr(termiosSize)
		if cmd == unix.TCGETS2 {
			size = termios2Size
		}
		_, err := io.CopyOut(arg, unsafe.Slice((*byte)(unsafe.Pointer(&t)), size))
		return 0, err
	case unix.TCSETS, unix.TCSETSW, unix.TCSETSF, unix.TCSETS2, unix.TCSETSW2, unix.TCSETSF2:
		p.mu.Lock()
		t := p.ld.termios
		p.mu.Unlock()
		two := cmd == unix.TCSETS2 || cmd == unix.TCSETSW2 || cmd == unix.TCSETSF2
		size := uintptr(termiosSize)
		if two {
			size = termios2Size
		}
		if _, err := io.CopyIn(arg, unsafe.Slice((*byte)(unsafe.Pointer(&t)), size)); err != nil {
			return 0, err
		}
		setSpeeds(&t, two)
		// A pty is always 8 bits, readable, without parity (Linux's
		// pty_set_termios).
		t.Cflag = t.Cflag&^(unix.CSIZE|unix.PARENB) | unix.CS8 | unix.CREAD
		p.mu.Lock()
		if cmd == unix.TCSETSF || cmd == unix.TCSETSF2 {
			p.ld.flushInput()
		}
		// TCSETSW's wait for the output to drain is nothing on a pty,
		// which has no transmitter to wait for.
		p.ld.setTermios(t)
		p.mu.Unlock()
		p.notifyAll()
		return 0, nil
	case unix.TIOCGWINSZ:
		p.mu.Lock()
		w := p.winsize
		p.mu.Unlock()
		_, err := io.CopyOut(arg, unsafe.Slice((*byte)(unsafe.Pointer(&w)), unsafe.Sizeof(w)))
		return 0, err
	case unix.TIOCSWINSZ:
		var w unix.Winsize
		if _, err := io.CopyIn(arg, unsafe.Slice((*byte)(unsafe.Pointer(&w)), unsafe.Sizeof(w))); err != nil {
			return 0, err
		}
		p.mu.Lock()
		changed := w != p.winsize
		p.winsize = w
		p.mu.Unlock()
		if changed {
			p.tty.SignalForeground(int(unix.SIGWINCH))
		}
		return 0, nil
	case unix.TIOCOUTQ:
		// Linux's ptys have no output queue of their own to count.
		return 0, putU32(io, arg, 0)
	case unix.TCSBRK, unix.TCSBRKP, unix.TIOCSBRK, unix.TIOCCBRK:
		// tcdrain and breaks: nothing to wait for or send on a pty.
		return 0, nil
	case unix.TCXONC:
		return 0, p.flow(arg)
	case unix.TIOCGETD:
		return 0, putU32(io, arg, 0) // N_TTY
	case unix.TIOCSETD:
		v, err := getU32(io, arg)
		if err != nil {
			return 0, err
		}
		if v != 0 {
			return 0, unix.EINVAL // no other line discipline
		}
		return 0, nil
	case unix.TIOCEXCL, unix.TIOCNXCL:
		p.mu.Lock()
		p.exclusive = cmd == unix.TIOCEXCL
		p.mu.Unlock()
		return 0, nil
	case unix.TIOCGEXCL:
		p.mu.Lock()
		excl := p.exclusive
		p.mu.Unlock()
		return 0, putU32(io, arg, boolU32(excl))
	}
	return 0, unix.ENOTTY
}

// flow is TCXONC (tcflow): suspend or resume output, or send a STOP or
// START character to the other end.
func (p *pair) flow(action uintptr) error {
	p.mu.Lock()
	switch action {
	case unix.TCOOFF:
		p.ld.stopped = true
	case unix.TCOON:
		p.ld.stopped = false
	case unix.TCIOFF, unix.TCION:
		c := p.ld.termios.Cc[unix.VSTOP]
		if action == unix.TCION {
			c = p.ld.termios.Cc[unix.VSTART]
		}
		if c != 0 {
			p.ld.echoBytes(c)
		}
	default:
		p.mu.Unlock()
		return unix.EINVAL
	}
	p.mu.Unlock()
	p.notifyAll()
	return nil
}

// baudRates are the B* codes' speeds, in code order: B0..B38400, then
// (with CBAUDEX) B57600..B4000000.
var baudRates = [...]uint32{0, 50, 75, 110, 134, 150, 200, 300, 600, 1200, 1800, 2400, 4800, 9600, 19200, 38400,
	0, 57600, 115200, 230400, 460800, 500000, 576000, 921600, 1000000, 1152000, 1500000, 2000000, 2500000,
	3000000, 3500000, 4000000}

// speedOf is the speed a CBAUD code stands for (BOTHER: other, given in
// the speed field).
func speedOf(code uint32, other uint32) uint32 {
	if code == unix.BOTHER {
		return other
	}
	i := code & 0xf
	if code&unix.CBAUDEX != 0 {
		i += 16
	}
	return baudRates[i]
}

// setSpeeds fills the speed fields from c_cflag, as Linux's set_termios:
// the output speed from CBAUD, the input speed from CIBAUD, or the output
// speed when CIBAUD is 0. Only termios2 carries BOTHER speeds.
func setSpeeds(t *unix.Termios, two bool) {
	ispeed, ospeed := t.Ispeed, t.Ospeed
	if !two {
		ispeed, ospeed = 0, 0
	}
	t.Ospeed = speedOf(t.Cflag&unix.CBAUD, ospeed)
	if in := t.Cflag >> 16 & unix.CBAUD; in != 0 {
		t.Ispeed = speedOf(in, ispeed)
	} else {
		t.Ispeed = t.Ospeed
	}
}

func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func putU32(io vfs.IoctlIO, addr uintptr, v uint32) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	_, err := io.CopyOut(addr, b[:])
	return err
}

func getU32(io vfs.IoctlIO, addr uintptr) (uint32, error) {
	var b [4]byte
	if _, err := io.CopyIn(addr, b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

var _ waiter.Waitable = (*Master)(nil)
var _ waiter.Waitable = (*Replica)(nil)
