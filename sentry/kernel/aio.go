package kernel

import (
	"encoding/binary"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// Linux AIO contexts (io_setup and its calls). A context's completion
// ring lives in the guest's memory, as Linux's does, at the address that
// is the context's id: a header (struct aio_ring) and the events after it.
// The guest may take events from the ring itself (libaio looks there
// first), so the sentry keeps only the tail; it reads the head from the
// ring each time. Operations complete when they are submitted, so a
// context has nothing in flight: a slot of the ring is taken at submit.

// Ring layout (Linux's struct aio_ring and struct io_event).
const (
	aioRingMagic      = 0xa10a10a1
	aioRingHeader     = 32 // id, nr, head, tail, magic, compat_features, incompat_features, header_length
	aioRingHeadOff    = 8
	aioRingTailOff    = 12
	AIOEventSize      = 32    // data, obj, res, res2
	aioMaxEvents      = 65536 // /proc/sys/fs/aio-max-nr's default
	aioEventsLimit    = 0x10000000 / AIOEventSize
	aioCompatFeatures = 1
)

// AIOContext is one context.
type AIOContext struct {
	mm   *mm.MemoryManager
	ring uintptr
	nr   uint32 // slots in the ring; one is always free

	mu       sync.Mutex
	tail     uint32
	reserved uint32        // slots taken by submissions under way
	changed  chan struct{} // closed, and replaced, when an event is added
	dead     bool
}

// aioTable is a process's contexts, by ring address.
type aioTable struct {
	mu   sync.Mutex
	ctxs map[uintptr]*AIOContext
}

// AIOSetup makes a context for at least nrEvents events (io_setup): its
// ring is mapped into the caller's memory and its address returned.
func (t *Task) AIOSetup(nrEvents uint32) (uintptr, error) {
	if nrEvents == 0 {
		return 0, unix.EINVAL
	}
	// As Linux's ioctx_alloc: room for more than asked, then whole pages.
	n := uint64(max(nrEvents, uint32(4*t.k.NumCPUs()))) * 2
	if n > aioEventsLimit {
		return 0, unix.EINVAL
	}
	if nrEvents > aioMaxEvents {
		return 0, unix.EAGAIN
	}
	size := (aioRingHeader + n*AIOEventSize + mm.PageSize - 1) &^ (mm.PageSize - 1)
	nr := uint32((size - aioRingHeader) / AIOEventSize)
	addr, err := t.mm.MMap(mm.MMapOpts{Length: uintptr(size), Prot: platform.ProtRead | platform.ProtWrite,
		MaxProt: platform.ProtRead | platform.ProtWrite, Name: "/[aio] (deleted)"})
	if err != nil {
		return 0, unix.EAGAIN
	}
	var h [aioRingHeader]byte
	le := binary.LittleEndian
	le.PutUint32(h[4:], nr)
	le.PutUint32(h[16:], aioRingMagic)
	le.PutUint32(h[20:], aioCompatFeatures)
	le.PutUint32(h[28:], aioRingHeader)
	if _, err := t.mm.CopyOut(addr, h[:]); err != nil {
		t.mm.Munmap(addr, uintptr(size))
		return 0, unix.EAGAIN
	}
	c := &AIOContext{mm: t.mm, ring: addr, nr: nr, changed: make(chan struct{})}
	tb := &t.tg.aio
	tb.mu.Lock()
	if tb.ctxs == nil {
		tb.ctxs = make(map[uintptr]*AIOContext)
	}
	tb.ctxs[addr] = c
	tb.mu.Unlock()
	return addr, nil
}

// AIOContextOf is the caller's context with id ring (EINVAL if none).
func (t *Task) AIOContextOf(ring uintptr) (*AIOContext, error) {
	tb := &t.tg.aio
	tb.mu.Lock()
	defer tb.mu.Unlock()
	c := tb.ctxs[ring]
	if c == nil || c.mm != t.mm {
		return nil, unix.EINVAL
	}
	return c, nil
}

// AIODestroy ends the context with id ring (io_destroy): it is forgotten,
// its ring unmapped, and a wait on it ends.
func (t *Task) AIODestroy(ring uintptr) error {
	tb := &t.tg.aio
	tb.mu.Lock()
	c := tb.ctxs[ring]
	if c == nil || c.mm != t.mm {
		tb.mu.Unlock()
		return unix.EINVAL
	}
	delete(tb.ctxs, ring)
	tb.mu.Unlock()
	c.mu.Lock()
	c.dead = true
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	size := (aioRingHeader + uintptr(c.nr)*AIOEventSize + mm.PageSize - 1) &^ (mm.PageSize - 1)
	c.mm.Munmap(ring, size)
	return nil
}

// forgetAIO drops the process's contexts at exec: the new program has
// none, and its memory holds no ring.
func (tg *ThreadGroup) forgetAIO() {
	tg.aio.mu.Lock()
	tg.aio.ctxs = nil
	tg.aio.mu.Unlock()
}

// headLocked reads the ring's head, which the guest may have moved.
func (c *AIOContext) headLocked() (uint32, error) {
	h, err := c.mm.LoadU32(c.ring + aioRingHeadOff)
	return h % c.nr, err
}

// Reserve takes a slot of the ring for an event to come (EAGAIN if none
// is free); Complete or Release must follow.
func (c *AIOContext) Reserve() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	head, err := c.headLocked()
	used := (c.tail + c.nr - head) % c.nr
	if err != nil || c.dead || used+c.reserved >= c.nr-1 {
		return unix.EAGAIN
	}
	c.reserved++
	return nil
}

