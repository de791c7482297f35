// Package mqueue is POSIX message queues: an IPC namespace's queues by
// name, with Linux's limits (the fs.mqueue sysctls, HARD_MSGMAX and
// HARD_MSGSIZEMAX, RLIMIT_MSGQUEUE), priority order, blocking sends and
// receives, and mq_notify's one registration per queue; and the mqueue
// file system that shows a namespace's queues as files (each reads as
// Linux's "QSIZE:... NOTIFY:... SIGNO:... NOTIFY_PID:..." line). It knows
// nothing of tasks: callers describe themselves with a Caller, wait
// through a Blocker and are told of a notification through the callback
// they registered; no lock of this package is held while one runs.
package mqueue

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// Linux's bounds: include/linux/ipc_namespace.h and include/uapi/linux/mqueue.h.
const (
	// PrioMax is MQ_PRIO_MAX: priorities are below it.
	PrioMax = 32768
	// hardMsgMax and hardMsgSizeMax bound a queue even for
	// CAP_SYS_RESOURCE (HARD_MSGMAX, HARD_MSGSIZEMAX).
	hardMsgMax     = 65536
	hardMsgSizeMax = 16 * 1024 * 1024
	// The sizes RLIMIT_MSGQUEUE charges for a queue's bookkeeping, per
	// message slot and per priority in use: sizeof(struct msg_msg) and
	// sizeof(struct posix_msg_tree_node) on x86-64.
	msgMsgSize   = 48
	treeNodeSize = 48
)

// Limits are a namespace's /proc/sys/fs/mqueue values.
type Limits struct {
	MsgMax, MsgSizeMax, QueuesMax int64
	// MsgDefault and MsgSizeDefault are a queue's size when mq_open gives
	// no attributes (and for a queue made with open(2)).
	MsgDefault, MsgSizeDefault int64
}

// DefaultLimits are a new namespace's (DFLT_MSGMAX, DFLT_MSGSIZEMAX,
// DFLT_QUEUESMAX, DFLT_MSG, DFLT_MSGSIZE).
func DefaultLimits() Limits {
	return Limits{MsgMax: 10, MsgSizeMax: 8192, QueuesMax: 256, MsgDefault: 10, MsgSizeDefault: 8192}
}

// Attr is struct mq_attr's sizes: the most messages a queue holds and the
// longest message.
type Attr struct {
	MaxMsg, MsgSize int64
}

// Caller is who opens or removes a queue.
type Caller struct {
	// Creds are the file-system ids and capabilities a permission check
	// compares; a new queue is owned by its fsuid and fsgid.
	Creds *vfs.Creds
	// UID (the real uid) is whose RLIMIT_MSGQUEUE a new queue is charged
	// to, and Limit that limit (its soft value).
	UID   uint32
	Limit uint64
}

func (c *Caller) capable(cap uint) bool { return c.Creds.Capable(cap) }

// Blocker waits for the caller: until ch is closed (nil), the deadline
// passes (unix.ETIMEDOUT; a zero deadline never does) or a signal
// interrupts it (any other error, returned as it is). kernel.Task is one.
type Blocker interface {
	BlockUntil(ch <-chan struct{}, deadline time.Time) error
}

// Accounts are the bytes of queues charged to each user, across every
// namespace (Linux keeps them per user, as RLIMIT_MSGQUEUE counts).
type Accounts struct {
	mu    sync.Mutex
	bytes map[uint32]uint64
}

// NewAccounts returns accounts with nothing charged.
func NewAccounts() *Accounts { return &Accounts{bytes: make(map[uint32]uint64)} }

// charge adds n bytes to uid's, unless that passes limit (EMFILE).
func (a *Accounts) charge(uid uint32, n, limit uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := a.bytes[uid]
	if cur+n < cur || cur+n > limit {
		return unix.EMFILE
	}
	a.bytes[uid] = cur + n
	return nil
}

