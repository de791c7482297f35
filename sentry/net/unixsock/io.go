package unixsock

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/net/socket"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// maxStreamPiece is the most a stream socket puts in one buffer
// (SKB_MAX_HEAD(0) and UNIX_SKB_FRAGS_SZ).
const maxStreamPiece = 3776 + 32768

// scm is what a sendmsg's control messages ask for (scm_send).
type scm struct {
	rights []*vfs.File
	creds  *ucred
}

func (s *scm) release() {
	for _, f := range s.rights {
		f.DecRef()
	}
	s.rights = nil
}

// parseSCM reads the SOL_SOCKET control messages an AF_UNIX socket
// takes: SCM_RIGHTS (Linux's limits in socket.Rights) and SCM_CREDENTIALS,
// whose ids must be the sender's own unless it has CAP_SYS_ADMIN (the
// pid), CAP_SETUID or CAP_SETGID (EPERM); any other SOL_SOCKET type is
// EINVAL, other levels are ignored.
func parseSCM(t *kernel.Task, cmsgs []socket.Cmsg) (scm, error) {
	var s scm
	for _, c := range cmsgs {
		if c.Level != unix.SOL_SOCKET {
			continue
		}
		switch c.Type {
		case unix.SCM_RIGHTS:
			var err error
			if s.rights, err = socket.Rights(t, c, s.rights); err != nil {
				s.release()
				return scm{}, err
			}
		case unix.SCM_CREDENTIALS:
			if len(c.Data) != unix.SizeofUcred {
				s.release()
				return scm{}, unix.EINVAL
			}
			// The ids are the sender's namespace's: kernel ids from here.
			uid, uerr := t.Creds().KernelUIDArg(binary.LittleEndian.Uint32(c.Data[4:]))
			gid, gerr := t.Creds().KernelGIDArg(binary.LittleEndian.Uint32(c.Data[8:]))
			if uerr != nil || gerr != nil || uid == ^uint32(0) || gid == ^uint32(0) {
				s.release()
				return scm{}, unix.EINVAL
			}
			u := &ucred{pid: int32(binary.LittleEndian.Uint32(c.Data)), uid: uid, gid: gid}
			if !credsAllowed(t, u) {
				s.release()
				return scm{}, unix.EPERM
			}
			u.pid = t.RootID(u.pid) // the sender named it in its pid namespace
			s.creds = u
		default:
			s.release()
			return scm{}, unix.EINVAL
		}
	}
	return s, nil
}

// credsAllowed is scm_check_creds.
func credsAllowed(t *kernel.Task, u *ucred) bool {
	c := t.Creds()
	c.Lock()
	uidOK := u.uid == c.UID || u.uid == c.EUID || u.uid == c.SUID
	gidOK := u.gid == c.GID || u.gid == c.EGID || u.gid == c.SGID
	c.Unlock()
	return (u.pid == t.PID() || t.HasCap(unix.CAP_SYS_ADMIN)) &&
		(uidOK || t.HasCap(unix.CAP_SETUID)) && (gidOK || t.HasCap(unix.CAP_SETGID))
}

// taskOf returns the task an I/O runs for, nil for the sentry's own.
func taskOf(s *vfs.IOSeq) *kernel.Task {
	t, _ := s.Context().(*kernel.Task)
	return t
}

// Write implements vfs.FileImpl: send(2) with no flags.
func (e *endpoint) Write(src *vfs.IOSeq, _ int64) (int, error) {
	flags := 0
	if src.NonBlocking() {
		flags = unix.MSG_DONTWAIT
	}
	if src.NoSignal() {
		flags |= unix.MSG_NOSIGNAL
	}
	return e.SendMsg(taskOf(src), src, &socket.SendMessage{Flags: flags})
}

// Read implements vfs.FileImpl: recv(2) with no flags; files passed with
// the data are closed, as with a recvmsg that gives no room for them.
func (e *endpoint) Read(dst *vfs.IOSeq, _ int64) (int, error) {
	if socket.ZeroRead(dst) {
		return 0, nil
	}
	m := &socket.RecvMessage{}
	if dst.NonBlocking() {
		m.Flags = unix.MSG_DONTWAIT
	}
	n, err := e.RecvMsg(taskOf(dst), dst, m)
	m.Control.Release()
	return n, err
}

// gcTrigger is how many files in flight make a send collect first
// (UNIX_INFLIGHT_TRIGGER_GC).
const gcTrigger = 16000

