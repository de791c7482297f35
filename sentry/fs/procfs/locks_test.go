package procfs_test

import (
	"fmt"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// TestProcLocksListsEveryLockNewestFirstInLinuxsFormat: a POSIX, an OFD
// and a flock lock, each with its owner's pid (-1 for the OFD lock), the
// inode as major:minor:ino in hex and decimal, and the range (EOF for a
// lock to the end of the file).
func TestProcLocksListsEveryLockNewestFirstInLinuxsFormat(t *testing.T) {
	s := sandbox(t)
	runIn(t, s, kerneltest.Init{}, func(g *fake.Guest) {
		open := func(flags int) uintptr {
			fd, errno := g.Call(unix.SYS_OPENAT, uintptr(0xffffffffffffff9c), g.CString("/tmp/locked"), uintptr(flags|unix.O_CREAT), 0o644)
			if errno != 0 {
				t.Errorf("open: %v", errno)
			}
			return fd
		}
		lock := func(fd uintptr, cmd int, typ int16, start, length int64) {
			fl := unix.Flock_t{Type: typ, Start: start, Len: length}
			addr := g.Alloc(unsafe.Sizeof(fl))
			g.Write(addr, unsafe.Slice((*byte)(unsafe.Pointer(&fl)), unsafe.Sizeof(fl)))
			if _, errno := g.Call(unix.SYS_FCNTL, fd, uintptr(cmd), addr); errno != 0 {
				t.Errorf("fcntl %d: %v", cmd, errno)
			}
		}
		a, b, c := open(unix.O_RDWR), open(unix.O_RDWR), open(unix.O_RDONLY)
		lock(b, unix.F_OFD_SETLK, unix.F_RDLCK, 10, 5)
		lock(a, unix.F_SETLK, unix.F_WRLCK, 100, 0)
		if _, errno := g.Call(unix.SYS_FLOCK, c, unix.LOCK_SH); errno != 0 {
			t.Errorf("flock: %v", errno)
		}
		st := new(unix.Stat_t)
		addr := g.Alloc(unsafe.Sizeof(*st))
		g.Call(unix.SYS_FSTAT, a, addr)
		g.Read(addr, unsafe.Slice((*byte)(unsafe.Pointer(st)), unsafe.Sizeof(*st)))
		id := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
		want := "1: FLOCK  ADVISORY  READ 1 " + id + " 0 EOF\n" +
			"2: POSIX  ADVISORY  WRITE 1 " + id + " 100 EOF\n" +
			"3: OFDLCK ADVISORY  READ -1 " + id + " 10 14\n"
		if got := readProc(t, g, "/proc/locks"); got != want {
			t.Errorf("/proc/locks:\n%s\nwant:\n%s", got, want)
		}
		for _, fd := range []uintptr{a, b, c} {
			g.Call(unix.SYS_CLOSE, fd)
		}
		if got := readProc(t, g, "/proc/locks"); got != "" {
			t.Errorf("/proc/locks after every close:\n%s", got)
		}
	})
}
