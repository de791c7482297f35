package ipc

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// Sembuf is one operation of semop(2): struct sembuf.
type Sembuf struct {
	Num uint16
	Op  int16
	Flg int16
}

type semaphore struct {
	val   int
	pid   int32
	otime int64
}

// SemSet is a System V semaphore set.
type SemSet struct {
	ns    *Namespace
	perm  Perm
	sems  []semaphore
	ctime int64
	// pending are the operations waiting, in the order they came; each
	// is tried again whenever a value changes.
	pending []*semWaiter
	// undos are the undo lists that hold adjustments for this set.
	undos map[*UndoList]struct{}
	dead  bool
}

func (s *SemSet) perms() *Perm { return &s.perm }

// semWaiter is a semop that waits.
type semWaiter struct {
	sops     []Sembuf
	pid      int32
	undo     *UndoList
	blocking Sembuf // the operation it waits on, for GETNCNT and GETZCNT
	done     chan struct{}
	err      error
	finished bool
}

// Semget implements semget(2)'s work: nsems between 1 and semmsl for a
// new set (0 will do for an existing one, which must have at least
// nsems), within semmns semaphores and semmni sets in all (ENOSPC).
func (ns *Namespace) Semget(c *Caller, key int32, nsems int, flags int) (int32, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	l := ns.limits
	if nsems < 0 || nsems > l.SemMSL {
		return 0, unix.EINVAL
	}
	check := func(s *SemSet) error {
		if nsems > len(s.sems) {
			return unix.EINVAL
		}
		return nil
	}
	return get(&ns.sems, c, key, flags, check, func() (*SemSet, error) {
		if nsems == 0 {
			return nil, unix.EINVAL
		}
		if ns.semCount+nsems > l.SemMNS {
			return nil, unix.ENOSPC
		}
		s := &SemSet{ns: ns, perm: newPerm(c, key, flags), sems: make([]semaphore, nsems), ctime: ns.seconds(),
			undos: make(map[*UndoList]struct{})}
		if err := ns.sems.add(s, l.SemMNI); err != nil {
			return nil, err
		}
		ns.semCount += nsems
		return s, nil
	})
}

// SemOPM is the most operations one semop may carry.
func (ns *Namespace) SemOPM() int { return ns.Limits().SemOPM }

// Semop implements semop(2) and semtimedop(2): the operations are done
// together or not at all, waiting (until the deadline, if not zero) for
// them to become possible unless the one that cannot proceed has
// IPC_NOWAIT (EAGAIN). A timeout is EAGAIN, a signal EINTR (semop is
// never restarted), the set's removal meanwhile EIDRM. undo gets the
// adjustments of SEM_UNDO operations.
func (ns *Namespace) Semop(c *Caller, id int32, sops []Sembuf, undo *UndoList, b Blocker, deadline time.Time) error {
	alter, maxNum := false, 0
	for _, op := range sops {
		alter = alter || op.Op != 0
		maxNum = max(maxNum, int(op.Num))
	}
	ns.mu.Lock()
	s, err := ns.sems.find(id)
	if err != nil {
		ns.mu.Unlock()
		return err
	}
	if maxNum >= len(s.sems) {
		ns.mu.Unlock()
		return unix.EFBIG
	}
	want := uint16(mayRead)
	if alter {
		want = mayWrite
	}
	if !s.perm.allows(c, want) {
		ns.mu.Unlock()
		return unix.EACCES
	}
	w := &semWaiter{sops: sops, pid: c.PID, undo: undo}
	ok, err := s.tryLocked(w)
	if err != nil || ok {
		if ok && alter {
			s.wakeLocked()
		}
		ns.mu.Unlock()
		return err
	}
	if w.blocking.Flg&unix.IPC_NOWAIT != 0 {
		ns.mu.Unlock()
		return unix.EAGAIN
	}
	w.done = make(chan struct{})
	s.pending = append(s.pending, w)
	ns.mu.Unlock()

	berr := b.BlockUntil(w.done, deadline)
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if w.finished {
		return w.err
	}
	s.dropWaiterLocked(w)
	if berr == unix.ETIMEDOUT {
		return unix.EAGAIN
	}
	return unix.EINTR
}

