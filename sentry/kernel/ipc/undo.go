package ipc

import (
	"sync/atomic"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// UndoList holds a process's SEM_UNDO adjustments: for each set it used,
// what to add to each semaphore when the process ends. The tasks that
// clone with CLONE_SYSVSEM share one; the last of them to exit applies
// it (Linux's exit_sem), clamping each value to [0, SEMVMX].
type UndoList struct {
	ns   *Namespace
	refs atomic.Int32
	// entries are the adjustments by set id (ns.mu).
	entries map[int32][]int16
}

// NewUndoList returns an empty list, held once, for sets of ns.
func NewUndoList(ns *Namespace) *UndoList {
	u := &UndoList{ns: ns, entries: make(map[int32][]int16)}
	u.refs.Store(1)
	return u
}

// Namespace is the namespace whose sets the list adjusts.
func (u *UndoList) Namespace() *Namespace { return u.ns }

// IncRef adds a task that shares the list.
func (u *UndoList) IncRef() { u.refs.Add(1) }

// DecRef drops a task's hold; the last one applies the adjustments, as
// done by process pid.
func (u *UndoList) DecRef(pid int32) {
	if u.refs.Add(-1) != 0 {
		return
	}
	ns := u.ns
	ns.mu.Lock()
	defer ns.mu.Unlock()
	for id, adj := range u.entries {
		s, err := ns.sems.find(id)
		if err != nil {
			continue
		}
		delete(s.undos, u)
		changed := false
		for i, a := range adj {
			if a == 0 {
				continue
			}
			s.sems[i].val = min(max(s.sems[i].val+int(a), 0), linuxabi.SEMVMX)
			s.sems[i].pid = pid
			changed = true
		}
		if changed {
			s.wakeLocked()
		}
	}
	u.entries = nil
}

// adjustmentsLocked returns the list's adjustments for s, nil if none.
func (u *UndoList) adjustmentsLocked(s *SemSet) []int16 { return u.entries[s.perm.ID] }

// entryLocked returns the list's adjustments for s, made if need be.
func (u *UndoList) entryLocked(s *SemSet) []int16 {
	a := u.entries[s.perm.ID]
	if a == nil {
		a = make([]int16, len(s.sems))
		u.entries[s.perm.ID] = a
		s.undos[u] = struct{}{}
	}
	return a
}
