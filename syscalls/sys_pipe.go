package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/fs/pipe"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Pipe implements Linux syscall pipe(2).
func Pipe(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, makePipe(t, a.Ptr(0), 0)
}

// Pipe2 implements Linux syscall pipe2(2).
func Pipe2(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	flags := int(a.Int(1))
	if flags&^(unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_DIRECT) != 0 {
		return 0, unix.EINVAL
	}
	return 0, makePipe(t, a.Ptr(0), flags)
}

func makePipe(t *kernel.Task, fdsAddr uintptr, flags int) error {
	c := fsCreds(t)
	r, w := pipe.New(flags&unix.O_DIRECT != 0, c.FSUID, c.FSGID)
	status := flags & (unix.O_NONBLOCK | unix.O_DIRECT)
	rf := vfs.NewFile(r, vfs.Path{}, unix.O_RDONLY|status)
	wf := vfs.NewFile(w, vfs.Path{}, unix.O_WRONLY|status)
	defer rf.DecRef()
	defer wf.DecRef()
	cloexec := flags&unix.O_CLOEXEC != 0
	rfd, err := t.FDs().Install(rf, 0, cloexec, nofile(t))
	if err != nil {
		return err
	}
	wfd, err := t.FDs().Install(wf, 0, cloexec, nofile(t))
	if err != nil {
		closeFD(t, rfd)
		return err
	}
	fds := [2]int32{rfd, wfd}
	if err := copyOutStruct(t, fdsAddr, &fds); err != nil {
		closeFD(t, rfd)
		closeFD(t, wfd)
		return err
	}
	return nil
}

func closeFD(t *kernel.Task, fd int32) {
	if f, err := t.FDs().Remove(fd); err == nil {
		f.DecRef()
	}
}

// pipeSizer is a pipe end, for F_GETPIPE_SZ and F_SETPIPE_SZ.
type pipeSizer interface {
	Size() int
	SetSize(int) (int, error)
}
