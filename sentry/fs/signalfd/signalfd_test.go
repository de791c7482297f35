package signalfd_test

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// signalfd(2) as guest programs see it: blocked signals of a set, read as
// struct signalfd_siginfo.

const infoSize = 128 // sizeof(struct signalfd_siginfo)

// Offsets in struct signalfd_siginfo (<sys/signalfd.h>).
const (
	ssiSigno  = 0
	ssiCode   = 8
	ssiPid    = 12
	ssiUID    = 16
	ssiStatus = 40
	ssiInt    = 44
	ssiPtr    = 48
)

func bit(sig unix.Signal) uint64 { return 1 << (sig - 1) }

func run(t *testing.T, prog fake.Program) *kerneltest.Sandbox {
	t.Helper()
	s := kerneltest.New(t, syscalls.NewTable())
	if st := s.Run(prog); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
	return s
}

func block(g *fake.Guest, mask uint64) {
	set := g.Alloc(8)
	g.WriteU64(set, mask)
	g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_BLOCK, set, 0, 8)
}

func signalfd(t *testing.T, g *fake.Guest, fd uintptr, mask uint64, flags int) uintptr {
	t.Helper()
	set := g.Alloc(8)
	g.WriteU64(set, mask)
	got, errno := g.Call(unix.SYS_SIGNALFD4, fd, set, 8, uintptr(flags))
	if errno != 0 {
		t.Errorf("signalfd4: %v", errno)
	}
	return got
}

// readInfos reads up to n siginfos; it returns the bytes read.
func readInfos(g *fake.Guest, fd uintptr, n int) ([]byte, unix.Errno) {
	buf := g.Alloc(uintptr(n * infoSize))
	got, errno := g.Call(unix.SYS_READ, fd, buf, uintptr(n*infoSize))
	if errno != 0 {
		return nil, errno
	}
	b := make([]byte, got)
	g.Read(buf, b)
	return b, 0
}

func u32(b []byte, off int) uint32 {
	return uint32(b[off]) | uint32(b[off+1])<<8 | uint32(b[off+2])<<16 | uint32(b[off+3])<<24
}
func u64(b []byte, off int) uint64 { return uint64(u32(b, off)) | uint64(u32(b, off+4))<<32 }

func TestASignalfdReadsASentSignalWithItsSender(t *testing.T) {
	run(t, func(g *fake.Guest) {
		block(g, bit(unix.SIGUSR1))
		fd := signalfd(t, g, ^uintptr(0), bit(unix.SIGUSR1), unix.SFD_NONBLOCK)
		pid, _ := g.Call(unix.SYS_GETPID)
		g.Call(unix.SYS_KILL, pid, uintptr(unix.SIGUSR1))
		b, errno := readInfos(g, fd, 1)
		if errno != 0 || len(b) != infoSize {
			t.Errorf("read = %d bytes, %v; want one siginfo", len(b), errno)
			return
		}
		if u32(b, ssiSigno) != uint32(unix.SIGUSR1) || int32(u32(b, ssiCode)) != 0 /* SI_USER */ ||
			uintptr(u32(b, ssiPid)) != pid || u32(b, ssiUID) != 0 {
			t.Errorf("siginfo: signo %d code %d pid %d uid %d; want SIGUSR1, SI_USER, %d, 0",
				u32(b, ssiSigno), int32(u32(b, ssiCode)), u32(b, ssiPid), u32(b, ssiUID), pid)
		}
		if b, errno := readInfos(g, fd, 1); errno != unix.EAGAIN {
			t.Errorf("second read = %d bytes, %v; want EAGAIN (the signal was taken)", len(b), errno)
		}
	})
}

