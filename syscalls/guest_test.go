package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// What the tests of this package share: a sandbox whose init runs a guest
// program, and the few calls every program makes.

// runGuest runs prog as the init of a new sandbox; the test fails unless
// it exits with status 0.
func runGuest(t *testing.T, prog fake.Program) *kerneltest.Sandbox {
	t.Helper()
	s := kerneltest.New(t, NewTable())
	runIn(t, s, prog)
	return s
}

// runIn is runGuest in a sandbox the test has prepared.
func runIn(t *testing.T, s *kerneltest.Sandbox, prog fake.Program) {
	t.Helper()
	if st := s.Run(prog); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}

// expectRet fails the test unless a call returned want and wantErr.
func expectRet(t *testing.T, what string, got uintptr, errno unix.Errno, want uintptr, wantErr unix.Errno) {
	t.Helper()
	if errno != wantErr || (wantErr == 0 && got != want) {
		t.Errorf("%s = %d, %v; want %d, %v", what, int64(got), errno, want, wantErr)
	}
}

// expectErrno fails the test unless a call failed with want.
func expectErrno(t *testing.T, what string, got uintptr, errno unix.Errno, want unix.Errno) {
	t.Helper()
	if errno != want {
		t.Errorf("%s = %d, %v; want %v", what, int64(got), errno, want)
	}
}

// guestOpen opens name with flags, or fails the test.
func guestOpen(t *testing.T, g *fake.Guest, name string, flags int) uintptr {
	t.Helper()
	fd, errno := g.Call(unix.SYS_OPENAT, argFDCWD(), g.CString(name), uintptr(flags), 0o644)
	if errno != 0 {
		t.Errorf("open %s: %v", name, errno)
	}
	return fd
}

// guestPipe returns the read and write ends of a new pipe.
func guestPipe(t *testing.T, g *fake.Guest, flags int) (r, w uintptr) {
	t.Helper()
	fds := g.Alloc(8)
	if _, errno := g.Call(unix.SYS_PIPE2, fds, uintptr(flags)); errno != 0 {
		t.Errorf("pipe2: %v", errno)
	}
	return uintptr(g.ReadU32(fds)), uintptr(g.ReadU32(fds + 4))
}

// guestHole returns a mapped page and the address just past it, which no
// access may touch (PROT_NONE, so that no later mmap fills the hole): a
// buffer that runs into it faults there.
func guestHole(t *testing.T, g *fake.Guest) (page, gap uintptr) {
	t.Helper()
	page = g.Alloc(2 * 4096)
	if _, errno := g.Call(unix.SYS_MPROTECT, page+4096, 4096, unix.PROT_NONE); errno != 0 {
		t.Errorf("mprotect: %v", errno)
	}
	return page, page + 4096
}

// guestIovecs writes an array of struct iovec {base, len} to new guest memory.
func guestIovecs(g *fake.Guest, v ...[2]uint64) uintptr {
	arr := g.Alloc(uintptr(16 * max(len(v), 1)))
	for i, iov := range v {
		g.WriteU64(arr+uintptr(16*i), iov[0])
		g.WriteU64(arr+uintptr(16*i+8), iov[1])
	}
	return arr
}

// guestFIONREAD is how many bytes wait in a pipe (FIONREAD is TIOCINQ).
func guestFIONREAD(t *testing.T, g *fake.Guest, fd uintptr) int {
	t.Helper()
	n := g.Alloc(4)
	if _, errno := g.Call(unix.SYS_IOCTL, fd, unix.TIOCINQ, n); errno != 0 {
		t.Errorf("FIONREAD: %v", errno)
	}
	return int(g.ReadU32(n))
}

// argFDCWD is AT_FDCWD as a register holds it.
func argFDCWD() uintptr {
	v := unix.AT_FDCWD
	return uintptr(v)
}

// unmappedAddr is an address no sandbox maps: the first page.
const unmappedAddr = 0x10
