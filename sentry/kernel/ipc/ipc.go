// Package ipc is the sandbox's System V IPC: shared memory segments (in
// the memory file), semaphore sets with SEM_UNDO, and message queues, per
// IPC namespace, with Linux's limits, identifiers and permission checks.
// It knows nothing of tasks: callers describe themselves with a Caller,
// wait through a Blocker, and copy to and from the guest themselves; no
// lock of this package is held while guest memory is touched, except the
// namespace's, which memory managers may take (a segment's last mapping
// going, under MemoryManager.mu), and which is never held while calling
// into a memory manager.
package ipc

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/fs/mqueue"
	"github.com/moat-sandbox/moat/sentry/fs/nsfs"
	"github.com/moat-sandbox/moat/sentry/memfile"
)

// IPCMNI is the most objects of one kind an IPC namespace holds (without
// ipcmni_extend), and ids are an index below it plus a sequence number
// times it: ipc/util.h.
const (
	ipcmniShift = 15
	ipcmni      = 1 << ipcmniShift
	seqMax      = (1<<31 - 1) >> ipcmniShift
	// minCycle is how far indices cycle before an index is reused when few
	// objects exist (RADIX_TREE_MAP_SIZE).
	minCycle = 64
)

// Limits are a namespace's System V limits, as /proc/sys/kernel shows
// them: shmmax, shmall (in pages), shmmni; sem's four (semmsl, semmns,
// semopm, semmni); msgmax, msgmnb, msgmni.
type Limits struct {
	ShmMax, ShmAll                 uint64
	ShmMNI                         int
	SemMSL, SemMNS, SemOPM, SemMNI int
	MsgMax, MsgMNB, MsgMNI         int
}

// DefaultLimits are a new namespace's.
func DefaultLimits() Limits {
	return Limits{ShmMax: linuxabi.SHMMAX, ShmAll: linuxabi.SHMALL, ShmMNI: linuxabi.SHMMNI,
		SemMSL: linuxabi.SEMMSL, SemMNS: linuxabi.SEMMNS, SemOPM: linuxabi.SEMOPM, SemMNI: linuxabi.SEMMNI,
		MsgMax: linuxabi.MSGMAX, MsgMNB: linuxabi.MSGMNB, MsgMNI: linuxabi.MSGMNI}
}

// Namespace is one IPC namespace: its System V objects, and its POSIX
// message queues (mqueue), which live beside them.
type Namespace struct {
	mf  *memfile.File
	now func() time.Time
	mq  *mqueue.Namespace
	id  uint64 // the inode number /proc/<pid>/ns/ipc shows
	// Owner is the user namespace the namespace was made in (the
	// kernel's; nil: the sandbox's first).
	Owner any

	mu       sync.Mutex
	limits   Limits
	shms     ids[*Shm]
	sems     ids[*SemSet]
	msgs     ids[*MsgQueue]
	shmPages uint64 // pages of the segments that exist (shm_tot)
	semCount int    // semaphores in the sets that exist (used_sems)
}

// NewNamespace returns an empty namespace whose segments live in mf and
// whose times come from now (the guest's realtime clock).
func NewNamespace(mf *memfile.File, now func() time.Time) *Namespace {
	return newNamespace(mf, now, mqueue.NewAccounts())
}

func newNamespace(mf *memfile.File, now func() time.Time, accounts *mqueue.Accounts) *Namespace {
	return &Namespace{mf: mf, now: now, mq: mqueue.NewNamespace(now, accounts), id: nsfs.NewIno(), limits: DefaultLimits(),
		shms: newIDs[*Shm](), sems: newIDs[*SemSet](), msgs: newIDs[*MsgQueue]()}
}

// New returns a new, empty namespace beside ns (unshare or clone with
// CLONE_NEWIPC): its segments in the same memory file, its queues charged
// to the same users' RLIMIT_MSGQUEUE.
func (ns *Namespace) New() *Namespace { return newNamespace(ns.mf, ns.now, ns.mq.Accounts()) }

