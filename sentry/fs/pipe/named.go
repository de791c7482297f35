package pipe

import (
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// FIFOs (mkfifo): one pipe shared by every open of a file system node, for
// as long as any open of it lasts, whatever file system holds the node.

// named is a FIFO's pipe and the opens waiting for a partner.
type named struct {
	p *pipe
	// opened is closed, and replaced, when an end opens: a reader waiting
	// for a writer (or the other way round) looks again. The counts of
	// opens for reading and for writing tell it whether one came, even if
	// it is gone again (a writer that wrote and closed): as Linux's
	// r_counter and w_counter, guarded by fifos.mu.
	opened         chan struct{}
	rOpens, wOpens uint64
}

var fifos struct {
	mu sync.Mutex
	m  map[vfs.Inode]*named
}

// OpenNamed opens the FIFO node ino, as open(2) does: a reader waits for a
// writer and a writer for a reader (ctx's signals interrupt the wait), but
// with O_NONBLOCK a reader opens at once and a writer with no reader gets
// ENXIO; O_RDWR never waits.
func OpenNamed(ino vfs.Inode, ctx vfs.Context, flags int) (vfs.FileImpl, error) {
	return openPipe(ino, nil, ctx, flags)
}

// openPipe opens the pipe of node ino: a FIFO's, made at its first open,
// or p, a pipe(2)'s reopened, which as on Linux (fifo_open's is_pipe)
// never waits for its other end nor refuses a writer with no reader.
func openPipe(ino vfs.Inode, p *pipe, ctx vfs.Context, flags int) (vfs.FileImpl, error) {
	isPipe := p != nil
	acc := flags & unix.O_ACCMODE
	fifos.mu.Lock()
	if fifos.m == nil {
		fifos.m = make(map[vfs.Inode]*named)
	}
	n := fifos.m[ino]
	if n == nil {
		if p == nil {
			p = &pipe{ino: nextIno.Add(1), dev: pipeDev, cap: DefaultSize}
		}
		n = &named{p: p, opened: make(chan struct{})}
		fifos.m[ino] = n
	}
	p = n.p
	p.mu.Lock()
	if acc == unix.O_WRONLY && p.readers == 0 && flags&unix.O_NONBLOCK != 0 && !isPipe {
		p.mu.Unlock()
		n.dropIfUnused(ino)
		fifos.mu.Unlock()
		return nil, unix.ENXIO
	}
	if acc != unix.O_WRONLY {
		p.readers++
		n.rOpens++
	}
	if acc != unix.O_RDONLY {
		p.writers++
		n.wOpens++
	}
	// Wait for a partner unless there is one, or the open needs none.
	rSeen, wSeen := n.rOpens, n.wOpens
	mustWait := flags&unix.O_NONBLOCK == 0 && !isPipe &&
		(acc == unix.O_RDONLY && p.writers == 0 || acc == unix.O_WRONLY && p.readers == 0)
	close(n.opened)
	n.opened = make(chan struct{})
	p.mu.Unlock()
	fifos.mu.Unlock()
	p.queue.Notify(waiter.ReadableEvents | waiter.WritableEvents)

	for mustWait {
		fifos.mu.Lock()
		ch := n.opened
		mustWait = acc == unix.O_RDONLY && n.wOpens == wSeen || acc == unix.O_WRONLY && n.rOpens == rSeen
		fifos.mu.Unlock()
		if !mustWait {
			break
		}
		if err := ctx.Block(ch); err != nil {
			release(ino, n, acc)
			return nil, err
		}
	}
	var end vfs.FileImpl
	switch acc {
	case unix.O_RDONLY:
		end = &ReadEnd{p}
	case unix.O_WRONLY:
		end = &WriteEnd{p}
	default:
		end = &bothEnds{ReadEnd{p}, WriteEnd{p}}
	}
	return &namedEnd{end: end.(namedImpl), ino: ino, n: n, acc: acc}, nil
}

// release undoes an open of n with access mode acc.
func release(ino vfs.Inode, n *named, acc int) {
	fifos.mu.Lock()
	defer fifos.mu.Unlock()
	p := n.p
	p.mu.Lock()
	if acc != unix.O_WRONLY {
		p.readers--
	}
	if acc != unix.O_RDONLY {
		p.writers--
	}
	p.mu.Unlock()
	p.queue.Notify(waiter.EventHUp | waiter.EventErr | waiter.ReadableEvents | waiter.WritableEvents)
	n.dropIfUnused(ino)
}

// dropIfUnused forgets the FIFO's pipe, and what it held, once no end is
// open (fifos.mu held).
func (n *named) dropIfUnused(ino vfs.Inode) {
	n.p.mu.Lock()
	unused := n.p.readers == 0 && n.p.writers == 0
	n.p.mu.Unlock()
	if unused && fifos.m[ino] == n {
		delete(fifos.m, ino)
	}
}

// namedImpl is what each kind of end provides.
type namedImpl interface {
	vfs.FileImpl
	waiter.Waitable
	Size() int
	SetSize(int) (int, error)
}

// namedEnd is an open FIFO: a pipe end that stats as the node, and whose
// release is the FIFO's.
type namedEnd struct {
	end namedImpl
	ino vfs.Inode
	n   *named
	acc int
}

func (e *namedEnd) Read(dst *vfs.IOSeq, off int64) (int, error)  { return e.end.Read(dst, off) }
func (e *namedEnd) Write(src *vfs.IOSeq, off int64) (int, error) { return e.end.Write(src, off) }
func (e *namedEnd) Stat() (vfs.Stat, error)                      { return e.ino.Stat() }
func (e *namedEnd) Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	return e.end.Ioctl(cmd, arg, io)
}
func (e *namedEnd) Release()                                         { release(e.ino, e.n, e.acc) }
func (e *namedEnd) Readiness(mask waiter.EventMask) waiter.EventMask { return e.end.Readiness(mask) }
func (e *namedEnd) EventRegister(w *waiter.Entry)                    { e.end.EventRegister(w) }
func (e *namedEnd) EventUnregister(w *waiter.Entry)                  { e.end.EventUnregister(w) }
func (e *namedEnd) Size() int                                        { return e.end.Size() }
func (e *namedEnd) SetSize(n int) (int, error)                       { return e.end.SetSize(n) }

