package gofer

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestConcurrentClients runs 8 goroutines against one in-process server
// for a second, then checks that nothing failed and, once client and server
// are gone, that the process holds exactly the fds it held before.
func TestConcurrentClients(t *testing.T) {
	root := tree(t)
	before := countFDs(t)
	s := newTestSession(t, root, false)
	c, stop := start(t, s.serve)

	deadline := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			buf := make([]byte, 64)
			for time.Now().Before(deadline) {
				if err := exercise(c, buf); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	must(t, stop())
	if s.held != 1 || len(s.nodes) != 1 {
		t.Errorf("after every release: %d fds held, %d nodes; want just the root", s.held, len(s.nodes))
	}
	s.closeAll()
	if after := countFDs(t); after != before {
		t.Errorf("%d fds before, %d after", before, after)
	}
}

// exercise walks to dir/nested, stats, opens and reads it, then releases
// what it walked.
func exercise(c *Client, buf []byte) error {
	dir, _, err := c.Walk(RootNode, "dir")
	if err != nil {
		return err
	}
	defer c.Release(dir)
	nested, _, err := c.Walk(dir, "nested")
	if err != nil {
		return err
	}
	defer c.Release(nested)
	if _, err := c.Stat(nested); err != nil {
		return err
	}
	fd, err := c.Open(nested, unix.O_RDONLY)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	_, err = unix.Read(fd, buf)
	return err
}

// FuzzServerMessage feeds arbitrary bytes to the request handler, before
// and after the handshake, against a tree with every kind of node the
// gofer treats specially. It must answer, within maxMessage, and never
// panic or lose track of an fd.
func FuzzServerMessage(f *testing.F) {
	root := tree(f)
	must(f, unix.Mkfifo(filepath.Join(root, "fifo"), 0o666))

	f.Add(helloRequest())
	f.Add(request(opStat, RootNode))
	f.Add(request(opStat, 2))
	f.Add(walkRequest(RootNode, "dir"))
	f.Add(walkRequest(2, "nested"))
	f.Add(walkRequest(RootNode, ".."))
	f.Add(le.AppendUint32(request(opOpen, 2), unix.O_RDWR|unix.O_TRUNC))
	f.Add(le.AppendUint32(request(opOpen, 4), unix.O_RDONLY))
	f.Add(le.AppendUint64(request(opReadDir, RootNode), 0))
	f.Add(le.AppendUint64(request(opReadDir, RootNode), 1<<62))
	f.Add(request(opReadLink, 3))
	f.Add(le.AppendUint64(request(opRelease, 2), uint64(RootNode)))
	f.Add([]byte{})
	f.Add([]byte{opRelease, 1})

	f.Fuzz(func(t *testing.T, req []byte) {
		s, err := newSession(root, false)
		must(t, err)
		check := func(answer []byte, fd int) {
			if len(answer) < 4 || len(answer) > maxMessage {
				t.Fatalf("answer of %d bytes", len(answer))
			}
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		check(s.handle(req))
		if !s.greeted {
			check(s.handle(helloRequest()))
		}
		// Nodes 2 to 5 exist, so IDs in the input can hit live nodes.
		for _, name := range []string{"dir", "file", "link-abs", "fifo"} {
			check(s.handle(walkRequest(RootNode, name)))
		}
		check(s.handle(req))
		check(s.handle(req))
		s.closeAll()
		if s.held != 0 {
			t.Fatalf("%d fds unaccounted for", s.held)
		}
	})
}