// SendMsg implements socket.Socket.
func (e *endpoint) SendMsg(t *kernel.Task, src *vfs.IOSeq, m *socket.SendMessage) (int, error) {
	var s scm
	if t != nil {
		var err error
		if s, err = parseSCM(t, m.Control); err != nil {
			return 0, err
		}
	}
	defer s.release()
	if s.rights != nil {
		e.ns.mu.Lock()
		many := e.ns.total > gcTrigger
		e.ns.mu.Unlock()
		if many {
			e.ns.collect()
		}
	}
	if m.Flags&unix.MSG_OOB != 0 {
		return 0, unix.EOPNOTSUPP
	}
	switch e.typ {
	case unix.SOCK_STREAM:
		return e.sendStream(t, src, m, &s)
	case unix.SOCK_SEQPACKET:
		e.ns.mu.Lock()
		if err := e.err; err != 0 {
			e.err = 0
			e.ns.mu.Unlock()
			return 0, err
		}
		connected := e.state == stEstablished
		e.ns.mu.Unlock()
		if !connected {
			return 0, unix.ENOTCONN
		}
		return e.sendDgram(t, src, nil, m.Flags, &s)
	}
	return e.sendDgram(t, src, m.To, m.Flags, &s)
}

// sendWaitLocked waits for the sender's room (sock_alloc_send_pskb): a
// pending error is reported, a socket shut down for sending is EPIPE.
func (e *endpoint) sendWaitLocked(t *kernel.Task, nonblock bool, w *wakeups) error {
	timeo := e.opts.SndTimeo
	if nonblock || t == nil {
		timeo = 0
	}
	deadline := timeo.Deadline()
	for {
		if err := e.err; err != 0 {
			e.err = 0
			return err
		}
		if e.shut&sendShutdown != 0 {
			return unix.EPIPE
		}
		if e.wmem < int(e.opts.SndBuf) {
			return nil
		}
		if timeo == 0 {
			return unix.EAGAIN
		}
		if err := e.waitLocked(t, &e.queue, waiter.WritableEvents, deadline, w); err == unix.ETIMEDOUT {
			timeo = 0
		} else if err != nil {
			return err
		}
	}
}

// copyIn reads n bytes of src from off into a new buffer (EFAULT if none
// could be read).
func copyIn(src *vfs.IOSeq, off, n int) ([]byte, error) {
	buf := make([]byte, n)
	got, err := src.Skip(off).CopyIn(buf)
	if got < n {
		if err == nil {
			err = unix.EFAULT
		}
		return nil, err
	}
	return buf, nil
}

// sigpipe raises SIGPIPE for a failed stream write, unless MSG_NOSIGNAL.
func sigpipe(t *kernel.Task, flags int) {
	if t != nil && flags&unix.MSG_NOSIGNAL == 0 {
		t.Signal(int(unix.SIGPIPE))
	}
}

// sendStream is unix_stream_sendmsg: the data goes to the peer's queue in
// pieces of at most half SO_SNDBUF, the files with the first.
func (e *endpoint) sendStream(t *kernel.Task, src *vfs.IOSeq, m *socket.SendMessage, s *scm) (int, error) {
	var w wakeups
	defer w.send()
	ns := e.ns
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if m.To != nil {
		if e.state == stEstablished {
			return 0, unix.EISCONN
		}
		return 0, unix.EOPNOTSUPP
	}
	if e.peer == nil {
		return 0, unix.ENOTCONN
	}
	if e.shut&sendShutdown != 0 {
		sigpipe(t, m.Flags)
		return 0, unix.EPIPE
	}
	total, sent := src.Len(), 0
	for sent < total {
		if err := e.sendWaitLocked(t, m.Flags&unix.MSG_DONTWAIT != 0, &w); err != nil {
			return sentOr(sent, err)
		}
		size := min(total-sent, int(e.opts.SndBuf)/2-64, maxStreamPiece)
		data, err := copyIn(src, sent, size)
		if err != nil {
			return sentOr(sent, err)
		}
		msg := &message{data: data, sender: e, size: truesize(size)}
		if s.rights != nil {
			if err := ns.attachLocked(t, msg, s); err != nil {
				return sentOr(sent, err)
			}
		}
		peer := e.peer
		if peer == nil || peer.dead || peer.shut&rcvShutdown != 0 {
			if sent == 0 {
				sigpipe(t, m.Flags)
			}
			e.dropLocked(msg, &w)
			return sentOr(sent, unix.EPIPE)
		}
		e.enqueueLocked(t, peer, msg, s, &w)
		sent += size
	}
	return sent, nil
}

