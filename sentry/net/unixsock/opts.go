package unixsock

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/netstack"
	"github.com/moat-sandbox/moat/sentry/net/socket"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// GetSockOpt implements socket.Socket: AF_UNIX has SOL_SOCKET options
// only (another level is EOPNOTSUPP, as for a family without its own).
func (e *endpoint) GetSockOpt(t *kernel.Task, level, name, size int) ([]byte, error) {
	if level != unix.SOL_SOCKET {
		return nil, unix.EOPNOTSUPP
	}
	e.ns.mu.Lock()
	defer e.ns.mu.Unlock()
	switch name {
	case unix.SO_TYPE:
		return socket.PutInt32(int32(e.typ)), nil
	case unix.SO_PROTOCOL:
		return socket.PutInt32(0), nil
	case unix.SO_DOMAIN:
		return socket.PutInt32(unix.AF_UNIX), nil
	case unix.SO_ACCEPTCONN:
		return socket.PutBool(e.state == stListen), nil
	case unix.SO_ERROR:
		err := e.err
		e.err = 0
		return socket.PutInt32(int32(err)), nil
	case unix.SO_PASSCRED:
		return socket.PutBool(e.passcredLocked()), nil
	case unix.SO_PEERCRED:
		u := ucred{pid: 0, uid: ^uint32(0), gid: ^uint32(0)}
		if e.peercred != nil {
			u = *e.peercred
			u.uid, u.gid = t.Creds().UIDOf(u.uid), t.Creds().GIDOf(u.gid) // as the caller's namespace shows them
		}
		b := binary.LittleEndian.AppendUint32(nil, uint32(u.pidSeenBy(t)))
		b = binary.LittleEndian.AppendUint32(b, u.uid)
		return binary.LittleEndian.AppendUint32(b, u.gid), nil
	case unix.SO_COOKIE:
		return binary.LittleEndian.AppendUint64(nil, e.Ino()), nil
	case unix.SO_PEERSEC:
		return nil, unix.ENOPROTOOPT
	}
	if v, ok := e.opts.Get(name); ok {
		return v, nil
	}
	return nil, unix.ENOPROTOOPT
}

// SetSockOpt implements socket.Socket.
func (e *endpoint) SetSockOpt(t *kernel.Task, level, name int, val []byte) error {
	if level != unix.SOL_SOCKET {
		return unix.EOPNOTSUPP
	}
	var w wakeups
	defer w.send()
	e.ns.mu.Lock()
	defer e.ns.mu.Unlock()
	switch name {
	case unix.SO_PASSCRED:
		on, err := socket.Bool(val)
		if err == nil {
			e.opts.SetFlag(unix.SO_PASSCRED, on)
		}
		return err
	case unix.SO_TYPE, unix.SO_PROTOCOL, unix.SO_DOMAIN, unix.SO_ACCEPTCONN, unix.SO_ERROR,
		unix.SO_PEERCRED, unix.SO_COOKIE, unix.SO_PEERSEC:
		return unix.ENOPROTOOPT
	}
	ok, err := e.opts.Set(t, name, val)
	if !ok {
		return unix.ENOPROTOOPT
	}
	if err == nil && (name == unix.SO_SNDBUF || name == unix.SO_SNDBUFFORCE) && e.writableLocked() {
		w.add(&e.queue, writable)
	}
	return err
}

// Ioctl implements vfs.FileImpl: SIOCINQ (FIONREAD) counts the bytes
// waiting (a datagram socket's first message), SIOCOUTQ what is sent and
// not yet received; a listener has no SIOCINQ (EINVAL).
func (e *endpoint) Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	var n int
	switch cmd {
	case linuxabi.FIONREAD:
		e.ns.mu.Lock()
		if e.state == stListen {
			e.ns.mu.Unlock()
			return 0, unix.EINVAL
		}
		for _, m := range e.recvq {
			n += len(m.data) - m.off
			if e.typ == unix.SOCK_DGRAM {
				break
			}
		}
		e.ns.mu.Unlock()
	case unix.SIOCOUTQ:
		e.ns.mu.Lock()
		n = e.wmem
		e.ns.mu.Unlock()
	default:
		// Any socket answers the interface requests (dev_ioctl), which
		// the C library's if_nametoindex makes on an AF_UNIX one.
		if t, ok := io.(*kernel.Task); ok {
			if st, err := netstack.Of(t.Kernel()); err == nil {
				if handled, err := netstack.InterfaceIoctl(st, cmd, arg, io); handled {
					return 0, err
				}
			}
		}
		return 0, unix.ENOTTY
	}
	_, err := io.CopyOut(arg, socket.PutInt32(int32(n)))
	return 0, err
}

var _ waiter.Waitable = (*endpoint)(nil)
var _ socket.Socket = (*endpoint)(nil)
