// Package unixsock is AF_UNIX in the sentry: stream, datagram and
// seqpacket sockets and socketpair; names in the file system (the socket
// node bind makes, found again through the node's inode, on any file
// system) and in the abstract namespace; fd passing (SCM_RIGHTS) with
// Linux's bound on fds in flight and its collector of sockets that only
// messages in flight hold; credentials (SCM_CREDENTIALS, SO_PASSCRED,
// SO_PEERCRED); shutdown; and readiness as Linux's unix_poll and
// unix_dgram_poll report it. It never opens a host socket: a socket node
// on a gofer file system is only a name.
package unixsock

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/socket"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// Connection states, as Linux's sk_state values for AF_UNIX.
const (
	stClose       = 7  // TCP_CLOSE
	stListen      = 10 // TCP_LISTEN
	stEstablished = 1  // TCP_ESTABLISHED
)

// Shutdown bits (sk_shutdown).
const (
	rcvShutdown  = 1
	sendShutdown = 2
	shutdownMask = rcvShutdown | sendShutdown
)

// maxDgramQlen is net.unix.max_dgram_qlen: the messages a datagram
// socket's queue holds from senders it is not connected back to.
const maxDgramQlen = 10

// namespace is one sandbox's AF_UNIX sockets: its abstract names and
// bound nodes, and the lock every socket's state is kept under. One lock
// for all keeps connect, send and close, which touch two sockets at once,
// free of lock-order questions; the copies to and from guest memory
// happen under it, as a pipe's do under its lock.
type namespace struct {
	mu       sync.Mutex
	abstract map[abstractKey]*endpoint
	bound    map[vfs.FileID]*endpoint
	all      map[*endpoint]struct{}
	// inflight counts, per real uid of the sender, the files in flight in
	// messages (user->unix_inflight); total counts them all.
	inflight map[uint32]int
	total    int
}

type abstractKey struct {
	typ  int
	name string
}

var namespaces sync.Map // *kernel.Kernel → *namespace

// nsOf returns k's namespace, made at its first socket and forgotten when
// the sandbox ends.
func nsOf(k *kernel.Kernel) *namespace {
	if ns, ok := namespaces.Load(k); ok {
		return ns.(*namespace)
	}
	ns, loaded := namespaces.LoadOrStore(k, &namespace{abstract: map[abstractKey]*endpoint{},
		bound: map[vfs.FileID]*endpoint{}, all: map[*endpoint]struct{}{}, inflight: map[uint32]int{}})
	if !loaded {
		go func() {
			<-k.Done()
			namespaces.Delete(k)
		}()
	}
	return ns.(*namespace)
}

// ucred is a process's credentials as SO_PEERCRED and SCM_CREDENTIALS
// carry them; pid is the sandbox's pid namespace's, translated for each
// reader (pidSeenBy).
type ucred struct {
	pid      int32
	uid, gid uint32
}

// endpoint is one AF_UNIX socket (Linux's unix_sock). Its fields after
// the first group are guarded by ns.mu.
type endpoint struct {
	ns          *namespace
	typ         int
	socket.Node // the sockfs inode

	queue    waiter.Queue // this socket's readiness
	peerWait waiter.Queue // writers waiting for room in this socket's queue (peer_wait)

	file     *vfs.File // the file the socket is open as; nil for a connection not yet accepted
	state    int
	peer     *endpoint
	clients  map[*endpoint]struct{} // datagram sockets connected to this one
	addr     []byte                 // the sockaddr_un getsockname gives; nil unbound
	node     *vfs.FileID            // the bound node's inode, for a name in the file system
	shut     int
	err      unix.Errno // sk_err, reported once
	recvq    []*message
	wmem     int // bytes of this socket's messages not yet received
	backlog  int // the listen backlog, or max_dgram_qlen for a datagram socket
	peercred *ucred
	dead     bool
	opts     socket.Options
	// domain is the Landlock domain of the task that made the socket,
	// which a scoped domain's tasks may not reach by an abstract name.
	domain *vfs.LandlockDomain
	// inflight is how many references to file messages in flight hold.
	inflight int
	gc       gcState
}

// message is one queued buffer (an sk_buff): a datagram, a piece of a
// stream, or on a listener a connection waiting for accept.
type message struct {
	data   []byte
	off    int // bytes of a stream piece already read
	sender *endpoint
	size   int    // what the message is charged to the sender's wmem
	creds  *ucred // nil: the message carries none
	rights []*vfs.File
	owner  uint32    // the real uid the rights count against
	conn   *endpoint // a listener's pending connection
}

// truesize is the memory Linux charges a queued buffer of n bytes, which
// SO_SNDBUF bounds: the sk_buff (256 bytes), its head (the bytes up to
// SKB_MAX_HEAD, with the shared info, from a power-of-two slab of at least
// 512 bytes) and the pages of the rest.
func truesize(n int) int {
	const maxHead, page = 3776, 4096
	paged := 0
	if n > maxHead {
		paged = min(n, (n-maxHead+page-1)/page*page)
	}
	head := (n-paged+63)/64*64 + 320
	slab := 512
	for slab < head {
		slab *= 2
	}
	return 256 + slab + (paged+page-1)/page*page
}

