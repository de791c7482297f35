package ipc

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// MsgQueue is a System V message queue.
type MsgQueue struct {
	ns    *Namespace
	perm  Perm
	msgs  []message
	bytes int // the text of the messages queued (q_cbytes)
	limit int // q_qbytes: the most bytes it holds, and the most messages
	// Guarded by ns.mu.
	lspid, lrpid        int32
	stime, rtime, ctime int64
	// changed is closed, and replaced, whenever a message comes or goes,
	// the limit changes or the queue is removed: what senders and
	// receivers that wait look again at.
	changed chan struct{}
	dead    bool
}

type message struct {
	mtype int64
	text  []byte
}

func (q *MsgQueue) perms() *Perm { return &q.perm }

func (q *MsgQueue) changedLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// Msgget implements msgget(2)'s work, within msgmni queues (ENOSPC).
func (ns *Namespace) Msgget(c *Caller, key int32, flags int) (int32, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return get(&ns.msgs, c, key, flags, func(*MsgQueue) error { return nil }, func() (*MsgQueue, error) {
		q := &MsgQueue{ns: ns, perm: newPerm(c, key, flags), limit: ns.limits.MsgMNB, ctime: ns.seconds(),
			changed: make(chan struct{})}
		if err := ns.msgs.add(q, ns.limits.MsgMNI); err != nil {
			return nil, err
		}
		return q, nil
	})
}

// MsgMax is the largest message the namespace takes.
func (ns *Namespace) MsgMax() int { return ns.Limits().MsgMax }

// Msgsnd implements msgsnd(2)'s work, for a message the caller has read
// (mtype at least 1, text at most msgmax: the caller checks both): it
// waits while the queue is full (its bytes or its count past q_qbytes)
// unless IPC_NOWAIT (EAGAIN). A signal is EINTR (msgsnd is never
// restarted), the queue's removal meanwhile EIDRM.
func (ns *Namespace) Msgsnd(c *Caller, id int32, mtype int64, text []byte, flags int, b Blocker) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	q, err := ns.msgs.find(id)
	if err != nil {
		return err
	}
	if !q.perm.allows(c, mayWrite) {
		return unix.EACCES
	}
	for len(text)+q.bytes > q.limit || len(q.msgs)+1 > q.limit {
		if flags&unix.IPC_NOWAIT != 0 {
			return unix.EAGAIN
		}
		if err := q.waitLocked(b); err != nil {
			return err
		}
	}
	q.msgs = append(q.msgs, message{mtype: mtype, text: text})
	q.bytes += len(text)
	q.lspid, q.stime = c.PID, ns.seconds()
	q.changedLocked()
	return nil
}

// waitLocked waits (ns.mu held, released meanwhile) for the queue to
// change: EINTR for a signal, EIDRM if the queue went.
func (q *MsgQueue) waitLocked(b Blocker) error {
	ch := q.changed
	q.ns.mu.Unlock()
	err := b.BlockUntil(ch, time.Time{})
	q.ns.mu.Lock()
	switch {
	case q.dead:
		return unix.EIDRM
	case err != nil:
		return unix.EINTR
	}
	return nil
}

