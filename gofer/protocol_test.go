package gofer

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// rawPeer is a hand-driven client end of a socketpair to a running Serve.
type rawPeer struct {
	t    *testing.T
	sock int
	done chan error
}

func startRaw(t *testing.T, root string) *rawPeer {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	p := &rawPeer{t: t, sock: fds[0], done: make(chan error, 1)}
	go func() {
		err := Serve(fds[1], root, false)
		unix.Close(fds[1])
		p.done <- err
	}()
	t.Cleanup(func() {
		unix.Close(p.sock)
		if err := <-p.done; err != nil {
			t.Errorf("server: %v", err)
		}
	})
	return p
}

// ask sends req with oob and returns the errno answered and the results.
func (p *rawPeer) ask(req, oob []byte) (unix.Errno, []byte) {
	p.t.Helper()
	must(p.t, unix.Sendmsg(p.sock, req, oob, nil, 0))
	buf := make([]byte, maxMessage)
	n, _, _, _, err := unix.Recvmsg(p.sock, buf, nil, 0)
	must(p.t, err)
	d := decoder{b: buf[:n]}
	return unix.Errno(d.u32()), d.rest()
}

func TestMalformedRequests(t *testing.T) {
	root := tree(t)
	p := startRaw(t, root)

	if errno, _ := p.ask(request(opStat, RootNode), nil); errno != unix.EPROTO {
		t.Errorf("stat before hello: %v, want EPROTO", errno)
	}
	if errno, _ := p.ask(le.AppendUint32([]byte{opHello}, protocolVersion+1), nil); errno != unix.EPROTO {
		t.Errorf("hello with a future version: %v, want EPROTO", errno)
	}
	if errno, res := p.ask(helloRequest(), nil); errno != 0 || le.Uint32(res) != protocolVersion {
		t.Fatalf("hello: %v %x", errno, res)
	}

	for name, req := range map[string][]byte{
		"op only":          {opStat},
		"short node":       {opStat, 1, 0, 0},
		"trailing bytes":   append(request(opStat, RootNode), 0),
		"unknown op":       request(0xee, RootNode),
		"op zero":          request(0, RootNode),
		"open, no flags":   request(opOpen, RootNode),
		"readdir, cookie?": request(opReadDir, RootNode),
		"release nothing":  {opRelease},
		"release 7 bytes":  {opRelease, 1, 2, 3, 4, 5, 6, 7},
		// Cut to maxMessage, this would be a walk of a long name.
		"too long": walkRequest(RootNode, strings.Repeat("x", maxMessage+1-9)),
	} {
		if errno, _ := p.ask(req, nil); errno != unix.EPROTO {
			t.Errorf("%s: %v, want EPROTO", name, errno)
		}
	}

	// An fd sent to the gofer is never installed there. (The count covers
	// both ends: they share this process.)
	before := countFDs(t)
	null, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	must(t, err)
	errno, _ := p.ask(request(opStat, RootNode), unix.UnixRights(null))
	unix.Close(null)
	if errno != 0 {
		t.Errorf("stat with an fd attached: %v", errno)
	}
	if after := countFDs(t); after != before {
		t.Errorf("%d fds before sending one to the gofer, %d after", before, after)
	}

	// Still serving.
	if errno, _ := p.ask(request(opStat, RootNode), nil); errno != 0 {
		t.Errorf("stat after the garbage: %v", errno)
	}
	// An empty message cannot be told from the peer closing: it ends the
	// connection.
	must(t, unix.Sendmsg(p.sock, nil, nil, nil, 0))
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
	case <-time.After(5 * time.Second):
		t.Error("the server still runs after an empty message")
	}
}

func TestServeRefuses(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	if err := Serve(fds[0], t.TempDir(), false); err == nil {
		t.Error("Serve on a SOCK_STREAM socket succeeded")
	}
	if err := Serve(fds[0], "/nonexistent/root", false); err == nil {
		t.Error("Serve of a missing root succeeded")
	}
}

func checkBroken(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, ErrBroken) || isErrno(err) {
		t.Errorf("%s: %v, want ErrBroken and no errno", what, err)
	}
}

