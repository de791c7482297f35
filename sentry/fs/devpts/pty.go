package devpts

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// pair is one pseudo-terminal: the master end /dev/ptmx opened and the
// replica /dev/pts/N, joined by a line discipline. Both live in the
// sentry; no host terminal is involved.
type pair struct {
	index int
	fs    *FS
	tty   *kernel.TTY // job control: the session the replica controls

	mu      sync.Mutex
	ld      *ldisc
	winsize unix.Winsize
	// locked: the replica cannot be opened until TIOCSPTLCK unlocks it,
	// as glibc's unlockpt does.
	locked    bool
	exclusive bool // TIOCEXCL: further opens of the replica get EBUSY
	// replicas counts the open replica files; opened says one ever was
	// (a master that never had a replica does not hang up).
	replicas int
	opened   bool
	// hungUp: the master is closed. Replica files give EIO to readers that
	// were waiting, end of file to later reads and EIO to writes.
	hungUp bool

	// masterQ wakes the master's readers (output to read) and writers
	// (room for input); replicaQ the replica's.
	masterQ, replicaQ waiter.Queue
}

func newPair(fs *FS, index int) *pair {
	return &pair{index: index, fs: fs, ld: newLdisc(), locked: true,
		tty: kernel.NewTTY(unix.Mkdev(replicaMajor, uint32(index)))}
}

// taskOf is the task an I/O or ioctl runs for, when it is one (tests feed
// the line discipline without a kernel).
func taskOf(v any) *kernel.Task {
	t, _ := v.(*kernel.Task)
	return t
}

// wait sleeps (p.mu held, released) until q notifies one of mask, the
// deadline passes (zero: none) or the task is interrupted.
func (p *pair) wait(ctx vfs.Context, q *waiter.Queue, mask waiter.EventMask, deadline time.Time) error {
	e, ch := waiter.NewChannelEntry(mask)
	q.EventRegister(e)
	p.mu.Unlock()
	defer q.EventUnregister(e)
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return nil
		}
		timer := time.AfterFunc(d, func() {
			select {
			case ch <- struct{}{}:
			default:
			}
		})
		defer timer.Stop()
	}
	return ctx.Block(ch)
}

// signal sends the signals a line discipline raised to the foreground
// group, once the pair's lock is released.
func (p *pair) signal(sigs []int) {
	for _, s := range sigs {
		p.tty.SignalForeground(s)
	}
}

// notifyAll wakes both ends' waiters for every event (after a change that
// may make either side ready).
func (p *pair) notifyAll() {
	all := waiter.ReadableEvents | waiter.WritableEvents | waiter.EventHUp | waiter.EventErr
	p.masterQ.Notify(all)
	p.replicaQ.Notify(all)
}

// masterWrite is input typed at the terminal.
func (p *pair) masterWrite(src *vfs.IOSeq) (int, error) {
	total := src.Len()
	if total == 0 {
		return 0, nil
	}
	buf := make([]byte, min(total, inputCap))
	done := 0
	for done < total {
		n, err := src.Skip(done).CopyIn(buf[:min(len(buf), total-done)])
		if n == 0 {
			return partial(done, err)
		}
		chunk := buf[:n]
		for len(chunk) > 0 {
			p.mu.Lock()
			k, sigs := p.ld.receive(chunk)
			if k == 0 {
				if src.NonBlocking() {
					p.mu.Unlock()
					return partial(done, unix.EAGAIN)
				}
				if err := p.wait(src.Context(), &p.masterQ, waiter.WritableEvents, time.Time{}); err != nil {
					return partial(done, err)
				}
				continue
			}
			p.mu.Unlock()
			p.signal(sigs)
			p.notifyAll()
			chunk, done = chunk[k:], done+k
		}
	}
	return done, nil
}

// masterRead is what the terminal shows: the replica's output and the
// echoes. With no replica left open (after one was), it is EIO once the
// output is read.
func (p *pair) masterRead(dst *vfs.IOSeq) (int, error) {
	want := dst.Len()
	if want == 0 {
		return 0, nil
	}
	p.mu.Lock()
	for len(p.ld.out) == 0 {
		if p.opened && p.replicas == 0 {
			p.mu.Unlock()
			return 0, unix.EIO
		}
		if dst.NonBlocking() {
			p.mu.Unlock()
			return 0, unix.EAGAIN
		}
		if err := p.wait(dst.Context(), &p.masterQ, waiter.ReadableEvents|waiter.EventHUp, time.Time{}); err != nil {
			return 0, err
		}
		p.mu.Lock()
	}
	n, err := dst.CopyOut(p.ld.out[:min(want, len(p.ld.out))])
	if n > 0 {
		p.ld.takeOutput(n)
	}
	p.mu.Unlock()
	p.replicaQ.Notify(waiter.WritableEvents)
	if n == 0 {
		return 0, faulted(err)
	}
	return n, nil
}

