package e2b

import (
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/internal/state"
)

// fakeSentry answers a sandbox's file operations on its control socket
// from a map of files, as the sentry's protocol has them (one answer, or
// two around a streamed file's data), so that moat serve's side of them
// is tested without a sandbox. What it does to files is a sketch of
// Linux's; the errnos it is told to fail with are what the tests map.
type fakeSentry struct {
	mu    sync.Mutex
	files map[string]*fakeFile
	// fail makes the operations on a path fail so: "/p" all of them,
	// "mkdir /p" (the Op's name, a space, the path) one.
	fail map[string]syscall.Errno
	// failWrite is the errno of a write to a path once its data has
	// started (ENOSPC).
	failWrite map[string]syscall.Errno
	requests  []control.Request
	// ports are the guest's listening TCP ports: where an OpConnect to
	// each is joined (a listener of the test's).
	ports map[int]string
	// usernet are the requests moat usernet's policy socket took.
	usernet []control.Request
}

type fakeFile struct {
	mode       uint32
	uid, gid   uint32
	data       []byte
	mtime      int64
	linkTarget string
}

// newFakeSandbox is a sandbox whose control socket the fake answers.
func newFakeSandbox(t *testing.T) (*sandbox, *fakeSentry) {
	t.Helper()
	f := &fakeSentry{files: map[string]*fakeFile{"/": {mode: syscall.S_IFDIR | 0o755}},
		fail: map[string]syscall.Errno{}, failWrite: map[string]syscall.Errno{}, ports: map[int]string{}}
	dir := t.TempDir()
	acceptOn(t, filepath.Join(dir, state.ControlSocketName), f.serve)
	// moat usernet's policy socket: it records and takes every request.
	acceptOn(t, filepath.Join(dir, state.UsernetSocketName), f.takePolicy)
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &sandbox{id: "fake", inst: &instance{id: "fake", dir: d}}, f
}

// acceptOn serves each connection to a socket at path with serve, on a
// goroutine of its own, until the test ends.
func acceptOn(t *testing.T, path string, serve func(*control.Conn)) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go serve(control.NewConn(c.(*net.UnixConn)))
		}
	}()
}

// takePolicy answers a request to moat usernet's policy socket, which it
// records.
func (f *fakeSentry) takePolicy(conn *control.Conn) {
	defer conn.Close()
	var req control.Request
	if _, err := conn.Receive(&req); err == nil {
		f.mu.Lock()
		f.usernet = append(f.usernet, req)
		f.mu.Unlock()
		conn.Send(control.Response{})
	}
}

// put makes a file (S_IFREG), directory (S_IFDIR) or symlink (S_IFLNK,
// data its target) of root's.
func (f *fakeSentry) put(p string, mode uint32, data string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ff := &fakeFile{mode: mode, data: []byte(data), mtime: 1_700_000_000_500_000_000}
	if mode&syscall.S_IFMT == syscall.S_IFLNK {
		ff.linkTarget, ff.data = data, nil
	}
	f.files[p] = ff
}

// failOn makes the operations that key names (see fail) fail with errno.
func (f *fakeSentry) failOn(key string, errno syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[key] = errno
}

// failWriteOn makes a write to p fail with errno once its data starts.
func (f *fakeSentry) failWriteOn(p string, errno syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failWrite[p] = errno
}

// file is a copy of the file at p, nil if there is none.
func (f *fakeSentry) file(p string) *fakeFile {
	f.mu.Lock()
	defer f.mu.Unlock()
	ff, ok := f.files[p]
	if !ok {
		return nil
	}
	c := *ff
	return &c
}

// chown gives the file at p to uid and gid.
func (f *fakeSentry) chown(p string, uid, gid uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.files[p].uid, f.files[p].gid = uid, gid
}

func (f *fakeSentry) seen() []control.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]control.Request(nil), f.requests...)
}

// usernetSeen are the requests the usernet policy socket took.
func (f *fakeSentry) usernetSeen() []control.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]control.Request(nil), f.usernet...)
}

func errAnswer(op, p string, errno syscall.Errno) control.Response {
	return control.Response{Error: op + " " + p + ": " + errno.Error(), Errno: int(errno)}
}