func sentOr(sent int, err error) (int, error) {
	if sent > 0 {
		return sent, nil
	}
	return 0, err
}

// attachLocked moves the files of s into msg, unless the sender has too
// many in flight already (more than RLIMIT_NOFILE without
// CAP_SYS_RESOURCE or CAP_SYS_ADMIN: ETOOMANYREFS).
func (ns *namespace) attachLocked(t *kernel.Task, msg *message, s *scm) error {
	uid := uint32(0)
	if t != nil {
		c := t.Creds()
		c.Lock()
		uid = c.UID
		c.Unlock()
		limit := t.Limits().Get(unix.RLIMIT_NOFILE).Cur
		if uint64(ns.inflight[uid]) > limit && !t.Capable(unix.CAP_SYS_RESOURCE) && !t.Capable(unix.CAP_SYS_ADMIN) {
			return unix.ETOOMANYREFS
		}
	}
	msg.rights, msg.owner = s.rights, uid
	s.rights = nil
	ns.sentLocked(msg)
	return nil
}

// enqueueLocked queues msg on peer: the message is charged to the sender,
// and carries the sender's credentials when either side asked for them
// (or the peer is a connection not yet accepted), as maybe_add_creds.
func (e *endpoint) enqueueLocked(t *kernel.Task, peer *endpoint, msg *message, s *scm, w *wakeups) {
	msg.creds = s.creds
	if msg.creds == nil && (e.passcredLocked() || peer.file == nil || peer.passcredLocked()) {
		if t != nil {
			msg.creds = senderCred(t)
		} else {
			msg.creds = &ucred{}
		}
	}
	e.wmem += msg.size
	peer.recvq = append(peer.recvq, msg)
	w.add(&peer.queue, waiter.ReadableEvents)
}

func (e *endpoint) passcredLocked() bool { return e.opts.Flag(unix.SO_PASSCRED) }

