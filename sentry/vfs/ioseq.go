package vfs

import (
	"github.com/moat-sandbox/moat/sentry/mm"
)

// Range is one guest buffer: an address and a length.
type Range = mm.Range

// IOSeq is the guest memory a read fills or a write drains: one buffer for
// read(2), several for readv(2). It moves bytes either through the sentry's
// own buffers (CopyOut, CopyIn) or, for I/O that cannot block on the guest,
// directly through the memory file (WithSlices).
type IOSeq struct {
	ctx      Context
	nonblock bool // the file is O_NONBLOCK: a file that would block fails with EAGAIN
	nowait   bool // this I/O must not wait (preadv2's RWF_NOWAIT), whatever the file's flags
	noSignal bool // a write to a pipe or socket with no reader raises no SIGPIPE (RWF_NOSIGNAL)
	mm       *mm.MemoryManager
	ranges   []Range
	single   [1]Range // backing for the one-buffer case, so it needs no allocation
	buf      []byte   // set instead of mm and ranges for a sentry buffer
}

// NewIOSeqBuffer returns an IOSeq over a sentry buffer, for I/O the sentry
// does on its own account (sendfile).
func NewIOSeqBuffer(b []byte) *IOSeq { return &IOSeq{buf: b} }

// NewIOSeq returns an IOSeq over one buffer.
func NewIOSeq(m *mm.MemoryManager, addr uintptr, n int) *IOSeq {
	s := &IOSeq{mm: m}
	s.single[0] = Range{Addr: addr, Len: n}
	s.ranges = s.single[:]
	return s
}

// NewIOSeqRanges returns an IOSeq over several buffers.
func NewIOSeqRanges(m *mm.MemoryManager, ranges []Range) *IOSeq {
	return &IOSeq{mm: m, ranges: ranges}
}

// Context is the task an I/O runs for: what a file that blocks or raises
// a signal (a pipe) needs of it.
type Context interface {
	// Block waits until ch is ready. It fails with an error (the kernel's
	// restart code) if a signal or a kill interrupts the task first.
	Block(ch <-chan struct{}) error
	// Signal sends sig to the task (SIGPIPE for a write with no reader).
	Signal(sig int)
	// FileSizeLimit is the task's RLIMIT_FSIZE.
	FileSizeLimit() uint64
	// Interrupted reports whether a signal, a stop or a kill waits for the
	// task: an operation that loops over a size the task chose stops there.
	Interrupted() bool
}

// WithContext sets the task the I/O runs for and returns s.
func (s *IOSeq) WithContext(c Context) *IOSeq {
	s.ctx = c
	return s
}

// Context returns the task the I/O runs for, or nil for the sentry's own
// I/O, which must not block.
func (s *IOSeq) Context() Context { return s.ctx }

// NonBlocking reports whether the I/O must not wait: the file is
// O_NONBLOCK, the call said RWF_NOWAIT, or no task runs it.
func (s *IOSeq) NonBlocking() bool { return s.nonblock || s.nowait || s.ctx == nil }

// WithNoWait makes the I/O fail with EAGAIN where it would wait, as
// RWF_NOWAIT does, and returns s.
func (s *IOSeq) WithNoWait() *IOSeq {
	s.nowait = true
	return s
}

// WithNoSignal makes a write that finds no reader fail with EPIPE without
// raising SIGPIPE, as RWF_NOSIGNAL does, and returns s.
func (s *IOSeq) WithNoSignal() *IOSeq {
	s.noSignal = true
	return s
}

// NoSignal reports whether a write with no reader must not raise SIGPIPE.
func (s *IOSeq) NoSignal() bool { return s.noSignal }

// Len is the total length.
func (s *IOSeq) Len() int {
	if s.mm == nil {
		return len(s.buf)
	}
	n := 0
	for _, r := range s.ranges {
		n += r.Len
	}
	return n
}

// CopyOut writes src into the buffers in order and returns how much it
// wrote; EFAULT only if it wrote nothing.
func (s *IOSeq) CopyOut(src []byte) (int, error) {
	if s.mm == nil {
		return copy(s.buf, src), nil
	}
	return s.each(src, func(addr uintptr, b []byte) (int, error) { return s.mm.CopyOut(addr, b) })
}

// CopyIn fills dst from the buffers in order.
func (s *IOSeq) CopyIn(dst []byte) (int, error) {
	if s.mm == nil {
		return copy(dst, s.buf), nil
	}
	return s.each(dst, func(addr uintptr, b []byte) (int, error) { return s.mm.CopyIn(addr, b) })
}

func (s *IOSeq) each(buf []byte, fn func(uintptr, []byte) (int, error)) (int, error) {
	done := 0
	for _, r := range s.ranges {
		if done == len(buf) {
			break
		}
		n := min(r.Len, len(buf)-done)
		k, err := fn(r.Addr, buf[done:done+n])
		done += k
		if err != nil {
			if done == 0 {
				return 0, err
			}
			return done, nil
		}
	}
	return done, nil
}

// WithSlices calls fn with the memory-file views of the buffers (to be
// written into if write is set) while no mapping can change. fn must not
// block on anything the guest controls.
func (s *IOSeq) WithSlices(write bool, fn func(bufs [][]byte) (int, error)) (int, error) {
	if s.mm == nil {
		return fn([][]byte{s.buf})
	}
	return s.mm.WithSlices(s.ranges, write, fn)
}

// Skip returns the sequence without its first n bytes.
func (s *IOSeq) Skip(n int) *IOSeq {
	if s.mm == nil {
		return &IOSeq{ctx: s.ctx, nonblock: s.nonblock, nowait: s.nowait, noSignal: s.noSignal, buf: s.buf[min(n, len(s.buf)):]}
	}
	out := &IOSeq{ctx: s.ctx, nonblock: s.nonblock, nowait: s.nowait, noSignal: s.noSignal, mm: s.mm}
	for i, r := range s.ranges {
		if n < r.Len {
			out.ranges = append([]Range{{Addr: r.Addr + uintptr(n), Len: r.Len - n}}, s.ranges[i+1:]...)
			return out
		}
		n -= r.Len
	}
	return out
}

// Truncated returns the sequence cut to its first n bytes.
func (s *IOSeq) Truncated(n int) *IOSeq {
	if s.mm == nil {
		return &IOSeq{ctx: s.ctx, nonblock: s.nonblock, nowait: s.nowait, noSignal: s.noSignal, buf: s.buf[:min(n, len(s.buf))]}
	}
	out := &IOSeq{ctx: s.ctx, nonblock: s.nonblock, nowait: s.nowait, noSignal: s.noSignal, mm: s.mm}
	for _, r := range s.ranges {
		if n == 0 {
			break
		}
		k := min(r.Len, n)
		out.ranges = append(out.ranges, Range{Addr: r.Addr, Len: k})
		n -= k
	}
	return out
}
