package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/inet"
	"github.com/moat-sandbox/moat/sentry/net/netlink"
	"github.com/moat-sandbox/moat/sentry/net/socket"
	"github.com/moat-sandbox/moat/sentry/net/unixsock"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// newSocket makes a socket of a family the sentry has, after the checks
// Linux's __sock_create makes first.
func newSocket(t *kernel.Task, domain, typ, protocol int) (socket.Socket, error) {
	if domain < 0 || domain >= linuxabi.NPROTO {
		return nil, unix.EAFNOSUPPORT
	}
	if typ < 0 || typ >= linuxabi.SOCK_MAX {
		return nil, unix.EINVAL
	}
	switch domain {
	case unix.AF_UNIX:
		return unixsock.New(t, typ, protocol)
	case unix.AF_INET, unix.AF_INET6:
		return inet.New(t, domain, typ, protocol)
	case unix.AF_NETLINK:
		return netlink.New(t, typ, protocol)
	case unix.AF_PACKET:
		if !t.Capable(unix.CAP_NET_RAW) {
			return nil, unix.EPERM
		}
	}
	return nil, unix.EAFNOSUPPORT
}

// socketFlags splits socket(2)'s type into the type and SOCK_NONBLOCK and
// SOCK_CLOEXEC; other flag bits are EINVAL.
func socketFlags(arg int32) (typ int, nonblock, cloexec bool, err error) {
	typ = int(arg) & linuxabi.SOCK_TYPE_MASK
	flags := int(arg) &^ linuxabi.SOCK_TYPE_MASK
	if flags&^(unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC) != 0 {
		return 0, false, false, unix.EINVAL
	}
	return typ, flags&unix.SOCK_NONBLOCK != 0, flags&unix.SOCK_CLOEXEC != 0, nil
}

// installSocket opens s as a file and gives it an fd.
func installSocket(t *kernel.Task, s socket.Socket, nonblock, cloexec bool) (int32, error) {
	f := socket.NewFile(s, nonblock)
	defer f.DecRef()
	return t.FDs().Install(f, 0, cloexec, nofile(t))
}

// Socket implements Linux syscall socket(2).
func Socket(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	typ, nonblock, cloexec, err := socketFlags(a.Int(1))
	if err != nil {
		return 0, err
	}
	s, err := newSocket(t, int(a.Int(0)), typ, int(a.Int(2)))
	if err != nil {
		return 0, err
	}
	fd, err := installSocket(t, s, nonblock, cloexec)
	return retErr(uintptr(fd), err)
}

// Socketpair implements Linux syscall socketpair(2): AF_UNIX alone has
// pairs (EOPNOTSUPP for the other families the sentry has).
func Socketpair(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	domain := int(a.Int(0))
	typ, nonblock, cloexec, err := socketFlags(a.Int(1))
	if err != nil {
		return 0, err
	}
	if domain != unix.AF_UNIX {
		s, err := newSocket(t, domain, typ, int(a.Int(2)))
		if err != nil {
			return 0, err
		}
		s.Release()
		return 0, unix.EOPNOTSUPP
	}
	if typ < 0 || typ >= linuxabi.SOCK_MAX {
		return 0, unix.EINVAL
	}
	s1, s2, err := unixsock.Pair(t, typ, int(a.Int(2)))
	if err != nil {
		return 0, err
	}
	f1, f2 := socket.NewFile(s1, nonblock), socket.NewFile(s2, nonblock)
	defer f1.DecRef()
	defer f2.DecRef()
	fd1, err := t.FDs().Install(f1, 0, cloexec, nofile(t))
	if err != nil {
		return 0, err
	}
	fd2, err := t.FDs().Install(f2, 0, cloexec, nofile(t))
	if err != nil {
		closeFD(t, fd1)
		return 0, err
	}
	fds := [2]int32{fd1, fd2}
	if err := copyOutStruct(t, a.Ptr(3), &fds); err != nil {
		closeFD(t, fd1)
		closeFD(t, fd2)
		return 0, err
	}
	return 0, nil
}

// socketAt returns the socket open at fd: EBADF for no file, ENOTSOCK
// for a file that is not a socket. The caller drops the file.
func socketAt(t *kernel.Task, fd int32) (*vfs.File, socket.Socket, error) {
	f, err := t.FDs().Get(fd)
	if err != nil {
		return nil, nil, err
	}
	s, ok := f.Impl().(socket.Socket)
	if !ok {
		f.DecRef()
		return nil, nil, unix.ENOTSOCK
	}
	return f, s, nil
}

// copyInAddr reads a socket address argument (move_addr_to_kernel):
// longer than sockaddr_storage, or negative, is EINVAL.
func copyInAddr(t *kernel.Task, addr uintptr, n int32) ([]byte, error) {
	if n < 0 || n > linuxabi.SizeofSockaddrStorage {
		return nil, unix.EINVAL
	}
	b := make([]byte, n)
	if n == 0 {
		return b, nil
	}
	if _, err := t.CopyIn(addr, b); err != nil {
		return nil, unix.EFAULT
	}
	return b, nil
}

