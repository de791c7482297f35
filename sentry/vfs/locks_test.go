package vfs

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lockImpl is a file of inode ino of a fake device.
type lockImpl struct{ ino uint64 }

func (lockImpl) Read(*IOSeq, int64) (int, error)  { return 0, nil }
func (lockImpl) Write(*IOSeq, int64) (int, error) { return 0, nil }
func (l lockImpl) Stat() (Stat, error) {
	return Stat{Dev: 99, Ino: l.ino, Mode: unix.S_IFREG | 0o644, Size: 1000}, nil
}
func (lockImpl) Ioctl(uint32, uintptr, IoctlIO) (uintptr, error) { return 0, unix.ENOTTY }
func (lockImpl) Release()                                        {}
func (lockImpl) Size() (int64, error)                            { return 1000, nil }

func openLockFile(ino uint64) *File { return NewFile(lockImpl{ino}, Path{}, unix.O_RDWR) }

// blockCtx is a task that can wait: interrupt ends its wait with errIntr.
type blockCtx struct {
	interrupt chan struct{}
	waiting   atomic.Int32
}

var errIntr = errors.New("interrupted")

func newBlockCtx() *blockCtx { return &blockCtx{interrupt: make(chan struct{})} }

func (c *blockCtx) Block(ch <-chan struct{}) error {
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	select {
	case <-ch:
		return nil
	case <-c.interrupt:
		return errIntr
	}
}
func (*blockCtx) Signal(int)            {}
func (*blockCtx) FileSizeLimit() uint64 { return 1<<64 - 1 }
func (*blockCtx) Interrupted() bool     { return false }

// waitUntilBlocked waits for c to sleep in Block.
func waitUntilBlocked(t *testing.T, c *blockCtx) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.waiting.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the waiter never blocked")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFlockSharedLocksCoexistAndAnExclusiveOneConflicts(t *testing.T) {
	lt := NewLockTable()
	a, b, c := openLockFile(1), openLockFile(1), openLockFile(1)
	if err := lt.Flock(nil, a, unix.LOCK_SH|unix.LOCK_NB, 1); err != nil {
		t.Fatalf("first LOCK_SH: %v", err)
	}
	if err := lt.Flock(nil, b, unix.LOCK_SH|unix.LOCK_NB, 2); err != nil {
		t.Fatalf("second LOCK_SH: %v", err)
	}
	if err := lt.Flock(nil, c, unix.LOCK_EX|unix.LOCK_NB, 3); err != unix.EWOULDBLOCK {
		t.Fatalf("LOCK_EX over two shared locks: got %v, want EWOULDBLOCK", err)
	}
	if err := lt.Flock(nil, openLockFile(2), unix.LOCK_EX|unix.LOCK_NB, 3); err != nil {
		t.Fatalf("LOCK_EX on another inode: %v", err)
	}
}

func TestFlockBelongsToTheOpenFileDescription(t *testing.T) {
	lt := NewLockTable()
	a := openLockFile(1)
	if err := lt.Flock(nil, a, unix.LOCK_EX|unix.LOCK_NB, 1); err != nil {
		t.Fatal(err)
	}
	// The same description again (a dup, a forked child's fd): no conflict.
	if err := lt.Flock(nil, a, unix.LOCK_EX|unix.LOCK_NB, 2); err != nil {
		t.Fatalf("LOCK_EX through the same description: %v", err)
	}
	// Another open of the same file, even by the same process, conflicts.
	if err := lt.Flock(nil, openLockFile(1), unix.LOCK_SH|unix.LOCK_NB, 1); err != unix.EWOULDBLOCK {
		t.Fatalf("LOCK_SH through another description: got %v, want EWOULDBLOCK", err)
	}
	lt.ReleaseFile(a)
	if err := lt.Flock(nil, openLockFile(1), unix.LOCK_EX|unix.LOCK_NB, 1); err != nil {
		t.Fatalf("LOCK_EX after the holder's last close: %v", err)
	}
}