// Msgrcv implements msgrcv(2)'s work: the first message of type mtype
// (0: any; with MSG_EXCEPT, any other type; negative: the lowest type up
// to -mtype), waiting for one unless IPC_NOWAIT (ENOMSG). A message longer
// than size is E2BIG and stays queued, unless MSG_NOERROR cuts it. With
// MSG_COPY (which needs IPC_NOWAIT and excludes MSG_EXCEPT), mtype is
// the position of the message to copy, which stays queued. It returns
// the message's type and text.
func (ns *Namespace) Msgrcv(c *Caller, id int32, size int, mtype int64, flags int, b Blocker) (int64, []byte, error) {
	if flags&linuxabi.MSG_COPY != 0 && (flags&unix.IPC_NOWAIT == 0 || flags&linuxabi.MSG_EXCEPT != 0) {
		return 0, nil, unix.EINVAL
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	q, err := ns.msgs.find(id)
	if err != nil {
		return 0, nil, err
	}
	for {
		if !q.perm.allows(c, mayRead) {
			return 0, nil, unix.EACCES
		}
		i := q.findLocked(mtype, flags)
		if i >= 0 {
			m := q.msgs[i]
			if len(m.text) > size && flags&linuxabi.MSG_NOERROR == 0 {
				return 0, nil, unix.E2BIG
			}
			text := m.text[:min(len(m.text), size)]
			if flags&linuxabi.MSG_COPY == 0 {
				q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
				q.bytes -= len(m.text)
				q.lrpid, q.rtime = c.PID, ns.seconds()
				q.changedLocked()
			}
			return m.mtype, text, nil
		}
		if flags&unix.IPC_NOWAIT != 0 {
			return 0, nil, unix.ENOMSG
		}
		if err := q.waitLocked(b); err != nil {
			return 0, nil, err
		}
	}
}

// findLocked returns the index of the message msgrcv takes, or -1.
func (q *MsgQueue) findLocked(mtype int64, flags int) int {
	switch {
	case flags&linuxabi.MSG_COPY != 0:
		if mtype >= 0 && mtype < int64(len(q.msgs)) {
			return int(mtype)
		}
		return -1
	case mtype == 0:
		if len(q.msgs) > 0 {
			return 0
		}
	case mtype > 0:
		for i, m := range q.msgs {
			if (m.mtype == mtype) != (flags&linuxabi.MSG_EXCEPT != 0) {
				return i
			}
		}
	default:
		best := -1
		for i, m := range q.msgs {
			if m.mtype <= -mtype && (best < 0 || m.mtype < q.msgs[best].mtype) {
				best = i
			}
		}
		return best
	}
	return -1
}

// MsgStat is struct msqid64_ds.
type MsgStat struct {
	Perm                Perm
	Stime, Rtime, Ctime int64
	Cbytes, Qnum        uint64
	Qbytes              uint64
	LSPID, LRPID        int32
}

func (q *MsgQueue) statLocked() MsgStat {
	return MsgStat{Perm: q.perm, Stime: q.stime, Rtime: q.rtime, Ctime: q.ctime, Cbytes: uint64(q.bytes),
		Qnum: uint64(len(q.msgs)), Qbytes: uint64(q.limit), LSPID: q.lspid, LRPID: q.lrpid}
}

// MsgStat answers IPC_STAT, MSG_STAT and MSG_STAT_ANY.
func (ns *Namespace) MsgStat(c *Caller, id int32, cmd StatCmd) (MsgStat, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	q, err := findStat(&ns.msgs, c, id, cmd)
	if err != nil {
		return MsgStat{}, err
	}
	return q.statLocked(), nil
}

// MsgSetPerm answers IPC_SET: the owner and mode, and the queue's size
// (raising it past msgmnb needs CAP_SYS_RESOURCE).
func (ns *Namespace) MsgSetPerm(c *Caller, id int32, set Setting, qbytes uint64) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	q, err := findOwned(&ns.msgs, c, id)
	if err != nil {
		return err
	}
	if qbytes > uint64(ns.limits.MsgMNB) && !c.capable(unix.CAP_SYS_RESOURCE) {
		return unix.EPERM
	}
	if err := q.perm.set(set); err != nil {
		return err
	}
	q.limit = int(min(qbytes, 1<<31-1))
	q.ctime = ns.seconds()
	q.changedLocked()
	return nil
}

// MsgRemove answers IPC_RMID: the queue and its messages go at once;
// senders and receivers waiting fail with EIDRM.
func (ns *Namespace) MsgRemove(c *Caller, id int32) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	q, err := findOwned(&ns.msgs, c, id)
	if err != nil {
		return err
	}
	ns.msgs.remove(q)
	q.dead = true
	q.msgs = nil
	q.changedLocked()
	return nil
}

// MsgInfo is struct msginfo, IPC_INFO's and MSG_INFO's answer.
type MsgInfo struct {
	Pool, Map, Max, MNB, MNI, SSZ, TQL int32
	Seg                                uint16
	_                                  uint16
}

// MsgInfo answers IPC_INFO (usage false) and MSG_INFO (the queues, the
// messages and their bytes in use in place of MSGPOOL, MSGMAP and
// MSGTQL), and returns the highest index in use.
func (ns *Namespace) MsgInfo(usage bool) (MsgInfo, int) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	l := ns.limits
	i := MsgInfo{Pool: linuxabi.MSGPOOL, Map: linuxabi.MSGMAP, Max: int32(l.MsgMax), MNB: int32(l.MsgMNB),
		MNI: int32(l.MsgMNI), SSZ: linuxabi.MSGSSZ, TQL: linuxabi.MSGTQL, Seg: linuxabi.MSGSEG}
	if usage {
		var n, bytes int
		for _, q := range ns.msgs.byIdx {
			n += len(q.msgs)
			bytes += q.bytes
		}
		i.Pool, i.Map, i.TQL = int32(len(ns.msgs.byIdx)), int32(n), int32(min(bytes, 1<<31-1))
	}
	return i, ns.msgs.maxIdx()
}

// Msgs returns every queue's state, by index, for /proc/sysvipc/msg.
func (ns *Namespace) Msgs() []MsgStat {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	var out []MsgStat
	for _, q := range ns.msgs.all() {
		out = append(out, q.statLocked())
	}
	return out
}