// copyOutAddr writes an address back to a buffer of the length at
// lenAddr (move_addr_to_user): as much as fits, and the whole length.
func copyOutAddr(t *kernel.Task, name []byte, addr, lenAddr uintptr) error {
	var ulen int32
	if err := copyInStruct(t, lenAddr, &ulen); err != nil {
		return err
	}
	if ulen < 0 {
		return unix.EINVAL
	}
	if n := min(int(ulen), len(name)); n > 0 {
		if _, err := t.CopyOut(addr, name[:n]); err != nil {
			return unix.EFAULT
		}
	}
	return copyOutU32(t, lenAddr, uint32(len(name)))
}

// Bind implements Linux syscall bind(2).
func Bind(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	addr, err := copyInAddr(t, a.Ptr(1), a.Int(2))
	if err != nil {
		return 0, err
	}
	if err := landlockSocket(t, s, addr, unix.LANDLOCK_ACCESS_NET_BIND_TCP); err != nil {
		return 0, err
	}
	return 0, s.Bind(t, addr)
}

// Listen implements Linux syscall listen(2): a backlog past
// net.core.somaxconn (or negative) is somaxconn.
func Listen(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	backlog := a.Int(1)
	if uint32(backlog) > unix.SOMAXCONN {
		backlog = unix.SOMAXCONN
	}
	return 0, s.Listen(t, int(backlog))
}

// Connect implements Linux syscall connect(2).
func Connect(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	addr, err := copyInAddr(t, a.Ptr(1), a.Int(2))
	if err != nil {
		return 0, err
	}
	if err := landlockSocket(t, s, addr, unix.LANDLOCK_ACCESS_NET_CONNECT_TCP); err != nil {
		return 0, err
	}
	return 0, s.Connect(t, addr, f.Flags()&unix.O_NONBLOCK != 0)
}

// Accept implements Linux syscall accept(2).
func Accept(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return accept(t, a.Int(0), a.Ptr(1), a.Ptr(2), 0)
}

// Accept4 implements Linux syscall accept4(2).
func Accept4(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return accept(t, a.Int(0), a.Ptr(1), a.Ptr(2), int(a.Int(3)))
}

func accept(t *kernel.Task, fd int32, addr, lenAddr uintptr, flags int) (uintptr, error) {
	if flags&^(unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK) != 0 {
		return 0, unix.EINVAL
	}
	f, s, err := socketAt(t, fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if addr != 0 {
		var ulen int32
		if err := copyInStruct(t, lenAddr, &ulen); err != nil {
			return 0, err
		}
		if ulen < 0 {
			return 0, unix.EINVAL
		}
	}
	ns, err := s.Accept(t, f.Flags()&unix.O_NONBLOCK != 0)
	if err != nil {
		return 0, err
	}
	nf := socket.NewFile(ns, flags&unix.SOCK_NONBLOCK != 0)
	defer nf.DecRef()
	if addr != 0 {
		peer, err := ns.PeerName()
		if err != nil {
			return 0, unix.ECONNABORTED
		}
		if err := copyOutAddr(t, peer, addr, lenAddr); err != nil {
			return 0, err
		}
	}
	nfd, err := t.FDs().Install(nf, 0, flags&unix.SOCK_CLOEXEC != 0, nofile(t))
	return retErr(uintptr(nfd), err)
}

// Getsockname implements Linux syscall getsockname(2).
func Getsockname(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return 0, copyOutAddr(t, s.SockName(), a.Ptr(1), a.Ptr(2))
}

// Getpeername implements Linux syscall getpeername(2).
func Getpeername(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	name, err := s.PeerName()
	if err != nil {
		return 0, err
	}
	return 0, copyOutAddr(t, name, a.Ptr(1), a.Ptr(2))
}

// Shutdown implements Linux syscall shutdown(2).
func Shutdown(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	return 0, s.Shutdown(t, int(a.Int(1)))
}

// Setsockopt implements Linux syscall setsockopt(2).
func Setsockopt(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	n := a.Int(4)
	if n < 0 {
		return 0, unix.EINVAL
	}
	val := make([]byte, min(n, 1<<16))
	if _, err := t.CopyIn(a.Ptr(3), val); err != nil && len(val) > 0 {
		return 0, unix.EFAULT
	}
	return 0, s.SetSockOpt(t, int(a.Int(1)), int(a.Int(2)), val)
}

// Getsockopt implements Linux syscall getsockopt(2): the value is cut to
// the guest's optlen, which then says how much was written.
func Getsockopt(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	f, s, err := socketAt(t, a.Int(0))
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	var ulen int32
	if err := copyInStruct(t, a.Ptr(4), &ulen); err != nil {
		return 0, err
	}
	if ulen < 0 {
		return 0, unix.EINVAL
	}
	val, err := s.GetSockOpt(t, int(a.Int(1)), int(a.Int(2)), int(ulen))
	if err != nil {
		return 0, err
	}
	n := min(int(ulen), len(val))
	if n > 0 {
		if _, err := t.CopyOut(a.Ptr(3), val[:n]); err != nil {
			return 0, unix.EFAULT
		}
	}
	return 0, copyOutU32(t, a.Ptr(4), uint32(n))
}