// replicaRead is a program reading its terminal: a line at a time in
// canonical mode, by VMIN and VTIME otherwise (Linux's n_tty_read).
func (p *pair) replicaRead(dst *vfs.IOSeq) (int, error) {
	if t := taskOf(dst.Context()); t != nil {
		if err := p.tty.CheckChange(t, int(unix.SIGTTIN)); err != nil {
			return 0, err
		}
	}
	want := dst.Len()
	p.mu.Lock()
	if p.hungUp {
		p.mu.Unlock()
		return 0, nil
	}
	if want == 0 {
		p.mu.Unlock()
		return 0, nil
	}
	if p.ld.canonical() {
		return p.readCanonical(dst, want)
	}
	return p.readRaw(dst, want)
}

// readCanonical returns at most one line (p.mu held, released).
func (p *pair) readCanonical(dst *vfs.IOSeq, want int) (int, error) {
	for !p.ld.hasLine() {
		if err := p.waitInput(dst); err != nil {
			return 0, err
		}
		if !p.ld.canonical() {
			return p.readRaw(dst, want)
		}
	}
	n := min(want, p.ld.readable())
	k, err := dst.CopyOut(p.ld.in[:n])
	if k < n && k == 0 && n > 0 {
		p.mu.Unlock()
		return 0, faulted(err)
	}
	p.ld.takeInput(k)
	p.mu.Unlock()
	p.masterQ.Notify(waiter.WritableEvents)
	return k, nil
}

// readRaw is a non-canonical read (p.mu held, released): it returns once
// it has VMIN bytes (or all it asked for); VTIME, with VMIN 0, bounds the
// wait for the first byte and, with VMIN set, the wait between bytes.
func (p *pair) readRaw(dst *vfs.IOSeq, want int) (int, error) {
	vmin, vtime := int(p.ld.termios.Cc[unix.VMIN]), time.Duration(p.ld.termios.Cc[unix.VTIME])*100*time.Millisecond
	minimum := vmin
	var deadline time.Time
	if vmin == 0 {
		minimum = 1
		if vtime > 0 {
			deadline = time.Now().Add(vtime)
		}
	}
	done := 0
	for {
		if n := min(want-done, len(p.ld.in)); n > 0 {
			k, err := dst.Skip(done).CopyOut(p.ld.in[:n])
			p.ld.takeInput(k)
			done += k
			if k < n {
				p.mu.Unlock()
				p.masterQ.Notify(waiter.WritableEvents)
				if done == 0 {
					return 0, faulted(err)
				}
				return done, nil
			}
			if vmin > 0 && vtime > 0 {
				deadline = time.Now().Add(vtime) // the timer between bytes
			}
		}
		// VMIN and VTIME 0 return at once, with O_NONBLOCK too: 0, not
		// EAGAIN.
		if done >= minimum || done == want || (vmin == 0 && vtime == 0) ||
			(!deadline.IsZero() && !time.Now().Before(deadline)) {
			break
		}
		if dst.NonBlocking() {
			if done == 0 {
				p.mu.Unlock()
				return 0, unix.EAGAIN
			}
			break
		}
		if err := p.wait(dst.Context(), &p.replicaQ, waiter.ReadableEvents|waiter.EventHUp, deadline); err != nil {
			p.masterQ.Notify(waiter.WritableEvents)
			return partial(done, err)
		}
		p.mu.Lock()
		if p.hungUp {
			p.mu.Unlock()
			return partial(done, unix.EIO)
		}
		if p.ld.canonical() && done == 0 {
			return p.readCanonical(dst, want)
		}
	}
	p.mu.Unlock()
	p.masterQ.Notify(waiter.WritableEvents)
	return done, nil
}

// waitInput waits for input (p.mu held; held again on success). A master
// that closes meanwhile gives the waiter EIO, as Linux's TTY_OTHER_CLOSED.
func (p *pair) waitInput(dst *vfs.IOSeq) error {
	if dst.NonBlocking() {
		p.mu.Unlock()
		return unix.EAGAIN
	}
	if err := p.wait(dst.Context(), &p.replicaQ, waiter.ReadableEvents|waiter.EventHUp, time.Time{}); err != nil {
		return err
	}
	p.mu.Lock()
	if p.hungUp {
		p.mu.Unlock()
		return unix.EIO
	}
	return nil
}

