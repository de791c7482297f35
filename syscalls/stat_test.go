package syscalls

import (
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
)

// TestStatOfAPathAnotherThreadEmptiesNamesOneFile: the path of a stat with
// AT_EMPTY_PATH is read from guest memory once. Another thread that makes
// it "" and "x" in turn gets the stat of the file at dirfd (a pipe, which
// has no name in the tree) or ENOTDIR (a name under a pipe), never a
// look-up of "" that ends on the nameless pipe: the sentry crashed on it
// under the syscall fuzzer.
func TestStatOfAPathAnotherThreadEmptiesNamesOneFile(t *testing.T) {
	s := kerneltest.New(t, NewTable())
	runIn(t, s, func(g *fake.Guest) {
		r, _ := guestPipe(t, g, 0)
		path := g.CString("x")
		buf := g.Alloc(256)
		var stop atomic.Bool
		_, tidAddr, _ := g.Thread(func(g *fake.Guest) {
			for i := 0; i < 100_000_000 && !stop.Load(); i++ {
				g.Write(path, []byte{"x\x00"[i%2]})
			}
		})
		for i := 0; i < 20000; i++ {
			_, errno := g.Call(unix.SYS_NEWFSTATAT, r, path, buf, unix.AT_EMPTY_PATH)
			allowed(t, "newfstatat(pipe, \"\" or \"x\", AT_EMPTY_PATH)", errno, unix.ENOTDIR)
			_, errno = g.Call(unix.SYS_STATX, r, path, unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS, buf)
			allowed(t, "statx(pipe, \"\" or \"x\", AT_EMPTY_PATH)", errno, unix.ENOTDIR)
		}
		stop.Store(true)
		g.Join(tidAddr)
	})
}