func TestFlockConversionDropsTheOldLockBeforeTakingTheNewOne(t *testing.T) {
	lt := NewLockTable()
	a, b := openLockFile(1), openLockFile(1)
	lt.Flock(nil, a, unix.LOCK_SH, 1)
	lt.Flock(nil, b, unix.LOCK_SH, 2)
	if err := lt.Flock(nil, a, unix.LOCK_EX|unix.LOCK_NB, 1); err != unix.EWOULDBLOCK {
		t.Fatalf("upgrade with another reader: got %v, want EWOULDBLOCK", err)
	}
	// a's shared lock went with the failed upgrade: b alone may now
	// upgrade.
	if err := lt.Flock(nil, b, unix.LOCK_EX|unix.LOCK_NB, 2); err != nil {
		t.Fatalf("upgrade of the only remaining reader: %v", err)
	}
	if got := lt.List(); len(got) != 1 || got[0].PID != 2 || !got[0].Write {
		t.Fatalf("locks after the upgrade: %+v", got)
	}
}

func TestFlockRejectsUnknownOperations(t *testing.T) {
	lt := NewLockTable()
	for _, op := range []int{0, unix.LOCK_NB, unix.LOCK_SH | unix.LOCK_EX, 16} {
		if err := lt.Flock(nil, openLockFile(1), op, 1); err != unix.EINVAL {
			t.Errorf("flock op %#x: got %v, want EINVAL", op, err)
		}
	}
}

func TestFlockWaitEndsWhenTheHolderUnlocksOrTheWaiterIsInterrupted(t *testing.T) {
	lt := NewLockTable()
	a, b := openLockFile(1), openLockFile(1)
	lt.Flock(nil, a, unix.LOCK_EX, 1)
	ctx := newBlockCtx()
	done := make(chan error)
	go func() { done <- lt.Flock(ctx, b, unix.LOCK_EX, 2) }()
	waitUntilBlocked(t, ctx)
	lt.Flock(nil, a, unix.LOCK_UN, 1)
	if err := <-done; err != nil {
		t.Fatalf("wait after the unlock: %v", err)
	}

	c := openLockFile(1)
	ctx2 := newBlockCtx()
	go func() { done <- lt.Flock(ctx2, c, unix.LOCK_SH, 3) }()
	waitUntilBlocked(t, ctx2)
	close(ctx2.interrupt)
	if err := <-done; err != errIntr {
		t.Fatalf("interrupted wait: got %v, want the context's error", err)
	}
	if got := lt.List(); len(got) != 1 || got[0].PID != 2 {
		t.Fatalf("an interrupted waiter holds nothing: %+v", got)
	}
}

// records lists the record locks of inode 1 as (type, start, end).
func records(lt *LockTable) [][3]int64 {
	var out [][3]int64
	for _, l := range lt.List() {
		if l.Kind == "FLOCK" {
			continue
		}
		typ := int64(unix.F_RDLCK)
		if l.Write {
			typ = unix.F_WRLCK
		}
		out = append(out, [3]int64{typ, l.Start, l.End})
	}
	return out
}

func setLock(t *testing.T, lt *LockTable, f *File, owner any, typ int16, start, end int64) {
	t.Helper()
	if err := lt.SetRecordLock(nil, f, owner, false, RecordLock{Type: typ, Start: start, End: end}, 1, false); err != nil {
		t.Fatalf("lock %d [%d, %d]: %v", typ, start, end, err)
	}
}

func sameRecords(a, b [][3]int64) bool {
	if len(a) != len(b) {
		return false
	}
	found := 0
	for _, x := range a {
		for _, y := range b {
			if x == y {
				found++
				break
			}
		}
	}
	return found == len(a)
}

