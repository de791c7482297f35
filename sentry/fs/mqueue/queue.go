package mqueue

import (
	"fmt"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// fileSize is what a queue's file reports as its size (FILENT_SIZE), a
// bound on its status line.
const fileSize = 80

// Queue is one message queue.
type Queue struct {
	ns        *Namespace
	node      *queueInode // its name's inode, one per queue
	ino       uint64
	attr      Attr
	chargeUID uint32
	charge    uint64

	mu                  sync.Mutex
	mode, uid, gid      uint32
	atime, mtime, ctime unix.Timespec
	size                int64
	msgs                []message // highest priority first, oldest first within one
	bytes               int64     // the text queued (QSIZE)
	// receivers are the receives waiting: a message that comes while one
	// waits is for it, and sets off no notification.
	receivers int
	// changed is closed, and replaced, whenever a message comes or goes:
	// what waiting senders and receivers look again at.
	changed chan struct{}
	notify  *Notification
	linked  bool // the queue has its name
	opens   int  // open files
	events  waiter.Queue
}

type message struct {
	prio uint32
	text []byte
}

// Attr returns the queue's sizes.
func (q *Queue) Attr() Attr { return q.attr }

// Messages returns how many messages the queue holds (mq_curmsgs).
func (q *Queue) Messages() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return int64(len(q.msgs))
}

func (q *Queue) stat() vfs.Stat {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.statLocked()
}

func (q *Queue) statLocked() vfs.Stat {
	nlink := uint64(1)
	if !q.linked {
		nlink = 0
	}
	return vfs.Stat{Dev: q.ns.dev, Ino: q.ino, Mode: unix.S_IFREG | q.mode, Nlink: nlink, UID: q.uid, GID: q.gid,
		Size: q.size, Blksize: 4096, Atime: q.atime, Mtime: q.mtime, Ctime: q.ctime}
}

func (q *Queue) changedLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// waitLocked waits (q.mu held, released meanwhile) for the queue to
// change, or the deadline, or a signal.
func (q *Queue) waitLocked(b Blocker, deadline time.Time) error {
	ch := q.changed
	q.mu.Unlock()
	err := b.BlockUntil(ch, deadline)
	q.mu.Lock()
	return err
}

// Sender is who sent the message that sets off a notification: its
// process id (as the sandbox's pid namespace numbers it: the notified
// process's view is made from it) and real user id, as SI_MESGQ's
// siginfo carries them.
type Sender struct {
	PID int32
	UID uint32
}

// Send implements mq_timedsend(2)'s work for an fd open for writing:
// a message longer than the queue's msgsize is EMSGSIZE; while the queue
// is full it waits (EAGAIN if nonblock) until the deadline (ETIMEDOUT).
// The message goes behind those of its priority and above lower ones. A
// message that makes an empty queue non-empty, while no receive waits,
// sets off the registered notification and removes it.
func (q *Queue) Send(text []byte, prio uint32, nonblock bool, deadline time.Time, b Blocker, from Sender) error {
	if int64(len(text)) > q.attr.MsgSize {
		return unix.EMSGSIZE
	}
	q.mu.Lock()
	for int64(len(q.msgs)) >= q.attr.MaxMsg {
		if nonblock {
			q.mu.Unlock()
			return unix.EAGAIN
		}
		if err := q.waitLocked(b, deadline); err != nil {
			q.mu.Unlock()
			return err
		}
	}
	i := 0
	for i < len(q.msgs) && q.msgs[i].prio >= prio {
		i++
	}
	q.msgs = append(q.msgs, message{})
	copy(q.msgs[i+1:], q.msgs[i:])
	q.msgs[i] = message{prio: prio, text: text}
	q.bytes += int64(len(text))
	now := q.ns.timespec()
	q.atime, q.mtime, q.ctime = now, now, now
	var fire *Notification
	if q.notify != nil && q.receivers == 0 && len(q.msgs) == 1 {
		fire, q.notify = q.notify, nil
	}
	q.changedLocked()
	q.mu.Unlock()
	q.events.Notify(waiter.ReadableEvents)
	if fire != nil && fire.Fire != nil {
		fire.Fire(from)
	}
	return nil
}

