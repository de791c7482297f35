package e2b

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/moat-sandbox/moat/internal/control"
)

// The sandbox's files, as the file operations of its control socket
// (control.OpStat and the rest) reach them: the sentry does them on its
// own VFS as the request's user, so that no tool of the image has to
// exist, and nothing the guest prints is parsed.

// fileOpTimeout bounds a file operation that carries no data (an rm -rf
// of a large tree is the longest) and the wait for a streamed file to
// open; the request's context bounds it too.
const fileOpTimeout = 5 * time.Minute

// fileEndTimeout bounds the wait for a streamed file's last answer once
// its data has gone through: the sentry sends it at once.
const fileEndTimeout = 30 * time.Second

// fileUser is who a file operation for u acts as: u's ids, and the
// capabilities a process of u's gets (root's for root), so that the
// operation may do what u's commands may.
func fileUser(u guestUser) control.FileUser {
	return control.FileUser{UID: u.uid, GID: u.gid, Caps: capabilities(u.uid).Effective}
}

// fileCall does a file operation that carries no data and returns the
// entries its answer has.
func (inst *instance) fileCall(ctx context.Context, op string, f control.FileOp) ([]control.FileEntry, error) {
	conn, err := inst.dial()
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	conn.SetDeadline(time.Now().Add(fileOpTimeout))
	if err := conn.Send(control.Request{Op: op, File: &f}); err != nil {
		return nil, fmt.Errorf("send %s request: %w", op, err)
	}
	resp, err := receive(ctx, conn, op)
	if err != nil {
		return nil, err
	}
	return resp.Entries, resp.Err()
}

// receive reads one answer; a context that ended is the error then.
func receive(ctx context.Context, conn *control.Conn, op string) (control.Response, error) {
	var resp control.Response
	files, err := conn.Receive(&resp)
	for _, f := range files {
		f.Close() // no file operation's answer brings any
	}
	if err != nil {
		if ctx.Err() != nil {
			return control.Response{}, ctx.Err()
		}
		return control.Response{}, fmt.Errorf("read %s answer: %w", op, err)
	}
	return resp, nil
}

// startStream sends an OpRead or OpWrite request with theirs, one end of
// the data pipe, which it closes, and waits for the answer that says the
// file is open. A failed file operation is the answer's error.
func (inst *instance) startStream(ctx context.Context, op string, f control.FileOp, theirs *os.File) (*control.Conn, control.Response, error) {
	defer theirs.Close() // the sentry holds its own once sent
	conn, err := inst.dial()
	if err != nil {
		return nil, control.Response{}, err
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	conn.SetDeadline(time.Now().Add(fileOpTimeout))
	if err := conn.Send(control.Request{Op: op, File: &f}, theirs); err != nil {
		conn.Close()
		return nil, control.Response{}, fmt.Errorf("send %s request: %w", op, err)
	}
	resp, err := receive(ctx, conn, op)
	if err == nil {
		err = resp.Err()
	}
	if err != nil {
		conn.Close()
		return nil, control.Response{}, err
	}
	conn.SetDeadline(time.Time{})
	return conn, resp, nil
}

// finish waits for a streamed file's last answer, which says whether all
// its data went through.
func finish(ctx context.Context, conn *control.Conn, op string) error {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(fileEndTimeout))
	resp, err := receive(ctx, conn, op)
	if err != nil {
		return err
	}
	return resp.Err()
}

// readFile streams the regular file at p (a final symlink followed) out
// of the sandbox, as fu reads it: opened gets its entry once it is open
// and returns where its data goes. An error of opened's writer stops the
// copy; the error returned is then the writer's.
func (inst *instance) readFile(ctx context.Context, fu control.FileUser, p string, opened func(control.FileEntry) io.Writer) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close() // a reader that stops early makes the sentry's writes fail: it gives up
	conn, resp, err := inst.startStream(ctx, control.OpRead, control.FileOp{Path: p, User: fu}, w)
	if err != nil {
		return err
	}
	if len(resp.Entries) != 1 {
		conn.Close()
		return fmt.Errorf("read %s: the sandbox answered %d entries, not the file's", p, len(resp.Entries))
	}
	stop := context.AfterFunc(ctx, func() { r.SetReadDeadline(time.Now()) })
	defer stop()
	if _, err := io.Copy(opened(resp.Entries[0]), r); err != nil {
		conn.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	return finish(ctx, conn, control.OpRead)
}

// writeFile streams data into the file at p in the sandbox, as fu writes
// it: an existing file (a final symlink followed) is truncated first, a
// missing one made with mode, after the directories above it.
func (inst *instance) writeFile(ctx context.Context, fu control.FileUser, p string, mode uint32, data io.Reader) error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer w.Close()
	conn, _, err := inst.startStream(ctx, control.OpWrite, control.FileOp{Path: p, Mode: mode, User: fu}, r)
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { w.SetWriteDeadline(time.Now()) })
	defer stop()
	pw := &pipeWriter{f: w}
	_, err = io.Copy(pw, data)
	switch {
	case pw.err != nil && ctx.Err() == nil:
		// The sentry stopped reading: its answer says why (ENOSPC).
		w.Close()
		return finish(ctx, conn, control.OpWrite)
	case err != nil:
		// The data broke off (the client went away): what came is in
		// the file, as a writer that stopped leaves it.
		conn.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("reading the data for %s: %w", p, err)
	}
	w.Close() // the end of the data
	return finish(ctx, conn, control.OpWrite)
}

// pipeWriter writes to the data pipe and keeps its error, to tell a
// sentry that stopped reading from data that broke off.
type pipeWriter struct {
	f   *os.File
	err error
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	n, err := p.f.Write(b)
	if err != nil {
		p.err = err
	}
	return n, err
}
