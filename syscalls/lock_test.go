package syscalls

import (
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// guestFlock is a struct flock in guest memory.
func guestFlock(g *fake.Guest, typ, whence int16, start, length int64, pid int32) uintptr {
	fl := unix.Flock_t{Type: typ, Whence: whence, Start: start, Len: length, Pid: pid}
	addr := g.Alloc(unsafe.Sizeof(fl))
	g.Write(addr, unsafe.Slice((*byte)(unsafe.Pointer(&fl)), unsafe.Sizeof(fl)))
	return addr
}

func readFlock(g *fake.Guest, addr uintptr) unix.Flock_t {
	var fl unix.Flock_t
	g.Read(addr, unsafe.Slice((*byte)(unsafe.Pointer(&fl)), unsafe.Sizeof(fl)))
	return fl
}

func guestLock(g *fake.Guest, fd uintptr, cmd int, typ int16, start, length int64) unix.Errno {
	_, errno := g.Call(unix.SYS_FCNTL, fd, uintptr(cmd), guestFlock(g, typ, unix.SEEK_SET, start, length, 0))
	return errno
}

// exitWith ends a child with status 0 if ok, else 1.
func exitWith(g *fake.Guest, ok bool) {
	code := uintptr(1)
	if ok {
		code = 0
	}
	g.Call(unix.SYS_EXIT_GROUP, code)
}

func expectChild(t *testing.T, g *fake.Guest, pid int, what string) {
	t.Helper()
	if _, st, _ := g.Wait(pid, 0); st.ExitStatus() != 0 {
		t.Errorf("%s: child %v", what, st)
	}
}

func TestFlockIsTheOpenFileDescriptionsAndGoesWithItsLastClose(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		fd := guestOpen(t, g, "/tmp/f", unix.O_RDWR|unix.O_CREAT)
		_, errno := g.Call(unix.SYS_FLOCK, fd, unix.LOCK_EX|unix.LOCK_NB)
		expectErrno(t, "flock LOCK_EX", 0, errno, 0)
		dup, _ := g.Call(unix.SYS_DUP, fd)
		child, _ := g.Fork(func(g *fake.Guest) {
			// The inherited fd is the same description: its lock.
			_, e1 := g.Call(unix.SYS_FLOCK, fd, unix.LOCK_EX|unix.LOCK_NB)
			other := guestOpen(t, g, "/tmp/f", unix.O_RDONLY)
			_, e2 := g.Call(unix.SYS_FLOCK, other, unix.LOCK_SH|unix.LOCK_NB)
			if e1 != 0 || e2 != unix.EWOULDBLOCK {
				t.Errorf("child: flock of the inherited fd %v (want success), of a new open %v (want EWOULDBLOCK)", e1, e2)
			}
			exitWith(g, e1 == 0 && e2 == unix.EWOULDBLOCK)
		})
		expectChild(t, g, child, "child's flocks")
		g.Call(unix.SYS_CLOSE, fd)
		other := guestOpen(t, g, "/tmp/f", unix.O_RDONLY)
		_, errno = g.Call(unix.SYS_FLOCK, other, unix.LOCK_SH|unix.LOCK_NB)
		expectErrno(t, "flock while a dup still holds the lock", 0, errno, unix.EWOULDBLOCK)
		g.Call(unix.SYS_CLOSE, dup)
		_, errno = g.Call(unix.SYS_FLOCK, other, unix.LOCK_SH|unix.LOCK_NB)
		expectErrno(t, "flock after the last close", 0, errno, 0)

		_, errno = g.Call(unix.SYS_FLOCK, 999, unix.LOCK_SH)
		expectErrno(t, "flock of a closed fd", 0, errno, unix.EBADF)
		_, errno = g.Call(unix.SYS_FLOCK, 999, 0)
		expectErrno(t, "flock with no operation (checked before the fd)", 0, errno, unix.EINVAL)
		path, _ := g.Call(unix.SYS_OPENAT, argFDCWD(), g.CString("/tmp/f"), unix.O_PATH, 0)
		_, errno = g.Call(unix.SYS_FLOCK, path, unix.LOCK_SH)
		expectErrno(t, "flock of an O_PATH fd", 0, errno, unix.EBADF)
	})
}

