package syscalls

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/mqueue"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/socket"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// POSIX message queues: mq_open, mq_unlink, mq_timedsend,
// mq_timedreceive, mq_notify, mq_getsetattr (the queues are the IPC
// namespace's, sentry/fs/mqueue).

// mqAttr is struct mq_attr.
type mqAttr struct {
	Flags, MaxMsg, MsgSize, CurMsgs int64
	_                               [4]int64
}

// What mq_notify's SIGEV_THREAD sends the netlink socket glibc gives it:
// a cookie of NOTIFY_COOKIE_LEN bytes whose last says what happened
// (include/uapi/linux/mqueue.h). siMesgQ is SI_MESGQ, the si_code of a
// SIGEV_SIGNAL notification.
const (
	notifyCookieLen = 32
	notifyWokenUp   = 1
	notifyRemoved   = 2
	siMesgQ         = -3
)

// mqCaller describes t to the mqueue package.
func mqCaller(t *kernel.Task) *mqueue.Caller {
	c := t.Creds()
	c.Lock()
	uid := c.UID
	c.Unlock()
	return &mqueue.Caller{Creds: fsCreds(t), UID: uid, Limit: t.Limits().Get(unix.RLIMIT_MSGQUEUE).Cur}
}

// MqOpen implements Linux syscall mq_open(2): glibc passes the name
// without its leading '/'. The descriptor is always close-on-exec.
func MqOpen(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	nameAddr, flags, mode, attrAddr := a.Ptr(0), int(a.Int(1)), uint32(a[2]), a.Ptr(3)
	var attr *mqueue.Attr
	if attrAddr != 0 {
		var ma mqAttr
		if err := copyInStruct(t, attrAddr, &ma); err != nil {
			return 0, err
		}
		attr = &mqueue.Attr{MaxMsg: ma.MaxMsg, MsgSize: ma.MsgSize}
	}
	name, err := copyInPath(t, nameAddr)
	if err != nil {
		return 0, err
	}
	mf, err := t.IPCNamespace().MQueue().Open(mqCaller(t), name, flags, umasked(t, mode&0o7777), attr)
	if err != nil {
		return 0, err
	}
	const dropped = unix.O_CREAT | unix.O_EXCL | unix.O_NOCTTY | unix.O_TRUNC | unix.O_CLOEXEC
	f := vfs.NewFile(mf, vfs.Path{}, flags&^dropped)
	defer f.DecRef()
	fd, err := t.FDs().Install(f, 0, true, nofile(t))
	return retErr(uintptr(fd), err)
}

// MqUnlink implements Linux syscall mq_unlink(2).
func MqUnlink(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	name, err := copyInPath(t, a.Ptr(0))
	if err != nil {
		return 0, err
	}
	return 0, t.IPCNamespace().MQueue().Unlink(mqCaller(t), name)
}

// mqFile returns the queue open at fd: EBADF for any other file.
func mqFile(t *kernel.Task, fd int32) (*vfs.File, *mqueue.Queue, error) {
	f, err := t.FDs().Get(fd)
	if err != nil {
		return nil, nil, err
	}
	mf, ok := f.Impl().(*mqueue.File)
	if !ok {
		f.DecRef()
		return nil, nil, unix.EBADF
	}
	return f, mf.Queue(), nil
}

// mqDeadline reads an absolute CLOCK_REALTIME timeout (EINVAL for one
// that is not a time, even when the call would not wait, as Linux
// checks it first); none is a zero time, which waits for ever.
func mqDeadline(t *kernel.Task, addr uintptr) (time.Time, error) {
	if addr == 0 {
		return time.Time{}, nil
	}
	ts, err := copyInTimespec(t, addr)
	if err != nil {
		return time.Time{}, err
	}
	return absoluteDeadline(t, true, ts), nil
}

// accessMode reports whether a file's access mode lets it read and write
// (the mode 3 does neither).
func accessMode(f *vfs.File) (read, write bool) {
	acc := f.Flags() & unix.O_ACCMODE
	return acc == unix.O_RDONLY || acc == unix.O_RDWR, acc == unix.O_WRONLY || acc == unix.O_RDWR
}

