package devpts

import (
	"os"
	"os/signal"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// Console is the container's terminal (process.terminal): a pty of the
// sandbox's devpts whose master end the sentry itself drives, copying to
// and from the host terminal the CLI made (whose master went to
// --console-socket or to `moat run`). The host terminal is put in raw
// mode, so every key reaches this pty's line discipline and job control
// happens in the sandbox, as on Linux: ^C is SIGINT to the guest's
// foreground group, the guest's shell sees /dev/pts/0 as its controlling
// terminal and moves the foreground with TIOCSPGRP. A resize of the host
// terminal reaches the sentry as SIGWINCH (the sentry leads the session
// the host terminal controls) and is copied here.
type Console struct {
	p    *pair
	host int
	// stop wakes input (an eventfd), for Close; inDone and outDone are
	// closed when input and output have returned.
	stop            int
	inDone, outDone chan struct{}
	closeOnce       sync.Once
	winch           chan os.Signal
}

// Of returns the devpts instance whose root is d, or nil.
func Of(d *vfs.Dentry) *FS {
	if r, ok := d.Inode().(*rootInode); ok {
		return r.fs
	}
	return nil
}

// NewConsole makes a pty for the host terminal host (a descriptor the
// console now owns) and starts copying. The replica is unlocked.
func (fs *FS) NewConsole(host int) (*Console, error) {
	impl, err := (&ptmxInode{fs}).open(0, 0)
	if err != nil {
		return nil, err
	}
	p := impl.(*Master).p
	t, err := unix.IoctlGetTermios(host, unix.TCGETS)
	if err != nil {
		p.releaseMaster()
		return nil, err
	}
	raw := *t
	makeRaw(&raw)
	if err := unix.IoctlSetTermios(host, unix.TCSETS, &raw); err != nil {
		p.releaseMaster()
		return nil, err
	}
	p.mu.Lock()
	p.locked = false
	if ws, err := unix.IoctlGetWinsize(host, unix.TIOCGWINSZ); err == nil {
		p.winsize = *ws
	}
	p.mu.Unlock()
	stop, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		p.releaseMaster()
		return nil, err
	}
	c := &Console{p: p, host: host, stop: stop, inDone: make(chan struct{}), outDone: make(chan struct{}),
		winch: make(chan os.Signal, 1)}
	go c.input()
	go c.output()
	go c.watch()
	return c, nil
}

// Index is the pty's number: the guest's terminal is /dev/pts/Index.
func (c *Console) Index() int { return c.p.index }

// TTY is the pty's job-control side, for init's session.
func (c *Console) TTY() *kernel.TTY { return c.p.tty }

// makeRaw is cfmakeraw(3): the host terminal passes bytes untouched.
func makeRaw(t *unix.Termios) {
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN] = 1
	t.Cc[unix.VTIME] = 0
}

// waitPlain sleeps (p.mu held, released) until q notifies one of mask:
// the console's copiers are the sentry's own, with no task to interrupt.
func (p *pair) waitPlain(q *waiter.Queue, mask waiter.EventMask) {
	e, ch := waiter.NewChannelEntry(mask)
	q.EventRegister(e)
	p.mu.Unlock()
	<-ch
	q.EventUnregister(e)
}

// input types what the host terminal sends into the pty, until the host
// side goes (its master closed: EIO), which hangs the pty up as closing a
// pty's master does.
func (c *Console) input() {
	defer close(c.inDone)
	buf := make([]byte, inputCap)
	for {
		fds := []unix.PollFd{{Fd: int32(c.host), Events: unix.POLLIN}, {Fd: int32(c.stop), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err == unix.EINTR {
			continue
		}
		if fds[1].Revents != 0 {
			break // Close
		}
		n, err := unix.Read(c.host, buf)
		if err == unix.EINTR {
			continue
		}
		if n <= 0 {
			break
		}
		chunk := buf[:n]
		for len(chunk) > 0 {
			c.p.mu.Lock()
			if c.p.hungUp {
				c.p.mu.Unlock()
				return
			}
			k, sigs := c.p.ld.receive(chunk)
			if k == 0 {
				c.p.waitPlain(&c.p.masterQ, waiter.WritableEvents)
				continue
			}
			c.p.mu.Unlock()
			c.p.signal(sigs)
			c.p.notifyAll()
			chunk = chunk[k:]
		}
	}
	c.p.releaseMaster()
}

// output copies what the guest writes (and the echoes) to the host
// terminal.
func (c *Console) output() {
	defer close(c.outDone)
	for {
		c.p.mu.Lock()
		for len(c.p.ld.out) == 0 && !c.p.hungUp {
			c.p.waitPlain(&c.p.masterQ, waiter.ReadableEvents|waiter.EventHUp)
			c.p.mu.Lock()
		}
		if len(c.p.ld.out) == 0 {
			c.p.mu.Unlock()
			return
		}
		b := append([]byte(nil), c.p.ld.out...)
		c.p.ld.takeOutput(len(b))
		c.p.mu.Unlock()
		c.p.replicaQ.Notify(waiter.WritableEvents)
		for len(b) > 0 {
			n, err := unix.Write(c.host, b)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return
			}
			b = b[n:]
		}
	}
}

// watch copies the host terminal's size when it changes (SIGWINCH). The
// host's SIGHUP, sent to the sentry as the leader of the session the host
// terminal controls when its master closes, is ignored: input sees the
// hang-up and passes it on to the guest's session.
func (c *Console) watch() {
	signal.Ignore(unix.SIGHUP)
	signal.Notify(c.winch, unix.SIGWINCH)
	for range c.winch {
		c.Resized()
	}
}

// Resized copies the host terminal's size to the pty, with SIGWINCH to
// the guest's foreground group if it changed. The sentry calls it itself
// for a terminal whose resizes reach it by no signal (an exec's: the
// sentry leads no session there).
func (c *Console) Resized() {
	ws, err := unix.IoctlGetWinsize(c.host, unix.TIOCGWINSZ)
	if err != nil {
		return
	}
	c.p.mu.Lock()
	changed := *ws != c.p.winsize
	c.p.winsize = *ws
	c.p.mu.Unlock()
	if changed {
		c.p.tty.SignalForeground(int(unix.SIGWINCH))
	}
}

// closeDrain bounds how long Close waits for the guest's last output to
// reach the host terminal.
const closeDrain = 2 * time.Second

// Close ends the console once the process it serves has ended (an
// exec's): it stops reading the host terminal, hangs the pty up as its
// master's close does, copies out what the guest wrote last, and closes
// the host terminal, so that whoever holds its master sees it end.
func (c *Console) Close() {
	c.closeOnce.Do(func() {
		signal.Stop(c.winch)
		close(c.winch)
		unix.Write(c.stop, []byte{1, 0, 0, 0, 0, 0, 0, 0})
		<-c.inDone
		unix.Close(c.stop)
		select {
		case <-c.outDone:
			unix.Close(c.host)
		case <-time.After(closeDrain):
			// A write to a terminal nobody reads: the descriptor stays
			// until it returns, so that its number is not reused under it.
			go func() {
				<-c.outDone
				unix.Close(c.host)
			}()
		}
	})
}
