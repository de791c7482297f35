package kernel_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

// TestAIORingRefusesSubmissionsWhenFull fills a context's ring (its nr
// slots less the one kept free) with fsync events, checks that the next
// submission is EAGAIN and that the ring's head and tail say what it
// holds, then takes the events and submits again.
func TestAIORingRefusesSubmissionsWhenFull(t *testing.T) {
	runInit(t, newSandbox(t), func(g *fake.Guest) {
		ctxp := g.Alloc(8)
		r, errno := g.Call(unix.SYS_IO_SETUP, 1, ctxp)
		expect(t, "io_setup(1)", r, errno, 0, 0)
		ring := uintptr(g.ReadU64(ctxp))
		nr := g.ReadU32(ring + 4)
		fd, errno := g.Call(unix.SYS_MEMFD_CREATE, g.CString("aio"), 0)
		if errno != 0 {
			t.Fatalf("memfd_create: %v", errno)
		}
		cb := g.Alloc(64)
		g.Write(cb, make([]byte, 64))
		g.Write(cb+16, []byte{2, 0}) // IOCB_CMD_FSYNC
		g.WriteU32(cb+20, uint32(fd))
		list := g.Alloc(8)
		g.WriteU64(list, uint64(cb))
		for i := uint32(0); i < nr-1; i++ {
			if r, errno := g.Call(unix.SYS_IO_SUBMIT, ring, 1, list); r != 1 || errno != 0 {
				t.Fatalf("submission %d of %d: %d, %v", i, nr-1, r, errno)
			}
		}
		r, errno = g.Call(unix.SYS_IO_SUBMIT, ring, 1, list)
		expect(t, "io_submit to a full ring", r, errno, 0, unix.EAGAIN)
		if head, tail := g.ReadU32(ring+8), g.ReadU32(ring+12); head != 0 || tail != nr-1 {
			t.Errorf("full ring's head %d, tail %d; want 0 and %d", head, tail, nr-1)
		}
		events := g.Alloc(uintptr(32 * nr))
		r, errno = g.Call(unix.SYS_IO_GETEVENTS, ring, 1, uintptr(nr), events, 0)
		expect(t, "io_getevents of a full ring", r, errno, uintptr(nr-1), 0)
		if head := g.ReadU32(ring + 8); head != nr-1 {
			t.Errorf("head after taking every event %d, want %d", head, nr-1)
		}
		r, errno = g.Call(unix.SYS_IO_SUBMIT, ring, 1, list)
		expect(t, "io_submit once the ring is emptied", r, errno, 1, 0)
		r, errno = g.Call(unix.SYS_IO_DESTROY, ring)
		expect(t, "io_destroy", r, errno, 0, 0)
	})
}