// replicaWrite is a program writing to its terminal: output processing,
// and with TOSTOP a background writer is stopped first.
func (p *pair) replicaWrite(src *vfs.IOSeq) (int, error) {
	p.mu.Lock()
	hungUp, tostop := p.hungUp, p.ld.lflag(unix.TOSTOP)
	p.mu.Unlock()
	if hungUp {
		return 0, unix.EIO
	}
	if t := taskOf(src.Context()); t != nil && tostop {
		if err := p.tty.CheckChange(t, int(unix.SIGTTOU)); err != nil {
			return 0, err
		}
	}
	total := src.Len()
	buf := make([]byte, min(total, outputCap))
	done := 0
	for done < total {
		n, err := src.Skip(done).CopyIn(buf[:min(len(buf), total-done)])
		if n == 0 {
			return partial(done, err)
		}
		chunk := buf[:n]
		for len(chunk) > 0 {
			p.mu.Lock()
			if p.hungUp {
				p.mu.Unlock()
				return partial(done, unix.EIO)
			}
			k := 0
			if !p.ld.stopped {
				k = p.ld.transmit(chunk)
			}
			if k == 0 {
				if src.NonBlocking() {
					p.mu.Unlock()
					return partial(done, unix.EAGAIN)
				}
				if err := p.wait(src.Context(), &p.replicaQ, waiter.WritableEvents|waiter.EventHUp, time.Time{}); err != nil {
					return partial(done, err)
				}
				continue
			}
			p.mu.Unlock()
			p.masterQ.Notify(waiter.ReadableEvents)
			chunk, done = chunk[k:], done+k
		}
	}
	return done, nil
}

// partial is the result of an I/O that stopped: what it did, or err if it
// did nothing.
func partial(done int, err error) (int, error) {
	if done > 0 {
		return done, nil
	}
	if err == nil {
		err = unix.EFAULT
	}
	return 0, err
}

// faulted is the error of a copy that fell short.
func faulted(err error) error {
	if err == nil {
		return unix.EFAULT
	}
	return err
}

// masterReadiness is poll on the master: output to read, room for input,
// and a hang-up once every replica that was opened is closed.
func (p *pair) masterReadiness(mask waiter.EventMask) waiter.EventMask {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ev waiter.EventMask
	if len(p.ld.out) > 0 {
		ev |= waiter.ReadableEvents
	}
	if !p.ld.inputBlocked() {
		ev |= waiter.WritableEvents
	}
	if p.opened && p.replicas == 0 {
		ev |= waiter.EventHUp
	}
	return ev & (mask | waiter.EventHUp | waiter.EventErr)
}

// replicaReadiness is poll on the replica: a line (canonical) or VMIN
// bytes (VTIME 0) or a byte to read, room for output; everything, with
// an error and a hang-up, once the master is gone.
func (p *pair) replicaReadiness(mask waiter.EventMask) waiter.EventMask {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hungUp {
		return (waiter.ReadableEvents|waiter.WritableEvents)&mask | waiter.EventErr | waiter.EventHUp
	}
	var ev waiter.EventMask
	if p.ld.canonical() {
		if p.ld.hasLine() {
			ev |= waiter.ReadableEvents
		}
	} else {
		amt := 1
		if cc := p.ld.termios.Cc; cc[unix.VTIME] == 0 && cc[unix.VMIN] > 0 {
			amt = int(cc[unix.VMIN])
		}
		if len(p.ld.in) >= amt {
			ev |= waiter.ReadableEvents
		}
	}
	if !p.ld.stopped && len(p.ld.out) < outputCap {
		ev |= waiter.WritableEvents
	}
	return ev & (mask | waiter.EventHUp | waiter.EventErr)
}

// openReplica opens the replica end: EIO while it is locked or once the
// master is gone, EBUSY in exclusive mode without CAP_SYS_ADMIN.
func (p *pair) openReplica(admin bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.locked, p.hungUp:
		return unix.EIO
	case p.exclusive && !admin:
		return unix.EBUSY
	}
	p.replicas++
	p.opened = true
	return nil
}

// releaseReplica is the close of a replica file.
func (p *pair) releaseReplica() {
	p.mu.Lock()
	p.replicas--
	last := p.replicas == 0
	p.mu.Unlock()
	if last {
		p.notifyAll()
		p.fs.maybeFree(p)
	}
}

// releaseMaster is the master's close: the replica's name goes at once,
// its files hang up, and its session loses it and is told (SIGHUP).
func (p *pair) releaseMaster() {
	p.mu.Lock()
	p.hungUp = true
	p.mu.Unlock()
	p.fs.masterClosed(p)
	p.tty.Hangup()
	p.notifyAll()
}
