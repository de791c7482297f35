package vfs

import (
	"golang.org/x/sys/unix"
)

// Record locks (fcntl's F_SETLK, F_SETLKW, F_GETLK and their F_OFD_
// forms): byte ranges of an inode, read (shared) or write (exclusive),
// each owned by a process's fd table (POSIX) or by an open file
// description (OFD). An owner's locks never overlap: a new lock takes its
// range from the owner's others, splitting them, and merges with those of
// its type that it overlaps or touches, as Linux's posix_lock_inode does.

// maxDeadlockSteps bounds the walk of who-waits-for-whom, as Linux's
// MAX_DEADLK_ITERATIONS: a longer chain is not reported as a deadlock.
const maxDeadlockSteps = 10

// RecordLock is a lock request, or the lock F_GETLK reports.
type RecordLock struct {
	Type       int16 // F_RDLCK, F_WRLCK or F_UNLCK
	Start, End int64 // inclusive; End is OffsetMax to the end of the file
	PID        int32 // the owner's process, -1 for an OFD lock
}

// LockRange converts a struct flock's l_whence, l_start and l_len into the
// inclusive range of bytes it names in f, as Linux's flock64_to_posix_lock:
// from the start of the file, the file offset or its end, l_len 0 to the
// end of the file whatever its size, a negative l_len the bytes before.
func LockRange(f *File, whence int16, start, length int64) (int64, int64, error) {
	var base int64
	switch whence {
	case unix.SEEK_SET:
	case unix.SEEK_CUR:
		if k, ok := f.impl.(OffsetKeeper); ok {
			off, err := k.Seek(0, unix.SEEK_CUR)
			if err != nil {
				return 0, 0, err
			}
			base = off
		} else {
			base = f.Offset()
		}
	case unix.SEEK_END:
		st, err := f.Stat()
		if err != nil {
			return 0, 0, err
		}
		base = st.Size
	default:
		return 0, 0, unix.EINVAL
	}
	return lockRange(base, start, length)
}

func lockRange(base, start, length int64) (int64, int64, error) {
	if start > OffsetMax-base {
		return 0, 0, unix.EOVERFLOW
	}
	s := base + start
	if s < 0 {
		return 0, 0, unix.EINVAL
	}
	switch {
	case length > 0:
		if length-1 > OffsetMax-s {
			return 0, 0, unix.EOVERFLOW
		}
		return s, s + length - 1, nil
	case length < 0:
		if s+length < 0 {
			return 0, 0, unix.EINVAL
		}
		return s + length, s - 1, nil
	}
	return s, OffsetMax, nil
}

// overlaps reports whether [s1, e1] and [s2, e2] share a byte.
func overlaps(s1, e1, s2, e2 int64) bool { return s1 <= e2 && s2 <= e1 }

// touches reports whether two ranges overlap or are adjacent.
func touches(s1, e1, s2, e2 int64) bool {
	return overlaps(s1, e1, s2, e2) || e1 != OffsetMax && e1+1 == s2 || e2 != OffsetMax && e2+1 == s1
}

// conflict returns the first lock of another owner that stands in the way
// of owner's lock of [start, end], or nil.
func (il *inodeLocks) conflict(owner any, write bool, start, end int64) *recordLock {
	for k := range il.records {
		l := &il.records[k]
		if l.owner != owner && (write || l.write) && overlaps(l.start, l.end, start, end) {
			return l
		}
	}
	return nil
}

// SetRecordLock takes, changes or (with F_UNLCK) drops owner's lock on
// the range of r, for process pid; ofd says owner is the open file
// description f. A conflicting lock gives EAGAIN, or with wait a sleep
// until it goes, which the context's error ends (a signal), and EDEADLK
// for a POSIX owner whose wait would close a cycle of POSIX owners each
// waiting for the next, as Linux's posix_locks_deadlock finds them (OFD
// locks, owned by no process, take no part).
func (lt *LockTable) SetRecordLock(ctx Context, f *File, owner any, ofd bool, r RecordLock, pid int32, wait bool) error {
	if ctx == nil {
		wait = false
	}
	write := r.Type == unix.F_WRLCK
	id := f.ID()
	lt.mu.Lock()
	defer lt.mu.Unlock()
	for {
		il := lt.get(id)
		if r.Type == unix.F_UNLCK {
			lt.applyLocked(id, il, recordLock{owner: owner, ofd: ofd, start: r.Start, end: r.End}, true)
			return nil
		}
		c := il.conflict(owner, write, r.Start, r.End)
		if c == nil {
			lt.applyLocked(id, il, recordLock{owner: owner, ofd: ofd, write: write, start: r.Start, end: r.End, pid: pid}, false)
			if ofd {
				f.locked.Store(true)
			}
			return nil
		}
		if !wait {
			lt.forgetIfEmpty(id)
			return unix.EAGAIN
		}
		if !ofd && lt.deadlockLocked(owner, c.owner) {
			lt.forgetIfEmpty(id)
			return unix.EDEADLK
		}
		ch := il.changed
		if !ofd {
			lt.blocked = append(lt.blocked, blockedOwner{owner: owner, on: c.owner})
		}
		lt.mu.Unlock()
		err := ctx.Block(ch)
		lt.mu.Lock()
		if !ofd {
			lt.unblockLocked(owner)
		}
		if err != nil {
			lt.forgetIfEmpty(id)
			return err
		}
	}
}

