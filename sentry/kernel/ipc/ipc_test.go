package ipc

import (
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/memfile"
)

// One memory file for the package's tests: each maps a large range of
// address space.
var (
	testMemOnce sync.Once
	testMem     *memfile.File
	testMemErr  error
)

func newTestNamespace(t *testing.T) *Namespace {
	t.Helper()
	testMemOnce.Do(func() { testMem, testMemErr = memfile.New() })
	if testMemErr != nil {
		t.Fatal(testMemErr)
	}
	return NewNamespace(testMem, time.Now)
}

var rootCaller = &Caller{PID: 1, Caps: 1<<41 - 1}

// never is a Blocker whose waits end at once, as if interrupted.
type never struct{}

func (never) BlockUntil(<-chan struct{}, time.Time) error { return unix.EINTR }

func TestIDsAreIndexPlusSequenceAndAnIndexIsReusedOnlyAfterTheCycle(t *testing.T) {
	ns := newTestNamespace(t)
	a, _ := ns.Msgget(rootCaller, unix.IPC_PRIVATE, 0o600)
	b, _ := ns.Msgget(rootCaller, unix.IPC_PRIVATE, 0o600)
	if a != 0 || b != 1 {
		t.Errorf("first ids = %d, %d; want 0, 1", a, b)
	}
	ns.MsgRemove(rootCaller, a)
	ns.MsgRemove(rootCaller, b)
	// While few are in use the window is minCycle indices: index 0 comes
	// back only after the rest of them, with the next sequence number.
	for want := int32(2); want < minCycle; want++ {
		id, _ := ns.Msgget(rootCaller, unix.IPC_PRIVATE, 0o600)
		if id != want {
			t.Fatalf("id of a new queue = %d, want %d", id, want)
		}
		ns.MsgRemove(rootCaller, id)
	}
	again, _ := ns.Msgget(rootCaller, unix.IPC_PRIVATE, 0o600)
	if want := int32(1<<ipcmniShift + 0); again != want {
		t.Errorf("id once the indices wrapped = %d, want index 0 of sequence 1 (%d)", again, want)
	}
	if _, err := ns.MsgStat(rootCaller, a, StatID); err != unix.EINVAL {
		t.Errorf("IPC_STAT of the removed id %d: %v, want EINVAL (its index has another sequence now)", a, err)
	}
}

func TestPermissionsAreTheOwnersGroupsOrOthersBits(t *testing.T) {
	p := Perm{UID: 10, GID: 20, CUID: 11, CGID: 21, Mode: 0o640}
	for _, c := range []struct {
		who  Caller
		flag uint16
		want bool
	}{
		{Caller{EUID: 10}, mayWrite, true},           // owner: rw-
		{Caller{EUID: 11}, mayRead | mayWrite, true}, // creator: the owner's bits
		{Caller{EUID: 5, EGID: 21}, mayRead, true},   // creator's group: r--
		{Caller{EUID: 5, EGID: 21}, mayWrite, false},
		{Caller{EUID: 5, Groups: []uint32{20}}, mayRead, true},
		{Caller{EUID: 5}, mayRead, false}, // others: ---
		{Caller{EUID: 5, Caps: 1 << unix.CAP_IPC_OWNER}, mayWrite, true},
		// The owner's bits apply to the owner even when the group's would grant more.
		{Caller{EUID: 10, EGID: 20}, mayRead | mayExec, false},
	} {
		if got := p.allows(&c.who, c.flag); got != c.want {
			t.Errorf("%+v asking %o of mode 0640 (uid 10 gid 20, creator 11:21): %v, want %v", c.who, c.flag, got, c.want)
		}
	}
}

