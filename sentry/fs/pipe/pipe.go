// Package pipe is pipe(2): a ring buffer between a read end and a write end,
// with Linux's blocking, atomicity (PIPE_BUF), EOF, EPIPE/SIGPIPE and
// readiness rules. It lives entirely in the sentry.
package pipe

import (
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// Sizes, as Linux's.
const (
	DefaultSize = 1 << 16 // a new pipe's capacity
	MaxSize     = 1 << 20 // /proc/sys/fs/pipe-max-size
	PipeBuf     = 4096    // writes up to this size are atomic
	pageSize    = 4096
)

// pipe is the shared buffer.
type pipe struct {
	ino uint64
	dev uint64
	// attrs are the pipefs inode's mode, owner (at first the creator's
	// file-system ids) and times, which fchmod and fchown change.
	attrs vfs.InodeAttrs

	mu      sync.Mutex
	buf     []byte // ring of cap bytes, allocated on first write
	head, n int    // start and length of the data in buf
	cap     int
	readers int
	writers int
	// packets, in packet mode (O_DIRECT), are the lengths of the writes
	// in the buffer: a read takes at most one.
	packet  bool
	packets []int

	queue waiter.Queue

	inode *pipeInode // made when an end is reopened (named.go)
}

var (
	pipeDev = vfs.NewAnonDev()
	nextIno atomic.Uint64
)

// New returns the read and write ends of a new pipe, owned by uid and gid
// (the creator's file-system ids); in packet mode (pipe2's O_DIRECT) each
// write is a packet that one read takes whole (or cut short, the rest
// discarded).
func New(packet bool, uid, gid uint32) (*ReadEnd, *WriteEnd) {
	p := &pipe{ino: nextIno.Add(1), dev: pipeDev, cap: DefaultSize, readers: 1, writers: 1, packet: packet}
	// Mode 0600, and its times the time it was made, as Linux's
	// get_pipe_inode gives them.
	p.attrs.Init(unix.S_IFIFO|0o600, uid, gid, vfs.RealtimeNow())
	return &ReadEnd{p}, &WriteEnd{p}
}

// ReadEnd and WriteEnd are the two open ends.
type (
	ReadEnd  struct{ p *pipe }
	WriteEnd struct{ p *pipe }
)

// Read implements vfs.FileImpl.
func (r *ReadEnd) Read(dst *vfs.IOSeq, _ int64) (int, error) {
	p := r.p
	want := dst.Len()
	if want == 0 {
		return 0, nil
	}
	for {
		p.mu.Lock()
		if p.n > 0 {
			n, err := p.readLocked(dst, want)
			p.mu.Unlock()
			p.queue.Notify(waiter.WritableEvents)
			return n, err
		}
		if p.writers == 0 {
			p.mu.Unlock()
			return 0, nil // end of file
		}
		if dst.NonBlocking() {
			p.mu.Unlock()
			return 0, unix.EAGAIN
		}
		if err := p.waitLocked(dst.Context(), waiter.ReadableEvents|waiter.EventHUp); err != nil {
			return 0, err
		}
	}
}

// readLocked moves up to want bytes to dst: in packet mode, at most the
// first packet, whose rest is dropped.
func (p *pipe) readLocked(dst *vfs.IOSeq, want int) (int, error) {
	if p.packet && len(p.packets) > 0 {
		size := p.packets[0]
		n, err := p.copyOutLocked(dst, min(want, size))
		if err != nil && n == 0 {
			return 0, err
		}
		p.head = (p.head + size - n) % p.cap
		p.n -= size - n
		p.packets = p.packets[1:]
		return n, nil
	}
	return p.copyOutLocked(dst, want)
}

// copyOutLocked moves up to want bytes to dst a page at a time, as
// Linux's page buffers go: a page whose copy faults stays in the pipe and
// ends the read, which is EFAULT if nothing moved before it.
func (p *pipe) copyOutLocked(dst *vfs.IOSeq, want int) (int, error) {
	done := 0
	for done < want && p.n > 0 {
		chunk := min(want-done, p.n, pageSize)
		first := p.buf[p.head:min(p.head+chunk, p.cap)]
		k, err := dst.Skip(done).CopyOut(first)
		if err == nil && k == len(first) && k < chunk {
			var more int
			more, err = dst.Skip(done + k).CopyOut(p.buf[:chunk-k])
			k += more
		}
		if k < chunk {
			if done == 0 {
				return 0, faulted(err)
			}
			break
		}
		p.head = (p.head + chunk) % p.cap
		p.n -= chunk
		done += chunk
	}
	return done, nil
}

// faulted is the error of a copy that fell short.
func faulted(err error) error {
	if err == nil {
		return unix.EFAULT
	}
	return err
}

// waitLocked sleeps (p.mu held, released) until the pipe notifies one of
// mask, or the task is interrupted.
func (p *pipe) waitLocked(ctx vfs.Context, mask waiter.EventMask) error {
	e, ch := waiter.NewChannelEntry(mask)
	p.queue.EventRegister(e)
	p.mu.Unlock()
	err := ctx.Block(ch)
	p.queue.EventUnregister(e)
	return err
}

// Write implements vfs.FileImpl: all of src unless interrupted, a write of
// up to PipeBuf bytes in one piece.
func (w *WriteEnd) Write(src *vfs.IOSeq, _ int64) (int, error) {
	p := w.p
	total := src.Len()
	if total == 0 {
		// Linux's pipe_write returns before it looks for readers: no
		// EPIPE, no SIGPIPE.
		return 0, nil
	}
	done := 0
	for done < total {
		p.mu.Lock()
		if p.readers == 0 {
			p.mu.Unlock()
			if ctx := src.Context(); ctx != nil && !src.NoSignal() {
				ctx.Signal(int(unix.SIGPIPE))
			}
			if done > 0 {
				return done, nil
			}
			return 0, unix.EPIPE
		}
		room := p.cap - p.n
		if room > 0 && (total > PipeBuf || room >= total-done) {
			k, err := p.writeLocked(src.Skip(done), min(room, total-done))
			done += k
			p.mu.Unlock()
			p.queue.Notify(waiter.ReadableEvents)
			if err != nil {
				if done == 0 {
					return 0, err
				}
				return done, nil
			}
			continue
		}
		if src.NonBlocking() {
			p.mu.Unlock()
			if done > 0 {
				return done, nil
			}
			return 0, unix.EAGAIN
		}
		if err := p.waitLocked(src.Context(), waiter.WritableEvents|waiter.EventErr); err != nil {
			if done > 0 {
				return done, nil
			}
			return 0, err
		}
	}
	return done, nil
}

// writeLocked copies up to n bytes of src into the ring; in packet mode,
// as packets of at most PipeBuf bytes.
func (p *pipe) writeLocked(src *vfs.IOSeq, n int) (int, error) {
	if p.buf == nil || len(p.buf) != p.cap {
		p.grow(p.cap)
	}
	if !p.packet {
		return p.copyInLocked(src, n)
	}
	done := 0
	for done < n {
		k, err := p.copyInLocked(src.Skip(done), min(n-done, PipeBuf))
		if k > 0 {
			p.packets = append(p.packets, k)
		}
		done += k
		if err != nil || k == 0 {
			if done == 0 {
				return 0, err
			}
			break
		}
	}
	return done, nil
}

// copyInLocked copies up to n bytes of src into the ring a page at a
// time, as Linux's page buffers go: a page whose copy faults is not added
// and ends the write, which is EFAULT if nothing was added before it. A
// write of at most PIPE_BUF is one page, and so stays atomic.
func (p *pipe) copyInLocked(src *vfs.IOSeq, n int) (int, error) {
	done := 0
	for done < n {
		chunk := min(n-done, pageSize)
		tail := (p.head + p.n) % p.cap
		// The bytes land past p.n, unseen until the whole page is in.
		first := p.buf[tail:min(tail+chunk, p.cap)]
		k, err := src.Skip(done).CopyIn(first)
		if err == nil && k == len(first) && k < chunk {
			var more int
			more, err = src.Skip(done + k).CopyIn(p.buf[:chunk-k])
			k += more
		}
		if k < chunk {
			if done == 0 {
				return 0, faulted(err)
			}
			break
		}
		p.n += chunk
		done += chunk
	}
	return done, nil
}

// grow moves the data into a buffer of size bytes, at its start.
func (p *pipe) grow(size int) {
	nb := make([]byte, size)
	for i := 0; i < p.n; i++ {
		nb[i] = p.buf[(p.head+i)%len(p.buf)]
	}
	p.buf, p.head, p.cap = nb, 0, size
}

// readiness is what poll sees on each end.
func (p *pipe) readiness(mask waiter.EventMask, read bool) waiter.EventMask {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ev waiter.EventMask
	if read {
		if p.n > 0 {
			ev |= waiter.ReadableEvents
		}
		if p.writers == 0 {
			ev |= waiter.EventHUp
		}
	} else {
		if p.cap-p.n >= PipeBuf || (p.cap-p.n > 0 && p.cap < PipeBuf) {
			ev |= waiter.WritableEvents
		}
		if p.readers == 0 {
			ev |= waiter.EventErr
		}
	}
	return ev & (mask | waiter.EventHUp | waiter.EventErr)
}

// Readiness implements waiter.Waitable.
func (r *ReadEnd) Readiness(mask waiter.EventMask) waiter.EventMask { return r.p.readiness(mask, true) }

// Readiness implements waiter.Waitable.
func (w *WriteEnd) Readiness(mask waiter.EventMask) waiter.EventMask {
	return w.p.readiness(mask, false)
}

// EventRegister and EventUnregister implement waiter.Waitable.
func (r *ReadEnd) EventRegister(e *waiter.Entry)    { r.p.queue.EventRegister(e) }
func (r *ReadEnd) EventUnregister(e *waiter.Entry)  { r.p.queue.EventUnregister(e) }
func (w *WriteEnd) EventRegister(e *waiter.Entry)   { w.p.queue.EventRegister(e) }
func (w *WriteEnd) EventUnregister(e *waiter.Entry) { w.p.queue.EventUnregister(e) }

// Write on the read end and Read on the write end give EBADF (the file's
// access mode catches them first).
func (r *ReadEnd) Write(*vfs.IOSeq, int64) (int, error) { return 0, unix.EBADF }
func (w *WriteEnd) Read(*vfs.IOSeq, int64) (int, error) { return 0, unix.EBADF }

// Release implements vfs.FileImpl: the last reader gone makes writes fail,
// the last writer gone makes reads find the end.
func (r *ReadEnd) Release() {
	r.p.mu.Lock()
	r.p.readers--
	r.p.mu.Unlock()
	r.p.queue.Notify(waiter.EventErr | waiter.WritableEvents)
}

// Release implements vfs.FileImpl.
func (w *WriteEnd) Release() {
	w.p.mu.Lock()
	w.p.writers--
	w.p.mu.Unlock()
	w.p.queue.Notify(waiter.EventHUp | waiter.ReadableEvents)
}

func (p *pipe) stat() vfs.Stat {
	st := vfs.Stat{Dev: p.dev, Ino: p.ino, Nlink: 1, Blksize: pageSize}
	p.attrs.Fill(&st)
	return st
}

// Stat implements vfs.FileImpl.
func (r *ReadEnd) Stat() (vfs.Stat, error)  { return r.p.stat(), nil }
func (w *WriteEnd) Stat() (vfs.Stat, error) { return w.p.stat(), nil }

// SetAttr implements vfs.AttrSetter: fchmod and fchown of either end
// change the pipe's one inode.
func (r *ReadEnd) SetAttr(a *vfs.Attr) error  { return r.p.attrs.SetAttr(a) }
func (w *WriteEnd) SetAttr(a *vfs.Attr) error { return w.p.attrs.SetAttr(a) }

// Ioctl implements vfs.FileImpl: FIONREAD gives the bytes buffered.
func (r *ReadEnd) Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	return r.p.ioctl(cmd, arg, io)
}
func (w *WriteEnd) Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	return w.p.ioctl(cmd, arg, io)
}

