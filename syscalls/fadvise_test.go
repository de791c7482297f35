package syscalls

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

func TestFadviseTakesValidAdviceOnFilesAndRefusesPipesAndBadArguments(t *testing.T) {
	runGuest(t, func(g *fake.Guest) {
		f, errno := g.Call(unix.SYS_OPEN, g.CString("/tmp/advised"), unix.O_CREAT|unix.O_RDWR, 0o644)
		if errno != 0 {
			t.Errorf("open: %v", errno)
			return
		}
		for _, adv := range []int{unix.FADV_NORMAL, unix.FADV_RANDOM, unix.FADV_SEQUENTIAL, unix.FADV_WILLNEED, unix.FADV_DONTNEED, unix.FADV_NOREUSE} {
			_, errno := g.Call(unix.SYS_FADVISE64, f, 0, 0, uintptr(adv))
			expectErrno(t, "fadvise of a file", 0, errno, 0)
		}
		_, errno = g.Call(unix.SYS_FADVISE64, f, 0, 0, 6)
		expectErrno(t, "fadvise with advice 6", 0, errno, unix.EINVAL)
		_, errno = g.Call(unix.SYS_FADVISE64, f, 0, ^uintptr(0), unix.FADV_NORMAL)
		expectErrno(t, "fadvise of a negative length", 0, errno, unix.EINVAL)
		r, _ := guestPipe(t, g, 0)
		_, errno = g.Call(unix.SYS_FADVISE64, r, 0, 0, unix.FADV_NORMAL)
		expectErrno(t, "fadvise of a pipe", 0, errno, unix.ESPIPE)
		_, errno = g.Call(unix.SYS_FADVISE64, 999, 0, 0, unix.FADV_NORMAL)
		expectErrno(t, "fadvise of a closed descriptor", 0, errno, unix.EBADF)
	})
}