func TestASignalfdReadsASigqueueValueAsSsiIntAndSsiPtr(t *testing.T) {
	run(t, func(g *fake.Guest) {
		block(g, bit(unix.SIGUSR1))
		fd := signalfd(t, g, ^uintptr(0), bit(unix.SIGUSR1), unix.SFD_NONBLOCK)
		pid, _ := g.Call(unix.SYS_GETPID)
		// siginfo_t for sigqueue: si_code SI_QUEUE, si_pid, si_uid, si_value.
		info := g.Alloc(128)
		g.WriteU32(info+8, ^uint32(0)) // SI_QUEUE (-1)
		g.WriteU32(info+16, uint32(pid))
		g.WriteU64(info+24, 5<<32|1234) // sival_ptr; sival_int is its low half
		if _, errno := g.Call(unix.SYS_RT_SIGQUEUEINFO, pid, uintptr(unix.SIGUSR1), info); errno != 0 {
			t.Errorf("rt_sigqueueinfo: %v", errno)
		}
		b, errno := readInfos(g, fd, 1)
		if errno != 0 || len(b) != infoSize {
			t.Errorf("read = %d bytes, %v", len(b), errno)
			return
		}
		if code := int32(u32(b, ssiCode)); code != -1 {
			t.Errorf("ssi_code = %d, want SI_QUEUE", code)
		}
		if v, p := int32(u32(b, ssiInt)), u64(b, ssiPtr); v != 1234 || p != 5<<32|1234 {
			t.Errorf("ssi_int %d, ssi_ptr %#x; want 1234 and %#x", v, p, 5<<32|1234)
		}
	})
}

func TestASignalfdReadsSIGCHLDWithTheChildsStatus(t *testing.T) {
	run(t, func(g *fake.Guest) {
		block(g, bit(unix.SIGCHLD))
		fd := signalfd(t, g, ^uintptr(0), bit(unix.SIGCHLD), 0)
		child, _ := g.Fork(func(g *fake.Guest) { g.Call(unix.SYS_EXIT_GROUP, 7) })
		b, errno := readInfos(g, fd, 1) // blocks until the child is gone
		if errno != 0 || len(b) != infoSize {
			t.Errorf("read = %d bytes, %v", len(b), errno)
			return
		}
		if u32(b, ssiSigno) != uint32(unix.SIGCHLD) || u32(b, ssiCode) != 1 /* CLD_EXITED */ ||
			int(u32(b, ssiPid)) != child || u32(b, ssiStatus) != 7 {
			t.Errorf("siginfo: signo %d code %d pid %d status %d; want SIGCHLD, CLD_EXITED, %d, 7",
				u32(b, ssiSigno), u32(b, ssiCode), u32(b, ssiPid), u32(b, ssiStatus), child)
		}
		if v := int32(u32(b, ssiInt)); v != 0 {
			t.Errorf("ssi_int of a SIGCHLD = %d, want 0 (it has no value)", v)
		}
		g.Wait(child, 0)
	})
}

func TestAReadTakesAsManySignalsAsFitLowestFirst(t *testing.T) {
	run(t, func(g *fake.Guest) {
		rtmin := unix.Signal(34) // SIGRTMIN as the kernel numbers it
		mask := bit(unix.SIGUSR1) | bit(rtmin)
		block(g, mask)
		fd := signalfd(t, g, ^uintptr(0), mask, unix.SFD_NONBLOCK)
		pid, _ := g.Call(unix.SYS_GETPID)
		for _, sig := range []unix.Signal{rtmin, unix.SIGUSR1, rtmin} {
			g.Call(unix.SYS_KILL, pid, uintptr(sig))
		}
		b, errno := readInfos(g, fd, 4)
		if errno != 0 || len(b) != 3*infoSize {
			t.Errorf("read of room for 4 = %d bytes, %v; want 3 siginfos (real-time signals queue)", len(b), errno)
			return
		}
		for i, want := range []unix.Signal{unix.SIGUSR1, rtmin, rtmin} {
			if got := u32(b, i*infoSize+ssiSigno); got != uint32(want) {
				t.Errorf("siginfo %d: signal %d, want %d", i, got, want)
			}
		}
		buf := g.Alloc(infoSize)
		if n, errno := g.Call(unix.SYS_READ, fd, buf, infoSize-1); errno != unix.EINVAL {
			t.Errorf("read of less than a siginfo = %d, %v; want EINVAL", n, errno)
		}
		if n, errno := g.Call(unix.SYS_WRITE, fd, buf, infoSize); errno != unix.EINVAL {
			t.Errorf("write = %d, %v; want EINVAL", n, errno)
		}
	})
}