// New returns a socket of type typ (SOCK_STREAM, SOCK_DGRAM or
// SOCK_SEQPACKET; SOCK_RAW is SOCK_DGRAM, as on Linux) for socket(2).
func New(t *kernel.Task, typ, protocol int) (socket.Socket, error) {
	if protocol != 0 && protocol != unix.AF_UNIX {
		return nil, unix.EPROTONOSUPPORT
	}
	switch typ {
	case unix.SOCK_STREAM, unix.SOCK_DGRAM, unix.SOCK_SEQPACKET:
	case unix.SOCK_RAW:
		typ = unix.SOCK_DGRAM
	default:
		return nil, unix.ESOCKTNOSUPPORT
	}
	return newEndpoint(t, nsOf(t.Kernel()), typ), nil
}

func newEndpoint(t *kernel.Task, ns *namespace, typ int) *endpoint {
	e := &endpoint{ns: ns, typ: typ, state: stClose, backlog: maxDgramQlen, opts: socket.NewOptions()}
	if t != nil {
		e.domain = t.LandlockDomain()
	}
	e.Init(socket.Owner(t))
	ns.mu.Lock()
	ns.all[e] = struct{}{}
	ns.mu.Unlock()
	return e
}

// Pair returns two sockets connected to each other, for socketpair(2).
func Pair(t *kernel.Task, typ, protocol int) (socket.Socket, socket.Socket, error) {
	s, err := New(t, typ, protocol)
	if err != nil {
		return nil, nil, err
	}
	a := s.(*endpoint)
	b := newEndpoint(t, a.ns, a.typ)
	cred := taskCred(t)
	a.ns.mu.Lock()
	a.peer, b.peer = b, a
	a.peercred, b.peercred = cred, cred
	a.state, b.state = stEstablished, stEstablished
	a.ns.mu.Unlock()
	return a, b, nil
}

// Opened records the file the socket is open as (socket.NewFile calls
// it), which the collector of sockets in flight needs.
func (e *endpoint) Opened(f *vfs.File) {
	e.ns.mu.Lock()
	e.file = f
	e.ns.mu.Unlock()
}

// taskCred is what SO_PEERCRED reports of t: its process id and
// effective ids (cred_to_ucred).
func taskCred(t *kernel.Task) *ucred {
	c := t.Creds()
	c.Lock()
	defer c.Unlock()
	return &ucred{pid: t.ThreadGroup().PID(), uid: c.EUID, gid: c.EGID}
}

// senderCred is what a message carries when SO_PASSCRED asks for it
// without the sender naming any: its process id and real ids.
func senderCred(t *kernel.Task) *ucred {
	c := t.Creds()
	c.Lock()
	defer c.Unlock()
	return &ucred{pid: t.ThreadGroup().PID(), uid: c.UID, gid: c.GID}
}

// pidSeenBy is u's pid as t, a reader of it, sees it: 0 for a process
// outside t's pid namespace, as Linux's pid_vnr.
func (u ucred) pidSeenBy(t *kernel.Task) int32 {
	if t == nil {
		return u.pid
	}
	return t.SeenID(u.pid)
}

// Family, Type and Protocol implement socket.Socket.
func (e *endpoint) Family() int   { return unix.AF_UNIX }
func (e *endpoint) Type() int     { return e.typ }
func (e *endpoint) Protocol() int { return 0 }

// EventRegister and EventUnregister implement waiter.Waitable.
func (e *endpoint) EventRegister(w *waiter.Entry)   { e.queue.EventRegister(w) }
func (e *endpoint) EventUnregister(w *waiter.Entry) { e.queue.EventUnregister(w) }

// wakeups are the notifications a change owes, sent once ns.mu is
// released (a waiter's callback may take epoll's locks, which come
// before it), with the files it dropped.
type wakeups struct {
	qs    []*waiter.Queue
	masks []waiter.EventMask
	files []*vfs.File
}

func (w *wakeups) add(q *waiter.Queue, m waiter.EventMask) {
	w.qs = append(w.qs, q)
	w.masks = append(w.masks, m)
}

func (w *wakeups) drop(files []*vfs.File) { w.files = append(w.files, files...) }

// send notifies and releases, with ns.mu not held.
func (w *wakeups) send() {
	for i, q := range w.qs {
		q.Notify(w.masks[i])
	}
	for _, f := range w.files {
		f.DecRef()
	}
	w.qs, w.masks, w.files = nil, nil, nil
}

// allEvents wakes every kind of waiter: a change of state.
const allEvents = waiter.ReadableEvents | waiter.WritableEvents | waiter.EventErr | waiter.EventHUp | waiter.EventRdHUp

// waitLocked sleeps (ns.mu held, released meanwhile) until q notifies
// one of mask, the deadline passes or a signal comes (socket.Wait's
// errors). The wake-ups the call gathered so far go out first: a
// stream write larger than the buffer sleeps for room the reader makes
// only once woken for the pieces already queued, and a MSG_WAITALL read
// sleeps for data the writer sends only once woken for the room made.
func (e *endpoint) waitLocked(t *kernel.Task, q *waiter.Queue, mask waiter.EventMask, deadline time.Time, pending *wakeups) error {
	w, ch := waiter.NewChannelEntry(mask)
	q.EventRegister(w)
	e.ns.mu.Unlock()
	pending.send()
	err := socket.Wait(t, ch, deadline)
	q.EventUnregister(w)
	e.ns.mu.Lock()
	return err
}
