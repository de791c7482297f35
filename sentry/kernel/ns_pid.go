package kernel

import (
	"math"
	"sort"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/fs/nsfs"
)

// PID namespaces (pid_namespaces(7)). Every task and process keeps the id
// the sandbox's own namespace gave it (Task.tid, ThreadGroup.pid): the
// kernel's maps and every lookup are keyed by it, and the root namespace,
// where nearly every task lives, needs no translation at all. A task made
// in a nested namespace also has an id in that namespace and in each one
// between it and the root: each nested namespace maps its ids to the root
// ones and back, and a task's id as another task sees it is its root id
// looked up in the observer's namespace (0 where the task is not in it).
// The ids a task sees of itself (getpid, gettid) are kept on it, so that
// those calls take no lock.

// maxPIDNSLevel is how deep pid namespaces nest (MAX_PID_NS_LEVEL).
const maxPIDNSLevel = 32

// PIDNamespace is one pid namespace. The root one has level 0 and no
// maps. The others' maps change under the kernel's treeMu and mu both and
// are read under mu, which is taken last, so that an id can be translated
// under any other lock.
type PIDNamespace struct {
	parent *PIDNamespace
	level  int
	ino    uint64 // its nsfs inode number, as /proc/<pid>/ns/pid shows it
	owner  *UserNamespace

	mu       sync.Mutex
	toRoot   map[int32]int32 // this namespace's id -> root id
	fromRoot map[int32]int32 // root id -> this namespace's id
	nextID   int32           // under treeMu, as the rest
	// init is the namespace's pid 1, the reaper of its orphans, nil
	// until its first process is made; closed once init has ended: the
	// namespace takes no new process (fork gives ENOMEM).
	init   *ThreadGroup
	closed bool
}

func newRootPIDNamespace() *PIDNamespace {
	return &PIDNamespace{ino: nsfs.NewIno(), nextID: 1, owner: rootUserNS}
}

// newChild returns a namespace nested in ns.
func (ns *PIDNamespace) newChild() (*PIDNamespace, error) {
	if ns.level >= maxPIDNSLevel {
		return nil, unix.ENOSPC
	}
	return &PIDNamespace{parent: ns, level: ns.level + 1, ino: nsfs.NewIno(), nextID: 1,
		toRoot: make(map[int32]int32), fromRoot: make(map[int32]int32)}, nil
}

// ID is the namespace's inode number.
func (ns *PIDNamespace) ID() uint64 { return ns.ino }

// Owner is the user namespace the namespace was made in, which mounting
// a proc of it asks for CAP_SYS_ADMIN in.
func (ns *PIDNamespace) Owner() *UserNamespace { return ns.owner }

// Parent is the namespace ns is nested in, nil for the first.
func (ns *PIDNamespace) Parent() *PIDNamespace { return ns.parent }

// IsAncestorOf reports whether o is ns or nested (at any depth) in it.
func (ns *PIDNamespace) IsAncestorOf(o *PIDNamespace) bool {
	for ; o != nil && o.level >= ns.level; o = o.parent {
		if o == ns {
			return true
		}
	}
	return false
}