func TestARecordLockOfAnotherTypeSplitsTheOwnersLockAndOneOfTheSameTypeMerges(t *testing.T) {
	lt := NewLockTable()
	f := openLockFile(1)
	owner := "process"
	setLock(t, lt, f, owner, unix.F_WRLCK, 0, 99)
	setLock(t, lt, f, owner, unix.F_RDLCK, 10, 19)
	want := [][3]int64{{unix.F_WRLCK, 0, 9}, {unix.F_RDLCK, 10, 19}, {unix.F_WRLCK, 20, 99}}
	if got := records(lt); !sameRecords(got, want) {
		t.Fatalf("after a read lock inside a write lock: %v, want %v", got, want)
	}
	setLock(t, lt, f, owner, unix.F_WRLCK, 10, 19)
	want = [][3]int64{{unix.F_WRLCK, 0, 99}}
	if got := records(lt); !sameRecords(got, want) {
		t.Fatalf("after the write lock back: %v, want %v", got, want)
	}
	// Adjacent locks of one type merge; of two types they stay apart.
	setLock(t, lt, f, owner, unix.F_WRLCK, 100, 109)
	setLock(t, lt, f, owner, unix.F_RDLCK, 110, 119)
	want = [][3]int64{{unix.F_WRLCK, 0, 109}, {unix.F_RDLCK, 110, 119}}
	if got := records(lt); !sameRecords(got, want) {
		t.Fatalf("after adjacent locks: %v, want %v", got, want)
	}
	// An unlock in the middle splits; one over everything clears.
	setLock(t, lt, f, owner, unix.F_UNLCK, 50, 59)
	want = [][3]int64{{unix.F_WRLCK, 0, 49}, {unix.F_WRLCK, 60, 109}, {unix.F_RDLCK, 110, 119}}
	if got := records(lt); !sameRecords(got, want) {
		t.Fatalf("after an unlock in the middle: %v, want %v", got, want)
	}
	setLock(t, lt, f, owner, unix.F_UNLCK, 0, OffsetMax)
	if got := records(lt); len(got) != 0 {
		t.Fatalf("after unlocking everything: %v", got)
	}
	if lt.posix.Load() != 0 || len(lt.inodes) != 0 {
		t.Fatalf("an inode with no locks is still counted: %d, %d", lt.posix.Load(), len(lt.inodes))
	}
}

func TestRecordLocksConflictOnlyAcrossOwnersAndOnlyWithAWriter(t *testing.T) {
	lt := NewLockTable()
	f := openLockFile(1)
	setLock(t, lt, f, "a", unix.F_RDLCK, 0, 9)
	setLock(t, lt, f, "b", unix.F_RDLCK, 5, 14)
	err := lt.SetRecordLock(nil, f, "c", false, RecordLock{Type: unix.F_WRLCK, Start: 9, End: 9}, 3, false)
	if err != unix.EAGAIN {
		t.Fatalf("write lock over readers: got %v, want EAGAIN", err)
	}
	setLock(t, lt, f, "c", unix.F_WRLCK, 15, 20) // no overlap
	// a's upgrade fails against b, and a keeps its read lock whole.
	err = lt.SetRecordLock(nil, f, "a", false, RecordLock{Type: unix.F_WRLCK, Start: 0, End: 9}, 1, false)
	if err != unix.EAGAIN {
		t.Fatalf("upgrade over another reader: got %v, want EAGAIN", err)
	}
	if got := lt.TestRecordLock(f, "b", RecordLock{Type: unix.F_WRLCK, Start: 0, End: 4}); got.Type != unix.F_RDLCK || got.Start != 0 || got.End != 9 {
		t.Fatalf("a's read lock after its failed upgrade: %+v", got)
	}
}

func TestGetlkReportsTheFirstConflictingLockAndItsOwnersPid(t *testing.T) {
	lt := NewLockTable()
	f := openLockFile(1)
	lt.SetRecordLock(nil, f, "a", false, RecordLock{Type: unix.F_WRLCK, Start: 100, End: OffsetMax}, 41, false)
	lt.SetRecordLock(nil, f, f, true, RecordLock{Type: unix.F_RDLCK, Start: 0, End: 9}, 42, false)
	got := lt.TestRecordLock(f, "b", RecordLock{Type: unix.F_WRLCK, Start: 0, End: OffsetMax})
	if got != (RecordLock{Type: unix.F_WRLCK, Start: 100, End: OffsetMax, PID: 41}) {
		t.Fatalf("first conflict in the list's order: %+v", got)
	}
	got = lt.TestRecordLock(f, "b", RecordLock{Type: unix.F_WRLCK, Start: 5, End: 5})
	if got != (RecordLock{Type: unix.F_RDLCK, Start: 0, End: 9, PID: -1}) {
		t.Fatalf("an OFD lock's owner is no process: %+v", got)
	}
	// A reader tested against the OFD reader finds nothing; the owner's own
	// locks never conflict.
	req := RecordLock{Type: unix.F_RDLCK, Start: 5, End: 5}
	if got := lt.TestRecordLock(f, "b", req); got.Type != unix.F_UNLCK || got.Start != 5 {
		t.Fatalf("no conflict must give F_UNLCK and the request: %+v", got)
	}
	if got := lt.TestRecordLock(f, "a", RecordLock{Type: unix.F_WRLCK, Start: 100, End: 200}); got.Type != unix.F_UNLCK {
		t.Fatalf("own lock reported as a conflict: %+v", got)
	}
}