func TestBrokenConnection(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	c := NewClient(fds[0])
	defer c.Close()
	unix.Close(fds[1])
	_, err = c.Stat(RootNode)
	checkBroken(t, "stat with no gofer", err)
	_, _, err2 := c.Walk(RootNode, "x")
	if err2 != err {
		t.Errorf("a broken client gave %v, then %v", err, err2)
	}
	if _, err := c.Open(RootNode, unix.O_RDONLY); !errors.Is(err, ErrBroken) {
		t.Errorf("open: %v", err)
	}
	c.Release(2) // must not hang or panic
}

// fakeGofer answers every request on the other end of c with answer(req).
// stop closes c and waits for the fake to close its end.
func fakeGofer(t *testing.T, answer func(sock int, req []byte)) (c *Client, stop func()) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer unix.Close(fds[1])
		buf := make([]byte, maxMessage)
		for {
			n, _, _, _, err := unix.Recvmsg(fds[1], buf, nil, 0)
			if err != nil || n == 0 {
				return
			}
			answer(fds[1], buf[:n])
		}
	}()
	c = NewClient(fds[0])
	var once sync.Once
	stop = func() {
		once.Do(func() {
			c.Close()
			<-done
		})
	}
	t.Cleanup(stop)
	return c, stop
}

// helloThen answers the handshake properly and everything else with then.
func helloThen(then func(sock int, req []byte)) func(int, []byte) {
	return func(sock int, req []byte) {
		if req[0] == opHello {
			unix.Sendmsg(sock, le.AppendUint32(make([]byte, 4), protocolVersion), nil, nil, 0)
			return
		}
		then(sock, req)
	}
}

func TestMalformedAnswers(t *testing.T) {
	for name, answer := range map[string]func(int, []byte){
		"short": helloThen(func(sock int, _ []byte) {
			unix.Sendmsg(sock, []byte{0, 0}, nil, nil, 0)
		}),
		"truncated attr": helloThen(func(sock int, _ []byte) {
			unix.Sendmsg(sock, make([]byte, 4+10), nil, nil, 0)
		}),
		"oversized": helloThen(func(sock int, _ []byte) {
			unix.Sendmsg(sock, make([]byte, maxMessage+1), nil, nil, 0)
		}),
		"wrong version": func(sock int, _ []byte) {
			unix.Sendmsg(sock, le.AppendUint32(make([]byte, 4), protocolVersion+1), nil, nil, 0)
		},
		"version refused": func(sock int, _ []byte) {
			unix.Sendmsg(sock, le.AppendUint32(nil, uint32(unix.EPROTO)), nil, nil, 0)
		},
	} {
		c, stop := fakeGofer(t, answer)
		_, err := c.Stat(RootNode)
		checkBroken(t, name, err)
		stop()
	}

	// An Open answer without an fd is malformed; one with two fds donates
	// neither, and leaks neither.
	before := countFDs(t)
	c, stop := fakeGofer(t, helloThen(func(sock int, _ []byte) {
		unix.Sendmsg(sock, make([]byte, 4), nil, nil, 0)
	}))
	_, err := c.Open(RootNode, unix.O_RDONLY)
	checkBroken(t, "open answered without an fd", err)
	stop()

	c, stop = fakeGofer(t, helloThen(func(sock int, _ []byte) {
		unix.Sendmsg(sock, make([]byte, 4), unix.UnixRights(0, 1), nil, 0)
	}))
	_, err = c.Open(RootNode, unix.O_RDONLY)
	checkBroken(t, "open answered with two fds", err)
	stop()
	if after := countFDs(t); after != before {
		t.Errorf("%d fds before, %d after malformed open answers", before, after)
	}
}

func TestCloseWakesAWaitingCall(t *testing.T) {
	c, _ := fakeGofer(t, helloThen(func(int, []byte) {})) // never answers
	errs := make(chan error)
	go func() {
		_, err := c.Stat(RootNode)
		errs <- err
	}()
	time.Sleep(50 * time.Millisecond)
	must(t, c.Close())
	select {
	case err := <-errs:
		checkBroken(t, "stat interrupted by Close", err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the waiting call")
	}
	if err := c.Close(); !errors.Is(err, ErrBroken) {
		t.Errorf("second Close: %v", err)
	}
	_, err := c.Stat(RootNode)
	checkBroken(t, "stat after Close", err)
}