// MqTimedsend implements Linux syscall mq_timedsend(2). A signal restarts
// it (its timeout is absolute).
func MqTimedsend(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	fd, msgAddr, size, prio := a.Int(0), a.Ptr(1), a[2], uint32(a[3])
	deadline, err := mqDeadline(t, a.Ptr(4))
	if err != nil {
		return 0, err
	}
	if prio >= mqueue.PrioMax {
		return 0, unix.EINVAL
	}
	f, q, err := mqFile(t, fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if _, w := accessMode(f); !w {
		return 0, unix.EBADF
	}
	if size > uint64(q.Attr().MsgSize) {
		return 0, unix.EMSGSIZE
	}
	text := make([]byte, size)
	if _, err := t.CopyIn(msgAddr, text); err != nil {
		return 0, err
	}
	c := t.Creds()
	c.Lock()
	uid := c.UID
	c.Unlock()
	return 0, q.Send(text, prio, f.Flags()&unix.O_NONBLOCK != 0, deadline, t, mqueue.Sender{PID: t.ThreadGroup().PID(), UID: uid})
}

// MqTimedreceive implements Linux syscall mq_timedreceive(2): it returns
// the message's length. A message taken off the queue is lost if it cannot
// be copied out, as on Linux.
func MqTimedreceive(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	fd, msgAddr, size, prioAddr := a.Int(0), a.Ptr(1), a[2], a.Ptr(3)
	deadline, err := mqDeadline(t, a.Ptr(4))
	if err != nil {
		return 0, err
	}
	f, q, err := mqFile(t, fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if r, _ := accessMode(f); !r {
		return 0, unix.EBADF
	}
	text, prio, err := q.Receive(int64(min(size, 1<<62)), f.Flags()&unix.O_NONBLOCK != 0, deadline, t)
	if err != nil {
		return 0, err
	}
	if prioAddr != 0 {
		if err := copyOutU32(t, prioAddr, prio); err != nil {
			return 0, err
		}
	}
	if _, err := t.CopyOut(msgAddr, text); err != nil {
		return 0, err
	}
	return uintptr(len(text)), nil
}

// MqGetsetattr implements Linux syscall mq_getsetattr(2): only
// O_NONBLOCK may be set (EINVAL for other flags), in the open file.
func MqGetsetattr(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	fd, newAddr, oldAddr := a.Int(0), a.Ptr(1), a.Ptr(2)
	var nu *mqAttr
	if newAddr != 0 {
		nu = new(mqAttr)
		if err := copyInStruct(t, newAddr, nu); err != nil {
			return 0, err
		}
		if nu.Flags&^unix.O_NONBLOCK != 0 {
			return 0, unix.EINVAL
		}
	}
	f, q, err := mqFile(t, fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	attr := q.Attr()
	old := mqAttr{Flags: int64(f.Flags() & unix.O_NONBLOCK), MaxMsg: attr.MaxMsg, MsgSize: attr.MsgSize, CurMsgs: q.Messages()}
	if nu != nil {
		f.SetStatusFlags(f.Flags()&^unix.O_NONBLOCK | int(nu.Flags))
	}
	if oldAddr != 0 {
		return 0, copyOutStruct(t, oldAddr, &old)
	}
	return 0, nil
}

// MqNotify implements Linux syscall mq_notify(2): one registration per
// queue (EBUSY), which a null sigevent removes if the caller's process
// made it. SIGEV_THREAD is glibc's form: sigev_signo is a netlink socket
// and sigev_value points at a cookie the socket gets back.
func MqNotify(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	fd, evAddr := a.Int(0), a.Ptr(1)
	var n *mqueue.Notification
	if evAddr != 0 {
		var err error
		if n, err = mqNotification(t, evAddr); err != nil {
			return 0, err
		}
	}
	f, q, err := mqFile(t, fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if n == nil {
		q.ClearNotify(t.ThreadGroup())
		return 0, nil
	}
	return 0, q.SetNotify(n)
}

// mqNotification reads the sigevent at addr into a registration by t's
// process.
func mqNotification(t *kernel.Task, addr uintptr) (*mqueue.Notification, error) {
	var b [sizeofSigevent]byte
	if _, err := t.CopyIn(addr, b[:]); err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	value, signo, kind := le.Uint64(b[0:]), int32(le.Uint32(b[8:])), int(int32(le.Uint32(b[12:])))
	n := &mqueue.Notification{Kind: kind, Signo: int(signo), Owner: t.ThreadGroup(), PID: t.PID(), Files: t.FDs()}
	switch kind {
	case mqueue.SigevNone:
	case mqueue.SigevSignal:
		if uint32(signo) > 64 {
			return nil, unix.EINVAL
		}
		if signo != 0 {
			tg := t.ThreadGroup()
			n.Fire = func(from mqueue.Sender) {
				info := kernel.SigInfo{Signo: signo, Code: siMesgQ}
				info.SetSender(tg.SeenID(from.PID), from.UID) // as the notified process sees the sender
				info.SetValue(value)
				tg.SendSignal(info)
			}
		}
	case mqueue.SigevThread:
		cookie := make([]byte, notifyCookieLen)
		if _, err := t.CopyIn(uintptr(value), cookie); err != nil {
			return nil, err
		}
		sock, err := notifySocket(t, signo)
		if err != nil {
			return nil, err
		}
		send := func(what byte) {
			c := append([]byte(nil), cookie...)
			c[notifyCookieLen-1] = what
			sock.Deliver(c)
		}
		n.Fire = func(mqueue.Sender) { send(notifyWokenUp) }
		n.Removed = func() { send(notifyRemoved) }
	default:
		return nil, unix.EINVAL
	}
	return n, nil
}

// deliverer is a socket the kernel can send a datagram to: a netlink
// socket.
type deliverer interface{ Deliver([]byte) }

// notifySocket is SIGEV_THREAD's socket, the netlink socket at fd:
// ENOTSOCK for another file, EINVAL for another family's socket.
func notifySocket(t *kernel.Task, fd int32) (deliverer, error) {
	f, err := t.FDs().Get(fd)
	if err != nil {
		return nil, err
	}
	defer f.DecRef()
	s, ok := f.Impl().(socket.Socket)
	if !ok {
		return nil, unix.ENOTSOCK
	}
	d, ok := s.(deliverer)
	if !ok || s.Family() != unix.AF_NETLINK {
		return nil, unix.EINVAL
	}
	return d, nil
}
