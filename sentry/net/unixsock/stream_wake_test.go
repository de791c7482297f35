package unixsock_test

import (
	"encoding/binary"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
)

// TestAStreamWriteLargerThanTheBufferWakesTheBlockedReader: a reader
// already asleep on an empty stream socket is woken by the first pieces
// of one write of 1 MiB, far more than SO_SNDBUF, and makes the room
// the rest waits for; the write completes (SO_SNDTIMEO bounds it, so
// that a lost wake-up shows as a short write, not a hang). CPython's
// multiprocessing echoes 16 MiB this way.
func TestAStreamWriteLargerThanTheBufferWakesTheBlockedReader(t *testing.T) {
	const total = 1 << 20
	run(t, func(g guest) {
		a, b := g.pair(unix.SOCK_STREAM)
		child, _ := g.Fork(func(fg *fake.Guest) {
			cg := guest{fg, t}
			cg.must("close", unix.SYS_CLOSE, a)
			buf := cg.Alloc(64 << 10)
			got := 0
			for {
				n, errno := cg.Call(unix.SYS_READ, b, buf, 64<<10)
				if errno != 0 || n == 0 {
					break
				}
				got += int(n)
			}
			if got != total {
				t.Errorf("reader got %d bytes, want %d", got, total)
			}
		})
		g.must("close", unix.SYS_CLOSE, b)
		tv := g.Alloc(16)
		g.Write(tv, binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 5), 0))
		g.must("SO_SNDTIMEO", unix.SYS_SETSOCKOPT, a, unix.SOL_SOCKET, unix.SO_SNDTIMEO, tv, 16)
		time.Sleep(50 * time.Millisecond) // the reader is asleep by now
		data := g.Alloc(total)
		if n, errno := g.Call(unix.SYS_WRITE, a, data, total); n != total {
			t.Errorf("write of %d bytes = %d, %v; want all of it", total, n, errno)
		}
		g.must("close", unix.SYS_CLOSE, a)
		g.Wait(child, 0)
	})
}