// TestABlockedFlockEndsWithEINTRUnlessTheHandlerHasSARestart: a wait for
// a lock is interrupted by a handled signal, and restarted with
// SA_RESTART until the holder lets go.
func TestABlockedFlockEndsWithEINTRUnlessTheHandlerHasSARestart(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	runIn(t, s, func(g *fake.Guest) {
		for _, restart := range []bool{false, true} {
			holder := guestOpen(t, g, "/tmp/lock", unix.O_RDWR|unix.O_CREAT)
			g.Call(unix.SYS_FLOCK, holder, unix.LOCK_EX)
			act := fake.SigAction{Handler: s.Platform.Handler(func(*fake.Guest) {})}
			if restart {
				act.Flags = linuxabi.SA_RESTART
			}
			g.Sigaction(unix.SIGALRM, act)
			child := 0
			if restart {
				child, _ = g.Fork(func(g *fake.Guest) {
					g.Compute(50 * time.Millisecond)
					g.Call(unix.SYS_FLOCK, holder, unix.LOCK_UN)
				})
			}
			waiter := guestOpen(t, g, "/tmp/lock", unix.O_RDONLY)
			armItimer(g, 10*time.Millisecond)
			_, errno := g.Call(unix.SYS_FLOCK, waiter, unix.LOCK_SH)
			armItimer(g, 0)
			if restart && errno != 0 {
				t.Errorf("flock interrupted by an SA_RESTART handler: %v, want it restarted until the unlock", errno)
			}
			if !restart && errno != unix.EINTR {
				t.Errorf("flock interrupted by a handler: %v, want EINTR", errno)
			}
			if child != 0 {
				g.Wait(child, 0)
			}
			g.Call(unix.SYS_CLOSE, holder)
			g.Call(unix.SYS_CLOSE, waiter)
		}
	})
}

// TestPOSIXLocksBelongToTheProcessAndGoWithAnyCloseOfTheFile: fork does
// not pass them on, F_GETLK names the holder's pid, and a close of any fd
// of the file (not only the locking one) drops them.
func TestPOSIXLocksBelongToTheProcessAndGoWithAnyCloseOfTheFile(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		me, _ := g.Call(unix.SYS_GETPID)
		fd := guestOpen(t, g, "/tmp/f", unix.O_RDWR|unix.O_CREAT)
		other := guestOpen(t, g, "/tmp/f", unix.O_RDONLY)
		expectErrno(t, "F_SETLK", 0, guestLock(g, fd, unix.F_SETLK, unix.F_WRLCK, 10, 20), 0)
		// The owner's own lock never conflicts: a read lock over it converts.
		probe := guestFlock(g, unix.F_WRLCK, unix.SEEK_SET, 0, 0, 0)
		g.Call(unix.SYS_FCNTL, fd, unix.F_GETLK, probe)
		if fl := readFlock(g, probe); fl.Type != unix.F_UNLCK || fl.Start != 0 || fl.Len != 0 {
			t.Errorf("F_GETLK over the caller's own lock: %+v, want F_UNLCK and the request", fl)
		}
		child, _ := g.Fork(func(g *fake.Guest) {
			probe := guestFlock(g, unix.F_RDLCK, unix.SEEK_SET, 0, 0, 0)
			g.Call(unix.SYS_FCNTL, fd, unix.F_GETLK, probe)
			fl := readFlock(g, probe)
			want := unix.Flock_t{Type: unix.F_WRLCK, Whence: unix.SEEK_SET, Start: 10, Len: 20, Pid: int32(me)}
			if fl != want {
				t.Errorf("child's F_GETLK: %+v, want %+v", fl, want)
			}
			e := guestLock(g, fd, unix.F_SETLK, unix.F_RDLCK, 29, 1)
			if e != unix.EAGAIN {
				t.Errorf("child's F_SETLK over the parent's lock: %v, want EAGAIN", e)
			}
			e2 := guestLock(g, fd, unix.F_SETLK, unix.F_RDLCK, 30, 1)
			exitWith(g, fl == want && e == unix.EAGAIN && e2 == 0)
		})
		expectChild(t, g, child, "child's view of the parent's lock")
		g.Call(unix.SYS_CLOSE, other) // not the fd that locked
		child, _ = g.Fork(func(g *fake.Guest) {
			probe := guestFlock(g, unix.F_WRLCK, unix.SEEK_SET, 0, 0, 0)
			g.Call(unix.SYS_FCNTL, fd, unix.F_GETLK, probe)
			fl := readFlock(g, probe)
			if fl.Type != unix.F_UNLCK {
				t.Errorf("after the parent closed another fd of the file: %+v, want no lock", fl)
			}
			exitWith(g, fl.Type == unix.F_UNLCK)
		})
		expectChild(t, g, child, "lock gone with the close")

		ro := guestOpen(t, g, "/tmp/f", unix.O_RDONLY)
		expectErrno(t, "F_WRLCK on a read-only fd", 0, guestLock(g, ro, unix.F_SETLK, unix.F_WRLCK, 0, 1), unix.EBADF)
		expectErrno(t, "F_GETLK with F_UNLCK", 0, guestLock(g, ro, unix.F_GETLK, unix.F_UNLCK, 0, 1), unix.EINVAL)
		expectErrno(t, "l_type 7", 0, guestLock(g, fd, unix.F_SETLK, 7, 0, 1), unix.EINVAL)
		expectErrno(t, "a range before the start of the file", 0, guestLock(g, fd, unix.F_SETLK, unix.F_RDLCK, 5, -6), unix.EINVAL)
		_, errno := g.Call(unix.SYS_FCNTL, fd, unix.F_SETLK, guestFlock(g, unix.F_RDLCK, 3, 0, 0, 0))
		expectErrno(t, "l_whence 3", 0, errno, unix.EINVAL)
	})
}