// bothEnds is a FIFO open for reading and writing.
type bothEnds struct {
	r ReadEnd
	w WriteEnd
}

func (b *bothEnds) Read(dst *vfs.IOSeq, off int64) (int, error)  { return b.r.Read(dst, off) }
func (b *bothEnds) Write(src *vfs.IOSeq, off int64) (int, error) { return b.w.Write(src, off) }
func (b *bothEnds) Stat() (vfs.Stat, error)                      { return b.r.Stat() }
func (b *bothEnds) Ioctl(cmd uint32, arg uintptr, io vfs.IoctlIO) (uintptr, error) {
	return b.r.Ioctl(cmd, arg, io)
}
func (b *bothEnds) Release() {}
func (b *bothEnds) Readiness(mask waiter.EventMask) waiter.EventMask {
	return b.r.Readiness(mask) | b.w.Readiness(mask)&^waiter.EventHUp
}
func (b *bothEnds) EventRegister(e *waiter.Entry)   { b.r.EventRegister(e) }
func (b *bothEnds) EventUnregister(e *waiter.Entry) { b.r.EventUnregister(e) }
func (b *bothEnds) Size() int                       { return b.r.Size() }
func (b *bothEnds) SetSize(n int) (int, error)      { return b.r.SetSize(n) }

// A pipe(2)'s ends reopened through /proc/<pid>/fd/N (bash's <(...),
// /dev/stdin): a new end of the same pipe, with FIFO's open rules.

// Reopen implements vfs.Reopener.
func (r *ReadEnd) Reopen() (vfs.Inode, error) { return r.p.node(), nil }

// Reopen implements vfs.Reopener.
func (w *WriteEnd) Reopen() (vfs.Inode, error) { return w.p.node(), nil }

// node is the pipe's inode, made when first reopened.
func (p *pipe) node() *pipeInode {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inode == nil {
		p.inode = &pipeInode{p: p}
	}
	return p.inode
}

// pipeInode is a pipe(2)'s inode, for reopening it.
type pipeInode struct{ p *pipe }

func (i *pipeInode) Stat() (vfs.Stat, error)          { return i.p.stat(), nil }
func (i *pipeInode) SetAttr(a *vfs.Attr) error        { return i.p.attrs.SetAttr(a) }
func (i *pipeInode) Lookup(string) (vfs.Inode, error) { return nil, unix.ENOTDIR }
func (i *pipeInode) ReadDir() ([]vfs.Dirent, error)   { return nil, unix.ENOTDIR }
func (i *pipeInode) Readlink() (string, error)        { return "", unix.EINVAL }
func (i *pipeInode) Open(int) (vfs.FileImpl, error)   { return nil, unix.ENXIO }

// OpenContext implements vfs.ContextOpener.
func (i *pipeInode) OpenContext(c vfs.Context, flags int) (vfs.FileImpl, error) {
	return openPipe(i, i.p, c, flags)
}
