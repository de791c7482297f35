package syscalls

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/socket"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// msghdr is struct msghdr.
type msghdr struct {
	Name       uint64
	Namelen    uint32
	_          uint32
	Iov        uint64
	Iovlen     uint64
	Control    uint64
	Controllen uint64
	Flags      int32
	_          uint32
}

// Offsets of the fields recvmsg writes back.
const (
	msghdrNamelen    = 8
	msghdrControllen = 40
	msghdrFlags      = 48
	sizeofMsghdr     = 56
	sizeofMmsghdr    = 64
)

// Sendto implements Linux syscall sendto(2).
func Sendto(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if err := userRange(a[1], a[2]); err != nil {
		return 0, err
	}
	m := &socket.SendMessage{Flags: sendFlags(f, int(a.Int(3)))}
	if a.Ptr(4) != 0 {
		if m.To, err = copyInAddr(t, a.Ptr(4), a.Int(5)); err != nil {
			return 0, err
		}
		if len(m.To) == 0 {
			m.To = nil
		}
	}
	n, err := s.SendMsg(t, ioseq(t, a.Ptr(1), a[2]), m)
	return retErr(uintptr(n), err)
}

// sendFlags adds MSG_DONTWAIT for an O_NONBLOCK file, as Linux does.
func sendFlags(f *vfs.File, flags int) int {
	if f.Flags()&unix.O_NONBLOCK != 0 {
		flags |= unix.MSG_DONTWAIT
	}
	return flags
}

// Recvfrom implements Linux syscall recvfrom(2).
func Recvfrom(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if err := userRange(a[1], a[2]); err != nil {
		return 0, err
	}
	m := &socket.RecvMessage{Flags: sendFlags(f, int(a.Int(3)))}
	n, err := s.RecvMsg(t, ioseq(t, a.Ptr(1), a[2]), m)
	m.Control.Release()
	if err != nil {
		return 0, err
	}
	if a.Ptr(4) != 0 {
		if err := copyOutAddr(t, m.From, a.Ptr(4), a.Ptr(5)); err != nil {
			return 0, err
		}
	}
	return uintptr(n), nil
}

// Sendmsg implements Linux syscall sendmsg(2).
func Sendmsg(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	n, err := sendMsg(t, f, s, a.Ptr(1), int(a.Int(2)))
	return retErr(uintptr(n), err)
}

// readMsghdr reads a struct msghdr and its iovecs (copy_msghdr_from_user):
// a name longer than sockaddr_storage is cut to it, too many iovecs is
// EMSGSIZE.
func readMsghdr(t *kernel.Task, addr uintptr) (msghdr, []vfs.Range, error) {
	var h msghdr
	if err := copyInStruct(t, addr, &h); err != nil {
		return h, nil, err
	}
	if int32(h.Namelen) < 0 {
		return h, nil, unix.EINVAL
	}
	h.Namelen = min(h.Namelen, linuxabi.SizeofSockaddrStorage)
	if h.Name == 0 {
		h.Namelen = 0
	}
	if h.Iovlen > linuxabi.UIO_MAXIOV {
		return h, nil, unix.EMSGSIZE
	}
	ranges, err := copyInIovecs(t, uintptr(h.Iov), h.Iovlen)
	return h, ranges, err
}

func sendMsg(t *kernel.Task, f *vfs.File, s socket.Socket, addr uintptr, flags int) (int, error) {
	h, ranges, err := readMsghdr(t, addr)
	if err != nil {
		return 0, err
	}
	m := &socket.SendMessage{Flags: sendFlags(f, flags)}
	if h.Namelen > 0 {
		if m.To, err = copyInAddr(t, uintptr(h.Name), int32(h.Namelen)); err != nil {
			return 0, err
		}
	}
	if h.Controllen > 0 {
		if h.Controllen > 1<<31-1 || h.Controllen > linuxabi.OptmemMax {
			return 0, unix.ENOBUFS
		}
		ctl := make([]byte, h.Controllen)
		if _, err := t.CopyIn(uintptr(h.Control), ctl); err != nil {
			return 0, unix.EFAULT
		}
		if m.Control, err = socket.ParseCmsgs(ctl); err != nil {
			return 0, err
		}
	}
	return s.SendMsg(t, vfs.NewIOSeqRanges(t.MM(), ranges).WithContext(t), m)
}

// Recvmsg implements Linux syscall recvmsg(2).
func Recvmsg(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	n, err := recvMsg(t, f, s, a.Ptr(1), int(a.Int(2)))
	return retErr(uintptr(n), err)
}

