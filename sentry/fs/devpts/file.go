package devpts

import (
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// Master is an open pty master (what opening /dev/ptmx gives).
type Master struct {
	p    *pair
	stat vfs.Stat // the ptmx node's
}

// Replica is an open pty replica (/dev/pts/N, TIOCGPTPEER, or /dev/tty
// when the pty is the caller's controlling terminal).
type Replica struct {
	p    *pair
	stat func() vfs.Stat // the node it was opened through
}

// Read implements vfs.FileImpl.
func (m *Master) Read(dst *vfs.IOSeq, _ int64) (int, error) { return m.p.masterRead(dst) }

// Write implements vfs.FileImpl.
func (m *Master) Write(src *vfs.IOSeq, _ int64) (int, error) { return m.p.masterWrite(src) }

// Stat implements vfs.FileImpl.
func (m *Master) Stat() (vfs.Stat, error) { return m.stat, nil }

// Release implements vfs.FileImpl: the master's close hangs the pty up.
func (m *Master) Release() { m.p.releaseMaster() }

// Readiness implements waiter.Waitable.
func (m *Master) Readiness(mask waiter.EventMask) waiter.EventMask { return m.p.masterReadiness(mask) }

// EventRegister and EventUnregister implement waiter.Waitable.
func (m *Master) EventRegister(e *waiter.Entry)   { m.p.masterQ.EventRegister(e) }
func (m *Master) EventUnregister(e *waiter.Entry) { m.p.masterQ.EventUnregister(e) }

// Terminal implements kernel.Terminal: job control on a master acts on its
// replica.
func (m *Master) Terminal() (*kernel.TTY, bool, error) { return m.p.tty, true, nil }

// Index is the pty's number, N of /dev/pts/N.
func (m *Master) Index() int { return m.p.index }

// OpenPeer opens the replica for TIOCGPTPEER, with open(2)'s flags, and
// returns it with its name in the devpts directory. The caller needs no
// permission on the node, as on Linux.
func (m *Master) OpenPeer(t *kernel.Task, flags int) (vfs.FileImpl, string, error) {
	r, err := m.p.fs.openReplica(m.p, t, flags)
	if err != nil {
		return nil, "", err
	}
	return r, strconv.Itoa(m.p.index), nil
}

// Read implements vfs.FileImpl.
func (r *Replica) Read(dst *vfs.IOSeq, _ int64) (int, error) { return r.p.replicaRead(dst) }

// Write implements vfs.FileImpl.
func (r *Replica) Write(src *vfs.IOSeq, _ int64) (int, error) { return r.p.replicaWrite(src) }

// Stat implements vfs.FileImpl.
func (r *Replica) Stat() (vfs.Stat, error) { return r.stat(), nil }

// Release implements vfs.FileImpl.
func (r *Replica) Release() { r.p.releaseReplica() }

// Readiness implements waiter.Waitable.
func (r *Replica) Readiness(mask waiter.EventMask) waiter.EventMask {
	return r.p.replicaReadiness(mask)
}

// EventRegister and EventUnregister implement waiter.Waitable.
func (r *Replica) EventRegister(e *waiter.Entry)   { r.p.replicaQ.EventRegister(e) }
func (r *Replica) EventUnregister(e *waiter.Entry) { r.p.replicaQ.EventUnregister(e) }

// Terminal implements kernel.Terminal; a hung-up replica answers EIO.
func (r *Replica) Terminal() (*kernel.TTY, bool, error) {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	if r.p.hungUp {
		return nil, false, unix.EIO
	}
	return r.p.tty, false, nil
}

// Reopen implements kernel.TTYDriver: /dev/tty opened by a process whose
// controlling terminal this is. It never makes a controlling terminal.
func (p *pair) Reopen(flags int, stat func() vfs.Stat) (vfs.FileImpl, error) {
	if err := p.openReplica(true); err != nil {
		return nil, err
	}
	return &Replica{p: p, stat: stat}, nil
}