// tryLocked does w's operations if all of them can be done now, one
// after the other as Linux's perform_atomic_semop_slow does: it reports
// whether they were, or the error (ERANGE for a value or adjustment out
// of range) that refuses them; otherwise w.blocking is the one to wait
// on, and nothing changed.
func (s *SemSet) tryLocked(w *semWaiter) (bool, error) {
	vals := make(map[uint16]int, len(w.sops))
	adj := make(map[uint16]int, len(w.sops))
	var ua []int16
	if w.undo != nil {
		ua = w.undo.adjustmentsLocked(s)
	}
	for _, op := range w.sops {
		v, ok := vals[op.Num]
		if !ok {
			v = s.sems[op.Num].val
		}
		if op.Op == 0 && v != 0 {
			w.blocking = op
			return false, nil
		}
		v += int(op.Op)
		if v < 0 {
			w.blocking = op
			return false, nil
		}
		if v > linuxabi.SEMVMX {
			return false, unix.ERANGE
		}
		if op.Flg&linuxabi.SEM_UNDO != 0 {
			a, ok := adj[op.Num]
			if !ok && ua != nil {
				a = int(ua[op.Num])
			}
			a -= int(op.Op)
			if a < -linuxabi.SEMAEM-1 || a > linuxabi.SEMAEM {
				return false, unix.ERANGE
			}
			adj[op.Num] = a
		}
		vals[op.Num] = v
	}
	now := s.ns.seconds()
	for num, v := range vals {
		s.sems[num].val, s.sems[num].pid = v, w.pid
	}
	if len(adj) > 0 {
		ua = w.undo.entryLocked(s)
		for num, a := range adj {
			ua[num] = int16(a)
		}
	}
	s.sems[w.sops[0].Num].otime = now
	return true, nil
}

// wakeLocked does the waiting operations that have become possible, in
// their order, again from the first after each one done (it may have
// made others possible).
func (s *SemSet) wakeLocked() {
	for i := 0; i < len(s.pending); {
		w := s.pending[i]
		ok, err := s.tryLocked(w)
		if !ok && err == nil {
			i++
			continue
		}
		s.pending = append(s.pending[:i], s.pending[i+1:]...)
		s.finishLocked(w, err)
		i = 0
	}
}

func (s *SemSet) finishLocked(w *semWaiter, err error) {
	w.finished, w.err = true, err
	close(w.done)
}

func (s *SemSet) dropWaiterLocked(w *semWaiter) {
	for i, x := range s.pending {
		if x == w {
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			return
		}
	}
}

// SemRead answers GETVAL, GETPID, GETNCNT and GETZCNT for semaphore num,
// which must exist (EINVAL); the caller needs read permission.
func (ns *Namespace) SemRead(c *Caller, id int32, num int, cmd int) (int, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := ns.sems.find(id)
	if err != nil {
		return 0, err
	}
	if !s.perm.allows(c, mayRead) {
		return 0, unix.EACCES
	}
	if num < 0 || num >= len(s.sems) {
		return 0, unix.EINVAL
	}
	switch cmd {
	case linuxabi.GETVAL:
		return s.sems[num].val, nil
	case linuxabi.GETPID:
		return int(s.sems[num].pid), nil
	case linuxabi.GETNCNT, linuxabi.GETZCNT:
		// A waiter counts for the semaphore of the operation it waits on:
		// for an increase if that one decrements, for zero if it waits
		// for zero (SUSv3; Linux counted all until 4.x).
		n := 0
		for _, w := range s.pending {
			if int(w.blocking.Num) == num && (w.blocking.Op == 0) == (cmd == linuxabi.GETZCNT) {
				n++
			}
		}
		return n, nil
	}
	return 0, unix.EINVAL
}

// SemGetAll answers GETALL.
func (ns *Namespace) SemGetAll(c *Caller, id int32) ([]uint16, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := ns.sems.find(id)
	if err != nil {
		return nil, err
	}
	if !s.perm.allows(c, mayRead) {
		return nil, unix.EACCES
	}
	out := make([]uint16, len(s.sems))
	for i, sem := range s.sems {
		out[i] = uint16(sem.val)
	}
	return out, nil
}

// SemCount is how many semaphores set id has, for GETALL and SETALL's
// buffers (EINVAL if no such set), if the caller may read it or, with
// write, change it (EACCES).
func (ns *Namespace) SemCount(c *Caller, id int32, write bool) (int, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := ns.sems.find(id)
	if err != nil {
		return 0, err
	}
	want := uint16(mayRead)
	if write {
		want = mayWrite
	}
	if !s.perm.allows(c, want) {
		return 0, unix.EACCES
	}
	return len(s.sems), nil
}

// SemSetVal answers SETVAL: semaphore num of set id takes val. A num
// outside the set is EINVAL, a value past SEMVMX ERANGE; the caller needs
// write permission. Undo adjustments held for that semaphore are dropped
// and waiting operations that became possible are done.
func (ns *Namespace) SemSetVal(c *Caller, id int32, num int, val int) error {
	if val < 0 || val > linuxabi.SEMVMX {
		return unix.ERANGE
	}
	return ns.semSet(c, id, func(s *SemSet) error {
		if num < 0 || num >= len(s.sems) {
			return unix.EINVAL
		}
		return nil
	}, func(s *SemSet) {
		s.sems[num].val, s.sems[num].pid = val, c.PID
		for u := range s.undos {
			if a := u.entries[s.perm.ID]; a != nil {
				a[num] = 0
			}
		}
	})
}

