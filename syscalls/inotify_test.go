package syscalls

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

// guestEvents reads what an inotify fd holds as "wd MASK name" lines
// (masks in hex).
func guestEvents(t *testing.T, g *fake.Guest, fd uintptr) string {
	t.Helper()
	buf := g.Alloc(4096)
	n, errno := g.Call(unix.SYS_READ, fd, buf, 4096)
	if errno != 0 {
		return errno.Error()
	}
	b := make([]byte, n)
	g.Read(buf, b)
	var lines []string
	for len(b) >= 16 {
		wd, mask, l := int32(binary.LittleEndian.Uint32(b)), binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[12:])
		name := strings.TrimRight(string(b[16:16+l]), "\x00")
		lines = append(lines, strings.TrimSpace(fmt.Sprintf("%d %#x %s", wd, mask, name)))
		b = b[16+l:]
	}
	return strings.Join(lines, "\n")
}

func TestInotifyReportsTheGuestsChangesAsWholeEventRecords(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		in, errno := g.Call(unix.SYS_INOTIFY_INIT1, unix.IN_NONBLOCK|unix.IN_CLOEXEC)
		if errno != 0 {
			t.Errorf("inotify_init1: %v", errno)
			return
		}
		if fl, _ := g.Call(unix.SYS_FCNTL, in, unix.F_GETFL); fl != unix.O_RDONLY|unix.O_NONBLOCK {
			t.Errorf("F_GETFL %#x, want O_RDONLY|O_NONBLOCK", fl)
		}
		wd, errno := g.Call(unix.SYS_INOTIFY_ADD_WATCH, in, g.CString("/tmp"), unix.IN_ALL_EVENTS)
		expectRet(t, "add_watch /tmp", wd, errno, 1, 0)
		_, errno = g.Call(unix.SYS_READ, in, g.Alloc(64), 64)
		expectErrno(t, "read of an empty queue", 0, errno, unix.EAGAIN)
		fd := guestOpen(t, g, "/tmp/file", unix.O_CREAT|unix.O_WRONLY)
		g.Call(unix.SYS_WRITE, fd, g.CString("ab"), 1)
		g.Call(unix.SYS_WRITE, fd, g.CString("ab"), 1) // merged with the last
		if n := guestFIONREAD(t, g, in); n != 3*32 {
			t.Errorf("FIONREAD %d, want three events of 32 bytes", n)
		}
		_, errno = g.Call(unix.SYS_READ, in, g.Alloc(31), 31)
		expectErrno(t, "read into a buffer smaller than the first event", 0, errno, unix.EINVAL)
		g.Call(unix.SYS_CLOSE, fd)
		g.Call(unix.SYS_RENAME, g.CString("/tmp/file"), g.CString("/tmp/moved"))
		g.Call(unix.SYS_UNLINK, g.CString("/tmp/moved"))
		want := `1 0x100 file
1 0x20 file
1 0x2 file
1 0x8 file
1 0x40 file
1 0x80 moved
1 0x200 moved`
		if got := guestEvents(t, g, in); got != want {
			t.Errorf("events:\n%s\nwant:\n%s", got, want)
		}
		_, errno = g.Call(unix.SYS_INOTIFY_RM_WATCH, in, wd)
		expectErrno(t, "rm_watch", 0, errno, 0)
		if got := guestEvents(t, g, in); got != "1 0x8000" {
			t.Errorf("after rm_watch: %q, want IN_IGNORED", got)
		}
		_, errno = g.Call(unix.SYS_INOTIFY_RM_WATCH, in, wd)
		expectErrno(t, "rm_watch twice", 0, errno, unix.EINVAL)
	})
}

func TestInotifyCallsCheckTheirArgumentsInLinuxsOrder(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		_, errno := g.Call(unix.SYS_INOTIFY_INIT1, unix.O_RDWR)
		expectErrno(t, "inotify_init1(O_RDWR)", 0, errno, unix.EINVAL)
		in, _ := g.Call(unix.SYS_INOTIFY_INIT)
		file := guestOpen(t, g, "/tmp/f", unix.O_CREAT|unix.O_RDWR)
		for _, c := range []struct {
			what string
			fd   uintptr
			path string
			mask uint32
			want unix.Errno
		}{
			{"mask 0", in, "/tmp", 0, unix.EINVAL},
			{"an unknown bit, before the fd", 999, "/tmp", unix.IN_MODIFY | 1<<27, unix.EINVAL},
			{"a closed fd", 999, "/tmp", unix.IN_MODIFY, unix.EBADF},
			{"not an inotify fd", file, "/tmp", unix.IN_MODIFY, unix.EINVAL},
			{"IN_MASK_ADD with IN_MASK_CREATE", in, "/tmp", unix.IN_MODIFY | unix.IN_MASK_ADD | unix.IN_MASK_CREATE, unix.EINVAL},
			{"a missing file", in, "/tmp/none", unix.IN_MODIFY, unix.ENOENT},
			{"IN_ONLYDIR on a file", in, "/tmp/f", unix.IN_MODIFY | unix.IN_ONLYDIR, unix.ENOTDIR},
		} {
			_, errno := g.Call(unix.SYS_INOTIFY_ADD_WATCH, c.fd, g.CString(c.path), uintptr(c.mask))
			expectErrno(t, "add_watch: "+c.what, 0, errno, c.want)
		}
		wd, _ := g.Call(unix.SYS_INOTIFY_ADD_WATCH, in, g.CString("/tmp/f"), unix.IN_MODIFY)
		again, _ := g.Call(unix.SYS_INOTIFY_ADD_WATCH, in, g.CString("/tmp/f"), unix.IN_ATTRIB)
		expectRet(t, "a second add_watch of the same file", again, 0, wd, 0)
		_, errno = g.Call(unix.SYS_INOTIFY_ADD_WATCH, in, g.CString("/tmp/f"), unix.IN_ATTRIB|unix.IN_MASK_CREATE)
		expectErrno(t, "IN_MASK_CREATE of a watched file", 0, errno, unix.EEXIST)
		_, errno = g.Call(unix.SYS_INOTIFY_RM_WATCH, file, wd)
		expectErrno(t, "rm_watch on a file", 0, errno, unix.EINVAL)
	})
}

func TestABlockingInotifyReadWaitsForTheNextEvent(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		in, _ := g.Call(unix.SYS_INOTIFY_INIT1, 0)
		g.Call(unix.SYS_INOTIFY_ADD_WATCH, in, g.CString("/tmp"), unix.IN_CREATE)
		child, _ := g.Fork(func(g *fake.Guest) {
			g.Compute(20 * time.Millisecond)
			fd := guestOpen(t, g, "/tmp/late", unix.O_CREAT|unix.O_WRONLY)
			g.Call(unix.SYS_CLOSE, fd)
		})
		pfd := g.Alloc(8) // struct pollfd
		g.WriteU32(pfd, uint32(in))
		g.WriteU32(pfd+4, unix.POLLIN)
		n, errno := g.Call(unix.SYS_POLL, pfd, 1, 5000)
		if n != 1 || errno != 0 || g.ReadU32(pfd+4)>>16 != unix.POLLIN {
			t.Errorf("poll = %d, %v, revents %#x; want POLLIN", n, errno, g.ReadU32(pfd+4)>>16)
		}
		if got := guestEvents(t, g, in); got != "1 0x100 late" {
			t.Errorf("events %q, want the child's IN_CREATE", got)
		}
		g.Wait(child, 0)
	})
}
