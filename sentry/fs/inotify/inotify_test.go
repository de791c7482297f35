package inotify

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// read reads up to n bytes of events, as read(2) with O_NONBLOCK.
func read(in *Instance, n int) ([]byte, error) {
	buf := make([]byte, n)
	got, err := in.Read(vfs.NewIOSeqBuffer(buf), 0)
	return buf[:got], err
}

// parse splits records into events, checking each name's padding.
func parse(t *testing.T, b []byte) []vfs.WatchEvent {
	t.Helper()
	var out []vfs.WatchEvent
	for len(b) > 0 {
		ev := vfs.WatchEvent{WD: int32(binary.LittleEndian.Uint32(b)), Mask: binary.LittleEndian.Uint32(b[4:]),
			Cookie: binary.LittleEndian.Uint32(b[8:])}
		n := int(binary.LittleEndian.Uint32(b[12:]))
		if n%eventSize != 0 {
			t.Errorf("name length %d is not a multiple of %d", n, eventSize)
		}
		name := b[eventSize : eventSize+n]
		for i, c := range name {
			if c == 0 {
				ev.Name = string(name[:i])
				for _, z := range name[i:] {
					if z != 0 {
						t.Errorf("padding of %q is not NULs", ev.Name)
					}
				}
				break
			}
		}
		if n > 0 && len(ev.Name) == n {
			t.Errorf("name %q has no NUL", ev.Name)
		}
		out = append(out, ev)
		b = b[eventSize+n:]
	}
	return out
}

func TestAnEventEqualToTheLastQueuedIsMergedIntoIt(t *testing.T) {
	in := New(100)
	mod := vfs.WatchEvent{WD: 1, Mask: unix.IN_MODIFY, Name: "f"}
	in.Queue(mod)
	in.Queue(mod)
	in.Queue(vfs.WatchEvent{WD: 2, Mask: unix.IN_MODIFY})
	in.Queue(mod) // the last one differs: queued
	b, err := read(in, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if got := parse(t, b); len(got) != 3 || got[0] != mod || got[2] != mod {
		t.Fatalf("events %+v, want f's modify, wd 2's, f's again", got)
	}
	in.Queue(mod) // the queue is empty again: nothing to merge with
	if b, _ := read(in, 4096); len(parse(t, b)) != 1 {
		t.Fatal("an event after a read was merged into one already read")
	}
}

func TestAFullQueueTakesOneOverflowEventAndNothingMore(t *testing.T) {
	in := New(3)
	for i := 0; i < 10; i++ {
		in.Queue(vfs.WatchEvent{WD: 1, Mask: unix.IN_ACCESS, Cookie: uint32(i)})
	}
	b, _ := read(in, 4096)
	got := parse(t, b)
	if len(got) != 4 || got[3] != (vfs.WatchEvent{WD: -1, Mask: unix.IN_Q_OVERFLOW}) || got[2].Cookie != 2 {
		t.Fatalf("events %+v, want the first 3 and IN_Q_OVERFLOW with wd -1", got)
	}
	// Once read, the overflow can come again.
	for i := 0; i < 5; i++ {
		in.Queue(vfs.WatchEvent{WD: 1, Mask: unix.IN_ACCESS, Cookie: uint32(i)})
	}
	b, _ = read(in, 4096)
	if got := parse(t, b); len(got) != 4 || got[3].Mask != unix.IN_Q_OVERFLOW {
		t.Fatalf("second overflow: %+v", got)
	}
}

func TestReadHandsOutWholeEventsAndEINVALWhenTheFirstDoesNotFit(t *testing.T) {
	in := New(100)
	if _, err := read(in, 64); err != unix.EAGAIN {
		t.Fatalf("read of an empty queue with no task: %v, want EAGAIN", err)
	}
	in.Queue(vfs.WatchEvent{WD: 1, Mask: unix.IN_CREATE, Name: "fifteen-letters"}) // 16 with its NUL
	in.Queue(vfs.WatchEvent{WD: 1, Mask: unix.IN_CREATE, Name: "sixteen-letters!"})
	in.Queue(vfs.WatchEvent{WD: 2, Mask: unix.IN_DELETE_SELF})
	if got := recordSize(&in.events[0]); got != 32 {
		t.Errorf("a 15-byte name takes %d bytes, want 32", got)
	}
	if got := recordSize(&in.events[1]); got != 48 {
		t.Errorf("a 16-byte name takes %d bytes, want 48", got)
	}
	checkFIONREAD(t, in, 32+48+16)
	for _, n := range []int{0, 16, 31} {
		if _, err := read(in, n); err != unix.EINVAL {
			t.Errorf("read of %d bytes: %v, want EINVAL", n, err)
		}
	}
	b, err := read(in, 32+47)
	if err != nil || len(b) != 32 {
		t.Fatalf("read of 79 bytes: %d, %v; want the first event's 32", len(b), err)
	}
	if got := parse(t, b); got[0].Name != "fifteen-letters" {
		t.Errorf("first event %+v", got[0])
	}
	checkFIONREAD(t, in, 48+16)
	if in.Readiness(waiter.ReadableEvents) == 0 {
		t.Error("not readable with events queued")
	}
	b, _ = read(in, 4096)
	if got := parse(t, b); len(got) != 2 || got[0].Name != "sixteen-letters!" || got[1].WD != 2 {
		t.Errorf("the rest: %+v", got)
	}
	if in.Readiness(waiter.ReadableEvents) != 0 {
		t.Error("readable with an empty queue")
	}
	checkFIONREAD(t, in, 0)
}

// ioctlMem is guest memory for an ioctl's argument.
type ioctlMem struct{ b [4]byte }

func (m *ioctlMem) CopyIn(_ uintptr, dst []byte) (int, error)  { return copy(dst, m.b[:]), nil }
func (m *ioctlMem) CopyOut(_ uintptr, src []byte) (int, error) { return copy(m.b[:], src), nil }

func checkFIONREAD(t *testing.T, in *Instance, want int) {
	t.Helper()
	var m ioctlMem
	if _, err := in.Ioctl(linuxabi.FIONREAD, 0, &m); err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint32(m.b[:]); got != uint32(want) {
		t.Errorf("FIONREAD %d, want %d", got, want)
	}
}
