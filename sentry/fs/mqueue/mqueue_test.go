package mqueue

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// chanBlocker waits on the channel, and fails with ETIMEDOUT at a
// deadline that has passed and with EINTR when interrupt is closed. It
// tells entered (if set) each time it starts to wait.
type chanBlocker struct{ interrupt, entered chan struct{} }

func (b *chanBlocker) BlockUntil(ch <-chan struct{}, deadline time.Time) error {
	if b.entered != nil {
		b.entered <- struct{}{}
	}
	if !deadline.IsZero() && !time.Now().Before(deadline) {
		select {
		case <-ch:
			return nil
		default:
			return unix.ETIMEDOUT
		}
	}
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		timeout = time.After(time.Until(deadline))
	}
	select {
	case <-ch:
		return nil
	case <-b.interrupt:
		return unix.EINTR
	case <-timeout:
		return unix.ETIMEDOUT
	}
}

func newNS() *Namespace { return NewNamespace(time.Now, NewAccounts()) }

func user(uid uint32, caps uint64) *Caller {
	return &Caller{Creds: &vfs.Creds{FSUID: uid, FSGID: uid, Caps: caps}, UID: uid, Limit: 819200}
}

func mustOpen(t *testing.T, ns *Namespace, c *Caller, name string, flags int, attr *Attr) *File {
	t.Helper()
	f, err := ns.Open(c, name, flags, 0o600, attr)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	return f
}

func TestMessagesComeOutByPriorityThenInOrder(t *testing.T) {
	ns := newNS()
	f := mustOpen(t, ns, user(0, 0), "q", unix.O_CREAT|unix.O_RDWR, &Attr{MaxMsg: 8, MsgSize: 16})
	defer f.Release()
	q := f.Queue()
	b := &chanBlocker{}
	for _, m := range []struct {
		text string
		prio uint32
	}{{"a1", 1}, {"c5", 5}, {"b1", 1}, {"d0", 0}, {"e5", 5}, {"f9", 9}} {
		if err := q.Send([]byte(m.text), m.prio, true, time.Time{}, b, Sender{}); err != nil {
			t.Fatalf("Send(%s): %v", m.text, err)
		}
	}
	var got []string
	for i := 0; i < 6; i++ {
		text, prio, err := q.Receive(16, true, time.Time{}, b)
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		got = append(got, fmt.Sprintf("%s/%d", text, prio))
	}
	if want := "f9/9 c5/5 e5/5 a1/1 b1/1 d0/0"; strings.Join(got, " ") != want {
		t.Errorf("received %v, want %s", got, want)
	}
	if _, _, err := q.Receive(16, true, time.Time{}, b); err != unix.EAGAIN {
		t.Errorf("Receive from an empty queue without waiting: %v, want EAGAIN", err)
	}
}

