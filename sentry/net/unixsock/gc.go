package unixsock

import "github.com/moat-sandbox/moat/sentry/vfs"

// Files in flight: a message that carries SCM_RIGHTS holds a reference to
// each file until it is received or dropped. A socket whose file only
// such messages hold, in queues only such sockets can read, is garbage no
// program can reach (two sockets sent to each other, a socket sent to
// itself); Linux's unix_gc finds and frees them, and so does collect.

// gcState is an endpoint's marks during one collection.
type gcState struct {
	candidate bool
	alive     bool
	refs      int // references from outside the candidates' queues
}

// endpointOf returns the AF_UNIX socket f is, or nil.
func endpointOf(f *vfs.File) *endpoint {
	e, _ := f.Impl().(*endpoint)
	return e
}

// sentLocked counts the files of a message put in flight (unix_inflight).
func (ns *namespace) sentLocked(m *message) {
	ns.inflight[m.owner] += len(m.rights)
	ns.total += len(m.rights)
	for _, f := range m.rights {
		if e := endpointOf(f); e != nil {
			e.inflight++
		}
	}
}

// landedLocked uncounts them once the message is received or dropped.
func (ns *namespace) landedLocked(m *message) {
	if len(m.rights) == 0 {
		return
	}
	ns.inflight[m.owner] -= len(m.rights)
	if ns.inflight[m.owner] == 0 {
		delete(ns.inflight, m.owner)
	}
	ns.total -= len(m.rights)
	for _, f := range m.rights {
		if e := endpointOf(f); e != nil {
			e.inflight--
		}
	}
}

// queued calls fn for each message e's queue holds, and those of the
// connections waiting in a listener's queue (Linux's scan_children).
func (e *endpoint) queued(fn func(owner *endpoint, m *message)) {
	for _, m := range e.recvq {
		fn(e, m)
		if m.conn != nil {
			for _, cm := range m.conn.recvq {
				fn(m.conn, cm)
			}
		}
	}
}

// collect frees the sockets only messages in flight hold: candidates are
// the sockets all of whose file's references are in flight; a candidate
// a reference from outside the candidates' queues holds is alive, and so
// is every candidate in flight in a live one's queues; the messages with
// files in the queues of the rest are dropped, which releases them.
func (ns *namespace) collect() {
	var w wakeups
	ns.mu.Lock()
	var cands []*endpoint
	for e := range ns.all {
		e.gc = gcState{}
		if e.file != nil && e.inflight > 0 && e.file.Refs() == int64(e.inflight) {
			e.gc = gcState{candidate: true, refs: e.inflight}
			cands = append(cands, e)
		}
	}
	if len(cands) == 0 {
		ns.mu.Unlock()
		return
	}
	for _, c := range cands {
		c.queued(func(_ *endpoint, m *message) {
			for _, f := range m.rights {
				if x := endpointOf(f); x != nil && x.gc.candidate {
					x.gc.refs--
				}
			}
		})
	}
	var live []*endpoint
	for _, c := range cands {
		if c.gc.refs > 0 {
			c.gc.alive = true
			live = append(live, c)
		}
	}
	for len(live) > 0 {
		c := live[len(live)-1]
		live = live[:len(live)-1]
		c.queued(func(_ *endpoint, m *message) {
			for _, f := range m.rights {
				if x := endpointOf(f); x != nil && x.gc.candidate && !x.gc.alive {
					x.gc.alive = true
					live = append(live, x)
				}
			}
		})
	}
	for _, c := range cands {
		if c.gc.alive {
			continue
		}
		c.queued(func(owner *endpoint, m *message) {
			if len(m.rights) > 0 {
				ns.landedLocked(m)
				w.drop(m.rights)
				m.rights = nil
			}
		})
	}
	for _, c := range cands {
		c.gc = gcState{}
	}
	ns.mu.Unlock()
	w.send()
}