// sendDgram is unix_dgram_sendmsg: one message to the peer, or to the
// socket at to.
func (e *endpoint) sendDgram(t *kernel.Task, src *vfs.IOSeq, to []byte, flags int, s *scm) (int, error) {
	var w wakeups
	defer w.send()
	ns := e.ns
	if to != nil {
		if err := validate(to); err != nil {
			return 0, err
		}
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	other := (*endpoint)(nil)
	if to == nil {
		if other = e.peer; other == nil {
			return 0, unix.ENOTCONN
		}
	}
	if e.passcredLocked() {
		if err := e.autobindLocked(); err != nil {
			return 0, err
		}
	}
	n := src.Len()
	if n > int(e.opts.SndBuf)-32 {
		return 0, unix.EMSGSIZE
	}
	nonblock := flags&unix.MSG_DONTWAIT != 0 || t == nil
	if err := e.sendWaitLocked(t, nonblock, &w); err != nil {
		return 0, err
	}
	data, err := copyIn(src, 0, n)
	if err != nil {
		return 0, err
	}
	msg := &message{data: data, sender: e, size: truesize(n)}
	if s.rights != nil {
		if err := ns.attachLocked(t, msg, s); err != nil {
			return 0, err
		}
	}
	timeo := e.opts.SndTimeo
	if nonblock {
		timeo = 0
	}
	deadline := timeo.Deadline()
	for {
		if other == nil {
			if to == nil {
				e.dropLocked(msg, &w)
				return 0, unix.ECONNRESET
			}
			ns.mu.Unlock()
			o, err := ns.find(t, to, e.typ)
			ns.mu.Lock()
			if err != nil {
				e.dropLocked(msg, &w)
				return 0, err
			}
			other = o
		}
		// A datagram to the connected peer was allowed at connect.
		if !mayDgramSend(e, other) || other != e.peer && landlockScoped(t, to, other) {
			e.dropLocked(msg, &w)
			return 0, unix.EPERM
		}
		if other.dead {
			if e.typ == unix.SOCK_SEQPACKET {
				e.dropLocked(msg, &w)
				return 0, unix.EPIPE
			}
			if e.peer == other {
				e.setDgramPeerLocked(nil)
				e.state = stClose
				w.add(&e.queue, waiter.WritableEvents)
				e.dgramDisconnectedLocked(other, &w)
				e.dropLocked(msg, &w)
				return 0, unix.ECONNREFUSED
			}
			other = nil
			continue
		}
		if other.shut&rcvShutdown != 0 {
			e.dropLocked(msg, &w)
			return 0, unix.EPIPE
		}
		if other != e && other.peer != e && len(other.recvq) > other.backlog {
			if timeo == 0 {
				e.dropLocked(msg, &w)
				return 0, unix.EAGAIN
			}
			err := e.waitLocked(t, &other.peerWait, allEvents, deadline, &w)
			if err == unix.ETIMEDOUT {
				timeo = 0
			} else if err != nil {
				e.dropLocked(msg, &w)
				return 0, err
			}
			continue
		}
		e.enqueueLocked(t, other, msg, s, &w)
		return n, nil
	}
}

// RecvMsg implements socket.Socket.
func (e *endpoint) RecvMsg(t *kernel.Task, dst *vfs.IOSeq, m *socket.RecvMessage) (int, error) {
	if m.Flags&unix.MSG_OOB != 0 {
		return 0, unix.EOPNOTSUPP
	}
	if e.typ == unix.SOCK_STREAM {
		return e.recvStream(t, dst, m)
	}
	if e.typ == unix.SOCK_SEQPACKET {
		e.ns.mu.Lock()
		connected := e.state == stEstablished
		e.ns.mu.Unlock()
		if !connected {
			return 0, unix.ENOTCONN
		}
	}
	return e.recvDgram(t, dst, m)
}

// recvTimeout is how long a receive may wait.
func (e *endpoint) recvTimeout(t *kernel.Task, flags int) socket.Timeout {
	if flags&unix.MSG_DONTWAIT != 0 || t == nil {
		return 0
	}
	return e.opts.RcvTimeo
}

// sameCreds reports whether two messages' credentials are the same (a
// stream read that passes credentials never joins data of two writers).
func sameCreds(a, b *ucred) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// recvStream is unix_stream_read_generic.
func (e *endpoint) recvStream(t *kernel.Task, dst *vfs.IOSeq, m *socket.RecvMessage) (int, error) {
	var w wakeups
	defer w.send()
	ns := e.ns
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if e.state != stEstablished {
		return 0, unix.EINVAL
	}
	size := dst.Len()
	peek := m.Flags&unix.MSG_PEEK != 0
	target := min(int(e.opts.RcvLowat), size)
	if m.Flags&unix.MSG_WAITALL != 0 {
		target = size
	}
	target = max(target, 1)
	timeo := e.recvTimeout(t, m.Flags)
	deadline := timeo.Deadline()
	passcred := e.passcredLocked()
	var creds *ucred
	checkCreds := false
	var rights []*vfs.File
	copied := 0
	var result error
	i := 0 // the message a peek reads next
loop:
	for size > 0 {
		if !peek {
			i = 0
		}
		if i >= len(e.recvq) {
			if copied >= target {
				break
			}
			if err := e.err; err != 0 {
				e.err = 0
				result = err
				break
			}
			if e.shut&rcvShutdown != 0 {
				break
			}
			if timeo == 0 {
				result = unix.EAGAIN
				break
			}
			err := e.waitLocked(t, &e.queue, waiter.ReadableEvents|waiter.EventHUp|waiter.EventErr, deadline, &w)
			if err == unix.ETIMEDOUT {
				timeo = 0
			} else if err != nil {
				result = err
				break
			}
			continue
		}
		msg := e.recvq[i]
		if checkCreds {
			if !sameCreds(creds, msg.creds) {
				break
			}
		} else if passcred {
			creds, checkCreds = msg.creds, true
		}
		if m.From == nil && msg.sender != nil && msg.sender.addr != nil {
			m.From = nameOf(msg.sender)
		}
		chunk := min(len(msg.data)-msg.off, size)
		if n, _ := dst.Skip(copied).CopyOut(msg.data[msg.off : msg.off+chunk]); n < chunk {
			// A buffer that faults takes nothing of the piece.
			if copied == 0 {
				result = unix.EFAULT
			}
			break
		}
		copied += chunk
		size -= chunk
		if !peek {
			msg.off += chunk
			if msg.rights != nil {
				ns.landedLocked(msg)
				rights = append(rights, msg.rights...)
				msg.rights = nil
			}
			if msg.off < len(msg.data) {
				break
			}
			e.recvq = e.recvq[1:]
			e.uncharge(msg, &w)
			if rights != nil {
				break
			}
			continue
		}
		if msg.rights != nil {
			for _, f := range msg.rights {
				f.IncRef()
			}
			rights = append(rights, msg.rights...)
			break loop
		}
		i++
		if i >= len(e.recvq) {
			break
		}
	}
	if copied == 0 && result != nil {
		for _, f := range rights {
			f.DecRef()
		}
		return 0, result
	}
	e.scmRecv(t, m, creds, passcred, rights)
	return copied, nil
}

// scmRecv fills the received control data as scm_recv does: the
// credentials when SO_PASSCRED is on (pid 0 and the overflow ids for a
// message that carried none), then the files, for the reader t.
func (e *endpoint) scmRecv(t *kernel.Task, m *socket.RecvMessage, creds *ucred, passcred bool, rights []*vfs.File) {
	if passcred {
		u := ucred{uid: overflowID, gid: overflowID}
		if creds != nil {
			u = *creds
			u.uid, u.gid = t.Creds().UIDOf(u.uid), t.Creds().GIDOf(u.gid) // as the reader's namespace shows them
		}
		b := binary.LittleEndian.AppendUint32(nil, uint32(u.pidSeenBy(t)))
		b = binary.LittleEndian.AppendUint32(b, u.uid)
		b = binary.LittleEndian.AppendUint32(b, u.gid)
		m.Control.Cmsgs = append(m.Control.Cmsgs, socket.Cmsg{Level: unix.SOL_SOCKET, Type: unix.SCM_CREDENTIALS, Data: b})
		m.Control.Wanted = true
	}
	m.Control.Rights = append(m.Control.Rights, rights...)
}

// overflowID is the id a message without credentials reports
// (/proc/sys/kernel/overflowuid).
const overflowID = 65534

// recvDgram is __unix_dgram_recvmsg, for datagram and seqpacket sockets.
func (e *endpoint) recvDgram(t *kernel.Task, dst *vfs.IOSeq, m *socket.RecvMessage) (int, error) {
	var w wakeups
	defer w.send()
	ns := e.ns
	ns.mu.Lock()
	defer ns.mu.Unlock()
	peek := m.Flags&unix.MSG_PEEK != 0
	timeo := e.recvTimeout(t, m.Flags)
	deadline := timeo.Deadline()
	var msg *message
	for {
		if err := e.err; err != 0 {
			e.err = 0
			return 0, err
		}
		if len(e.recvq) > 0 {
			msg = e.recvq[0]
			break
		}
		if timeo == 0 {
			if e.typ == unix.SOCK_SEQPACKET && e.shut&rcvShutdown != 0 {
				return 0, nil
			}
			return 0, unix.EAGAIN
		}
		if e.shut&rcvShutdown != 0 {
			return 0, nil
		}
		if e.typ == unix.SOCK_SEQPACKET && e.state != stEstablished {
			return 0, unix.ENOTCONN
		}
		err := e.waitLocked(t, &e.queue, waiter.ReadableEvents|waiter.EventHUp|waiter.EventErr, deadline, &w)
		if err == unix.ETIMEDOUT {
			timeo = 0
		} else if err != nil {
			return 0, err
		}
	}
	if !peek {
		e.recvq = e.recvq[1:]
		e.uncharge(msg, &w)
	}
	w.add(&e.peerWait, waiter.WritableEvents)
	for c := range e.clients {
		w.add(&c.queue, waiter.WritableEvents)
	}
	if msg.sender != nil && msg.sender.addr != nil {
		m.From = nameOf(msg.sender)
	}
	size := dst.Len()
	n := len(msg.data)
	if size < n {
		m.OutFlags |= unix.MSG_TRUNC
		n = size
	}
	got, _ := dst.CopyOut(msg.data[:n])
	if got < n {
		if !peek {
			e.dropLocked(msg, &w)
		}
		return 0, unix.EFAULT
	}
	var rights []*vfs.File
	if msg.rights != nil {
		if peek {
			for _, f := range msg.rights {
				f.IncRef()
			}
			rights = append(rights, msg.rights...)
		} else {
			ns.landedLocked(msg)
			rights = msg.rights
			msg.rights = nil
		}
	}
	e.scmRecv(t, m, msg.creds, e.passcredLocked(), rights)
	if m.Flags&unix.MSG_TRUNC != 0 {
		return len(msg.data), nil
	}
	return n, nil
}
