package syscalls

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// Fuzz targets for the structures handlers decode from raw guest bytes:
// iovec arrays, fd_sets, pollfd arrays, sigsets and sigactions, epoll
// events and itimerspecs. Each input runs in a sandbox of its own; the
// property is that the sentry never panics (a panic would end the test
// binary) and that every call answers as Linux could, with one of the
// errnos its man page lists. The seeds run as ordinary tests.

// allowed fails the test unless errno is one of ok (0 is success).
func allowed(t *testing.T, what string, errno unix.Errno, ok ...unix.Errno) {
	t.Helper()
	if errno != 0 && !slices.Contains(ok, errno) {
		t.Errorf("%s: %v, which Linux does not give here", what, errno)
	}
}

// guestBytes puts b in new guest memory, or returns unmappedAddr for
// nothing. The page after it is not accessible, so that a structure longer
// than b faults.
func guestBytes(t *testing.T, g *fake.Guest, b []byte) uintptr {
	if len(b) == 0 {
		return unmappedAddr
	}
	size := (uintptr(len(b)) + 4095) &^ 4095
	base := g.Alloc(size + 4096)
	g.Call(unix.SYS_MPROTECT, base+size, 4096, unix.PROT_NONE)
	addr := base + size - uintptr(len(b)) // b ends where the hole starts
	g.Write(addr, b)
	return addr
}

// fuzzSandbox has a file with data for the calls to work on.
func fuzzSandbox(t *testing.T) *kerneltest.Sandbox {
	s := kerneltest.New(t, NewTable())
	s.WriteFile("/tmp/f", 0o666, []byte("0123456789abcdef"))
	return s
}

func iovecSeed(v ...[2]uint64) []byte {
	var b []byte
	for _, iov := range v {
		b = binary.LittleEndian.AppendUint64(b, iov[0])
		b = binary.LittleEndian.AppendUint64(b, iov[1])
	}
	return b
}

func FuzzIovecArray(f *testing.F) {
	f.Add(iovecSeed([2]uint64{0x400000, 4}), uint64(1))
	f.Add(iovecSeed([2]uint64{0x400000, 4}, [2]uint64{0, 0}), uint64(2))
	f.Add(iovecSeed([2]uint64{0x400000, 1 << 63}), uint64(1))
	f.Add(iovecSeed([2]uint64{0xffff_8880_0000_0000, 1}), uint64(1))
	f.Add(iovecSeed([2]uint64{1<<64 - 4096, 8192}, [2]uint64{0x400000, 1}), uint64(2))
	f.Add(iovecSeed([2]uint64{0x400000, 0x7ffff000}, [2]uint64{0x400000, 0x7ffff000}), uint64(2))
	f.Add([]byte{}, uint64(1025))
	f.Add(make([]byte, 16*1024), uint64(1024))
	f.Add(iovecSeed([2]uint64{0x400000, 4}), uint64(1<<64-1))
	f.Fuzz(func(t *testing.T, arr []byte, count uint64) {
		if len(arr) > 16*1025 {
			arr = arr[:16*1025]
		}
		s := fuzzSandbox(t)
		runIn(t, s, func(g *fake.Guest) {
			fd := guestOpen(t, g, "/tmp/f", unix.O_RDWR)
			addr := guestBytes(t, g, arr)
			var total uint64
			for i := 0; i+16 <= len(arr) && uint64(i/16) < count; i += 16 {
				total += min(binary.LittleEndian.Uint64(arr[i+8:]), 1<<62)
			}
			for _, c := range vectoredCalls {
				n, errno := g.Call(c.nr, fd, addr, uintptr(count), 0)
				allowed(t, c.name, errno, unix.EINVAL, unix.EFAULT)
				if errno == 0 && (uint64(n) > total || n > 0x7ffff000) {
					t.Errorf("%s moved %d bytes, more than its iovecs hold (%d) or MAX_RW_COUNT", c.name, n, total)
				}
			}
		})
	})
}

func FuzzFDSets(f *testing.F) {
	ones := slices.Repeat([]byte{0xff}, 128)
	f.Add(int32(8), []byte{0x0f}, []byte{0x0f}, []byte{0x0f}, uint8(7))
	f.Add(int32(1024), ones, ones, ones, uint8(7))
	f.Add(int32(1024), make([]byte, 128), []byte{}, make([]byte, 128), uint8(5))
	f.Add(int32(-1), []byte{1}, []byte{1}, []byte{1}, uint8(7))
	f.Add(int32(1<<30), make([]byte, 128), make([]byte, 128), make([]byte, 128), uint8(7))
	f.Add(int32(65), make([]byte, 8), []byte{}, []byte{}, uint8(1))
	f.Fuzz(func(t *testing.T, nfds int32, rd, wr, ex []byte, present uint8) {
		s := fuzzSandbox(t)
		runIn(t, s, func(g *fake.Guest) {
			_, w := guestPipe(t, g, unix.O_NONBLOCK)
			g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
			guestOpen(t, g, "/tmp/f", unix.O_RDWR)
			var sets [3]uintptr
			setBits := 0
			for i, b := range [][]byte{rd, wr, ex} {
				b = b[:min(len(b), 128)]
				if present&(1<<i) != 0 {
					sets[i] = guestBytes(t, g, b)
					for _, x := range b {
						setBits += bits.OnesCount8(x)
					}
				}
			}
			n, errno := g.Call(unix.SYS_SELECT, uintptr(uint32(nfds)), sets[0], sets[1], sets[2], timeval(g, 0))
			allowed(t, "select", errno, unix.EBADF, unix.EINVAL, unix.EFAULT)
			if errno == 0 && int(n) > setBits {
				t.Errorf("select counted %d ready, with %d bits set in all", n, setBits)
			}
			n, errno = g.Call(unix.SYS_PSELECT6, uintptr(uint32(nfds)), sets[0], sets[1], sets[2], timespec(g, 0), 0)
			allowed(t, "pselect6", errno, unix.EBADF, unix.EINVAL, unix.EFAULT)
		})
	})
}

