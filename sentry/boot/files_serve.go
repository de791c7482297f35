package boot

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
)

// fileActorFor is the actor of a file request, which must have a path.
func (s *Sandbox) fileActorFor(req control.Request) (*fileActor, error) {
	if req.File == nil || req.File.Path == "" {
		return nil, fmt.Errorf("%s: no path", req.Op)
	}
	return newFileActor(s.Kernel.Root, req.File.User)
}

// doFile answers the file operations that carry no data.
func (s *Sandbox) doFile(req control.Request) (control.Response, error) {
	a, err := s.fileActorFor(req)
	if err != nil {
		return control.Response{}, err
	}
	op := req.File
	var resp control.Response
	switch req.Op {
	case control.OpStat:
		var e control.FileEntry
		if e, err = a.stat(op.Path); err == nil {
			resp.Entries = []control.FileEntry{e}
		}
	case control.OpList:
		resp.Entries, err = a.list(op.Path, max(op.Depth, 1))
	case control.OpMkdir:
		err = a.mkdirAll(op.Path)
	case control.OpRename:
		err = a.rename(op.Path, op.To)
	case control.OpRemove:
		err = a.remove(op.Path)
	}
	if err != nil {
		return control.Response{}, fmt.Errorf("%s %s: %w", req.Op, op.Path, err)
	}
	return resp, nil
}

// errorResponse is the answer of a request that failed: its message,
// and its errno when it has one (a file operation's).
func errorResponse(err error) control.Response {
	resp := control.Response{Error: err.Error()}
	var errno unix.Errno
	if errors.As(err, &errno) {
		resp.Errno = int(errno)
	}
	return resp
}

// serveFileIO streams a file through the one descriptor that came with
// an OpRead or OpWrite request, answering once the file is open and once
// the data has gone through.
func (s *Sandbox) serveFileIO(conn *control.Conn, req control.Request, files []*os.File) {
	defer conn.Close()
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	if len(files) != 1 {
		conn.Send(control.Response{Error: fmt.Sprintf("%s: %d descriptors, want the one data pipe", req.Op, len(files))})
		return
	}
	a, err := s.fileActorFor(req)
	if err != nil {
		conn.Send(errorResponse(err))
		return
	}
	data, name := files[0], req.File.Path
	fail := func(err error) { conn.Send(errorResponse(fmt.Errorf("%s %s: %w", req.Op, name, err))) }
	if req.Op == control.OpRead {
		f, e, err := a.openRead(name)
		if err != nil {
			fail(err)
			return
		}
		defer f.DecRef()
		if err := conn.Send(control.Response{Entries: []control.FileEntry{e}}); err != nil {
			return
		}
		err = copyOut(data, f)
		data.Close() // the end of the data, before the last answer
		if err != nil {
			fail(err)
			return
		}
		conn.Send(control.Response{})
		return
	}
	f, err := a.openWrite(name, req.File.Mode)
	if err != nil {
		fail(err)
		return
	}
	if err := conn.Send(control.Response{}); err != nil {
		f.DecRef()
		return
	}
	err = copyIn(f, data)
	f.DecRef() // closed (IN_CLOSE_WRITE) before the answer says it is written
	if err != nil {
		fail(err)
		return
	}
	conn.Send(control.Response{})
}