func TestSizesAreCheckedAgainstTheQueueAndTheSysctls(t *testing.T) {
	ns := newNS()
	c := user(1000, 0)
	for _, a := range []Attr{{0, 16}, {4, 0}, {-1, 16}, {11, 16}, {10, 8193}} {
		if _, err := ns.Open(c, "q", unix.O_CREAT|unix.O_RDWR, 0o600, &a); err != unix.EINVAL {
			t.Errorf("Open with %+v: %v, want EINVAL", a, err)
		}
	}
	privileged := user(0, 1<<unix.CAP_SYS_RESOURCE)
	f, err := ns.Open(privileged, "big", unix.O_CREAT|unix.O_RDWR, 0o600, &Attr{MaxMsg: 11, MsgSize: 16})
	if err != nil {
		t.Fatalf("Open past msg_max with CAP_SYS_RESOURCE: %v", err)
	}
	f.Release()
	if _, err := ns.Open(privileged, "huge", unix.O_CREAT|unix.O_RDWR, 0o600, &Attr{MaxMsg: hardMsgMax + 1, MsgSize: 16}); err != unix.EINVAL {
		t.Errorf("Open past HARD_MSGMAX with CAP_SYS_RESOURCE: %v, want EINVAL", err)
	}
	f = mustOpen(t, ns, c, "q", unix.O_CREAT|unix.O_RDWR, &Attr{MaxMsg: 1, MsgSize: 4})
	defer f.Release()
	q, b := f.Queue(), &chanBlocker{}
	if err := q.Send([]byte("12345"), 0, true, time.Time{}, b, Sender{}); err != unix.EMSGSIZE {
		t.Errorf("Send longer than msgsize: %v, want EMSGSIZE", err)
	}
	if _, _, err := q.Receive(3, true, time.Time{}, b); err != unix.EMSGSIZE {
		t.Errorf("Receive into less than msgsize: %v, want EMSGSIZE", err)
	}
	if err := q.Send([]byte("1"), 0, true, time.Time{}, b, Sender{}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if err := q.Send([]byte("2"), 0, true, time.Time{}, b, Sender{}); err != unix.EAGAIN {
		t.Errorf("Send to a full queue without waiting: %v, want EAGAIN", err)
	}
	if err := q.Send([]byte("2"), 0, false, time.Now().Add(-time.Second), b, Sender{}); err != unix.ETIMEDOUT {
		t.Errorf("Send to a full queue with a past deadline: %v, want ETIMEDOUT", err)
	}
	// An existing queue is opened whatever the attributes say.
	g, err := ns.Open(c, "q", unix.O_CREAT|unix.O_RDONLY, 0, &Attr{MaxMsg: 1 << 20, MsgSize: 1})
	if err != nil {
		t.Errorf("Open of an existing queue with bad attributes: %v, want success", err)
	} else {
		g.Release()
	}
}

func TestQueuesMaxCountsQueuesUntilTheirLastCloseAndSparesCapSysResource(t *testing.T) {
	ns := newNS()
	ns.limits.QueuesMax = 2
	c := user(1000, 0)
	small := &Attr{MaxMsg: 1, MsgSize: 1}
	a := mustOpen(t, ns, c, "a", unix.O_CREAT|unix.O_RDWR, small)
	b := mustOpen(t, ns, c, "b", unix.O_CREAT|unix.O_RDWR, small)
	defer b.Release()
	if _, err := ns.Open(c, "c", unix.O_CREAT|unix.O_RDWR, 0o600, small); err != unix.ENOSPC {
		t.Errorf("a third queue past queues_max 2: %v, want ENOSPC", err)
	}
	if err := ns.Unlink(c, "a"); err != nil {
		t.Fatalf("Unlink: %v", err)
	}
	if _, err := ns.Open(c, "c", unix.O_CREAT|unix.O_RDWR, 0o600, small); err != unix.ENOSPC {
		t.Errorf("a queue while an unlinked one is still open: %v, want ENOSPC", err)
	}
	a.Release()
	f, err := ns.Open(c, "c", unix.O_CREAT|unix.O_RDWR, 0o600, small)
	if err != nil {
		t.Fatalf("a queue once the unlinked one was closed: %v", err)
	}
	f.Release()
	f, err = ns.Open(user(0, 1<<unix.CAP_SYS_RESOURCE), "d", unix.O_CREAT|unix.O_RDWR, 0o600, small)
	if err != nil {
		t.Errorf("a queue past queues_max with CAP_SYS_RESOURCE: %v", err)
	} else {
		f.Release()
	}
}

func TestRlimitMsgqueueChargesEachQueueItsMessagesAndBookkeeping(t *testing.T) {
	ns := newNS()
	a := Attr{MaxMsg: 10, MsgSize: 8192}
	per := chargeFor(a)
	if per != 10*8192+10*48+10*48 {
		t.Fatalf("charge for 10 x 8192 = %d", per)
	}
	c := user(1000, 0)
	c.Limit = 2 * per
	x := mustOpen(t, ns, c, "x", unix.O_CREAT|unix.O_RDWR, &a)
	y := mustOpen(t, ns, c, "y", unix.O_CREAT|unix.O_RDWR, &a)
	if _, err := ns.Open(c, "z", unix.O_CREAT|unix.O_RDWR, 0o600, &Attr{MaxMsg: 1, MsgSize: 1}); err != unix.EMFILE {
		t.Errorf("a queue past RLIMIT_MSGQUEUE: %v, want EMFILE", err)
	}
	if got := ns.Accounts().Charged(1000); got != 2*per {
		t.Errorf("charged %d, want %d", got, 2*per)
	}
	ns.Unlink(c, "x")
	x.Release()
	if got := ns.Accounts().Charged(1000); got != per {
		t.Errorf("charged once a queue went: %d, want %d", got, per)
	}
	y.Release() // still named: still charged
	if got := ns.Accounts().Charged(1000); got != per {
		t.Errorf("charged once a named queue's last file closed: %d, want %d", got, per)
	}
}

func TestOpenChecksNamesExclusivityAndPermissions(t *testing.T) {
	ns := newNS()
	owner, other := user(1000, 0), user(2000, 0)
	for name, want := range map[string]error{"": unix.ENOENT, ".": unix.EACCES, "..": unix.EACCES, "a/b": unix.EACCES,
		strings.Repeat("n", 256): unix.ENAMETOOLONG, "absent": unix.ENOENT} {
		if _, err := ns.Open(owner, name, unix.O_RDONLY, 0, nil); err != want {
			t.Errorf("Open(%.10q): %v, want %v", name, err, want)
		}
	}
	f, err := ns.Open(owner, "q", unix.O_CREAT|unix.O_RDWR, 0o640, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer f.Release()
	if a := f.Queue().Attr(); a != (Attr{MaxMsg: 10, MsgSize: 8192}) {
		t.Errorf("a queue made without attributes has %+v, want the defaults 10 x 8192", a)
	}
	if _, err := ns.Open(owner, "q", unix.O_CREAT|unix.O_EXCL|unix.O_RDWR, 0o600, nil); err != unix.EEXIST {
		t.Errorf("O_CREAT|O_EXCL of an existing queue: %v, want EEXIST", err)
	}
	if _, err := ns.Open(owner, "q", unix.O_ACCMODE, 0, nil); err != unix.EINVAL {
		t.Errorf("access mode O_RDWR|O_WRONLY: %v, want EINVAL", err)
	}
	if _, err := ns.Open(other, "q", unix.O_RDONLY, 0, nil); err != unix.EACCES {
		t.Errorf("another user reading a 0640 queue: %v, want EACCES", err)
	}
	if err := ns.Unlink(other, "q"); err != unix.EPERM {
		t.Errorf("another user unlinking in the sticky directory: %v, want EPERM", err)
	}
	if err := ns.Unlink(user(2000, 1<<unix.CAP_FOWNER), "q"); err != nil {
		t.Errorf("unlinking with CAP_FOWNER: %v", err)
	}
	if err := ns.Unlink(owner, "q"); err != unix.ENOENT {
		t.Errorf("unlinking twice: %v, want ENOENT", err)
	}
}

func TestOneNotificationPerQueueFiresOnceWhenAnEmptyQueueGetsAMessage(t *testing.T) {
	ns := newNS()
	f := mustOpen(t, ns, user(0, 0), "q", unix.O_CREAT|unix.O_RDWR, &Attr{MaxMsg: 4, MsgSize: 8})
	defer f.Release()
	q, b := f.Queue(), &chanBlocker{}
	var fired []Sender
	n := &Notification{Kind: SigevSignal, Signo: 10, Owner: "p1", PID: 7, Files: "t1", Fire: func(s Sender) { fired = append(fired, s) }}
	if err := q.SetNotify(n); err != nil {
		t.Fatalf("SetNotify: %v", err)
	}
	if err := q.SetNotify(&Notification{Kind: SigevNone, Owner: "p2"}); err != unix.EBUSY {
		t.Errorf("a second registration: %v, want EBUSY", err)
	}
	q.ClearNotify("p2") // not p2's: it stays
	if got := string(q.status()); got != "QSIZE:0          NOTIFY:0     SIGNO:10    NOTIFY_PID:7     \n" {
		t.Errorf("status %q", got)
	}
	q.Send([]byte("abc"), 1, true, time.Time{}, b, Sender{PID: 3, UID: 5})
	q.Send([]byte("de"), 1, true, time.Time{}, b, Sender{PID: 4, UID: 6})
	if len(fired) != 1 || fired[0] != (Sender{PID: 3, UID: 5}) {
		t.Errorf("fired %v, want once, by the first sender {3 5}", fired)
	}
	if got := string(q.status()); got != "QSIZE:5          NOTIFY:0     SIGNO:0     NOTIFY_PID:0     \n" {
		t.Errorf("status after the notification %q", got)
	}
	if err := q.SetNotify(n); err != nil {
		t.Errorf("registering again once it fired: %v", err)
	}
	q.Receive(8, true, time.Time{}, b)
	q.Receive(8, true, time.Time{}, b)
	// A receive waiting gets the message; nothing is notified.
	got := make(chan string, 1)
	waiting := &chanBlocker{entered: make(chan struct{}, 2)}
	go func() {
		text, _, err := q.Receive(8, false, time.Time{}, waiting)
		got <- fmt.Sprintf("%s %v", text, err)
	}()
	<-waiting.entered
	q.Send([]byte("x"), 0, true, time.Time{}, b, Sender{PID: 9})
	if r := <-got; r != "x <nil>" {
		t.Errorf("the waiting receive got %q", r)
	}
	if len(fired) != 1 {
		t.Errorf("a message for a waiting receive fired the notification: %v", fired)
	}
	// A close by the registering process's table removes it; another's does not.
	f.Flush("t2")
	if err := q.SetNotify(&Notification{Owner: "p3"}); err != unix.EBUSY {
		t.Errorf("registration after another table's close: %v, want EBUSY (still p1's)", err)
	}
	f.Flush("t1")
	if err := q.SetNotify(&Notification{Owner: "p3"}); err != nil {
		t.Errorf("registration after the owner's close: %v", err)
	}
}

func TestABlockedSendWaitsForRoomAndAnInterruptEndsIt(t *testing.T) {
	ns := newNS()
	f := mustOpen(t, ns, user(0, 0), "q", unix.O_CREAT|unix.O_RDWR, &Attr{MaxMsg: 1, MsgSize: 8})
	defer f.Release()
	q := f.Queue()
	b := &chanBlocker{interrupt: make(chan struct{})}
	q.Send([]byte("1"), 0, true, time.Time{}, b, Sender{})
	if ev := f.Readiness(waiter.ReadableEvents | waiter.WritableEvents); ev != waiter.ReadableEvents {
		t.Errorf("readiness of a full queue %#x, want readable only", ev)
	}
	done := make(chan error, 1)
	go func() { done <- q.Send([]byte("2"), 0, false, time.Time{}, b, Sender{}) }()
	if _, _, err := q.Receive(8, false, time.Time{}, b); err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("the blocked send: %v", err)
	}
	go func() { done <- q.Send([]byte("3"), 0, false, time.Time{}, b, Sender{}) }()
	close(b.interrupt)
	if err := <-done; !errors.Is(err, unix.EINTR) {
		t.Errorf("an interrupted send: %v, want the blocker's EINTR", err)
	}
	if n := q.Messages(); n != 1 {
		t.Errorf("messages %d, want 1", n)
	}
}

func TestTheFileSystemShowsTheNamespacesQueues(t *testing.T) {
	ns := newNS()
	c := user(1000, 0)
	f := mustOpen(t, ns, c, "b", unix.O_CREAT|unix.O_RDWR, nil)
	defer f.Release()
	root := ns.Root()
	ino, err := root.Lookup("b")
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	st, _ := ino.Stat()
	if st.Mode != unix.S_IFREG|0o600 || st.UID != 1000 || st.Size != fileSize || st.Nlink != 1 {
		t.Errorf("queue stat %+v", st)
	}
	w := root.(vfs.DirWriter)
	made, err := w.Create("a", unix.S_IFREG|0o644, 0, 0)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	impl, _ := made.Open(unix.O_RDWR)
	defer impl.Release()
	if a := impl.(*File).Queue().Attr(); a != (Attr{MaxMsg: 10, MsgSize: 8192}) {
		t.Errorf("a queue made through the file system has %+v", a)
	}
	list, _ := root.ReadDir()
	if len(list) != 2 || list[0].Name != "a" || list[1].Name != "b" {
		t.Errorf("ReadDir %+v", list)
	}
	if dst, _ := root.Stat(); dst.Mode != unix.S_IFDIR|unix.S_ISVTX|0o777 || dst.Size != 4*direntSize {
		t.Errorf("directory stat %+v", dst)
	}
	if _, err := w.Mkdir("d", 0o755, 0, 0); err != unix.EPERM {
		t.Errorf("Mkdir: %v, want EPERM", err)
	}
	if err := w.Unlink("b"); err != nil {
		t.Fatalf("Unlink: %v", err)
	}
	if _, err := ns.Open(c, "b", unix.O_RDWR, 0, nil); err != unix.ENOENT {
		t.Errorf("mq_open of a name the file system removed: %v, want ENOENT", err)
	}
	if st, _ := f.Stat(); st.Nlink != 0 {
		t.Errorf("nlink of an unlinked queue %d", st.Nlink)
	}
	buf := make([]byte, 100)
	n, err := f.Read(vfs.NewIOSeqBuffer(buf), 0)
	if err != nil || string(buf[:n]) != "QSIZE:0          NOTIFY:0     SIGNO:0     NOTIFY_PID:0     \n" {
		t.Errorf("Read = %q, %v", buf[:n], err)
	}
	if n, _ := f.Read(vfs.NewIOSeqBuffer(buf), 60); n != 0 {
		t.Errorf("Read at the end gave %d bytes", n)
	}
}