func TestSignalfdOnASignalfdReplacesItsSet(t *testing.T) {
	run(t, func(g *fake.Guest) {
		block(g, bit(unix.SIGUSR1)|bit(unix.SIGUSR2))
		fd := signalfd(t, g, ^uintptr(0), bit(unix.SIGUSR1), unix.SFD_NONBLOCK)
		if got := signalfd(t, g, fd, bit(unix.SIGUSR2), 0); got != fd {
			t.Errorf("signalfd on a signalfd = %d, want the same fd %d", got, fd)
		}
		pid, _ := g.Call(unix.SYS_GETPID)
		g.Call(unix.SYS_KILL, pid, uintptr(unix.SIGUSR1))
		pfd := g.Alloc(8)
		revents := func() uint16 {
			g.WriteU32(pfd, uint32(fd))
			g.WriteU32(pfd+4, unix.POLLIN)
			g.Call(unix.SYS_POLL, pfd, 1, 0)
			return uint16(g.ReadU32(pfd+4) >> 16)
		}
		if b, errno := readInfos(g, fd, 1); errno != unix.EAGAIN {
			t.Errorf("read with only SIGUSR1, now out of the set, pending = %d bytes, %v; want EAGAIN", len(b), errno)
		}
		if got := revents(); got != 0 {
			t.Errorf("poll with a signal outside the set pending: %#x, want nothing", got)
		}
		g.Call(unix.SYS_KILL, pid, uintptr(unix.SIGUSR2))
		if got := revents(); got != unix.POLLIN {
			t.Errorf("poll with a signal of the set pending: %#x, want POLLIN", got)
		}
		if b, _ := readInfos(g, fd, 1); len(b) != infoSize || u32(b, ssiSigno) != uint32(unix.SIGUSR2) {
			t.Errorf("read = %d bytes, want SIGUSR2's siginfo", len(b))
		}
		// Only a signalfd can be changed so.
		r, _ := g.Call(unix.SYS_EVENTFD2, 0, 0)
		set := g.Alloc(8)
		if n, errno := g.Call(unix.SYS_SIGNALFD4, r, set, 8, 0); errno != unix.EINVAL {
			t.Errorf("signalfd on an eventfd = %d, %v; want EINVAL", n, errno)
		}
		if n, errno := g.Call(unix.SYS_SIGNALFD4, 99, set, 8, 0); errno != unix.EBADF {
			t.Errorf("signalfd on a closed fd = %d, %v; want EBADF", n, errno)
		}
	})
}

func TestABlockingSignalfdReadWaitsForASignal(t *testing.T) {
	s := kerneltest.New(t, syscalls.NewTable())
	var handled int
	s.Start(func(g *fake.Guest) {
		g.Sigaction(unix.SIGUSR1, fake.SigAction{Handler: s.Platform.Handler(func(*fake.Guest) { handled++ })})
		block(g, bit(unix.SIGUSR1))
		fd := signalfd(t, g, ^uintptr(0), bit(unix.SIGUSR1), 0)
		const delay = 20 * time.Millisecond
		start := time.Now() // before the child can start its delay
		pid, _ := g.Fork(func(g *fake.Guest) {
			g.Compute(delay)
			g.Call(unix.SYS_KILL, 1, uintptr(unix.SIGUSR1))
		})
		if b, errno := readInfos(g, fd, 1); errno != 0 || len(b) != infoSize {
			t.Errorf("read = %d bytes, %v", len(b), errno)
		}
		if el := time.Since(start); el < delay {
			t.Errorf("read returned after %v, before the signal", el)
		}
		g.Wait(pid, 0)
		// Taken by the read, the signal is no longer there to deliver.
		unblock := g.Alloc(8)
		g.WriteU64(unblock, bit(unix.SIGUSR1))
		g.Call(unix.SYS_RT_SIGPROCMASK, unix.SIG_UNBLOCK, unblock, 0, 8)
		if handled != 0 {
			t.Errorf("the handler ran %d times for a signal the signalfd took", handled)
		}
	}, kerneltest.Init{})
	if st := s.Wait(); st != (kernel.ExitStatus{}) {
		t.Errorf("init ended with %+v; kernel log:\n%s", st, s.Log())
	}
}