// SemSetAll answers SETALL: vals holds a value for each semaphore, read
// by the caller after SemCount. A set whose size no longer matches was
// removed (and its id reused) in between: EIDRM, as Linux answers a set
// that vanished while the values were copied in.
func (ns *Namespace) SemSetAll(c *Caller, id int32, vals []int) error {
	for _, v := range vals {
		if v < 0 || v > linuxabi.SEMVMX {
			return unix.ERANGE
		}
	}
	return ns.semSet(c, id, func(s *SemSet) error {
		if len(vals) != len(s.sems) {
			return unix.EIDRM
		}
		return nil
	}, func(s *SemSet) {
		for i := range s.sems {
			s.sems[i].val, s.sems[i].pid = vals[i], c.PID
		}
		for u := range s.undos {
			if a := u.entries[s.perm.ID]; a != nil {
				clear(a)
			}
		}
	})
}

// semSet changes set id under the namespace lock: valid checks the
// arguments against the set, then (in Linux's order) the caller's write
// permission, then set changes it; the change time is stamped and the
// waiters that may now go are woken.
func (ns *Namespace) semSet(c *Caller, id int32, valid func(*SemSet) error, set func(*SemSet)) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := ns.sems.find(id)
	if err != nil {
		return err
	}
	if err := valid(s); err != nil {
		return err
	}
	if !s.perm.allows(c, mayWrite) {
		return unix.EACCES
	}
	set(s)
	s.ctime = ns.seconds()
	s.wakeLocked()
	return nil
}

// SemStat is struct semid64_ds.
type SemStat struct {
	Perm         Perm
	Otime, Ctime int64
	Nsems        uint64
}

func (s *SemSet) statLocked() SemStat {
	st := SemStat{Perm: s.perm, Ctime: s.ctime, Nsems: uint64(len(s.sems))}
	for _, sem := range s.sems {
		st.Otime = max(st.Otime, sem.otime)
	}
	return st
}

// SemStat answers IPC_STAT, SEM_STAT and SEM_STAT_ANY.
func (ns *Namespace) SemStat(c *Caller, id int32, cmd StatCmd) (SemStat, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := findStat(&ns.sems, c, id, cmd)
	if err != nil {
		return SemStat{}, err
	}
	return s.statLocked(), nil
}

// SemSetPerm answers IPC_SET.
func (ns *Namespace) SemSetPerm(c *Caller, id int32, set Setting) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := findOwned(&ns.sems, c, id)
	if err != nil {
		return err
	}
	if err := s.perm.set(set); err != nil {
		return err
	}
	s.ctime = ns.seconds()
	return nil
}

// SemRemove answers IPC_RMID: the set goes at once, its waiters fail
// with EIDRM and the undo lists forget it.
func (ns *Namespace) SemRemove(c *Caller, id int32) error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	s, err := findOwned(&ns.sems, c, id)
	if err != nil {
		return err
	}
	ns.sems.remove(s)
	ns.semCount -= len(s.sems)
	s.dead = true
	for _, w := range s.pending {
		s.finishLocked(w, unix.EIDRM)
	}
	s.pending = nil
	for u := range s.undos {
		delete(u.entries, s.perm.ID)
	}
	s.undos = nil
	return nil
}

// SemInfo is struct seminfo, IPC_INFO's and SEM_INFO's answer.
type SemInfo struct {
	Map, MNI, MNS, MNU, MSL, OPM, UME, USZ, VMX, AEM int32
}

// SemInfo answers IPC_INFO (usage false: the limits) and SEM_INFO (the
// sets and semaphores in use in place of SEMUSZ and SEMAEM), and returns
// the highest index in use.
func (ns *Namespace) SemInfo(usage bool) (SemInfo, int) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	l := ns.limits
	// SEMMAP, SEMMNU, SEMUME and SEMUSZ are Linux's constants, whatever
	// the namespace's limits.
	i := SemInfo{Map: linuxabi.SEMMAP, MNI: int32(l.SemMNI), MNS: int32(l.SemMNS), MNU: linuxabi.SEMMNU,
		MSL: int32(l.SemMSL), OPM: int32(l.SemOPM), UME: linuxabi.SEMUME, USZ: linuxabi.SEMUSZ,
		VMX: linuxabi.SEMVMX, AEM: linuxabi.SEMAEM}
	if usage {
		i.USZ, i.AEM = int32(len(ns.sems.byIdx)), int32(ns.semCount)
	}
	return i, ns.sems.maxIdx()
}

// Sems returns every set's state, by index, for /proc/sysvipc/sem.
func (ns *Namespace) Sems() []SemStat {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	var out []SemStat
	for _, s := range ns.sems.all() {
		out = append(out, s.statLocked())
	}
	return out
}
