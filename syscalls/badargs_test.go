package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// A guest pointer the sandbox does not map is EFAULT in every call that
// reads or writes through it (never a fault of the sentry, never a
// signal), and flags Linux does not define are EINVAL.

// badCall is a call and its arguments, given the fds a program opened.
type badCall struct {
	name string
	nr   uintptr
	args func(f fds) []uintptr
	want unix.Errno
}

// fds are the files a badCall may name.
type fds struct {
	file, dir, r, w, ep, efd, tfd uintptr
	buf, empty                    uintptr // a zeroed page, and ""
}

// openFDs opens one of each kind of file the tables below use.
func openFDs(t *testing.T, g *fake.Guest) fds {
	t.Helper()
	var f fds
	f.file = guestOpen(t, g, "/tmp/f", unix.O_RDWR)
	f.dir = guestOpen(t, g, "/tmp", unix.O_RDONLY|unix.O_DIRECTORY)
	f.r, f.w = guestPipe(t, g, 0)
	f.ep, _ = g.Call(unix.SYS_EPOLL_CREATE1, 0)
	f.efd, _ = g.Call(unix.SYS_EVENTFD2, 1, 0)
	f.tfd, _ = g.Call(unix.SYS_TIMERFD_CREATE, unix.CLOCK_MONOTONIC, 0)
	f.buf = g.Alloc(4096)
	f.empty = g.CString("")
	return f
}

func runBadCalls(t *testing.T, calls []badCall) {
	t.Helper()
	s := kerneltest.New(t, NewTable())
	s.WriteFile("/tmp/f", 0o666, []byte("0123456789"))
	runIn(t, s, func(g *fake.Guest) {
		f := openFDs(t, g)
		g.Call(unix.SYS_WRITE, f.w, g.CString("x"), 1) // the pipe and the eventfd are readable
		for _, c := range calls {
			n, errno := g.Call(c.nr, c.args(f)...)
			expectErrno(t, c.name, n, errno, c.want)
		}
	})
}