func (a *Accounts) uncharge(uid uint32, n uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.bytes[uid] -= n; a.bytes[uid] == 0 {
		delete(a.bytes, uid)
	}
}

// Charged returns the bytes charged to uid.
func (a *Accounts) Charged(uid uint32) uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bytes[uid]
}

// Namespace is one IPC namespace's message queues.
type Namespace struct {
	now      func() time.Time
	accounts *Accounts
	dev      uint64
	root     *rootDir

	mu     sync.Mutex
	limits Limits
	queues map[string]*Queue
	// count is the queues that exist, named or not: one that was
	// unlinked counts against queues_max until its last close, as
	// Linux's mq_queues_count.
	count   int64
	nextIno uint64
	rootMod unix.Timespec // the root directory's mtime and ctime
}

// NewNamespace returns a namespace with no queues, whose times come from
// now (the guest's realtime clock) and whose queues are charged to
// accounts.
func NewNamespace(now func() time.Time, accounts *Accounts) *Namespace {
	ns := &Namespace{now: now, accounts: accounts, dev: vfs.NewAnonDev(), limits: DefaultLimits(),
		queues: make(map[string]*Queue), nextIno: 2}
	ns.rootMod = ns.timespec()
	ns.root = &rootDir{ns: ns}
	return ns
}

// Accounts returns what the namespace charges its queues to.
func (ns *Namespace) Accounts() *Accounts { return ns.accounts }

// Limits returns the namespace's limits.
func (ns *Namespace) Limits() Limits {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.limits
}

func (ns *Namespace) timespec() unix.Timespec { return unix.NsecToTimespec(ns.now().UnixNano()) }

// checkName is Linux's look-up of a queue's name in the namespace's root:
// the empty name is ENOENT (getname), one that is "." or "..", or holds a
// '/', is EACCES (lookup_one_len), a long one ENAMETOOLONG.
func checkName(name string) error {
	switch {
	case name == "":
		return unix.ENOENT
	case name == "." || name == "..":
		return unix.EACCES
	case len(name) > vfs.NameMax:
		return unix.ENAMETOOLONG
	}
	for i := 0; i < len(name); i++ {
		if name[i] == '/' {
			return unix.EACCES
		}
	}
	return nil
}

// checkAttrLocked is Linux's mq_attr_ok: both sizes positive, within
// the sysctls (within the hard limits for CAP_SYS_RESOURCE). Within those
// bounds the product cannot overflow, so its EOVERFLOW never arises.
func (ns *Namespace) checkAttrLocked(c *Caller, a Attr) error {
	if a.MaxMsg <= 0 || a.MsgSize <= 0 {
		return unix.EINVAL
	}
	if c.capable(unix.CAP_SYS_RESOURCE) {
		if a.MaxMsg > hardMsgMax || a.MsgSize > hardMsgSizeMax {
			return unix.EINVAL
		}
	} else if a.MaxMsg > ns.limits.MsgMax || a.MsgSize > ns.limits.MsgSizeMax {
		return unix.EINVAL
	}
	return nil
}

// chargeFor is what RLIMIT_MSGQUEUE counts for a queue of a: its messages'
// room and the bookkeeping for them.
func chargeFor(a Attr) uint64 {
	tree := uint64(a.MaxMsg)*msgMsgSize + uint64(min(a.MaxMsg, PrioMax))*treeNodeSize
	return uint64(a.MaxMsg)*uint64(a.MsgSize) + tree
}

