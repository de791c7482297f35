package vfs

import (
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// Advisory file locks, held in the sentry alone (never as host locks: a
// gofer's host files are the sandbox's, and no one outside takes part):
//
//   - flock(2) locks belong to an open file description: every fd that dup
//     or fork made from it shares the lock, another open of the same file
//     conflicts, and the lock goes with the description's last close.
//   - POSIX record locks (fcntl F_SETLK) belong to a process, as Linux's
//     belong to its fd table: a byte range, released when the process
//     closes any fd of the file and at exit, never inherited by fork.
//   - OFD record locks (F_OFD_SETLK) are record locks owned by the open
//     file description, and conflict with POSIX locks as another owner's.
//
// flock and record locks never see each other, as on Linux. Locks are kept
// per inode (FileID), so every path, mount and file system reaching a file
// finds the same ones.

// OffsetMax is the last byte offset a record lock can cover: a lock with
// l_len 0 ends there ("to EOF", growing with the file).
const OffsetMax = 1<<63 - 1

// LockTable holds the locks of every inode. The sentry has one (Locks);
// tests make their own.
type LockTable struct {
	mu     sync.Mutex
	inodes map[FileID]*inodeLocks
	// blocked are the POSIX owners waiting in F_SETLKW, each with the
	// owner of the lock it waits for (Linux's blocked_hash), for the
	// deadlock check.
	blocked []blockedOwner
	seq     uint64 // orders locks by creation, for /proc/locks
	// posix counts the inodes with record locks, so that the close of a
	// file, which must drop its process's POSIX locks, costs nothing
	// while no one uses them.
	posix atomic.Int64
}

type blockedOwner struct {
	owner, on any
}

// inodeLocks are the locks of one inode.
type inodeLocks struct {
	flocks []flockLock
	// records in Linux's order: each owner's locks together, sorted by
	// start, owners in the order of their first lock (F_GETLK reports the
	// first conflicting lock in this order).
	records []recordLock
	// changed is closed when a lock goes or changes, for the waiters.
	changed chan struct{}
}

type flockLock struct {
	file  *File
	write bool
	pid   int32
	seq   uint64
}

type recordLock struct {
	owner      any // the fd table (POSIX) or the *File (OFD)
	ofd        bool
	write      bool
	start, end int64 // inclusive
	pid        int32
	seq        uint64
}

// NewLockTable returns an empty table.
func NewLockTable() *LockTable {
	return &LockTable{inodes: make(map[FileID]*inodeLocks)}
}

// Locks is the sentry's lock table.
var Locks = NewLockTable()

// get returns the locks of id, made if absent; mu is held.
func (lt *LockTable) get(id FileID) *inodeLocks {
	il := lt.inodes[id]
	if il == nil {
		il = &inodeLocks{changed: make(chan struct{})}
		lt.inodes[id] = il
	}
	return il
}

// changedLocked wakes the waiters of il and forgets il once it holds
// nothing; mu is held.
func (lt *LockTable) changedLocked(id FileID, il *inodeLocks, hadRecords bool) {
	close(il.changed)
	il.changed = make(chan struct{})
	has := len(il.records) > 0
	if has != hadRecords {
		if has {
			lt.posix.Add(1)
		} else {
			lt.posix.Add(-1)
		}
	}
	if len(il.flocks) == 0 && !has {
		delete(lt.inodes, id)
	}
}

func (lt *LockTable) nextSeq() uint64 {
	lt.seq++
	return lt.seq
}

// Flock applies flock(2)'s operation op (LOCK_SH, LOCK_EX or LOCK_UN,
// with LOCK_NB) to f for process pid. A lock f already holds is converted:
// first dropped, then taken anew, so that a conversion that has to wait
// (or fails with LOCK_NB) has lost the old lock, as on Linux. A wait ends
// early with the context's error when the task is interrupted.
func (lt *LockTable) Flock(ctx Context, f *File, op int, pid int32) error {
	var write, unlock bool
	switch op &^ unix.LOCK_NB {
	case unix.LOCK_SH:
	case unix.LOCK_EX:
		write = true
	case unix.LOCK_UN:
		unlock = true
	default:
		return unix.EINVAL
	}
	wait := op&unix.LOCK_NB == 0 && ctx != nil
	id := f.ID()
	lt.mu.Lock()
	defer lt.mu.Unlock()
	il := lt.get(id)
	for k, l := range il.flocks {
		if l.file != f {
			continue
		}
		if l.write == write && !unlock {
			return nil
		}
		il.flocks = append(il.flocks[:k], il.flocks[k+1:]...)
		lt.changedLocked(id, il, len(il.records) > 0)
		break
	}
	if unlock {
		lt.forgetIfEmpty(id)
		return nil
	}
	for {
		il = lt.get(id)
		if !il.flockConflicts(f, write) {
			il.flocks = append(il.flocks, flockLock{file: f, write: write, pid: pid, seq: lt.nextSeq()})
			f.locked.Store(true)
			return nil
		}
		if !wait {
			lt.forgetIfEmpty(id)
			return unix.EWOULDBLOCK
		}
		ch := il.changed
		lt.mu.Unlock()
		err := ctx.Block(ch)
		lt.mu.Lock()
		if err != nil {
			lt.forgetIfEmpty(id)
			return err
		}
	}
}

// forgetIfEmpty drops the entry get may have made for nothing; mu is held.
func (lt *LockTable) forgetIfEmpty(id FileID) {
	if il := lt.inodes[id]; il != nil && len(il.flocks) == 0 && len(il.records) == 0 {
		delete(lt.inodes, id)
	}
}

// flockConflicts reports whether another description's flock lock stands
// in the way of f's.
func (il *inodeLocks) flockConflicts(f *File, write bool) bool {
	for _, l := range il.flocks {
		if l.file != f && (write || l.write) {
			return true
		}
	}
	return false
}

// ReleaseFile drops what the open file description f holds: its flock
// lock and its OFD locks, at its last close.
func (lt *LockTable) ReleaseFile(f *File) {
	id := f.ID()
	lt.mu.Lock()
	defer lt.mu.Unlock()
	il := lt.inodes[id]
	if il == nil {
		return
	}
	had := len(il.records) > 0
	flocks := il.flocks[:0]
	for _, l := range il.flocks {
		if l.file != f {
			flocks = append(flocks, l)
		}
	}
	il.flocks = flocks
	il.records = il.without(f)
	lt.changedLocked(id, il, had)
}

// ReleasePOSIX drops the POSIX locks owner holds on f's inode: Linux's
// locks_remove_posix, on every close of an fd by its fd table.
func (lt *LockTable) ReleasePOSIX(f *File, owner any) {
	if lt.posix.Load() == 0 {
		return
	}
	id := f.ID()
	lt.mu.Lock()
	defer lt.mu.Unlock()
	il := lt.inodes[id]
	if il == nil || len(il.records) == 0 {
		return
	}
	n := len(il.records)
	il.records = il.without(owner)
	if len(il.records) != n {
		lt.changedLocked(id, il, true)
	}
}

// without returns il's record locks less owner's.
func (il *inodeLocks) without(owner any) []recordLock {
	out := il.records[:0]
	for _, l := range il.records {
		if l.owner != owner {
			out = append(out, l)
		}
	}
	return out
}

// LockInfo is one lock as /proc/locks lists it.
type LockInfo struct {
	Kind       string // "POSIX", "OFDLCK" or "FLOCK"
	Write      bool
	PID        int32 // -1 for an OFD lock, which no process owns
	ID         FileID
	Start, End int64 // End is OffsetMax for a lock to EOF
}

// List returns every lock held, newest first, as Linux lists them (each
// new lock goes to the head of its global list).
func (lt *LockTable) List() []LockInfo {
	type entry struct {
		seq  uint64
		info LockInfo
	}
	var all []entry
	lt.mu.Lock()
	for id, il := range lt.inodes {
		for _, l := range il.flocks {
			all = append(all, entry{l.seq, LockInfo{Kind: "FLOCK", Write: l.write, PID: l.pid, ID: id, End: OffsetMax}})
		}
		for _, l := range il.records {
			info := LockInfo{Kind: "POSIX", Write: l.write, PID: l.pid, ID: id, Start: l.start, End: l.end}
			if l.ofd {
				info.Kind, info.PID = "OFDLCK", -1
			}
			all = append(all, entry{l.seq, info})
		}
	}
	lt.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].seq > all[j].seq })
	out := make([]LockInfo, len(all))
	for i, e := range all {
		out[i] = e.info
	}
	return out
}