func TestUnmappedPointersAreEFAULT(t *testing.T) {
	const bad = unmappedAddr
	const efault = unix.EFAULT
	at := argFDCWD()
	runBadCalls(t, []badCall{
		{"read into", unix.SYS_READ, func(f fds) []uintptr { return []uintptr{f.file, bad, 4} }, efault},
		{"write from", unix.SYS_WRITE, func(f fds) []uintptr { return []uintptr{f.file, bad, 4} }, efault},
		{"pread64 into", unix.SYS_PREAD64, func(f fds) []uintptr { return []uintptr{f.file, bad, 4, 0} }, efault},
		{"pwrite64 from", unix.SYS_PWRITE64, func(f fds) []uintptr { return []uintptr{f.file, bad, 4, 0} }, efault},
		{"read of a pipe into", unix.SYS_READ, func(f fds) []uintptr { return []uintptr{f.r, bad, 4} }, efault},
		{"write to a pipe from", unix.SYS_WRITE, func(f fds) []uintptr { return []uintptr{f.w, bad, 4} }, efault},
		{"read of an eventfd into", unix.SYS_READ, func(f fds) []uintptr { return []uintptr{f.efd, bad, 8} }, efault},
		{"write to an eventfd from", unix.SYS_WRITE, func(f fds) []uintptr { return []uintptr{f.efd, bad, 8} }, efault},
		{"openat of a path at", unix.SYS_OPENAT, func(fds) []uintptr { return []uintptr{at, bad, unix.O_RDONLY} }, efault},
		{"newfstatat of a path at", unix.SYS_NEWFSTATAT, func(fds) []uintptr { return []uintptr{at, bad, 0x1000, 0} }, efault},
		{"newfstatat into", unix.SYS_NEWFSTATAT, func(f fds) []uintptr { return []uintptr{f.file, f.empty, bad, unix.AT_EMPTY_PATH} }, efault},
		{"fstat into", unix.SYS_FSTAT, func(f fds) []uintptr { return []uintptr{f.file, bad} }, efault},
		{"statx into", unix.SYS_STATX, func(f fds) []uintptr { return []uintptr{f.file, f.empty, unix.AT_EMPTY_PATH, 0, bad} }, efault},
		{"getdents64 into", unix.SYS_GETDENTS64, func(f fds) []uintptr { return []uintptr{f.dir, bad, 4096} }, efault},
		{"pipe2 into", unix.SYS_PIPE2, func(fds) []uintptr { return []uintptr{bad, 0} }, efault},
		{"uname into", unix.SYS_UNAME, func(fds) []uintptr { return []uintptr{bad} }, efault},
		{"sysinfo into", unix.SYS_SYSINFO, func(fds) []uintptr { return []uintptr{bad} }, efault},
		{"getcwd into", unix.SYS_GETCWD, func(fds) []uintptr { return []uintptr{bad, 4096} }, efault},
		{"clock_gettime into", unix.SYS_CLOCK_GETTIME, func(fds) []uintptr { return []uintptr{unix.CLOCK_MONOTONIC, bad} }, efault},
		{"gettimeofday into", unix.SYS_GETTIMEOFDAY, func(fds) []uintptr { return []uintptr{bad, 0} }, efault},
		{"nanosleep of", unix.SYS_NANOSLEEP, func(fds) []uintptr { return []uintptr{bad, 0} }, efault},
		{"getrlimit into", unix.SYS_GETRLIMIT, func(fds) []uintptr { return []uintptr{unix.RLIMIT_NOFILE, bad} }, efault},
		{"prlimit64 of", unix.SYS_PRLIMIT64, func(fds) []uintptr { return []uintptr{0, unix.RLIMIT_NOFILE, bad, 0} }, efault},
		{"getrusage into", unix.SYS_GETRUSAGE, func(fds) []uintptr { return []uintptr{0, bad} }, efault},
		{"getrandom into", unix.SYS_GETRANDOM, func(fds) []uintptr { return []uintptr{bad, 16, 0} }, efault},
		{"ioctl FIONREAD into", unix.SYS_IOCTL, func(f fds) []uintptr { return []uintptr{f.r, unix.TIOCINQ, bad} }, efault},
		{"epoll_ctl of an event at", unix.SYS_EPOLL_CTL, func(f fds) []uintptr { return []uintptr{f.ep, unix.EPOLL_CTL_ADD, f.r, bad} }, efault},
		{"timerfd_settime of", unix.SYS_TIMERFD_SETTIME, func(f fds) []uintptr { return []uintptr{f.tfd, 0, bad, 0} }, efault},
		{"timerfd_gettime into", unix.SYS_TIMERFD_GETTIME, func(f fds) []uintptr { return []uintptr{f.tfd, bad} }, efault},
		{"sigaltstack of", unix.SYS_SIGALTSTACK, func(fds) []uintptr { return []uintptr{bad, 0} }, efault},
		{"rt_sigpending into", unix.SYS_RT_SIGPENDING, func(fds) []uintptr { return []uintptr{bad, 8} }, efault},
		{"rt_sigsuspend of", unix.SYS_RT_SIGSUSPEND, func(fds) []uintptr { return []uintptr{bad, 8} }, efault},
		{"signalfd4 of", unix.SYS_SIGNALFD4, func(fds) []uintptr { return []uintptr{^uintptr(0), bad, 8, 0} }, efault},
		{"execve of a path at", unix.SYS_EXECVE, func(fds) []uintptr { return []uintptr{bad, 0, 0} }, efault},
		{"futex at", unix.SYS_FUTEX, func(fds) []uintptr { return []uintptr{bad, 0 /* FUTEX_WAIT */, 0, 0} }, efault},
		{"set_robust_list, which does not read the list", unix.SYS_SET_ROBUST_LIST, func(fds) []uintptr { return []uintptr{bad, 24} }, 0},
	})
}

// TestEpollWaitIntoAnUnmappedArrayIsEFAULT has an event ready, so that
// the copy out is reached.
func TestEpollWaitIntoAnUnmappedArrayIsEFAULT(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		r, w := guestPipe(t, g, 0)
		g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
		ep, _ := g.Call(unix.SYS_EPOLL_CREATE1, 0)
		ev := g.Alloc(12)
		g.WriteU32(ev, unix.EPOLLIN)
		g.Call(unix.SYS_EPOLL_CTL, ep, unix.EPOLL_CTL_ADD, r, ev)
		n, errno := g.Call(unix.SYS_EPOLL_WAIT, ep, unmappedAddr, 4, 0)
		expectErrno(t, "epoll_wait into an unmapped array", n, errno, unix.EFAULT)
	})
}

// TestPipe2IntoAnUnmappedArrayLeavesNoFDsOpen: the fds made before the
// copy out fails are closed again, as on Linux.
func TestPipe2IntoAnUnmappedArrayLeavesNoFDsOpen(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		for range 3 {
			g.Call(unix.SYS_PIPE2, unmappedAddr, 0)
		}
		r, _ := guestPipe(t, g, 0)
		if r != 0 {
			t.Errorf("the next pipe's read end is fd %d, want 0: failed pipe2 calls left fds open", r)
		}
	})
}

