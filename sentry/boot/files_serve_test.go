package boot

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/sentry/kernel/kerneltest"
	"github.com/moat-sandbox/moat/syscalls"
)

// controlSocket serves s's control requests on a socket in a temporary
// directory, and returns its path.
func controlSocket(t *testing.T, s *Sandbox) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "control.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var execs sync.WaitGroup
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go s.handle(c.(*net.UnixConn), &execs)
		}
	}()
	return sock
}

// stream sends an OpRead or OpWrite request with one end of a pipe, and
// returns the other end and the connection, whose first answer it has
// read.
func stream(t *testing.T, sock string, req control.Request) (*os.File, *control.Conn, error) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := r, w
	if req.Op == control.OpWrite {
		mine, theirs = w, r
	}
	conn, err := control.Dial(sock, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	err = conn.Send(req, theirs)
	theirs.Close()
	if err != nil {
		t.Fatal(err)
	}
	var resp control.Response
	if _, err := conn.Receive(&resp); err != nil {
		t.Fatal(err)
	}
	return mine, conn, resp.Err()
}

// last reads a stream's second answer.
func last(t *testing.T, conn *control.Conn) error {
	t.Helper()
	defer conn.Close()
	var resp control.Response
	if _, err := conn.Receive(&resp); err != nil {
		t.Fatal(err)
	}
	return resp.Err()
}

func TestFileRequestsThroughTheControlSocket(t *testing.T) {
	ks := kerneltest.New(t, syscalls.NewTable())
	sock := controlSocket(t, &Sandbox{Kernel: ks.Kernel})
	user := control.FileUser{UID: 1000, GID: 1000}

	w, conn, err := stream(t, sock, control.Request{Op: control.OpWrite,
		File: &control.FileOp{Path: "/tmp/d/hello", Mode: 0o640, User: user}})
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "hello, sandbox")
	w.Close()
	if err := last(t, conn); err != nil {
		t.Fatalf("write: %v", err)
	}

	resp, err := control.CallFor(sock, control.Request{Op: control.OpStat,
		File: &control.FileOp{Path: "/tmp/d/hello", User: user}}, 5*time.Second)
	if err != nil || len(resp.Entries) != 1 {
		t.Fatalf("stat: %+v, %v", resp, err)
	}
	if e := resp.Entries[0]; e.UID != 1000 || e.Mode != unix.S_IFREG|0o640 || e.Size != 14 {
		t.Errorf("the written file: %+v", e)
	}

	r, conn, err := stream(t, sock, control.Request{Op: control.OpRead,
		File: &control.FileOp{Path: "/tmp/d/hello", User: user}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(r)
	r.Close()
	if err := last(t, conn); err != nil || string(data) != "hello, sandbox" {
		t.Errorf("read: %q, %v", data, err)
	}

	// A failure carries its errno, for the caller to map.
	_, err = control.CallFor(sock, control.Request{Op: control.OpList,
		File: &control.FileOp{Path: "/tmp/none", User: user}}, 5*time.Second)
	if !errors.Is(err, unix.ENOENT) {
		t.Errorf("listing a missing directory: %v, want ENOENT", err)
	}
	if _, _, err := stream(t, sock, control.Request{Op: control.OpWrite,
		File: &control.FileOp{Path: "/bin/x", User: user}}); !errors.Is(err, unix.EACCES) {
		t.Errorf("writing into root's /bin: %v, want EACCES", err)
	}
	if _, err := control.CallFor(sock, control.Request{Op: control.OpRemove}, 5*time.Second); err == nil {
		t.Error("a file request without a path succeeded")
	}
}
