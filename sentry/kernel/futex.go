package kernel

import (
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// futexTable holds the tasks waiting on futexes, by key. One lock for the
// whole table: a waiter checks the word and queues itself under it, and a
// waker takes it before it looks for waiters, so no wake is lost.
type futexTable struct {
	mu      sync.Mutex
	waiters map[mm.FutexKey][]*futexWaiter
}

type futexWaiter struct {
	key    mm.FutexKey
	bitset uint32
	woken  chan struct{} // closed by the waker
	// multi is the futex_waitv(2) wait this waiter is one futex of, with
	// its index there; nil for a wait on one futex.
	multi *futexMulti
	index int
}

// futexMulti is a wait on several futexes at once: one waiter per futex,
// sharing one channel; the first wake takes every one off its queue.
type futexMulti struct {
	waiters []*futexWaiter
	woken   int // index of the futex woken, -1 until then (ft.mu)
}

// FutexWait sleeps while the word at addr holds val, until woken (by a wake
// whose bitset meets bitset), the deadline (ETIMEDOUT) or a signal.
func (t *Task) FutexWait(addr uintptr, val uint32, bitset uint32, private bool, deadline time.Time) error {
	key, err := t.mm.FutexKey(addr, private)
	if err != nil {
		return err
	}
	ft := &t.k.futexes
	ft.mu.Lock()
	cur, err := t.mm.LoadU32(addr)
	if err != nil {
		ft.mu.Unlock()
		return err
	}
	if cur != val {
		ft.mu.Unlock()
		return unix.EAGAIN
	}
	w := &futexWaiter{key: key, bitset: bitset, woken: make(chan struct{})}
	if ft.waiters == nil {
		ft.waiters = make(map[mm.FutexKey][]*futexWaiter)
	}
	ft.waiters[key] = append(ft.waiters[key], w)
	ft.mu.Unlock()

	err = t.BlockUntil(w.woken, deadline)
	if err != nil {
		ft.mu.Lock()
		removed := ft.remove(w)
		ft.mu.Unlock()
		if !removed {
			return nil // woken just as it gave up: the wake counts
		}
	}
	return err
}

// remove takes w off its queue; it reports false if a waker took it first.
func (ft *futexTable) remove(w *futexWaiter) bool {
	q := ft.waiters[w.key]
	for i, x := range q {
		if x == w {
			ft.set(w.key, append(q[:i:i], q[i+1:]...))
			return true
		}
	}
	return false
}

func (ft *futexTable) set(key mm.FutexKey, q []*futexWaiter) {
	if len(q) == 0 {
		delete(ft.waiters, key)
	} else {
		ft.waiters[key] = q
	}
}

// wakeLocked wakes up to n waiters on key whose bitset meets bitset.
func (ft *futexTable) wakeLocked(key mm.FutexKey, n int, bitset uint32) int {
	q := ft.waiters[key]
	woken := 0
	kept := q[:0]
	multi := false
	for _, w := range q {
		if w.multi != nil && w.multi.woken >= 0 {
			continue // woken through another futex just now
		}
		if woken < n && w.bitset&bitset != 0 {
			if w.multi != nil {
				ft.wakeMultiLocked(w, key)
				multi = true
			} else {
				close(w.woken)
			}
			woken++
			continue
		}
		kept = append(kept, w)
	}
	if multi {
		// A multi-futex waiter woken here may have had another futex on
		// this key too, queued before the one woken.
		kept = slices.DeleteFunc(kept, func(w *futexWaiter) bool { return w.multi != nil && w.multi.woken >= 0 })
	}
	ft.set(key, kept)
	return woken
}

// wakeMultiLocked wakes the multi-futex wait w is part of, through w, and
// takes its other futexes off their queues (but those on key, which the
// caller is rebuilding).
func (ft *futexTable) wakeMultiLocked(w *futexWaiter, key mm.FutexKey) {
	w.multi.woken = w.index
	for _, x := range w.multi.waiters {
		if x != w && x.key != key {
			ft.remove(x)
		}
	}
	close(w.woken)
}

// FutexWaitEntry is one futex of a futex_waitv(2) wait.
type FutexWaitEntry struct {
	Addr    uintptr
	Val     uint32
	Private bool
}

// FutexWaitv sleeps on every futex of ws at once while each word holds
// its value (EAGAIN if one does not), until one is woken, whose index it
// returns, the deadline (ETIMEDOUT) or a signal.
func (t *Task) FutexWaitv(ws []FutexWaitEntry, deadline time.Time) (int, error) {
	keys := make([]mm.FutexKey, len(ws))
	for i, e := range ws {
		k, err := t.mm.FutexKey(e.Addr, e.Private)
		if err != nil {
			return 0, err
		}
		keys[i] = k
	}
	ft := &t.k.futexes
	ft.mu.Lock()
	for _, e := range ws {
		cur, err := t.mm.LoadU32(e.Addr)
		if err != nil {
			ft.mu.Unlock()
			return 0, err
		}
		if cur != e.Val {
			ft.mu.Unlock()
			return 0, unix.EAGAIN
		}
	}
	m := &futexMulti{woken: -1, waiters: make([]*futexWaiter, len(ws))}
	woken := make(chan struct{})
	if ft.waiters == nil {
		ft.waiters = make(map[mm.FutexKey][]*futexWaiter)
	}
	for i, k := range keys {
		w := &futexWaiter{key: k, bitset: linuxabi.FUTEX_BITSET_MATCH_ANY, woken: woken, multi: m, index: i}
		m.waiters[i] = w
		ft.waiters[k] = append(ft.waiters[k], w)
	}
	ft.mu.Unlock()

	err := t.BlockUntil(woken, deadline)
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if m.woken >= 0 {
		return m.woken, nil // woken, perhaps just as it gave up: the wake counts
	}
	for _, w := range m.waiters {
		ft.remove(w)
	}
	return 0, err
}

// FutexWake wakes up to n tasks waiting on the word at addr; a count of 0
// or less wakes one, as Linux's futex_wake does (it tests the count only
// after a wake).
func (t *Task) FutexWake(addr uintptr, n int, bitset uint32, private bool) (int, error) {
	key, err := t.mm.FutexKey(addr, private)
	if err != nil {
		return 0, err
	}
	ft := &t.k.futexes
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return ft.wakeLocked(key, max(n, 1), bitset), nil
}

// FutexRequeue wakes up to nWake waiters on addr and moves up to nMove
// more to addr2 (each private or shared as its flag says). With cmp, it
// first checks that addr holds val (EAGAIN).
func (t *Task) FutexRequeue(addr, addr2 uintptr, nWake, nMove int, cmp bool, val uint32, private, private2 bool) (int, error) {
	key, err := t.mm.FutexKey(addr, private)
	if err != nil {
		return 0, err
	}
	key2, err := t.mm.FutexKey(addr2, private2)
	if err != nil {
		return 0, err
	}
	ft := &t.k.futexes
	ft.mu.Lock()
	defer ft.mu.Unlock()
	if cmp {
		cur, err := t.mm.LoadU32(addr)
		if err != nil {
			return 0, err
		}
		if cur != val {
			return 0, unix.EAGAIN
		}
	}
	woken := ft.wakeLocked(key, nWake, linuxabi.FUTEX_BITSET_MATCH_ANY)
	q := ft.waiters[key]
	moved := 0
	for moved < nMove && len(q) > 0 {
		w := q[0]
		q = q[1:]
		w.key = key2
		ft.waiters[key2] = append(ft.waiters[key2], w)
		moved++
	}
	ft.set(key, q)
	return woken + moved, nil
}

// FutexWakeOp implements FUTEX_WAKE_OP: it changes the word at addr2 with
// op, wakes up to n waiters on addr, and if the old value of addr2 meets
// op's comparison, up to n2 waiters on addr2 (each count at least one, as
// FutexWake's). An unknown comparison is found only once the word has
// changed: then no one is woken.
func (t *Task) FutexWakeOp(addr, addr2 uintptr, n, n2 int, op uint32, private bool) (int, error) {
	key, err := t.mm.FutexKey(addr, private)
	if err != nil {
		return 0, err
	}
	key2, err := t.mm.FutexKey(addr2, private)
	if err != nil {
		return 0, err
	}
	opType, cmpType := (op>>28)&0xf, (op>>24)&0xf
	// Both arguments are signed 12-bit numbers.
	oparg, cmparg := uint32(int32(op<<8)>>20), int32(op<<20)>>20
	if opType&8 != 0 { // FUTEX_OP_OPARG_SHIFT
		// Linux takes a shift out of 0..31 modulo 32 (and logs it).
		oparg = 1 << (oparg & 31)
		opType &^= 8
	}
	ft := &t.k.futexes
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var bad bool
	old, err := t.mm.UpdateU32(addr2, func(v uint32) (uint32, bool) {
		switch opType {
		case 0:
			return oparg, true // SET
		case 1:
			return v + oparg, true // ADD
		case 2:
			return v | oparg, true // OR
		case 3:
			return v &^ oparg, true // ANDN
		case 4:
			return v ^ oparg, true // XOR
		}
		bad = true
		return v, false
	})
	if err != nil {
		return 0, err
	}
	if bad {
		return 0, unix.ENOSYS
	}
	o := int32(old)
	var hit bool
	switch cmpType {
	case 0:
		hit = o == cmparg
	case 1:
		hit = o != cmparg
	case 2:
		hit = o < cmparg
	case 3:
		hit = o <= cmparg
	case 4:
		hit = o > cmparg
	case 5:
		hit = o >= cmparg
	default:
		return 0, unix.ENOSYS
	}
	woken := ft.wakeLocked(key, max(n, 1), linuxabi.FUTEX_BITSET_MATCH_ANY)
	if hit {
		woken += ft.wakeLocked(key2, max(n2, 1), linuxabi.FUTEX_BITSET_MATCH_ANY)
	}
	return woken, nil
}

// exitRobustList marks the futexes the exiting task held as their owner
// dead and wakes a waiter on each, as Linux does for robust mutexes.
func (t *Task) exitRobustList() {
	head := t.robustList
	if head == 0 {
		return
	}
	var h [3]uint64 // next, futex_offset, list_op_pending
	if _, err := t.mm.CopyIn(head, u64bytes(h[:])); err != nil {
		return
	}
	offset := int64(h[1])
	handle := func(entry uint64) {
		addr := uintptr(int64(entry) + offset)
		old, err := t.mm.UpdateU32(addr, func(v uint32) (uint32, bool) {
			if v&linuxabi.FUTEX_TID_MASK != uint32(t.vtid) {
				return v, false
			}
			return v&linuxabi.FUTEX_WAITERS | linuxabi.FUTEX_OWNER_DIED, true
		})
		if err == nil && old&linuxabi.FUTEX_TID_MASK == uint32(t.vtid) && old&linuxabi.FUTEX_WAITERS != 0 {
			t.FutexWake(addr, 1, linuxabi.FUTEX_BITSET_MATCH_ANY, false)
		}
	}
	entry := h[0]
	for i := 0; entry != uint64(head) && entry != 0 && i < linuxabi.ROBUST_LIST_LIMIT; i++ {
		var next [1]uint64
		if _, err := t.mm.CopyIn(uintptr(entry), u64bytes(next[:])); err != nil {
			break
		}
		if entry != h[2] {
			handle(entry)
		}
		entry = next[0]
	}
	if h[2] != 0 {
		handle(h[2])
	}
}