func TestLockRangeFollowsFlockToPosixLock(t *testing.T) {
	for _, c := range []struct {
		base, start, length int64
		s, e                int64
		err                 error
	}{
		{0, 0, 0, 0, OffsetMax, nil},
		{0, 10, 5, 10, 14, nil},
		{100, 0, -10, 90, 99, nil},
		{100, -10, 0, 90, OffsetMax, nil},
		{0, 5, -6, 0, 0, unix.EINVAL},
		{0, -1, 1, 0, 0, unix.EINVAL},
		{10, OffsetMax - 5, 1, 0, 0, unix.EOVERFLOW},
		{0, OffsetMax, 2, 0, 0, unix.EOVERFLOW},
		{0, OffsetMax, 1, OffsetMax, OffsetMax, nil},
	} {
		s, e, err := lockRange(c.base, c.start, c.length)
		if err != c.err || err == nil && (s != c.s || e != c.e) {
			t.Errorf("base %d start %d len %d: got [%d, %d] %v, want [%d, %d] %v", c.base, c.start, c.length, s, e, err, c.s, c.e, c.err)
		}
	}
	f := openLockFile(1)
	if s, e, err := LockRange(f, unix.SEEK_END, -1, 1); err != nil || s != 999 || e != 999 {
		t.Errorf("SEEK_END of a 1000-byte file: [%d, %d] %v", s, e, err)
	}
	if _, _, err := LockRange(f, 3, 0, 0); err != unix.EINVAL {
		t.Errorf("l_whence 3: %v, want EINVAL", err)
	}
}

func TestSetlkwThatWouldCloseACycleOfPOSIXOwnersIsEDEADLK(t *testing.T) {
	lt := NewLockTable()
	f := openLockFile(1)
	setLock(t, lt, f, "a", unix.F_WRLCK, 0, 0)
	setLock(t, lt, f, "b", unix.F_WRLCK, 1, 1)
	ctx := newBlockCtx()
	done := make(chan error)
	go func() {
		done <- lt.SetRecordLock(ctx, f, "b", false, RecordLock{Type: unix.F_WRLCK, Start: 0, End: 0}, 2, true)
	}()
	waitUntilBlocked(t, ctx)
	err := lt.SetRecordLock(newBlockCtx(), f, "a", false, RecordLock{Type: unix.F_WRLCK, Start: 1, End: 1}, 1, true)
	if err != unix.EDEADLK {
		t.Fatalf("a waiting for b, which waits for a: got %v, want EDEADLK", err)
	}
	// An OFD owner is never part of the check: it would wait.
	ofd := openLockFile(1)
	ctx3 := newBlockCtx()
	go func() {
		done <- lt.SetRecordLock(ctx3, ofd, ofd, true, RecordLock{Type: unix.F_WRLCK, Start: 1, End: 1}, 1, true)
	}()
	waitUntilBlocked(t, ctx3)
	close(ctx3.interrupt)
	if err := <-done; err != errIntr {
		t.Fatalf("the OFD waiter: %v", err)
	}
	// a's unlock lets b through.
	setLock(t, lt, f, "a", unix.F_UNLCK, 0, 0)
	if err := <-done; err != nil {
		t.Fatalf("b after a's unlock: %v", err)
	}
	if len(lt.blocked) != 0 {
		t.Fatalf("waits left behind: %v", lt.blocked)
	}
}

func TestClosingAFileDropsOnlyItsOwnersPOSIXLocksAndTheLastCloseItsOFDLocks(t *testing.T) {
	lt := NewLockTable()
	f1, f2 := openLockFile(1), openLockFile(1)
	setLock(t, lt, f1, "a", unix.F_RDLCK, 0, 9)
	setLock(t, lt, f1, "b", unix.F_RDLCK, 0, 9)
	lt.SetRecordLock(nil, f2, f2, true, RecordLock{Type: unix.F_RDLCK, Start: 20, End: 29}, 1, false)
	// a closes another fd of the same file: its lock goes, b's and the
	// OFD lock stay.
	lt.ReleasePOSIX(f2, "a")
	if got := len(records(lt)); got != 2 {
		t.Fatalf("after a's close: %d locks, want 2", got)
	}
	lt.ReleaseFile(f2)
	if got := records(lt); len(got) != 1 || got[0] != [3]int64{unix.F_RDLCK, 0, 9} {
		t.Fatalf("after the OFD description's last close: %v", got)
	}
}
