package unixsock

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/socket"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// Bind implements socket.Socket (unix_bind): the family alone autobinds;
// a path makes a socket node (EADDRINUSE if the name exists) with mode
// 0777 less the umask; an abstract name must be free for the socket's
// type. A socket binds once (EINVAL).
func (e *endpoint) Bind(t *kernel.Task, addr []byte) error {
	if len(addr) == sunPath && family(addr) == unix.AF_UNIX {
		e.ns.mu.Lock()
		defer e.ns.mu.Unlock()
		return e.autobindLocked()
	}
	if err := validate(addr); err != nil {
		return err
	}
	if abstract(addr) {
		e.ns.mu.Lock()
		defer e.ns.mu.Unlock()
		if e.addr != nil {
			return unix.EINVAL
		}
		k := abstractKey{e.typ, string(addr)}
		if _, used := e.ns.abstract[k]; used {
			return unix.EADDRINUSE
		}
		e.ns.abstract[k] = e
		e.addr = append([]byte(nil), addr...)
		return nil
	}
	name, kept := pathName(addr)
	tg, err := resolver(t).LookupTarget(name)
	if err != nil {
		return err
	}
	creds := t.FSCreds()
	p, err := vfs.MakeSocket(&creds, tg, 0o777&^t.FS().Umask())
	if err == unix.EEXIST {
		return unix.EADDRINUSE
	}
	if err != nil {
		return err
	}
	st, err := p.Dentry.Inode().Stat()
	if err != nil {
		return err
	}
	id := vfs.FileID{Dev: st.Dev, Ino: st.Ino}
	e.ns.mu.Lock()
	if e.addr != nil {
		// Linux makes the node first, then finds the socket bound and
		// removes the node again.
		e.ns.mu.Unlock()
		creds.Landlock = nil // the kernel's own undoing, which Landlock does not check
		vfs.Unlink(&creds, tg)
		return unix.EINVAL
	}
	// A node whose inode number the host reused after the old node went:
	// the new binding is the one its name reaches.
	e.ns.bound[id] = e
	e.node = &id
	e.addr = kept
	e.ns.mu.Unlock()
	return nil
}

// Listen implements socket.Socket (unix_listen).
func (e *endpoint) Listen(t *kernel.Task, backlog int) error {
	if e.typ == unix.SOCK_DGRAM {
		return unix.EOPNOTSUPP
	}
	var w wakeups
	defer w.send()
	e.ns.mu.Lock()
	defer e.ns.mu.Unlock()
	if e.addr == nil {
		return unix.EINVAL
	}
	if e.state != stClose && e.state != stListen {
		return unix.EINVAL
	}
	if backlog > e.backlog {
		w.add(&e.peerWait, allEvents)
	}
	e.backlog = backlog
	e.state = stListen
	e.peercred = taskCred(t)
	return nil
}

// Connect implements socket.Socket: unix_stream_connect for stream and
// seqpacket sockets, unix_dgram_connect for datagram ones.
func (e *endpoint) Connect(t *kernel.Task, addr []byte, nonblock bool) error {
	if e.typ == unix.SOCK_DGRAM {
		return e.connectDgram(t, addr)
	}
	if err := validate(addr); err != nil {
		return err
	}
	var w wakeups
	defer w.send()
	e.ns.mu.Lock()
	if e.passcredLocked() {
		if err := e.autobindLocked(); err != nil {
			e.ns.mu.Unlock()
			return err
		}
	}
	timeo := e.opts.SndTimeo
	e.ns.mu.Unlock()
	if nonblock {
		timeo = 0
	}
	deadline := timeo.Deadline()
	for {
		other, err := e.ns.find(t, addr, e.typ)
		if err != nil {
			return err
		}
		e.ns.mu.Lock()
		if other.dead {
			e.ns.mu.Unlock()
			continue
		}
		if other.state != stListen || other.shut&rcvShutdown != 0 {
			e.ns.mu.Unlock()
			return unix.ECONNREFUSED
		}
		if len(other.recvq) > other.backlog {
			if timeo == 0 {
				e.ns.mu.Unlock()
				return unix.EAGAIN
			}
			err := e.waitLocked(t, &other.peerWait, allEvents, deadline, &w)
			e.ns.mu.Unlock()
			switch err {
			case nil:
			case unix.ETIMEDOUT:
				timeo = 0
			default:
				return err
			}
			continue
		}
		if e.state != stClose {
			defer e.ns.mu.Unlock()
			if e.state == stEstablished {
				return unix.EISCONN
			}
			return unix.EINVAL
		}
		if landlockScoped(t, addr, other) {
			e.ns.mu.Unlock()
			return unix.EPERM
		}
		conn := &endpoint{ns: e.ns, typ: e.typ, state: stEstablished, peer: e, backlog: maxDgramQlen,
			peercred: taskCred(t), opts: socket.NewOptions()}
		conn.Init(other.IDs())
		conn.addr = other.addr
		if other.node != nil {
			conn.node = other.node
		}
		e.ns.all[conn] = struct{}{}
		e.peercred = other.peercred
		e.state = stEstablished
		e.peer = conn
		m := &message{sender: conn, size: truesize(1), conn: conn}
		conn.wmem += m.size
		other.recvq = append(other.recvq, m)
		w.add(&other.queue, waiter.ReadableEvents)
		e.ns.mu.Unlock()
		return nil
	}
}