func FuzzPollFDs(f *testing.F) {
	entry := func(fd int32, events uint16) []byte {
		b := binary.LittleEndian.AppendUint32(nil, uint32(fd))
		b = binary.LittleEndian.AppendUint16(b, events)
		return binary.LittleEndian.AppendUint16(b, 0xffff)
	}
	f.Add(slices.Concat(entry(0, unix.POLLIN), entry(1, unix.POLLOUT)), uint64(2))
	f.Add(slices.Concat(entry(-1, 0xffff), entry(99, unix.POLLIN)), uint64(2))
	f.Add(entry(0, 0xffff), uint64(2))
	f.Add([]byte{}, uint64(1<<20+1))
	f.Fuzz(func(t *testing.T, arr []byte, nfds uint64) {
		if len(arr) > 8*64 {
			arr = arr[:8*64]
		}
		s := fuzzSandbox(t)
		runIn(t, s, func(g *fake.Guest) {
			_, w := guestPipe(t, g, unix.O_NONBLOCK)
			g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
			addr := guestBytes(t, g, arr)
			n, errno := g.Call(unix.SYS_POLL, addr, uintptr(nfds), 0)
			allowed(t, "poll", errno, unix.EINVAL, unix.EFAULT)
			if errno != 0 {
				return
			}
			if n > uintptr(nfds) {
				t.Errorf("poll counted %d ready of %d", n, nfds)
			}
			for i := 0; i < int(nfds) && 8*i+8 <= len(arr); i++ {
				fd := int32(g.ReadU32(addr + uintptr(8*i)))
				ev := uint16(g.ReadU32(addr+uintptr(8*i+4)) & 0xffff)
				rev := uint16(g.ReadU32(addr+uintptr(8*i+4)) >> 16)
				may := ev | unix.POLLERR | unix.POLLHUP | unix.POLLNVAL
				if fd < 0 {
					may = 0
				}
				if rev&^may != 0 {
					t.Errorf("pollfd %d (fd %d, events %#x): revents %#x has events not asked for", i, fd, ev, rev)
				}
			}
		})
	})
}

func FuzzSigsets(f *testing.F) {
	f.Add(uint64(0), uint64(1<<63), uint64(8), true)
	f.Add(uint64(1), ^uint64(0), uint64(8), true)
	f.Add(uint64(2), ^uint64(0), uint64(8), false)
	f.Add(uint64(3), uint64(0), uint64(8), true)
	f.Add(uint64(0), uint64(0), uint64(4), true)
	f.Add(uint64(1<<32), uint64(1), uint64(1<<32|8), true)
	f.Fuzz(func(t *testing.T, how, mask, size uint64, mapped bool) {
		s := fuzzSandbox(t)
		runIn(t, s, func(g *fake.Guest) {
			set := uintptr(unmappedAddr)
			if mapped {
				set = sigset(g, mask)
			}
			old := g.Alloc(8)
			_, errno := g.Call(unix.SYS_RT_SIGPROCMASK, uintptr(how), set, old, uintptr(size))
			allowed(t, "rt_sigprocmask", errno, unix.EINVAL, unix.EFAULT)
			if m := guestMask(t, g); m&(sigBit(unix.SIGKILL)|sigBit(unix.SIGSTOP)) != 0 {
				t.Errorf("mask %#x blocks SIGKILL or SIGSTOP", m)
			}
			n, errno := g.Call(unix.SYS_RT_SIGTIMEDWAIT, set, 0, timespec(g, 0), uintptr(size))
			allowed(t, "rt_sigtimedwait", errno, unix.EAGAIN, unix.EINVAL, unix.EFAULT)
			if errno == 0 && (n < 1 || n > 64) {
				t.Errorf("rt_sigtimedwait returned signal %d", n)
			}
			_, errno = g.Call(unix.SYS_SIGNALFD4, ^uintptr(0), set, uintptr(size), uintptr(how))
			allowed(t, "signalfd4", errno, unix.EINVAL, unix.EFAULT, unix.EMFILE)
			_, errno = g.Call(unix.SYS_RT_SIGPENDING, set, uintptr(size))
			allowed(t, "rt_sigpending", errno, unix.EINVAL, unix.EFAULT)
			// rt_sigaction reads the mask inside a struct sigaction.
			act := g.Alloc(32)
			g.WriteU64(act+8, how) // sa_flags
			g.WriteU64(act+24, mask)
			_, errno = g.Call(unix.SYS_RT_SIGACTION, uintptr(size%70), act, old, 8)
			allowed(t, "rt_sigaction", errno, unix.EINVAL)
		})
	})
}