// ID is the namespace's inode number, as /proc/<pid>/ns/ipc shows it.
func (ns *Namespace) ID() uint64 { return ns.id }

// MQueue returns the namespace's POSIX message queues.
func (ns *Namespace) MQueue() *mqueue.Namespace { return ns.mq }

// Limits returns the namespace's limits.
func (ns *Namespace) Limits() Limits {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.limits
}

func (ns *Namespace) seconds() int64 { return ns.now().Unix() }

// Caller is who makes a request: its process, the ids a permission check
// compares and its effective capabilities.
type Caller struct {
	PID        int32  // as the sandbox's pid namespace numbers it; readers translate it
	EUID, EGID uint32 // EGID: the fs gid, as Linux's in_group_p compares
	Groups     []uint32
	Caps       uint64
}

func (c *Caller) capable(cap uint) bool { return c.Caps&(1<<cap) != 0 }

func (c *Caller) inGroup(gid uint32) bool {
	if gid == c.EGID {
		return true
	}
	for _, g := range c.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

// Blocker waits for the caller: until ch is closed (nil), the deadline
// passes (unix.ETIMEDOUT; a zero deadline never does) or a signal
// interrupts it (any other error). kernel.Task is one.
type Blocker interface {
	BlockUntil(ch <-chan struct{}, deadline time.Time) error
}

// Mode bits: the permission bits, and the state bits segments show in
// their mode, which are the kernel's own: include/linux/shm.h.
const (
	modePerm   = 0o777
	modeDest   = 0o1000 // SHM_DEST: removed, gone with its last mapping
	modeLocked = 0o2000 // SHM_LOCKED
)

// Permission requests, as ipcperms takes them (S_IRUGO, S_IWUGO, and
// S_IXUGO for SHM_EXEC).
const (
	mayRead  = 0o444
	mayWrite = 0o222
	mayExec  = 0o111
)

// Perm is an object's struct kern_ipc_perm.
type Perm struct {
	Key                  int32
	ID                   int32
	UID, GID, CUID, CGID uint32
	Mode                 uint16
	Seq                  uint16
}

// allows is Linux's ipcperms: the owner's, group's or others' bits by
// who the caller is, or CAP_IPC_OWNER.
func (p *Perm) allows(c *Caller, flag uint16) bool {
	requested := (flag>>6 | flag>>3 | flag) & 7
	granted := p.Mode
	switch {
	case c.EUID == p.CUID || c.EUID == p.UID:
		granted >>= 6
	case c.inGroup(p.CGID) || c.inGroup(p.GID):
		granted >>= 3
	}
	return requested&^granted&7 == 0 || c.capable(unix.CAP_IPC_OWNER)
}

// owns is the check of IPC_SET and IPC_RMID (ipcctl_obtain_check): the
// creator, the owner, or CAP_SYS_ADMIN.
func (p *Perm) owns(c *Caller) bool {
	return c.EUID == p.CUID || c.EUID == p.UID || c.capable(unix.CAP_SYS_ADMIN)
}

// Setting is what IPC_SET changes in a Perm.
type Setting struct {
	UID, GID uint32
	Mode     uint16
}

// set applies IPC_SET's change; ids that are not ids are EINVAL.
func (p *Perm) set(s Setting) error {
	if s.UID == ^uint32(0) || s.GID == ^uint32(0) {
		return unix.EINVAL
	}
	p.UID, p.GID = s.UID, s.GID
	p.Mode = p.Mode&^modePerm | s.Mode&modePerm
	return nil
}

// newPerm is a new object's: the caller creates and owns it.
func newPerm(c *Caller, key int32, flags int) Perm {
	return Perm{Key: key, UID: c.EUID, GID: c.EGID, CUID: c.EUID, CGID: c.EGID, Mode: uint16(flags) & modePerm}
}

// object is what the registries hold.
type object interface{ perms() *Perm }

// ids is one kind of object of a namespace (Linux's struct ipc_ids).
// Indices are handed out cyclically over a window that grows with the
// number in use, and an id is the index plus the sequence number, which
// moves on each time the indices wrap: an id that was removed is not
// soon the id of another object.
type ids[T object] struct {
	byIdx   map[int]T
	next    int // where the cyclic search starts
	lastIdx int
	seq     int
}

func newIDs[T object]() ids[T] { return ids[T]{byIdx: make(map[int]T), lastIdx: -1} }

// add gives o an index and id, or fails with ENOSPC past limit objects.
func (r *ids[T]) add(o T, limit int) error {
	limit = min(limit, ipcmni)
	if len(r.byIdx) >= limit {
		return unix.ENOSPC
	}
	window := min(max(len(r.byIdx)*3/2, minCycle), ipcmni)
	start := r.next
	if start >= window {
		start = 0
	}
	idx := -1
	for i := 0; i < window; i++ {
		cand := (start + i) % window
		if _, used := r.byIdx[cand]; !used {
			idx = cand
			break
		}
	}
	if idx < 0 {
		return unix.ENOSPC
	}
	r.next = idx + 1
	if idx <= r.lastIdx {
		r.seq++
		if r.seq >= seqMax {
			r.seq = 0
		}
	}
	r.lastIdx = idx
	p := o.perms()
	p.Seq = uint16(r.seq)
	p.ID = int32(r.seq<<ipcmniShift + idx)
	r.byIdx[idx] = o
	return nil
}

// find returns the object with id (EINVAL if none).
func (r *ids[T]) find(id int32) (T, error) {
	var zero T
	if id < 0 {
		return zero, unix.EINVAL
	}
	o, ok := r.byIdx[int(id)%ipcmni]
	if !ok || o.perms().ID != id {
		return zero, unix.EINVAL
	}
	return o, nil
}

// findKey returns the object with key, if any.
func (r *ids[T]) findKey(key int32) (T, bool) {
	for _, o := range r.byIdx {
		if o.perms().Key == key {
			return o, true
		}
	}
	var zero T
	return zero, false
}

// atIndex returns the object at index idx, for the *_STAT commands.
func (r *ids[T]) atIndex(idx int32) (T, error) {
	o, ok := r.byIdx[int(idx)]
	if idx < 0 || !ok {
		var zero T
		return zero, unix.EINVAL
	}
	return o, nil
}

func (r *ids[T]) remove(o T) { delete(r.byIdx, int(o.perms().ID)%ipcmni) }

// maxIdx is the highest index in use, 0 if none, as the *_INFO commands
// return it.
func (r *ids[T]) maxIdx() int {
	m := 0
	for i := range r.byIdx {
		m = max(m, i)
	}
	return m
}

// all returns the objects by index, for /proc/sysvipc.
func (r *ids[T]) all() []T {
	out := make([]T, 0, len(r.byIdx))
	for i := 0; len(out) < len(r.byIdx); i++ {
		if o, ok := r.byIdx[i]; ok {
			out = append(out, o)
		}
	}
	return out
}

// get is Linux's ipcget: IPC_PRIVATE always makes an object; a key that
// exists is EEXIST with IPC_CREAT|IPC_EXCL, else it must pass check and
// the caller's permissions (EACCES); a key that does not is ENOENT
// without IPC_CREAT, else made. ns.mu is held.
func get[T object](r *ids[T], c *Caller, key int32, flags int, check func(T) error, create func() (T, error)) (int32, error) {
	if key != unix.IPC_PRIVATE {
		if o, ok := r.findKey(key); ok {
			if flags&unix.IPC_CREAT != 0 && flags&unix.IPC_EXCL != 0 {
				return 0, unix.EEXIST
			}
			if err := check(o); err != nil {
				return 0, err
			}
			if !o.perms().allows(c, uint16(flags)&modePerm) {
				return 0, unix.EACCES
			}
			return o.perms().ID, nil
		}
		if flags&unix.IPC_CREAT == 0 {
			return 0, unix.ENOENT
		}
	}
	o, err := create()
	if err != nil {
		return 0, err
	}
	return o.perms().ID, nil
}
