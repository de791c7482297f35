package kernel

import (
	"sync"

	"golang.org/x/sys/unix"
)

// Infinity is RLIM_INFINITY.
const Infinity = ^uint64(0)

// NumLimits is how many resource limits Linux has (RLIMIT_NLIMITS).
const NumLimits = 16

// Limit is one resource limit.
type Limit struct{ Cur, Max uint64 }

// Limits are a process's resource limits.
type Limits struct {
	mu sync.Mutex
	l  [NumLimits]Limit
}

// DefaultLimits are what Linux gives init, as far as a container sees them.
func DefaultLimits() [NumLimits]Limit {
	var l [NumLimits]Limit
	for i := range l {
		l[i] = Limit{Infinity, Infinity}
	}
	l[unix.RLIMIT_STACK] = Limit{8 << 20, Infinity}
	l[unix.RLIMIT_CORE] = Limit{0, Infinity}
	l[unix.RLIMIT_NOFILE] = Limit{1024, 1 << 20}
	l[unix.RLIMIT_MEMLOCK] = Limit{8 << 20, 8 << 20}
	l[unix.RLIMIT_NPROC] = Limit{1 << 20, 1 << 20}
	l[unix.RLIMIT_SIGPENDING] = Limit{1 << 20, 1 << 20}
	l[unix.RLIMIT_MSGQUEUE] = Limit{819200, 819200}
	l[unix.RLIMIT_NICE] = Limit{0, 0}
	l[unix.RLIMIT_RTPRIO] = Limit{0, 0}
	return l
}

// Get returns limit r.
func (l *Limits) Get(r int) Limit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.l[r]
}

// Set replaces limit r: raising the hard limit needs privilege.
func (l *Limits) Set(r int, v Limit, privileged bool) (Limit, error) {
	if v.Cur > v.Max {
		return Limit{}, unix.EINVAL
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.l[r]
	if v.Max > old.Max && !privileged {
		return Limit{}, unix.EPERM
	}
	if r == unix.RLIMIT_NOFILE && v.Max > 1<<20 {
		return Limit{}, unix.EPERM // above fs.nr_open
	}
	l.l[r] = v
	return old, nil
}

// setAll replaces every limit.
func (l *Limits) setAll(v [NumLimits]Limit) {
	l.mu.Lock()
	l.l = v
	l.mu.Unlock()
}

// all returns every limit.
func (l *Limits) all() [NumLimits]Limit {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.l
}

// mayAddTaskLocked applies RLIMIT_NPROC to a new task t: like Linux, it
// counts every task (threads too) of t's real user, and exempts root and
// holders of CAP_SYS_RESOURCE or CAP_SYS_ADMIN. A task that changes its
// real uid moves to that uid's count (recountNPROC).
func (k *Kernel) mayAddTaskLocked(t *Task, limit uint64) bool {
	uid, ok := k.nprocRoomLocked(t.creds, limit)
	t.nprocUID = uid
	return ok
}

// nprocRoomLocked reports whether RLIMIT_NPROC leaves room for one more
// task of c's real user, and that user.
func (k *Kernel) nprocRoomLocked(c *Credentials, limit uint64) (uint32, bool) {
	c.Lock()
	uid, eff := c.UID, capsIn(c.userns, c.CapEffective, c.EUID, rootUserNS)
	c.Unlock()
	if uid == 0 || eff&(1<<unix.CAP_SYS_RESOURCE|1<<unix.CAP_SYS_ADMIN) != 0 {
		return uid, true
	}
	return uid, uint64(k.nproc[uid]) < limit
}

// recountNPROC moves t to the RLIMIT_NPROC count of its real uid, after
// a change of it, as Linux's commit_creds moves a task between users.
func (t *Task) recountNPROC() {
	t.creds.Lock()
	uid := t.creds.UID
	t.creds.Unlock()
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	if uid != t.nprocUID {
		k.countTaskLocked(t, -1)
		t.nprocUID = uid
		k.countTaskLocked(t, 1)
	}
}

// countTaskLocked adds delta to the count of t's user's tasks.
func (k *Kernel) countTaskLocked(t *Task, delta int) { k.countUIDLocked(t.nprocUID, delta) }

// countUIDLocked adds delta to the count of uid's tasks.
func (k *Kernel) countUIDLocked(uid uint32, delta int) {
	k.nproc[uid] += delta
	if k.nproc[uid] <= 0 {
		delete(k.nproc, uid)
	}
}
