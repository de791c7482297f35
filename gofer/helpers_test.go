package gofer

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// tree builds a small file tree and returns its root:
//
//	file        "hello, gofer\n"
//	dir/nested  "nested\n"
//	empty/
//	link-rel -> file
//	link-dir -> dir
//	link-abs -> /etc
//	link-up  -> ../../..
func tree(t testing.TB) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	must(t, os.MkdirAll(filepath.Join(root, "dir"), 0o755))
	must(t, os.Mkdir(filepath.Join(root, "empty"), 0o700))
	must(t, os.WriteFile(filepath.Join(root, "file"), []byte("hello, gofer\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "dir", "nested"), []byte("nested\n"), 0o600))
	for name, target := range map[string]string{
		"link-rel": "file",
		"link-dir": "dir",
		"link-abs": "/etc",
		"link-up":  "../../..",
	} {
		must(t, os.Symlink(target, filepath.Join(root, name)))
	}
	return root
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// start runs serve in-process on one end of a socketpair and returns a
// Client on the other. stop closes the client and returns what serve
// returned; it also runs at cleanup if the test did not call it.
func start(t testing.TB, serve func(sock int) error) (c *Client, stop func() error) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	must(t, err)
	done := make(chan error, 1)
	go func() {
		err := serve(fds[1])
		unix.Close(fds[1]) // before stop returns, so fd counts add up
		done <- err
	}()
	c = NewClient(fds[0])
	var result error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			c.Close()
			result = <-done
		}
		return result
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("server: %v", err)
		}
	})
	return c, stop
}

// serveTree runs Serve on root and returns a Client for it.
func serveTree(t testing.TB, root string, readonly bool) *Client {
	t.Helper()
	c, _ := start(t, func(sock int) error { return Serve(sock, root, readonly) })
	return c
}

func newTestSession(t testing.TB, root string, readonly bool) *session {
	t.Helper()
	s, err := newSession(root, readonly)
	must(t, err)
	t.Cleanup(s.closeAll)
	return s
}

// wantErrno fails the test unless err is exactly the errno want.
func wantErrno(t testing.TB, what string, err error, want unix.Errno) {
	t.Helper()
	got, ok := err.(unix.Errno)
	if !ok || got != want {
		t.Errorf("%s: got %v (%T), want %v", what, err, err, want)
	}
}

func walk(t testing.TB, c *Client, dir NodeID, names ...string) NodeID {
	t.Helper()
	for _, name := range names {
		id, _, err := c.Walk(dir, name)
		if err != nil {
			t.Fatalf("walk %q: %v", name, err)
		}
		dir = id
	}
	return dir
}

// countFDs counts this process's open fds.
func countFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	return len(ents) - 1 // the directory being read
}

// exchange feeds req to s.handle and splits the answer.
func exchange(s *session, req []byte) (unix.Errno, []byte, int) {
	answer, fd := s.handle(req)
	d := decoder{b: answer}
	return unix.Errno(d.u32()), d.rest(), fd
}

func walkRequest(dir NodeID, name string) []byte {
	return append(request(opWalk, dir), name...)
}

func helloRequest() []byte {
	return le.AppendUint32([]byte{opHello}, protocolVersion)
}

func isErrno(err error) bool {
	var e unix.Errno
	return errors.As(err, &e)
}

// errOf is the error of a change's call, whose DirChange the test ignores.
func errOf(_ DirChange, err error) error { return err }

// errOf2 is errOf for a rename's two DirChanges.
func errOf2(_, _ DirChange, err error) error { return err }
