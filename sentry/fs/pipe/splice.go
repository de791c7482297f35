package pipe

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// What splice(2), tee(2) and vmsplice(2) need of a pipe beyond read and
// write: waiting for data or room without moving anything, and looking at
// the data without taking it.

// Pipe is the pipe behind an end, for the splice family.
type Pipe struct{ p *pipe }

// Of returns the pipe impl is an end of (of pipe(2) or of a FIFO), as
// Linux's get_pipe_info.
func Of(impl vfs.FileImpl) (Pipe, bool) {
	switch e := impl.(type) {
	case *ReadEnd:
		return Pipe{e.p}, true
	case *WriteEnd:
		return Pipe{e.p}, true
	case *namedEnd:
		return Of(e.end)
	case *bothEnds:
		return Pipe{e.r.p}, true
	}
	return Pipe{}, false
}

// Same reports whether two ends are of one pipe.
func (h Pipe) Same(o Pipe) bool { return h.p == o.p }

// WaitData waits until the pipe holds data and returns how much, or 0 once
// no writer is left; with nonblock, EAGAIN instead of waiting.
func (h Pipe) WaitData(ctx vfs.Context, nonblock bool) (int, error) {
	p := h.p
	for {
		p.mu.Lock()
		if p.n > 0 || p.writers == 0 {
			n := p.n
			p.mu.Unlock()
			return n, nil
		}
		if nonblock || ctx == nil {
			p.mu.Unlock()
			return 0, unix.EAGAIN
		}
		if err := p.waitLocked(ctx, waiter.ReadableEvents|waiter.EventHUp); err != nil {
			return 0, err
		}
	}
}

// WaitRoom waits until the pipe has room and returns how much; with no
// reader it sends ctx SIGPIPE and fails with EPIPE, and with nonblock it
// gives EAGAIN instead of waiting.
func (h Pipe) WaitRoom(ctx vfs.Context, nonblock bool) (int, error) {
	p := h.p
	for {
		p.mu.Lock()
		if p.readers == 0 {
			p.mu.Unlock()
			if ctx != nil {
				ctx.Signal(int(unix.SIGPIPE))
			}
			return 0, unix.EPIPE
		}
		if room := p.cap - p.n; room > 0 {
			p.mu.Unlock()
			return room, nil
		}
		if nonblock || ctx == nil {
			p.mu.Unlock()
			return 0, unix.EAGAIN
		}
		if err := p.waitLocked(ctx, waiter.WritableEvents|waiter.EventErr); err != nil {
			return 0, err
		}
	}
}

// Peek copies up to len(b) bytes from the front of the pipe into b,
// leaving them there, and returns how many.
func (h Pipe) Peek(b []byte) int {
	p := h.p
	p.mu.Lock()
	defer p.mu.Unlock()
	n := min(len(b), p.n)
	k := copy(b[:n], p.buf[p.head:min(p.head+n, p.cap)])
	copy(b[k:n], p.buf[:n-k])
	return n
}

// Discard drops the first n bytes of the pipe, what a splice moved out
// after Peek: unlike a read, it may end inside a packet (O_DIRECT), whose
// rest stays, as Linux's splice leaves the rest of a pipe buffer.
func (h Pipe) Discard(n int) {
	p := h.p
	p.mu.Lock()
	n = min(n, p.n)
	if n > 0 {
		p.head = (p.head + n) % p.cap
		p.n -= n
	}
	for n > 0 && len(p.packets) > 0 {
		k := min(n, p.packets[0])
		if p.packets[0] -= k; p.packets[0] == 0 {
			p.packets = p.packets[1:]
		}
		n -= k
	}
	p.mu.Unlock()
	p.queue.Notify(waiter.WritableEvents)
}

// Put adds b to the pipe, without waiting: as much as there is room for.
func (h Pipe) Put(b []byte) (int, error) {
	p := h.p
	p.mu.Lock()
	room := p.cap - p.n
	p.mu.Unlock()
	if len(b) > room {
		b = b[:room]
	}
	return (&WriteEnd{h.p}).Write(vfs.NewIOSeqBuffer(b), 0)
}

// PutFrom adds what src holds to the pipe, as much as there is room for,
// without waiting (vmsplice from guest memory).
func (h Pipe) PutFrom(src *vfs.IOSeq) (int, error) {
	p := h.p
	p.mu.Lock()
	room := p.cap - p.n
	p.mu.Unlock()
	if src.Len() > room {
		src = src.Truncated(room)
	}
	return (&WriteEnd{h.p}).Write(src, 0)
}

// TakeInto moves what the pipe holds into dst, without waiting (vmsplice
// to guest memory).
func (h Pipe) TakeInto(dst *vfs.IOSeq) (int, error) {
	return (&ReadEnd{h.p}).Read(dst, 0)
}