// Release gives back the slot Reserve took, for a submission that failed.
func (c *AIOContext) Release() {
	c.mu.Lock()
	c.reserved--
	c.mu.Unlock()
}

// Complete adds the event (data, obj, res, res2 as struct io_event lays
// them out) at the ring's tail, into the slot Reserve took.
func (c *AIOContext) Complete(ev [4]uint64) {
	c.mu.Lock()
	c.reserved--
	var b [AIOEventSize]byte
	for i, v := range ev {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	c.mm.CopyOut(c.ring+aioRingHeader+uintptr(c.tail)*AIOEventSize, b[:])
	c.tail = (c.tail + 1) % c.nr
	var tb [4]byte
	binary.LittleEndian.PutUint32(tb[:], c.tail)
	c.mm.CopyOut(c.ring+aioRingTailOff, tb[:])
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// GetEvents takes between minNr and nr events from the ring, in order,
// giving each to out, waiting for minNr until the deadline (the zero time
// for none) or a signal. It returns how many it took: fewer than minNr at
// the deadline; EINTR for a signal before any; out's error (EFAULT) if
// the first could not be given.
func (t *Task) AIOGetEvents(c *AIOContext, minNr, nr int, deadline time.Time, out func(i int, ev []byte) error) (int, error) {
	got := 0
	for {
		c.mu.Lock()
		head, err := c.headLocked()
		if err != nil {
			c.mu.Unlock()
			return got, err
		}
		for got < nr && head != c.tail {
			var b [AIOEventSize]byte
			if _, err := c.mm.CopyIn(c.ring+aioRingHeader+uintptr(head)*AIOEventSize, b[:]); err != nil {
				break
			}
			if err := out(got, b[:]); err != nil {
				c.mu.Unlock()
				if got > 0 {
					return got, nil
				}
				return 0, err
			}
			head = (head + 1) % c.nr
			got++
		}
		var hb [4]byte
		binary.LittleEndian.PutUint32(hb[:], head)
		c.mm.CopyOut(c.ring+aioRingHeadOff, hb[:])
		ch, dead := c.changed, c.dead
		c.mu.Unlock()
		if got >= minNr || got >= nr || dead {
			return got, nil
		}
		if !deadline.IsZero() && !time.Now().Before(deadline) {
			return got, nil
		}
		if err := t.BlockUntil(ch, deadline); err != nil {
			if err == unix.ETIMEDOUT {
				continue // take what came meanwhile, then return
			}
			if got > 0 {
				return got, nil
			}
			return 0, unix.EINTR
		}
	}
}