func (p *pipe) ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	if cmd != linuxabi.FIONREAD {
		return 0, unix.ENOTTY
	}
	p.mu.Lock()
	n := uint32(p.n)
	p.mu.Unlock()
	b := []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)}
	_, err := io.CopyOut(arg, b)
	return 0, err
}

// Name is what /proc/<pid>/fd shows.
func (r *ReadEnd) Name() string  { return r.p.name() }
func (w *WriteEnd) Name() string { return w.p.name() }

func (p *pipe) name() string { return "pipe:[" + strconv.FormatUint(p.ino, 10) + "]" }

// Size returns the capacity (F_GETPIPE_SZ); SetSize changes it
// (F_SETPIPE_SZ), rounded up to a power-of-two number of pages, not below
// what the pipe holds.
func (r *ReadEnd) Size() int                   { return r.p.size() }
func (w *WriteEnd) Size() int                  { return w.p.size() }
func (r *ReadEnd) SetSize(n int) (int, error)  { return r.p.setSize(n) }
func (w *WriteEnd) SetSize(n int) (int, error) { return w.p.setSize(n) }

func (p *pipe) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cap
}

func (p *pipe) setSize(n int) (int, error) {
	if n < 0 || n > MaxSize {
		return 0, unix.EPERM
	}
	size := pageSize
	for size < n {
		size <<= 1
	}
	p.mu.Lock()
	if size < p.n {
		p.mu.Unlock()
		return 0, unix.EBUSY
	}
	if p.buf != nil {
		p.grow(size)
	} else {
		p.cap = size
	}
	p.mu.Unlock()
	p.queue.Notify(waiter.WritableEvents)
	return size, nil
}