func (f *fakeSentry) serve(conn *control.Conn) {
	defer conn.Close()
	var req control.Request
	files, err := conn.Receive(&req)
	if err == nil && (req.Op == control.OpPause || req.Op == control.OpResume || req.Op == control.OpEgress) {
		f.mu.Lock()
		f.requests = append(f.requests, req)
		f.mu.Unlock()
		conn.Send(control.Response{})
		return
	}
	if err == nil && req.Op == control.OpConnect {
		f.connect(conn, req, files)
		return
	}
	if err != nil || req.File == nil {
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	errno := f.fail[path.Clean(req.File.Path)]
	if e, ok := f.fail[req.Op+" "+path.Clean(req.File.Path)]; ok {
		errno = e
	}
	f.mu.Unlock()
	if req.Op == control.OpRead || req.Op == control.OpWrite {
		if len(files) != 1 {
			conn.Send(control.Response{Error: "want one data pipe"})
			return
		}
		defer files[0].Close()
		if errno != 0 {
			conn.Send(errAnswer(req.Op, req.File.Path, errno))
			return
		}
		f.stream(conn, req, files[0])
		return
	}
	if errno != 0 {
		conn.Send(errAnswer(req.Op, req.File.Path, errno))
		return
	}
	entries, errno := f.do(req)
	if errno != 0 {
		conn.Send(errAnswer(req.Op, req.File.Path, errno))
		return
	}
	conn.Send(control.Response{Entries: entries})
}

func (f *fakeSentry) entry(p string, ff *fakeFile) control.FileEntry {
	return control.FileEntry{Path: p, Mode: ff.mode, Size: int64(len(ff.data)), UID: ff.uid, GID: ff.gid,
		Mtime: ff.mtime, Target: ff.linkTarget}
}

func (f *fakeSentry) do(req control.Request) ([]control.FileEntry, syscall.Errno) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := path.Clean(req.File.Path)
	isDir := func(p string) bool { ff := f.files[p]; return ff != nil && ff.mode&syscall.S_IFMT == syscall.S_IFDIR }
	switch req.Op {
	case control.OpStat:
		if strings.HasSuffix(req.File.Path, "/.") {
			// p/. follows p, which must be a directory.
			if ff := f.files[p]; ff != nil && ff.linkTarget != "" {
				p = ff.linkTarget
			}
			if f.files[p] != nil && !isDir(p) {
				return nil, syscall.ENOTDIR
			}
		}
		ff := f.files[p]
		if ff == nil {
			return nil, syscall.ENOENT
		}
		return []control.FileEntry{f.entry(p, ff)}, 0
	case control.OpList:
		if f.files[p] == nil {
			return nil, syscall.ENOENT
		}
		if !isDir(p) {
			return nil, syscall.ENOTDIR
		}
		var out []control.FileEntry
		for q, ff := range f.files {
			rel, ok := strings.CutPrefix(q, strings.TrimSuffix(p, "/")+"/")
			if ok && q != p && strings.Count(rel, "/") < max(req.File.Depth, 1) {
				out = append(out, f.entry(q, ff))
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Path > out[j].Path }) // not in order: the caller sorts
		return out, 0
	case control.OpMkdir:
		for q := p; q != "/"; q = path.Dir(q) {
			if ff := f.files[q]; ff != nil && !isDir(q) {
				return nil, syscall.EEXIST
			}
			if f.files[q] == nil {
				f.files[q] = &fakeFile{mode: syscall.S_IFDIR | 0o755, uid: req.File.User.UID, gid: req.File.User.GID}
			}
		}
		return nil, 0
	case control.OpRename:
		ff := f.files[p]
		if ff == nil {
			return nil, syscall.ENOENT
		}
		delete(f.files, p)
		f.files[path.Clean(req.File.To)] = ff
		return nil, 0
	case control.OpRemove:
		if f.files[p] == nil {
			return nil, syscall.ENOENT
		}
		for q := range f.files {
			if q == p || strings.HasPrefix(q, p+"/") {
				delete(f.files, q)
			}
		}
		return nil, 0
	}
	return nil, syscall.EINVAL
}

// stream answers OpRead and OpWrite: once opened, and once the data has
// gone through.
func (f *fakeSentry) stream(conn *control.Conn, req control.Request, data *os.File) {
	p := path.Clean(req.File.Path)
	f.mu.Lock()
	ff := f.files[p]
	failWrite := f.failWrite[p]
	f.mu.Unlock()
	if req.Op == control.OpRead {
		switch {
		case ff == nil:
			conn.Send(errAnswer(req.Op, p, syscall.ENOENT))
			return
		case ff.mode&syscall.S_IFMT == syscall.S_IFDIR:
			conn.Send(errAnswer(req.Op, p, syscall.EISDIR))
			return
		}
		conn.Send(control.Response{Entries: []control.FileEntry{f.entry(p, ff)}})
		_, err := data.Write(ff.data)
		data.Close()
		if err != nil {
			conn.Send(errAnswer(req.Op, p, syscall.EPIPE))
			return
		}
		conn.Send(control.Response{})
		return
	}
	if ff != nil && ff.mode&syscall.S_IFMT == syscall.S_IFDIR {
		conn.Send(errAnswer(req.Op, p, syscall.EISDIR))
		return
	}
	conn.Send(control.Response{})
	if failWrite != 0 {
		data.Read(make([]byte, 1)) // some data came: then the file system is full
		conn.Send(errAnswer(req.Op, p, failWrite))
		return
	}
	got, err := io.ReadAll(data)
	if err != nil {
		conn.Send(errAnswer(req.Op, p, syscall.EIO))
		return
	}
	f.mu.Lock()
	f.files[p] = &fakeFile{mode: syscall.S_IFREG | req.File.Mode, uid: req.File.User.UID, gid: req.File.User.GID, data: got}
	f.mu.Unlock()
	conn.Send(control.Response{})
}

// listen makes port a listening port of the guest's, joined to addr.
func (f *fakeSentry) listen(port int, addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ports[port] = addr
}

// connect joins the socket an OpConnect brings to the test's listener for
// the port, as the sentry joins it to a connection inside the sandbox.
func (f *fakeSentry) connect(conn *control.Conn, req control.Request, files []*os.File) {
	for _, h := range files[1:] {
		h.Close()
	}
	f.mu.Lock()
	addr, ok := f.ports[req.Port]
	f.mu.Unlock()
	if len(files) == 0 || !ok {
		conn.Send(control.Response{Error: fmt.Sprintf("connect to port %d of the sandbox: connection refused", req.Port)})
		return
	}
	host := files[0]
	guest, err := net.Dial("tcp", addr)
	if err != nil {
		host.Close()
		conn.Send(control.Response{Error: err.Error()})
		return
	}
	conn.Send(control.Response{})
	go func() {
		go func() {
			io.Copy(guest, host)
			guest.Close()
		}()
		io.Copy(host, guest)
		host.Close()
	}()
}