func TestOFDLocksBelongToTheDescriptionAndConflictWithTheProcesssPOSIXLocks(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		fd := guestOpen(t, g, "/tmp/f", unix.O_RDWR|unix.O_CREAT)
		_, errno := g.Call(unix.SYS_FCNTL, fd, unix.F_OFD_SETLK, guestFlock(g, unix.F_WRLCK, unix.SEEK_SET, 0, 10, 1))
		expectErrno(t, "F_OFD_SETLK with l_pid 1", 0, errno, unix.EINVAL)
		expectErrno(t, "F_OFD_SETLK", 0, guestLock(g, fd, unix.F_OFD_SETLK, unix.F_WRLCK, 0, 10), 0)
		// The same process's POSIX lock is another owner's.
		other := guestOpen(t, g, "/tmp/f", unix.O_RDWR)
		expectErrno(t, "POSIX lock over the process's OFD lock", 0, guestLock(g, other, unix.F_SETLK, unix.F_RDLCK, 5, 1), unix.EAGAIN)
		expectErrno(t, "OFD lock of another description", 0, guestLock(g, other, unix.F_OFD_SETLK, unix.F_RDLCK, 5, 1), unix.EAGAIN)
		probe := guestFlock(g, unix.F_RDLCK, unix.SEEK_SET, 0, 0, 0)
		g.Call(unix.SYS_FCNTL, other, unix.F_GETLK, probe)
		if fl := readFlock(g, probe); fl.Type != unix.F_WRLCK || fl.Pid != -1 || fl.Len != 10 {
			t.Errorf("F_GETLK of an OFD lock: %+v, want F_WRLCK, pid -1, length 10", fl)
		}
		// A close of another fd leaves an OFD lock; a dup shares it and
		// the last close drops it.
		dup, _ := g.Call(unix.SYS_DUP, fd)
		g.Call(unix.SYS_CLOSE, other)
		other = guestOpen(t, g, "/tmp/f", unix.O_RDWR)
		expectErrno(t, "after closing another fd", 0, guestLock(g, other, unix.F_OFD_SETLK, unix.F_RDLCK, 5, 1), unix.EAGAIN)
		g.Call(unix.SYS_CLOSE, fd)
		expectErrno(t, "while a dup holds it", 0, guestLock(g, other, unix.F_OFD_SETLK, unix.F_RDLCK, 5, 1), unix.EAGAIN)
		g.Call(unix.SYS_CLOSE, dup)
		expectErrno(t, "after the last close", 0, guestLock(g, other, unix.F_OFD_SETLK, unix.F_RDLCK, 5, 1), 0)
	})
}

// TestTwoProcessesWaitingForEachOthersLocksGetEDEADLK: whichever of two
// processes comes second to wait for the other's lock would close the
// cycle, and gets EDEADLK; the other gets its lock once the first lets go.
func TestTwoProcessesWaitingForEachOthersLocksGetEDEADLK(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		fd := guestOpen(t, g, "/tmp/f", unix.O_RDWR|unix.O_CREAT)
		r, w := guestPipe(t, g, 0)
		expectErrno(t, "lock byte 0", 0, guestLock(g, fd, unix.F_SETLK, unix.F_WRLCK, 0, 1), 0)
		child, _ := g.Fork(func(g *fake.Guest) {
			guestLock(g, fd, unix.F_SETLK, unix.F_WRLCK, 1, 1)
			g.Call(unix.SYS_WRITE, w, g.CString("x"), 1)
			e := guestLock(g, fd, unix.F_SETLKW, unix.F_WRLCK, 0, 1)
			// Exit status 2 for EDEADLK, 0 for the lock, 1 otherwise.
			code := uintptr(1)
			switch e {
			case unix.EDEADLK:
				code = 2
			case 0:
				code = 0
			}
			g.Call(unix.SYS_EXIT_GROUP, code)
		})
		g.Call(unix.SYS_READ, r, g.Alloc(1), 1)
		e := guestLock(g, fd, unix.F_SETLKW, unix.F_WRLCK, 1, 1)
		if e == unix.EDEADLK {
			guestLock(g, fd, unix.F_SETLK, unix.F_UNLCK, 0, 1) // let the child through
		}
		_, st, _ := g.Wait(child, 0)
		parentDeadlocked, childDeadlocked := e == unix.EDEADLK, st.ExitStatus() == 2
		if parentDeadlocked == childDeadlocked || (!parentDeadlocked && e != 0) || (!childDeadlocked && st.ExitStatus() != 0) {
			t.Errorf("parent's F_SETLKW %v, child %v: want exactly one EDEADLK and the other's lock", e, st)
		}
	})
}