func FuzzEpollEvent(f *testing.F) {
	f.Add(uint64(unix.EPOLL_CTL_ADD), uint32(unix.EPOLLIN), uint64(1), uint8(0))
	f.Add(uint64(unix.EPOLL_CTL_ADD), uint32(unix.EPOLLIN|unix.EPOLLET|unix.EPOLLONESHOT), uint64(1), uint8(1))
	f.Add(uint64(unix.EPOLL_CTL_MOD), uint32(unix.EPOLLEXCLUSIVE), uint64(1), uint8(0))
	f.Add(uint64(unix.EPOLL_CTL_ADD), ^uint32(0), ^uint64(0), uint8(2))
	f.Add(uint64(99), uint32(0), uint64(0), uint8(3))
	f.Fuzz(func(t *testing.T, op uint64, events uint32, data uint64, target uint8) {
		s := fuzzSandbox(t)
		runIn(t, s, func(g *fake.Guest) {
			r, w := guestPipe(t, g, unix.O_NONBLOCK)
			g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
			ep, _ := g.Call(unix.SYS_EPOLL_CREATE1, 0)
			other, _ := g.Call(unix.SYS_EPOLL_CREATE1, 0)
			file := guestOpen(t, g, "/tmp/f", unix.O_RDWR)
			fd := []uintptr{r, w, other, file, ep, 99}[int(target)%6]
			ev := g.Alloc(12)
			g.WriteU32(ev, events)
			g.WriteU64(ev+4, data)
			for range 2 { // the second time, what the first added is there
				_, errno := g.Call(unix.SYS_EPOLL_CTL, ep, uintptr(op), fd, ev)
				allowed(t, "epoll_ctl", errno, unix.EBADF, unix.EEXIST, unix.EINVAL, unix.ELOOP, unix.ENOENT, unix.EPERM)
			}
			out := g.Alloc(12 * 4)
			n, errno := g.Call(unix.SYS_EPOLL_WAIT, ep, out, 4, 0)
			allowed(t, "epoll_wait", errno)
			if n > 1 {
				t.Errorf("epoll_wait reported %d events of one item", n)
			}
			if n == 1 && g.ReadU64(out+4) != data {
				t.Errorf("epoll_wait reported data %#x, want %#x", g.ReadU64(out+4), data)
			}
		})
	})
}

func FuzzItimerspec(f *testing.F) {
	spec := func(v ...int64) []byte {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		}
		return b
	}
	f.Add(spec(0, 0, 0, 1), uint64(0))
	f.Add(spec(0, 1, 0, 1), uint64(1))
	f.Add(spec(0, 0, 0, 1_000_000_000), uint64(0))
	f.Add(spec(-1, 0, 0, 1), uint64(0))
	f.Add(spec(1<<62, 0, 1<<62, 0), uint64(1))
	f.Add(spec(0, 0, 1<<63-1, 999_999_999), uint64(0))
	f.Add(spec(0, 0), uint64(2))
	f.Add(spec(0, 0, 0, 1), uint64(4))
	f.Fuzz(func(t *testing.T, its []byte, flags uint64) {
		if len(its) > 32 {
			its = its[:32]
		}
		s := fuzzSandbox(t)
		runIn(t, s, func(g *fake.Guest) {
			fd, _ := g.Call(unix.SYS_TIMERFD_CREATE, unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK)
			old := g.Alloc(32)
			_, errno := g.Call(unix.SYS_TIMERFD_SETTIME, fd, uintptr(flags), guestBytes(t, g, its), old)
			allowed(t, "timerfd_settime", errno, unix.EINVAL, unix.EFAULT)
			_, errno = g.Call(unix.SYS_TIMERFD_GETTIME, fd, old)
			allowed(t, "timerfd_gettime", errno)
			for i := uintptr(0); i < 4; i++ {
				if v := int64(g.ReadU64(old + 8*i)); v < 0 || (i%2 == 1 && v >= 1e9) {
					t.Errorf("timerfd_gettime wrote an invalid timespec: word %d is %d", i, v)
				}
			}
			_, errno = g.Call(unix.SYS_READ, fd, g.Alloc(8), 8)
			allowed(t, "read of the timerfd", errno, unix.EAGAIN)
			g.Call(unix.SYS_TIMERFD_SETTIME, fd, 0, g.Alloc(32), 0) // disarm: a 1ns timer would fire on
		})
	})
}