// Open implements mq_open(2)'s work: the queue name (without glibc's
// leading '/'), made with mode (the umask taken out) and attr (nil: the
// namespace's defaults) if absent and flags has O_CREAT. An existing queue
// is EEXIST with O_CREAT|O_EXCL, EINVAL for the access mode O_RDWR|O_WRONLY,
// and needs the permission the access mode asks (EACCES); attr is then
// not looked at. A new one is EINVAL for bad sizes, ENOSPC past
// queues_max (unless CAP_SYS_RESOURCE), EMFILE past the caller's
// RLIMIT_MSGQUEUE.
func (ns *Namespace) Open(c *Caller, name string, flags int, mode uint32, attr *Attr) (*File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	q, ok := ns.queues[name]
	if !ok {
		if flags&unix.O_CREAT == 0 {
			return nil, unix.ENOENT
		}
		a := Attr{MaxMsg: ns.limits.MsgDefault, MsgSize: ns.limits.MsgSizeDefault}
		if attr != nil {
			if err := ns.checkAttrLocked(c, *attr); err != nil {
				return nil, err
			}
			a = *attr
		}
		var err error
		if q, err = ns.createLocked(name, mode, c.Creds.FSUID, c.Creds.FSGID, a, c, true); err != nil {
			return nil, err
		}
	} else {
		if flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL {
			return nil, unix.EEXIST
		}
		want, err := accessFor(flags)
		if err != nil {
			return nil, err
		}
		st := q.stat()
		if err := c.Creds.Permission(&st, want); err != nil {
			return nil, err
		}
	}
	return q.open(name), nil
}

// accessFor is the permission an access mode asks of a queue.
func accessFor(flags int) (uint32, error) {
	switch flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		return vfs.MayRead, nil
	case unix.O_WRONLY:
		return vfs.MayWrite, nil
	case unix.O_RDWR:
		return vfs.MayRead | vfs.MayWrite, nil
	}
	return 0, unix.EINVAL
}

// createLocked makes and names a queue. c, when limited, is whose
// capabilities and RLIMIT_MSGQUEUE apply; a queue made through the file
// system (open(2) with O_CREAT) has no such caller and is charged to its
// owner without a limit.
func (ns *Namespace) createLocked(name string, mode, uid, gid uint32, a Attr, c *Caller, limited bool) (*Queue, error) {
	if ns.count >= ns.limits.QueuesMax && !(limited && c.capable(unix.CAP_SYS_RESOURCE)) {
		return nil, unix.ENOSPC
	}
	charge, chargeUID, limit := chargeFor(a), uid, uint64(1<<64-1)
	if limited {
		chargeUID, limit = c.UID, c.Limit
	}
	if err := ns.accounts.charge(chargeUID, charge, limit); err != nil {
		return nil, err
	}
	now := ns.timespec()
	q := &Queue{ns: ns, ino: ns.nextIno, attr: a, chargeUID: chargeUID, charge: charge,
		mode: mode & 0o7777, uid: uid, gid: gid, atime: now, mtime: now, ctime: now, size: fileSize, linked: true,
		changed: make(chan struct{})}
	q.node = &queueInode{q: q, name: name}
	ns.nextIno++
	ns.queues[name] = q
	ns.count++
	ns.rootMod = now
	return q, nil
}

// Unlink implements mq_unlink(2)'s work: the name goes at once, the queue
// with its last open file. The namespace's directory is sticky: only the
// queue's owner, the directory's (root) or CAP_FOWNER may remove it
// (EPERM).
func (ns *Namespace) Unlink(c *Caller, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	q, ok := ns.queues[name]
	if !ok {
		return unix.ENOENT
	}
	st := q.stat()
	if st.UID != c.Creds.FSUID && c.Creds.FSUID != 0 && !c.capable(unix.CAP_FOWNER) {
		return unix.EPERM
	}
	ns.unlinkLocked(name, q)
	return nil
}

func (ns *Namespace) unlinkLocked(name string, q *Queue) {
	delete(ns.queues, name)
	ns.rootMod = ns.timespec()
	q.mu.Lock()
	q.linked = false
	q.ctime = ns.rootMod
	gone := q.opens == 0
	q.mu.Unlock()
	if gone {
		ns.destroyLocked(q)
	}
}

// destroyLocked ends a queue that has neither a name nor an open file.
func (ns *Namespace) destroyLocked(q *Queue) {
	ns.count--
	ns.accounts.uncharge(q.chargeUID, q.charge)
}

// Count returns the queues that exist, named or not.
func (ns *Namespace) Count() int64 {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.count
}