// idOf is root id id as seen in ns, 0 if it is not in ns.
func (ns *PIDNamespace) idOf(id int32) int32 {
	if ns.level == 0 {
		return id
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.fromRoot[id]
}

// rootOf is the root id of ns's id id, 0 for none. An id that is not a
// valid one (<= 0) stays as it is.
func (ns *PIDNamespace) rootOf(id int32) int32 {
	if ns.level == 0 || id <= 0 {
		return id
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	return ns.toRoot[id]
}

// rootIDs lists the root ids of ns's processes and tasks.
func (ns *PIDNamespace) rootIDs() []int32 {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	out := make([]int32, 0, len(ns.fromRoot))
	for id := range ns.fromRoot {
		out = append(out, id)
	}
	return out
}

// allocLocked gives root id id an id in ns (treeMu held), 0 if none is
// free.
func (ns *PIDNamespace) allocLocked(id int32) int32 {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	for i := 0; i < maxTID; i++ {
		local := ns.nextID
		ns.nextID++
		if ns.nextID >= maxTID {
			ns.nextID = 2
		}
		if _, used := ns.toRoot[local]; !used {
			ns.toRoot[local], ns.fromRoot[id] = id, local
			return local
		}
	}
	return 0
}

// enterLocked gives root id id its ids in ns and every namespace between
// it and the root (treeMu held), and returns the one in ns. ENOMEM is a
// namespace whose init has ended, as Linux's alloc_pid gives.
func (k *Kernel) enterLocked(ns *PIDNamespace, id int32) (int32, error) {
	if ns.level == 0 {
		return id, nil
	}
	for n := ns; n.level > 0; n = n.parent {
		if n.closed {
			k.leaveLocked(ns, id)
			return 0, unix.ENOMEM
		}
		if n.allocLocked(id) == 0 {
			k.leaveLocked(ns, id)
			return 0, unix.EAGAIN
		}
	}
	return ns.idOf(id), nil
}

// leaveLocked takes root id id out of ns and its ancestors.
func (k *Kernel) leaveLocked(ns *PIDNamespace, id int32) {
	for n := ns; n.level > 0; n = n.parent {
		n.mu.Lock()
		if local, ok := n.fromRoot[id]; ok {
			delete(n.toRoot, local)
			delete(n.fromRoot, id)
		}
		n.mu.Unlock()
	}
}

// releaseIDLocked frees root id id's ids in the nested namespaces once no
// task, process or traced zombie holds it any longer (treeMu held), as
// the root namespace frees it (allocTIDLocked).
func (k *Kernel) releaseIDLocked(ns *PIDNamespace, id int32) {
	if ns.level == 0 {
		return
	}
	if k.tasks[id] == nil && k.tgs[id] == nil && !k.tidHeldLocked(id) {
		k.leaveLocked(ns, id)
	}
}

// PIDNamespace is the task's pid namespace: the one its process's pid is
// in.
func (t *Task) PIDNamespace() *PIDNamespace { return t.tg.pidns }

// PIDNamespaceForChildren is the namespace the task's children are made
// in (unshare(CLONE_NEWPID) and setns change it), under tg.mu.
func (t *Task) PIDNamespaceForChildren() *PIDNamespace {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.childPIDNS
}

// RootPIDNamespace is the sandbox's own pid namespace.
func (k *Kernel) RootPIDNamespace() *PIDNamespace { return k.rootPIDNS }

// HasInit reports whether the namespace's first process has been made
// (readlink of pid_for_children is ENOENT before it, as on Linux).
func (k *Kernel) HasInit(ns *PIDNamespace) bool {
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	return ns.init != nil
}

// IDIn is root id id as seen in namespace ns, 0 where it is not in it.
func (k *Kernel) IDIn(ns *PIDNamespace, id int32) int32 { return ns.idOf(id) }

// IDsIn lists root id id as seen in ns and each namespace nested in it
// down to leaf, the namespace the id was made in (NSpid in
// /proc/<pid>/status); nil if ns is not leaf or one of its ancestors.
func (k *Kernel) IDsIn(ns, leaf *PIDNamespace, id int32) []int32 {
	if !ns.IsAncestorOf(leaf) {
		return nil
	}
	out := make([]int32, leaf.level-ns.level+1)
	for n := leaf; n != ns.parent; n = n.parent {
		out[n.level-ns.level] = n.idOf(id)
	}
	return out
}

// LookupTask returns the living task whose thread id, as t sees it, is
// tid; nil if there is none.
func (t *Task) LookupTask(tid int32) *Task {
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	return k.tasks[t.tg.pidns.rootOf(tid)]
}

// LookupProcess returns the process (a zombie too) whose pid, as t sees
// it, is pid; nil if there is none.
func (t *Task) LookupProcess(pid int32) *ThreadGroup {
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	return k.tgs[t.tg.pidns.rootOf(pid)]
}

// LookupTaskIn returns the living task whose thread id in ns is tid.
func (k *Kernel) LookupTaskIn(ns *PIDNamespace, tid int32) *Task {
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	return k.tasks[ns.rootOf(tid)]
}

// RootID is id, an id as t sees it, as the root namespace numbers it: 0
// where there is no such id, and what is no id (<= 0) unchanged.
func (t *Task) RootID(id int32) int32 {
	return t.tg.pidns.rootOf(id)
}

// unseenID stands for an id the caller named that is not in its
// namespace: no process has it.
const unseenID = math.MaxInt32

// rootIDOrUnseen is RootID, with unseenID for an id not in t's namespace.
func (t *Task) rootIDOrUnseen(id int32) int32 {
	if r := t.RootID(id); r != 0 || id == 0 {
		return r
	}
	return unseenID
}

// SeenID is root id id as t sees it, 0 where it is not in t's namespace.
func (t *Task) SeenID(id int32) int32 { return t.k.IDIn(t.tg.pidns, id) }

// PIDSeenBy is t's process id as a task of process tg sees it (a signal's
// si_pid): t's own in the common case of one namespace.
func (t *Task) PIDSeenBy(tg *ThreadGroup) int32 {
	if t.tg.pidns == tg.pidns {
		return t.tg.vpid
	}
	return t.k.IDIn(tg.pidns, t.tg.pid)
}

// tidIn is t's thread id as observer sees it.
func (t *Task) tidIn(observer *Task) int32 { return t.k.tidIn(t.tid, observer) }

// tidIn is the thread id tid (one a task had, which exec may have taken
// from it) as observer sees it.
func (k *Kernel) tidIn(tid int32, observer *Task) int32 { return k.IDIn(observer.tg.pidns, tid) }

// pidIn is tg's pid as a process in ns sees it.
func (tg *ThreadGroup) pidIn(ns *PIDNamespace) int32 { return ns.idOf(tg.pid) }

// NamespaceInit reports whether tg is the init (pid 1) of a nested pid
// namespace.
func (tg *ThreadGroup) NamespaceInit() bool {
	return tg.pidns.level > 0 && tg.pidns.init == tg
}

// ThreadGroupsIn returns the living processes in ns, by their pid there.
func (k *Kernel) ThreadGroupsIn(ns *PIDNamespace) []*ThreadGroup {
	all := k.ThreadGroups()
	if ns.level == 0 {
		return all
	}
	ns.mu.Lock()
	defer ns.mu.Unlock()
	out := all[:0]
	for _, tg := range all {
		if _, ok := ns.fromRoot[tg.pid]; ok {
			out = append(out, tg)
		}
	}
	sort.Slice(out, func(i, j int) bool { return ns.fromRoot[out[i].pid] < ns.fromRoot[out[j].pid] })
	return out
}

// newPIDNamespaceFor checks and makes the namespace unshare(CLONE_NEWPID)
// or clone(CLONE_NEWPID) puts children in: nested in the task's own, and
// only while its children are still made there (EINVAL after an unshare
// not yet followed by a child, as Linux's copy_pid_ns).
func (t *Task) newPIDNamespaceFor() (*PIDNamespace, error) {
	t.tg.mu.Lock()
	cur := t.childPIDNS
	t.tg.mu.Unlock()
	if cur != t.tg.pidns {
		return nil, unix.EINVAL
	}
	return cur.newChild()
}

// SetPIDNamespace is setns(2) of a pid namespace: the task's children are
// made in ns, which must be its own or one nested in it (EINVAL), as
// Linux's pidns_install allows.
func (t *Task) SetPIDNamespace(ns *PIDNamespace) error {
	if !t.CapableInOwn(unix.CAP_SYS_ADMIN) || !t.CapableIn(ns.owner, unix.CAP_SYS_ADMIN) {
		return unix.EPERM
	}
	if !t.tg.pidns.IsAncestorOf(ns) {
		return unix.EINVAL
	}
	t.tg.mu.Lock()
	t.childPIDNS = ns
	t.tg.mu.Unlock()
	return nil
}

// TaskIDs are a task's ids as one pid namespace sees them (/proc): 0 for
// each one outside it.
type TaskIDs struct{ TID, PID, PPID, PGID, SID int32 }

// TaskIDsIn returns t's ids as ns sees them.
func (k *Kernel) TaskIDsIn(ns *PIDNamespace, t *Task) TaskIDs {
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	tg := t.tg
	ids := TaskIDs{TID: ns.idOf(t.tid), PID: ns.idOf(tg.pid), PGID: ns.idOf(tg.pgid), SID: ns.idOf(tg.sid)}
	if tg.parent != nil {
		ids.PPID = ns.idOf(tg.parent.pid)
	}
	return ids
}

// PIDsIn lists tg's pid as seen in ns and each namespace below it down to
// tg's own (ns is /proc's, for NSpid lines); nil if tg is outside ns.
func (tg *ThreadGroup) PIDsIn(ns *PIDNamespace) []int32 { return tg.k.IDsIn(ns, tg.pidns, tg.pid) }

// SeenID is root id id as tg's tasks see it, 0 where it is not in tg's
// pid namespace.
func (tg *ThreadGroup) SeenID(id int32) int32 { return tg.pidns.idOf(id) }