// connectDgram sets or, with AF_UNSPEC, clears a datagram socket's peer
// (unix_dgram_connect): a socket connected to another may be reached by
// that one alone (EPERM).
func (e *endpoint) connectDgram(t *kernel.Task, addr []byte) error {
	if len(addr) < sunPath {
		return unix.EINVAL
	}
	var w wakeups
	defer w.send()
	var other *endpoint
	if family(addr) != unix.AF_UNSPEC {
		if err := validate(addr); err != nil {
			return err
		}
		e.ns.mu.Lock()
		if e.passcredLocked() {
			if err := e.autobindLocked(); err != nil {
				e.ns.mu.Unlock()
				return err
			}
		}
		e.ns.mu.Unlock()
		for {
			o, err := e.ns.find(t, addr, e.typ)
			if err != nil {
				return err
			}
			e.ns.mu.Lock()
			if !o.dead {
				other = o
				break
			}
			e.ns.mu.Unlock()
		}
		if !mayDgramSend(e, other) || landlockScoped(t, addr, other) {
			e.ns.mu.Unlock()
			return unix.EPERM
		}
		e.state, other.state = stEstablished, stEstablished
	} else {
		e.ns.mu.Lock()
	}
	defer e.ns.mu.Unlock()
	old := e.peer
	e.setDgramPeerLocked(other)
	if old == nil {
		return nil
	}
	if other == nil {
		e.state = stClose
	}
	w.add(&e.queue, waiter.WritableEvents)
	if other != old {
		e.dgramDisconnectedLocked(old, &w)
		if old.peer == nil {
			old.state = stClose
		}
	}
	return nil
}

// mayDgramSend is unix_may_send: other takes datagrams from anyone unless
// it is connected, then from its peer alone.
func mayDgramSend(e, other *endpoint) bool { return other.peer == nil || other.peer == e }

// landlockScoped reports whether t's Landlock domain keeps it from
// reaching other, found at the abstract name addr (ABI 6's
// SCOPE_ABSTRACT_UNIX_SOCKET): other was made outside the domain. Names
// in the file system are not scoped.
func landlockScoped(t *kernel.Task, addr []byte, other *endpoint) bool {
	return t != nil && abstract(addr) && t.LandlockDomain().Scopes(other.domain, unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET)
}

// setDgramPeerLocked changes a datagram socket's peer, keeping the
// peer's list of the sockets connected to it.
func (e *endpoint) setDgramPeerLocked(p *endpoint) {
	if e.peer != nil && e.peer.clients != nil {
		delete(e.peer.clients, e)
	}
	e.peer = p
	if p != nil {
		if p.clients == nil {
			p.clients = map[*endpoint]struct{}{}
		}
		p.clients[e] = struct{}{}
	}
}

// dgramDisconnectedLocked drops what a datagram socket received from a
// peer it leaves (unix_dgram_disconnected): messages in its queue are
// lost, which the old peer, if it was connected back, learns as
// ECONNRESET.
func (e *endpoint) dgramDisconnectedLocked(old *endpoint, w *wakeups) {
	if len(e.recvq) == 0 {
		return
	}
	e.purgeLocked(w)
	w.add(&e.peerWait, allEvents)
	if !old.dead && old.peer == e {
		old.err = unix.ECONNRESET
		w.add(&old.queue, waiter.EventErr)
	}
}

// Accept implements socket.Socket (unix_accept): the first pending
// connection becomes a socket of its own, taking SO_PASSCRED from the
// listener.
func (e *endpoint) Accept(t *kernel.Task, nonblock bool) (socket.Socket, error) {
	if e.typ == unix.SOCK_DGRAM {
		return nil, unix.EOPNOTSUPP
	}
	var w wakeups
	defer w.send()
	e.ns.mu.Lock()
	defer e.ns.mu.Unlock()
	if e.state != stListen {
		return nil, unix.EINVAL
	}
	timeo := e.opts.RcvTimeo
	if nonblock {
		timeo = 0
	}
	deadline := timeo.Deadline()
	for {
		if e.err != 0 {
			err := e.err
			e.err = 0
			return nil, err
		}
		if len(e.recvq) > 0 {
			m := e.recvq[0]
			e.recvq = e.recvq[1:]
			e.uncharge(m, &w)
			w.add(&e.peerWait, allEvents)
			c := m.conn
			c.opts.SetFlag(unix.SO_PASSCRED, e.passcredLocked())
			return c, nil
		}
		if e.shut&rcvShutdown != 0 {
			return nil, unix.EINVAL
		}
		if e.state != stListen {
			return nil, unix.EINVAL
		}
		if timeo == 0 {
			return nil, unix.EAGAIN
		}
		switch err := e.waitLocked(t, &e.queue, waiter.ReadableEvents|waiter.EventHUp, deadline, &w); err {
		case nil:
		case unix.ETIMEDOUT:
			timeo = 0
		default:
			return nil, err
		}
	}
}

