package control

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func connPair(t *testing.T) (*Conn, *Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var conns [2]*Conn
	for i, fd := range fds {
		c, err := FileConn(os.NewFile(uintptr(fd), "pair"), nil)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
		t.Cleanup(func() { c.Close() })
	}
	return conns[0], conns[1]
}

func TestDescriptorsTravelWithTheFirstMessageInOrder(t *testing.T) {
	a, b := connPair(t)
	var files []*os.File
	for _, s := range []string{"zero", "one", "two"} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		w.WriteString(s)
		w.Close()
		defer r.Close()
		files = append(files, r)
	}
	big := strings.Repeat("x", 10000) // longer than one read: the rest follows without descriptors
	if err := a.Send(Request{Op: OpExec, Exec: &Exec{Stdio: 3, Process: nil}, Signal: 9}, files...); err != nil {
		t.Fatal(err)
	}
	if err := a.Send(Response{Error: big}); err != nil {
		t.Fatal(err)
	}
	var req Request
	got, err := b.Receive(&req)
	if err != nil {
		t.Fatal(err)
	}
	if req.Op != OpExec || req.Exec == nil || req.Exec.Stdio != 3 || req.Signal != 9 {
		t.Errorf("request = %+v", req)
	}
	if len(got) != 3 {
		t.Fatalf("%d descriptors came, want 3", len(got))
	}
	for i, want := range []string{"zero", "one", "two"} {
		buf := make([]byte, 16)
		n, _ := got[i].Read(buf)
		if string(buf[:n]) != want {
			t.Errorf("descriptor %d reads %q, want %q", i, buf[:n], want)
		}
		if flags, _ := unix.FcntlInt(got[i].Fd(), unix.F_GETFD, 0); flags&unix.FD_CLOEXEC == 0 {
			t.Errorf("descriptor %d is not close-on-exec", i)
		}
		got[i].Close()
	}
	var resp Response
	more, err := b.Receive(&resp)
	if err != nil || len(more) != 0 || resp.Error != big {
		t.Errorf("second message: %d bytes, %d descriptors, %v", len(resp.Error), len(more), err)
	}
}

func TestReceiveAtTheEndOfTheConnectionFails(t *testing.T) {
	a, b := connPair(t)
	a.uc.Write([]byte(`{"op":"st`))
	a.Close()
	var req Request
	if _, err := b.Receive(&req); err == nil {
		t.Error("Receive of half a message at EOF succeeded")
	}
	if _, err := b.Receive(&req); err == nil {
		t.Error("Receive after EOF succeeded")
	}
}

func TestABadMessageIsAnErrorAndLeavesNoDescriptor(t *testing.T) {
	a, b := connPair(t)
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	// A raw write: Send would only ever write JSON.
	rights := unix.UnixRights(int(r.Fd()))
	if _, _, err := a.uc.WriteMsgUnix([]byte("not json\n"), rights, nil); err != nil {
		t.Fatal(err)
	}
	var req Request
	if files, err := b.Receive(&req); err == nil || files != nil {
		t.Errorf("Receive of a bad message = %v, %v", files, err)
	}
}

func TestAConnectionHandedOverKeepsTheMessagesItsOwnerHadAlreadyRead(t *testing.T) {
	a, b := connPair(t)
	// Both messages are on the socket before b reads: one read takes
	// them both, as an exec's answer and a quick process's exit do.
	code := 3
	for _, m := range []Response{{PID: 7}, {Exit: &code}} {
		if err := a.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	var first Response
	if _, err := b.Receive(&first); err != nil || first.PID != 7 {
		t.Fatalf("first message: %+v, %v", first, err)
	}
	f, pending, err := b.Handover()
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	a.Close() // the next owner must not need the socket for what was read
	c, err := FileConn(f, pending)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var next Response
	if _, err := c.Receive(&next); err != nil || next.Exit == nil || *next.Exit != 3 {
		t.Fatalf("after the hand-over: %+v, %v; want the exit status 3", next, err)
	}
}

// writeRaw writes data to c from another goroutine, as a peer that sends
// more than the socket's buffer holds must, and reports its error.
func writeRaw(c *Conn, data []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.uc.Write(data)
		done <- err
	}()
	return done
}

func TestAMessageOfMaxMessageBytesPassesAndOneByteMoreIsRefused(t *testing.T) {
	a, b := connPair(t)
	// A JSON string of MaxMessage bytes, quotes included, then its newline.
	msg := make([]byte, MaxMessage+1)
	for i := range msg {
		msg[i] = 'x'
	}
	msg[0], msg[MaxMessage-1], msg[MaxMessage] = '"', '"', '\n'
	wrote := writeRaw(a, msg)
	var s string
	if _, err := b.Receive(&s); err != nil || len(s) != MaxMessage-2 {
		t.Fatalf("a message of MaxMessage bytes: %d bytes, %v", len(s), err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	// One byte more: refused, naming the bound, whether or not its
	// newline came in the same read.
	msg = append(msg[:MaxMessage-1], 'x', '"', '\n')
	wrote = writeRaw(a, msg)
	_, err := b.Receive(&s)
	if err == nil || !strings.Contains(err.Error(), "67108864 bytes") {
		t.Fatalf("a message of MaxMessage+1 bytes: %v, want the error naming the bound", err)
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if len(b.buf) != 0 {
		t.Errorf("%d bytes of the refused message are still held", len(b.buf))
	}
}

func TestEntriesWithinMaxEntriesSizeFitOneMessage(t *testing.T) {
	a, b := connPair(t)
	// Entries of long paths whose EntrySize adds up to MaxEntriesSize
	// exactly: the last one takes the remainder.
	e := FileEntry{Path: "/" + strings.Repeat("p", 4000), Mode: 0o100644, Size: 1 << 40, Mtime: 1_700_000_000_000_000_000}
	per := EntrySize(e)
	entries := make([]FileEntry, MaxEntriesSize/per)
	for i := range entries {
		entries[i] = e
	}
	entries[len(entries)-1].Path += strings.Repeat("q", MaxEntriesSize%per)
	sum := 0
	for _, e := range entries {
		sum += EntrySize(e)
	}
	if sum != MaxEntriesSize {
		t.Fatalf("the entries add up to %d, want %d", sum, MaxEntriesSize)
	}
	sent := make(chan error, 1)
	go func() { sent <- a.Send(Response{Entries: entries}) }()
	var resp Response
	if _, err := b.Receive(&resp); err != nil || len(resp.Entries) != len(entries) {
		t.Fatalf("an answer of MaxEntriesSize bytes of entries: %d entries, %v", len(resp.Entries), err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}