// deadlockLocked reports whether owner waiting for a lock of holder would
// close a cycle: holder waits for someone who waits ... for owner.
func (lt *LockTable) deadlockLocked(owner, holder any) bool {
	for i := 0; i <= maxDeadlockSteps; i++ {
		next, ok := lt.waitsFor(holder)
		if !ok {
			return false
		}
		if next == owner {
			return true
		}
		holder = next
	}
	return false
}

// waitsFor returns the owner of the lock owner waits for, if it waits.
func (lt *LockTable) waitsFor(owner any) (any, bool) {
	for _, b := range lt.blocked {
		if b.owner == owner {
			return b.on, true
		}
	}
	return nil, false
}

// unblockLocked forgets one wait of owner.
func (lt *LockTable) unblockLocked(owner any) {
	for k, b := range lt.blocked {
		if b.owner == owner {
			lt.blocked = append(lt.blocked[:k], lt.blocked[k+1:]...)
			return
		}
	}
}

// applyLocked sets req on il for its owner (or, with unlock, clears its
// range): the owner's locks lose what req covers, those of req's type that
// overlap or touch it merge into it, and the owner's locks stay together
// and sorted, where they were in the list (at its end for a new owner).
func (lt *LockTable) applyLocked(id FileID, il *inodeLocks, req recordLock, unlock bool) {
	had := len(il.records) > 0
	at := -1 // where the owner's group starts among the others
	var mine, others []recordLock
	for _, l := range il.records {
		if l.owner != req.owner {
			others = append(others, l)
			continue
		}
		if at < 0 {
			at = len(others)
		}
		mine = append(mine, l)
	}
	if unlock && len(mine) == 0 {
		lt.forgetIfEmpty(id)
		return
	}
	var kept []recordLock
	for _, l := range mine {
		switch {
		case !unlock && l.write == req.write && touches(l.start, l.end, req.start, req.end):
			req.start, req.end = min(req.start, l.start), max(req.end, l.end)
			if req.seq == 0 || l.seq < req.seq {
				req.seq = l.seq
			}
		case !overlaps(l.start, l.end, req.start, req.end):
			kept = append(kept, l)
		default:
			if l.start < req.start {
				left := l
				left.end = req.start - 1
				kept = append(kept, left)
			}
			if l.end > req.end {
				right := l
				right.start = req.end + 1
				kept = append(kept, right)
			}
		}
	}
	if !unlock {
		if req.seq == 0 {
			req.seq = lt.nextSeq()
		}
		kept = append(kept, req)
	}
	sortRecords(kept)
	if at < 0 {
		at = len(others)
	}
	records := make([]recordLock, 0, len(others)+len(kept))
	records = append(records, others[:at]...)
	records = append(records, kept...)
	records = append(records, others[at:]...)
	il.records = records
	lt.changedLocked(id, il, had)
}

func sortRecords(ls []recordLock) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].start < ls[j-1].start; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

// TestRecordLock is F_GETLK: the first lock of another owner that would
// stand in the way of owner's lock r, or r with Type F_UNLCK if none.
func (lt *LockTable) TestRecordLock(f *File, owner any, r RecordLock) RecordLock {
	id := f.ID()
	lt.mu.Lock()
	defer lt.mu.Unlock()
	il := lt.inodes[id]
	if il == nil {
		r.Type = unix.F_UNLCK
		return r
	}
	c := il.conflict(owner, r.Type == unix.F_WRLCK, r.Start, r.End)
	if c == nil {
		r.Type = unix.F_UNLCK
		return r
	}
	out := RecordLock{Type: unix.F_RDLCK, Start: c.start, End: c.end, PID: c.pid}
	if c.write {
		out.Type = unix.F_WRLCK
	}
	if c.ofd {
		out.PID = -1
	}
	return out
}