// Shutdown implements socket.Socket (unix_shutdown): a connected stream
// or seqpacket peer stops sending to, or reading from, this socket in
// turn. A socket that is not connected answers 0.
func (e *endpoint) Shutdown(t *kernel.Task, how int) error {
	if how < unix.SHUT_RD || how > unix.SHUT_RDWR {
		return unix.EINVAL
	}
	mode := how + 1
	var w wakeups
	defer w.send()
	e.ns.mu.Lock()
	defer e.ns.mu.Unlock()
	e.shut |= mode
	w.add(&e.queue, allEvents)
	w.add(&e.peerWait, allEvents)
	if p := e.peer; p != nil && e.typ != unix.SOCK_DGRAM {
		peerMode := 0
		if mode&rcvShutdown != 0 {
			peerMode |= sendShutdown
		}
		if mode&sendShutdown != 0 {
			peerMode |= rcvShutdown
		}
		p.shut |= peerMode
		w.add(&p.queue, allEvents)
	}
	return nil
}

// Release implements vfs.FileImpl: the socket's last close.
func (e *endpoint) Release() {
	var w wakeups
	e.ns.mu.Lock()
	e.releaseLocked(false, &w)
	collect := e.ns.total > 0
	e.ns.mu.Unlock()
	w.send()
	if collect {
		e.ns.collect()
	}
}

// releaseLocked is unix_release_sock: the names go, a connected stream
// peer is shut down both ways (with ECONNRESET if this socket left data
// unread, or was a connection never accepted), and the queue is dropped,
// a listener's pending connections with it.
func (e *endpoint) releaseLocked(embryo bool, w *wakeups) {
	if e.dead {
		return
	}
	ns := e.ns
	delete(ns.all, e)
	if e.addr != nil && abstract(e.addr) {
		k := abstractKey{e.typ, string(e.addr)}
		if ns.abstract[k] == e {
			delete(ns.abstract, k)
		}
	}
	if e.node != nil && ns.bound[*e.node] == e {
		delete(ns.bound, *e.node)
	}
	e.dead = true
	e.shut = shutdownMask
	state := e.state
	e.state = stClose
	w.add(&e.peerWait, allEvents)
	w.add(&e.queue, allEvents)
	if p := e.peer; p != nil {
		if e.typ != unix.SOCK_DGRAM {
			p.shut = shutdownMask
			if len(e.recvq) > 0 || embryo {
				p.err = unix.ECONNRESET
			}
			w.add(&p.queue, allEvents)
		} else {
			e.setDgramPeerLocked(nil)
		}
		e.peer = nil
	}
	for c := range e.clients {
		// They find this socket dead at their next send.
		w.add(&c.queue, waiter.WritableEvents)
	}
	q := e.recvq
	e.recvq = nil
	for _, m := range q {
		if state == stListen && m.conn != nil {
			m.conn.releaseLocked(true, w)
		}
		e.dropLocked(m, w)
	}
}

// purgeLocked drops every queued message.
func (e *endpoint) purgeLocked(w *wakeups) {
	q := e.recvq
	e.recvq = nil
	for _, m := range q {
		e.dropLocked(m, w)
	}
}

// dropLocked frees a message taken off e's queue unread: its files go
// (after ns.mu is released) and its sender gets the room back.
func (e *endpoint) dropLocked(m *message, w *wakeups) {
	e.ns.landedLocked(m)
	w.drop(m.rights)
	m.rights = nil
	e.uncharge(m, w)
}

// uncharge gives a message's room back to its sender (sock_wfree), which
// may then write again.
func (e *endpoint) uncharge(m *message, w *wakeups) {
	s := m.sender
	if s == nil || m.size == 0 {
		return
	}
	s.wmem -= m.size
	m.size = 0
	if s.writableLocked() {
		w.add(&s.queue, waiter.WritableEvents)
	}
}

// SockName implements socket.Socket.
func (e *endpoint) SockName() []byte {
	e.ns.mu.Lock()
	defer e.ns.mu.Unlock()
	return nameOf(e)
}

// PeerName implements socket.Socket.
func (e *endpoint) PeerName() ([]byte, error) {
	e.ns.mu.Lock()
	defer e.ns.mu.Unlock()
	if e.peer == nil {
		return nil, unix.ENOTCONN
	}
	return nameOf(e.peer), nil
}

func nameOf(e *endpoint) []byte {
	if e.addr == nil {
		return unnamed
	}
	return append([]byte(nil), e.addr...)
}