func TestSemopDoesEveryOperationOrNone(t *testing.T) {
	ns := newTestNamespace(t)
	id, _ := ns.Semget(rootCaller, unix.IPC_PRIVATE, 2, 0o600)
	ns.SemSetVal(rootCaller, id, 1, 1)
	ops := []Sembuf{{Num: 0, Op: 5}, {Num: 1, Op: -2, Flg: unix.IPC_NOWAIT}}
	if err := ns.Semop(rootCaller, id, ops, nil, never{}, time.Time{}); err != unix.EAGAIN {
		t.Errorf("semop that cannot do its second operation: %v, want EAGAIN", err)
	}
	if v, _ := ns.SemRead(rootCaller, id, 0, linuxabi.GETVAL); v != 0 {
		t.Errorf("semaphore 0 after the refused semop = %d, want 0 (untouched)", v)
	}
	// Two operations on one semaphore add up, in order.
	ops = []Sembuf{{Num: 1, Op: 1}, {Num: 1, Op: -2, Flg: unix.IPC_NOWAIT}}
	if err := ns.Semop(rootCaller, id, ops, nil, never{}, time.Time{}); err != nil {
		t.Errorf("semop +1 then -2 on a semaphore at 1: %v", err)
	}
}

func TestAWaiterIsCountedForTheOperationItWaitsOnAndDoneByWhoeverMakesItPossible(t *testing.T) {
	ns := newTestNamespace(t)
	id, _ := ns.Semget(rootCaller, unix.IPC_PRIVATE, 2, 0o600)
	ns.SemSetVal(rootCaller, id, 0, 1)
	done := make(chan error)
	go func() {
		// Semaphore 0 may go down; semaphore 1 may not: it waits on 1.
		done <- ns.Semop(rootCaller, id, []Sembuf{{Num: 0, Op: -1}, {Num: 1, Op: -1}}, nil, realBlocker{}, time.Time{})
	}()
	for i := 0; ; i++ {
		n1, _ := ns.SemRead(rootCaller, id, 1, linuxabi.GETNCNT)
		if n1 == 1 {
			break
		}
		if i > 1000 {
			t.Fatal("the waiter never showed in GETNCNT of semaphore 1")
		}
		time.Sleep(time.Millisecond)
	}
	if n0, _ := ns.SemRead(rootCaller, id, 0, linuxabi.GETNCNT); n0 != 0 {
		t.Errorf("GETNCNT of semaphore 0 = %d, want 0: the waiter waits on 1", n0)
	}
	ns.SemSetVal(rootCaller, id, 1, 1)
	if err := <-done; err != nil {
		t.Errorf("the waiter: %v", err)
	}
	v0, _ := ns.SemRead(rootCaller, id, 0, linuxabi.GETVAL)
	v1, _ := ns.SemRead(rootCaller, id, 1, linuxabi.GETVAL)
	if v0 != 0 || v1 != 0 {
		t.Errorf("values after the waiter ran = %d, %d; want 0, 0", v0, v1)
	}
}

// realBlocker waits as a task would, without signals.
type realBlocker struct{}

func (realBlocker) BlockUntil(ch <-chan struct{}, deadline time.Time) error {
	if deadline.IsZero() {
		<-ch
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-time.After(time.Until(deadline)):
		return unix.ETIMEDOUT
	}
}

