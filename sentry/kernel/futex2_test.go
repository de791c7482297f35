package kernel_test

import (
	"encoding/binary"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform/fake"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// futexWaitvList writes a struct futex_waitv list of private 32-bit
// futexes, each expecting 0, and returns its address.
func futexWaitvList(g *fake.Guest, words ...uintptr) uintptr {
	const u32Private = 0x02 | 128
	b := make([]byte, 24*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint64(b[24*i+8:], uint64(w))
		binary.LittleEndian.PutUint32(b[24*i+16:], u32Private)
	}
	list := g.Alloc(uintptr(len(b)))
	g.Write(list, b)
	return list
}

// TestFutexWaitvWokenThroughOneLeavesEveryQueue waits on three futexes,
// one of them listed twice, wakes it through the last, and checks that
// the index returned is that one's and that the waiter is off every queue,
// the duplicate's included.
func TestFutexWaitvWokenThroughOneLeavesEveryQueue(t *testing.T) {
	s := newSandbox(t)
	runInit(t, s, func(g *fake.Guest) {
		a, b := g.Alloc(4), g.Alloc(4)
		list := futexWaitvList(g, a, b, a, b)
		var got atomic.Int64
		got.Store(-1)
		before := kernel.FutexWaiters(s.Kernel)
		_, tidAddr, errno := g.Thread(func(g *fake.Guest) {
			r, errno := g.Call(unix.SYS_FUTEX_WAITV, list, 4, 0, 0, 0)
			if errno != 0 {
				t.Errorf("futex_waitv: %v", errno)
			}
			got.Store(int64(r))
		})
		if errno != 0 {
			t.Fatalf("thread: %v", errno)
		}
		awaitWaiters(t, s, g, before+4)
		// futex_wake(b, any mask, 1, FUTEX2_SIZE_U32|FUTEX2_PRIVATE)
		r, errno := g.Call(454, b, 0xffffffff, 1, 0x02|128)
		expect(t, "futex_wake of the second word", r, errno, 1, 0)
		g.Join(tidAddr)
		if got.Load() != 1 {
			t.Errorf("futex_waitv returned %d, want 1 (the first entry of the word woken)", got.Load())
		}
		if n := kernel.FutexWaiters(s.Kernel); n != before {
			t.Errorf("%d futex waiters after the wake, want %d", n, before)
		}
	})
}