// recvMsg is ____sys_recvmsg: the data, then the name, msg_flags (with
// MSG_CMSG_CLOEXEC as asked) and the control data written back.
func recvMsg(t *kernel.Task, f *vfs.File, s socket.Socket, addr uintptr, flags int) (int, error) {
	h, ranges, err := readMsghdr(t, addr)
	if err != nil {
		return 0, err
	}
	m := &socket.RecvMessage{Flags: sendFlags(f, flags)}
	n, err := s.RecvMsg(t, vfs.NewIOSeqRanges(t.MM(), ranges).WithContext(t), m)
	if err != nil {
		m.Control.Release()
		return 0, err
	}
	if h.Name != 0 {
		if k := min(int(h.Namelen), len(m.From)); k > 0 {
			if _, err := t.CopyOut(uintptr(h.Name), m.From[:k]); err != nil {
				m.Control.Release()
				return 0, unix.EFAULT
			}
		}
	}
	if err := copyOutU32(t, addr+msghdrNamelen, uint32(len(m.From))); err != nil {
		m.Control.Release()
		return 0, err
	}
	room := int(min(h.Controllen, 1<<31-1))
	if h.Control == 0 {
		room = 0
	}
	w := socket.NewControlWriter(room)
	for _, c := range m.Control.Cmsgs {
		w.Put(c.Level, c.Type, c.Data)
	}
	w.PutRights(t, m.Control.Rights, flags&unix.MSG_CMSG_CLOEXEC != 0, nofile(t))
	outFlags := m.OutFlags | flags&unix.MSG_CMSG_CLOEXEC
	if w.Truncated() || room == 0 && m.Control.Wanted {
		outFlags |= unix.MSG_CTRUNC
	}
	if ctl := w.Bytes(); len(ctl) > 0 {
		if _, err := t.CopyOut(uintptr(h.Control), ctl); err != nil {
			return 0, unix.EFAULT
		}
	}
	if err := copyOutU64(t, addr+msghdrControllen, uint64(len(w.Bytes()))); err != nil {
		return 0, err
	}
	if err := copyOutU32(t, addr+msghdrFlags, uint32(outFlags)); err != nil {
		return 0, err
	}
	return n, nil
}

// Sendmmsg implements Linux syscall sendmmsg(2): messages are sent in
// order until one fails, which fails the call only if it was the first.
func Sendmmsg(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	vec, vlen, flags := a.Ptr(1), min(a.Uint(2), linuxabi.UIO_MAXIOV), int(a.Int(3))
	done := uint32(0)
	for ; done < vlen; done++ {
		hdr := vec + uintptr(done)*sizeofMmsghdr
		n, err := sendMsg(t, f, s, hdr, flags)
		if err == nil {
			err = copyOutU32(t, hdr+sizeofMsghdr, uint32(n))
		}
		if err != nil {
			if done == 0 {
				return 0, err
			}
			break
		}
	}
	return uintptr(done), nil
}

// Recvmmsg implements Linux syscall recvmmsg(2): MSG_WAITFORONE stops
// waiting after the first message; the timeout is looked at after each
// message (a wait for one is not cut short by it), and what is left of it
// is written back.
func Recvmmsg(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	vec, vlen, flags, tsAddr := a.Ptr(1), min(a.Uint(2), linuxabi.UIO_MAXIOV), int(a.Int(3)), a.Ptr(4)
	var end time.Time
	if tsAddr != 0 {
		ts, err := copyInTimespec(t, tsAddr)
		if err != nil {
			return 0, err
		}
		end = time.Now().Add(timespecDuration(ts))
	}
	done := uint32(0)
	for done < vlen {
		hdr := vec + uintptr(done)*sizeofMmsghdr
		n, err := recvMsg(t, f, s, hdr, flags)
		if err == nil {
			err = copyOutU32(t, hdr+sizeofMsghdr, uint32(n))
		}
		if err != nil {
			if done == 0 {
				return 0, err
			}
			break
		}
		done++
		if flags&unix.MSG_WAITFORONE != 0 {
			flags |= unix.MSG_DONTWAIT
		}
		if tsAddr != 0 && !time.Now().Before(end) {
			break
		}
	}
	if tsAddr != 0 {
		left := max(time.Until(end), 0)
		ts := unix.NsecToTimespec(int64(left))
		if err := copyOutStruct(t, tsAddr, &ts); err != nil {
			return 0, err
		}
	}
	return uintptr(done), nil
}