func TestUndoIsAppliedByTheLastHolderClampedToTheRange(t *testing.T) {
	ns := newTestNamespace(t)
	id, _ := ns.Semget(rootCaller, unix.IPC_PRIVATE, 1, 0o600)
	u := NewUndoList(ns)
	u.IncRef() // a second task shares it
	if err := ns.Semop(rootCaller, id, []Sembuf{{Num: 0, Op: 3, Flg: linuxabi.SEM_UNDO}}, u, never{}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	ns.Semop(rootCaller, id, []Sembuf{{Num: 0, Op: -2}}, nil, never{}, time.Time{})
	u.DecRef(7)
	if v, _ := ns.SemRead(rootCaller, id, 0, linuxabi.GETVAL); v != 1 {
		t.Errorf("value after the first of two holders went = %d, want 1 (nothing undone)", v)
	}
	u.DecRef(7)
	if v, _ := ns.SemRead(rootCaller, id, 0, linuxabi.GETVAL); v != 0 {
		t.Errorf("value after the last holder went = %d, want 0 (1 - 3, clamped)", v)
	}
	if pid, _ := ns.SemRead(rootCaller, id, 0, linuxabi.GETPID); pid != 7 {
		t.Errorf("sempid after the undo = %d, want the exiting process 7", pid)
	}
}

func TestARemovedSegmentLivesUntilItsLastMappingGoes(t *testing.T) {
	ns := newTestNamespace(t)
	id, _ := ns.Shmget(rootCaller, 42, 4096, unix.IPC_CREAT|0o600)
	seg, err := ns.Shmat(rootCaller, id, false, false)
	if err != nil {
		t.Fatal(err)
	}
	seg.Mapped(1) // the mapping
	seg.Attached(1)
	seg.Mapped(1) // a split of it
	ns.ShmRemove(rootCaller, id)
	if st, err := ns.ShmStat(rootCaller, id, StatID); err != nil || st.Perm.Key != 0 || st.Nattch != 2 {
		t.Errorf("IPC_STAT of the removed, attached segment = %+v, %v; want key 0 and nattch 2", st, err)
	}
	if again, _ := ns.Shmget(rootCaller, 42, 4096, unix.IPC_CREAT|unix.IPC_EXCL|0o600); again == id {
		t.Errorf("shmget of the removed segment's key gave its id %d, want a new segment", id)
	}
	seg.Mapped(-1)
	seg.Mapped(-1)
	if _, err := ns.ShmStat(rootCaller, id, StatID); err != unix.EINVAL {
		t.Errorf("IPC_STAT once the last mapping went: %v, want EINVAL", err)
	}
}

func TestMsgrcvOfANegativeTypeTakesTheFirstOfTheLowestType(t *testing.T) {
	ns := newTestNamespace(t)
	id, _ := ns.Msgget(rootCaller, unix.IPC_PRIVATE, 0o600)
	for _, m := range []struct {
		typ  int64
		text string
	}{{5, "a"}, {3, "b"}, {9, "c"}, {3, "d"}} {
		ns.Msgsnd(rootCaller, id, m.typ, []byte(m.text), 0, never{})
	}
	for _, want := range []string{"b", "d", "a"} {
		_, text, err := ns.Msgrcv(rootCaller, id, 10, -5, unix.IPC_NOWAIT, never{})
		if err != nil || string(text) != want {
			t.Errorf("msgrcv(type -5) = %q, %v; want %q", text, err, want)
		}
	}
	if _, _, err := ns.Msgrcv(rootCaller, id, 10, -5, unix.IPC_NOWAIT, never{}); err != unix.ENOMSG {
		t.Errorf("msgrcv(type -5) with only type 9 left: %v, want ENOMSG", err)
	}
}

func TestSetvalOutsideTheSetIsEINVALAndSetallOfAnotherSizeIsEIDRM(t *testing.T) {
	ns := newTestNamespace(t)
	id, _ := ns.Semget(rootCaller, unix.IPC_PRIVATE, 2, 0o600)
	for _, num := range []int{-1, -65536, 2, 1 << 30} {
		if err := ns.SemSetVal(rootCaller, id, num, 1); err != unix.EINVAL {
			t.Errorf("SETVAL of semaphore %d in a set of 2: %v, want EINVAL", num, err)
		}
	}
	if err := ns.SemSetVal(rootCaller, id, 0, linuxabi.SEMVMX+1); err != unix.ERANGE {
		t.Errorf("SETVAL past SEMVMX: %v, want ERANGE", err)
	}
	if err := ns.SemSetAll(rootCaller, id, []int{1}); err != unix.EIDRM {
		t.Errorf("SETALL of 1 value into a set of 2: %v, want EIDRM", err)
	}
	if err := ns.SemSetAll(rootCaller, id, []int{3, 4}); err != nil {
		t.Fatalf("SETALL: %v", err)
	}
	if v, _ := ns.SemRead(rootCaller, id, 1, linuxabi.GETVAL); v != 4 {
		t.Errorf("semaphore 1 after SETALL {3, 4} = %d, want 4", v)
	}
}