func TestUndefinedFlagsAreEINVAL(t *testing.T) {
	const einval = unix.EINVAL
	at := argFDCWD()
	runBadCalls(t, []badCall{
		{"pipe2 with O_APPEND", unix.SYS_PIPE2, func(f fds) []uintptr { return []uintptr{f.buf, unix.O_APPEND} }, einval},
		{"eventfd2 with bit 31", unix.SYS_EVENTFD2, func(fds) []uintptr { return []uintptr{0, 1 << 31} }, einval},
		{"epoll_create1 with O_NONBLOCK", unix.SYS_EPOLL_CREATE1, func(fds) []uintptr { return []uintptr{unix.O_NONBLOCK} }, einval},
		{"epoll_create of size 0", unix.SYS_EPOLL_CREATE, func(fds) []uintptr { return []uintptr{0} }, einval},
		{"epoll_create of size -1", unix.SYS_EPOLL_CREATE, func(fds) []uintptr { return []uintptr{^uintptr(0)} }, einval},
		{"timerfd_create with O_APPEND", unix.SYS_TIMERFD_CREATE, func(fds) []uintptr { return []uintptr{unix.CLOCK_MONOTONIC, unix.O_APPEND} }, einval},
		{"timerfd_create of CLOCK_PROCESS_CPUTIME_ID", unix.SYS_TIMERFD_CREATE, func(fds) []uintptr { return []uintptr{unix.CLOCK_PROCESS_CPUTIME_ID, 0} }, einval},
		{"timerfd_settime with flag 4", unix.SYS_TIMERFD_SETTIME, func(f fds) []uintptr { return []uintptr{f.tfd, 4, f.buf, 0} }, einval},
		{"timerfd_settime of an eventfd", unix.SYS_TIMERFD_SETTIME, func(f fds) []uintptr { return []uintptr{f.efd, 0, f.buf, 0} }, einval},
		{"signalfd4 with O_APPEND", unix.SYS_SIGNALFD4, func(f fds) []uintptr { return []uintptr{^uintptr(0), f.buf, 8, unix.O_APPEND} }, einval},
		{"dup3 with O_NONBLOCK", unix.SYS_DUP3, func(f fds) []uintptr { return []uintptr{f.file, 20, unix.O_NONBLOCK} }, einval},
		{"dup3 onto itself", unix.SYS_DUP3, func(f fds) []uintptr { return []uintptr{f.file, f.file, 0} }, einval},
		{"epoll_ctl of op 99", unix.SYS_EPOLL_CTL, func(f fds) []uintptr { return []uintptr{f.ep, 99, f.r, f.buf} }, einval},
		{"epoll_ctl of a pipe as the epoll", unix.SYS_EPOLL_CTL, func(f fds) []uintptr { return []uintptr{f.r, unix.EPOLL_CTL_DEL, f.w, 0} }, einval},
		{"epoll_wait of maxevents 0", unix.SYS_EPOLL_WAIT, func(f fds) []uintptr { return []uintptr{f.ep, f.buf, 0, 0} }, einval},
		{"epoll_wait of maxevents -1", unix.SYS_EPOLL_WAIT, func(f fds) []uintptr { return []uintptr{f.ep, f.buf, ^uintptr(0), 0} }, einval},
		{"epoll_wait of a pipe", unix.SYS_EPOLL_WAIT, func(f fds) []uintptr { return []uintptr{f.r, f.buf, 1, 0} }, einval},
		{"rt_sigprocmask of how 3", unix.SYS_RT_SIGPROCMASK, func(f fds) []uintptr { return []uintptr{3, f.buf, 0, 8} }, einval},
		{"kill with signal 65", unix.SYS_KILL, func(fds) []uintptr { return []uintptr{1, 65} }, einval},
		{"lseek with whence 9", unix.SYS_LSEEK, func(f fds) []uintptr { return []uintptr{f.file, 0, 9} }, einval},
		{"fcntl of command 9999", unix.SYS_FCNTL, func(f fds) []uintptr { return []uintptr{f.file, 9999, 0} }, einval},
		{"unlinkat with flag 1", unix.SYS_UNLINKAT, func(f fds) []uintptr { return []uintptr{at, f.buf, 1} }, einval},
		{"clock_gettime of clock 99", unix.SYS_CLOCK_GETTIME, func(f fds) []uintptr { return []uintptr{99, f.buf} }, einval},
		{"getrandom with flag 8", unix.SYS_GETRANDOM, func(f fds) []uintptr { return []uintptr{f.buf, 1, 8} }, einval},
		{"memfd_create with flag 1<<10", unix.SYS_MEMFD_CREATE, func(f fds) []uintptr { return []uintptr{f.buf, 1 << 10} }, einval},
		{"close_range with last below first", unix.SYS_CLOSE_RANGE, func(fds) []uintptr { return []uintptr{10, 5, 0} }, einval},
		{"read of an epoll", unix.SYS_READ, func(f fds) []uintptr { return []uintptr{f.ep, f.buf, 8} }, einval},
		{"read of 7 bytes of an eventfd", unix.SYS_READ, func(f fds) []uintptr { return []uintptr{f.efd, f.buf, 7} }, einval},
		{"write to a timerfd", unix.SYS_WRITE, func(f fds) []uintptr { return []uintptr{f.tfd, f.buf, 8} }, einval},
	})
}