// Receive implements mq_timedreceive(2)'s work for an fd open for
// reading: a buffer shorter than the queue's msgsize is EMSGSIZE; it takes
// the oldest message of the highest priority, waiting while the queue is
// empty (EAGAIN if nonblock) until the deadline (ETIMEDOUT).
func (q *Queue) Receive(size int64, nonblock bool, deadline time.Time, b Blocker) ([]byte, uint32, error) {
	if size < q.attr.MsgSize {
		return nil, 0, unix.EMSGSIZE
	}
	q.mu.Lock()
	for len(q.msgs) == 0 {
		if nonblock {
			q.mu.Unlock()
			return nil, 0, unix.EAGAIN
		}
		q.receivers++
		err := q.waitLocked(b, deadline)
		q.receivers--
		if err != nil {
			q.mu.Unlock()
			return nil, 0, err
		}
	}
	m := q.msgs[0]
	q.msgs[0] = message{}
	q.msgs = q.msgs[1:]
	q.bytes -= int64(len(m.text))
	now := q.ns.timespec()
	q.atime, q.ctime = now, now
	q.changedLocked()
	q.mu.Unlock()
	q.events.Notify(waiter.WritableEvents)
	return m.text, m.prio, nil
}

// Notification is a process's mq_notify registration.
type Notification struct {
	// Kind is the sigevent's sigev_notify (SIGEV_SIGNAL, SIGEV_NONE or
	// SIGEV_THREAD) and Signo its sigev_signo, as the queue's file shows
	// them.
	Kind, Signo int
	// Owner is the registering process, which may remove it with a null
	// sigevent, and PID its id; Files is its descriptor table, whose
	// closing of any descriptor of the queue removes it.
	Owner any
	PID   int32
	Files any
	// Fire is called (without any lock of the package held) when a
	// message sets the notification off; nil for SIGEV_NONE. Removed is
	// called when it goes without firing (SIGEV_THREAD's NOTIFY_REMOVED);
	// it may be nil.
	Fire    func(Sender)
	Removed func()
}

// SetNotify registers n: EBUSY if the queue has a registration, whoever's.
func (q *Queue) SetNotify(n *Notification) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.notify != nil {
		return unix.EBUSY
	}
	q.notify = n
	return nil
}

// ClearNotify removes the registration if owner made it (mq_notify with
// a null sigevent); another's stays.
func (q *Queue) ClearNotify(owner any) {
	q.clearIf(func(n *Notification) bool { return n.Owner == owner }, true)
}

// clearIf removes the registration if match says so; touch updates the
// access and change times, as mq_notify's removal does.
func (q *Queue) clearIf(match func(*Notification) bool, touch bool) {
	q.mu.Lock()
	n := q.notify
	if n == nil || !match(n) {
		q.mu.Unlock()
		return
	}
	q.notify = nil
	if touch {
		now := q.ns.timespec()
		q.atime, q.ctime = now, now
	}
	q.mu.Unlock()
	if n.Removed != nil {
		n.Removed()
	}
}

// status is the line reading the queue's file gives (mqueue_read_file).
func (q *Queue) status() []byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	var kind, signo int
	var pid int32
	if n := q.notify; n != nil {
		kind, pid = n.Kind, n.PID
		if n.Kind == SigevSignal {
			signo = n.Signo
		}
	}
	q.atime = q.ns.timespec()
	return []byte(fmt.Sprintf("QSIZE:%-10d NOTIFY:%-5d SIGNO:%-5d NOTIFY_PID:%-6d\n", q.bytes, kind, signo, pid))
}

// How a notification tells: struct sigevent's sigev_notify
// (include/uapi/asm-generic/siginfo.h).
const (
	SigevSignal = 0
	SigevNone   = 1
	SigevThread = 2
)

// open counts an open file of the queue and returns it; name is what
// /proc/<pid>/fd shows for a descriptor mq_open made.
func (q *Queue) open(name string) *File {
	q.mu.Lock()
	q.opens++
	q.mu.Unlock()
	return &File{q: q, name: "/" + name}
}

// release ends an open file, and the queue with its last once unlinked,
// taking any registration with it.
func (q *Queue) release() {
	ns := q.ns
	ns.mu.Lock()
	q.mu.Lock()
	q.opens--
	gone := q.opens == 0 && !q.linked
	var n *Notification
	if gone {
		n, q.notify = q.notify, nil
	}
	q.mu.Unlock()
	if gone {
		ns.destroyLocked(q)
	}
	ns.mu.Unlock()
	if n != nil && n.Removed != nil {
		n.Removed()
	}
}

// Readiness implements waiter.Waitable: readable with a message queued,
// writable with room for one.
func (q *Queue) Readiness(mask waiter.EventMask) waiter.EventMask {
	q.mu.Lock()
	defer q.mu.Unlock()
	var ev waiter.EventMask
	if len(q.msgs) > 0 {
		ev |= waiter.ReadableEvents
	}
	if int64(len(q.msgs)) < q.attr.MaxMsg {
		ev |= waiter.WritableEvents
	}
	return ev & mask
}
