package syscalls

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/epoll"
	"github.com/moat-sandbox/moat/sentry/fs/eventfd"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// installAnon installs a new file that has no path (an epoll, an eventfd).
func installAnon(t *kernel.Task, impl vfs.FileImpl, flags int, cloexec bool) (uintptr, error) {
	f := vfs.NewFile(impl, vfs.Path{}, flags)
	defer f.DecRef()
	fd, err := t.FDs().Install(f, 0, cloexec, nofile(t))
	return retErr(uintptr(fd), err)
}

// EpollCreate implements Linux syscall epoll_create(2).
func EpollCreate(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if a.Int(0) <= 0 {
		return 0, unix.EINVAL
	}
	return installAnon(t, epoll.New(), unix.O_RDWR, false)
}

// EpollCreate1 implements Linux syscall epoll_create1(2).
func EpollCreate1(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := int(a.Int(0))
	if flags&^unix.EPOLL_CLOEXEC != 0 {
		return 0, unix.EINVAL
	}
	return installAnon(t, epoll.New(), unix.O_RDWR, flags&unix.EPOLL_CLOEXEC != 0)
}

// epollFile returns the epoll instance open at fd.
func epollFile(t *kernel.Task, fd int32) (*vfs.File, *epoll.File, error) {
	f, err := t.FDs().Get(fd)
	if err != nil {
		return nil, nil, err
	}
	ep, ok := f.Impl().(*epoll.File)
	if !ok {
		f.DecRef()
		return nil, nil, unix.EINVAL
	}
	return f, ep, nil
}

// EpollCtl implements Linux syscall epoll_ctl(2).
func EpollCtl(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	epfd, op, fd, evAddr := a.Int(0), a.Int(1), a.Int(2), a.Ptr(3)
	ef, ep, err := epollFile(t, epfd)
	if err != nil {
		return 0, err
	}
	defer ef.DecRef()
	f, err := t.FDs().Get(fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	if fd == epfd {
		return 0, unix.EINVAL
	}
	var ev epoll.Event
	if op != unix.EPOLL_CTL_DEL {
		// struct epoll_event is packed on x86-64: events (4), data (8).
		var b [12]byte
		if _, err := t.CopyIn(evAddr, b[:]); err != nil {
			return 0, err
		}
		ev = epoll.Event{Events: binary.LittleEndian.Uint32(b[0:]), Data: binary.LittleEndian.Uint64(b[4:])}
	}
	switch op {
	case unix.EPOLL_CTL_ADD:
		return 0, ep.Add(fd, f, ev)
	case unix.EPOLL_CTL_MOD:
		return 0, ep.Modify(fd, f, ev)
	case unix.EPOLL_CTL_DEL:
		return 0, ep.Delete(fd, f)
	}
	return 0, unix.EINVAL
}

// EpollWait implements Linux syscall epoll_wait(2).
func EpollWait(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	var d time.Time
	return epollWait(t, a.Int(0), a.Ptr(1), int(a.Int(2)), msDeadline(a.Int(3), &d))
}

// EpollPwait implements Linux syscall epoll_pwait(2).
func EpollPwait(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	if err := tempMask(t, a.Ptr(4), a[5]); err != nil {
		return 0, err
	}
	var d time.Time
	n, err := epollWait(t, a.Int(0), a.Ptr(1), int(a.Int(2)), msDeadline(a.Int(3), &d))
	endTempMask(t, err)
	return n, err
}

// EpollPwait2 implements Linux syscall epoll_pwait2(2): a timespec timeout.
func EpollPwait2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	deadline, err := timespecDeadline(t, a.Ptr(3))
	if err != nil {
		return 0, err
	}
	if err := tempMask(t, a.Ptr(4), a[5]); err != nil {
		return 0, err
	}
	n, err := epollWait(t, a.Int(0), a.Ptr(1), int(a.Int(2)), deadline)
	endTempMask(t, err)
	return n, err
}

// msDeadline turns a millisecond timeout (negative: none) into a deadline,
// kept in the caller's d so that it need not be allocated.
func msDeadline(ms int32, d *time.Time) *time.Time {
	if ms < 0 {
		return nil
	}
	*d = time.Now().Add(time.Duration(ms) * time.Millisecond)
	return d
}

func epollWait(t *kernel.Task, epfd int32, evAddr uintptr, max int, deadline *time.Time) (uintptr, error) {
	if max <= 0 || max > linuxabi.EP_MAX_EVENTS {
		return 0, unix.EINVAL
	}
	ef, ep, err := epollFile(t, epfd)
	if err != nil {
		return 0, err
	}
	defer ef.DecRef()
	// An event loop asks for a few events at a time: up to
	// epollBatch of them cost no allocation.
	var evBuf [epollBatch]epoll.Event
	var outBuf [epollBatch * epollEventSize]byte
	evs, err := ep.Wait(t, evBuf[:0], max, deadline)
	if err != nil {
		return 0, kernel.ERESTARTNOHAND
	}
	out := outBuf[:0]
	if len(evs) > epollBatch {
		out = make([]byte, 0, epollEventSize*len(evs))
	}
	for _, ev := range evs {
		out = binary.LittleEndian.AppendUint32(out, ev.Events)
		out = binary.LittleEndian.AppendUint64(out, ev.Data)
	}
	if _, err := t.CopyOut(evAddr, out); err != nil {
		return 0, err
	}
	return uintptr(len(evs)), nil
}

// struct epoll_event is packed on x86-64: 4 bytes of events, 8 of data.
const (
	epollEventSize = 12
	epollBatch     = 64
)

// Eventfd implements Linux syscall eventfd(2).
func Eventfd(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return installAnon(t, eventfd.New(uint64(a.Uint(0)), false), unix.O_RDWR, false)
}

// Eventfd2 implements Linux syscall eventfd2(2).
func Eventfd2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := int(a.Int(1))
	if flags&^(unix.EFD_CLOEXEC|unix.EFD_NONBLOCK|unix.EFD_SEMAPHORE) != 0 {
		return 0, unix.EINVAL
	}
	return installAnon(t, eventfd.New(uint64(a.Uint(0)), flags&unix.EFD_SEMAPHORE != 0),
		unix.O_RDWR|flags&unix.EFD_NONBLOCK, flags&unix.EFD_CLOEXEC != 0)
}
