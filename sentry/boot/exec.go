package boot

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
	"github.com/moat-sandbox/moat/sentry/fs/devpts"
	"github.com/moat-sandbox/moat/sentry/fs/host"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// resizePoll is how often an exec's terminal is asked for its size: the
// sentry leads no session there, so no SIGWINCH tells it of a resize
// made on the master (by conmon, a containerd shim or `moat exec -t`).
const resizePoll = 200 * time.Millisecond

// serveExec runs the process of an OpExec request (`moat exec`) on conn,
// which brought its descriptors, in the container the request names, and
// serves it there (attend). If conn closes first, the process is killed:
// nothing outlives the `moat exec` (or the process standing for it) that
// started it.
func (s *Sandbox) serveExec(conn *control.Conn, req control.Request, files []*os.File) {
	defer conn.Close()
	p, con, err := s.startExec(req, files)
	if err != nil {
		conn.Send(control.Response{Error: err.Error()})
		return
	}
	attend(conn, p, con, p.Signal, func() { p.Signal(int(unix.SIGKILL)) }, nil)
}

// attend serves the connection of a process started from outside the
// sandbox: it answers with the pid, passes the signals the CLI sends to
// signal, and answers again with the exit status. When conn closes
// before the process ends, gone must make it end. ended, if not nil,
// runs once the process has ended, before its status goes out.
func attend(conn *control.Conn, p *kernel.Process, con *devpts.Console, signal func(int), gone, ended func()) {
	if err := conn.Send(control.Response{PID: int(p.PID())}); err != nil {
		gone()
	}
	if con != nil {
		go func() {
			tick := time.NewTicker(resizePoll)
			defer tick.Stop()
			for {
				select {
				case <-p.Done():
					return
				case <-tick.C:
					con.Resized()
				}
			}
		}()
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		for {
			var r control.Request
			files, err := conn.Receive(&r)
			for _, f := range files {
				f.Close() // only the first message brings descriptors
			}
			if err != nil {
				return
			}
			if r.Op == control.OpSignal {
				signal(r.Signal)
			}
		}
	}()
	select {
	case <-p.Done():
	case <-closed:
		gone()
		<-p.Done()
	}
	if ended != nil {
		ended()
	}
	if con != nil {
		con.Close() // the last output out, then the host terminal ends
	}
	code := p.ExitStatus().HostCode()
	conn.Send(control.Response{PID: int(p.PID()), Exit: &code})
}

// startExec starts the process of req (an OpExec) with files as its
// descriptors; it owns them whatever happens.
func (s *Sandbox) startExec(req control.Request, files []*os.File) (*kernel.Process, *devpts.Console, error) {
	defer func() {
		for _, f := range files {
			f.Close() // the sentry's files hold duplicates
		}
	}()
	e := req.Exec
	switch {
	case e == nil || e.Process == nil:
		return nil, nil, fmt.Errorf("exec: no process")
	case s.Kernel.Frozen():
		return nil, nil, fmt.Errorf("cannot exec in a paused container")
	case e.Stdio < 0 || e.Stdio > len(files) || e.Stdio > 3 || (e.Process.Terminal && e.Stdio != 1):
		return nil, nil, fmt.Errorf("exec: %d descriptors for %d stdio", len(files), e.Stdio)
	}
	in, err := s.place(req.Container)
	if err != nil {
		return nil, nil, err
	}
	spec, err := initSpec(e.Process)
	if err != nil {
		return nil, nil, err
	}
	spec.Seccomp, spec.Root, spec.Container, spec.PIDNamespace = in.seccomp, in.root, in.container, in.pidns
	con, err := attachFiles(&spec, in.root, e.Process.Terminal, files[:e.Stdio])
	if err != nil {
		return nil, nil, err
	}
	for _, hf := range files[e.Stdio:] {
		f, err := hostFile(hf)
		if err != nil {
			releaseFiles(&spec, con)
			return nil, nil, fmt.Errorf("exec: preserved fd: %w", err)
		}
		spec.ExtraFiles = append(spec.ExtraFiles, f)
	}
	// StartProcess owns the references from here, whatever it answers.
	p, err := s.Kernel.StartProcess(spec)
	if err != nil {
		if err == kernel.ErrSandboxEnded {
			err = fmt.Errorf("cannot exec in a stopped container")
		}
		if con != nil {
			con.Close()
		}
		return nil, nil, err
	}
	return p, con, nil
}

// attachFiles makes stdio the process's fds 0, 1 and 2 (spec.Stdio), or,
// with terminal, joins the one host terminal in stdio to a new pty of the
// devpts at root's /dev/pts, whose console it returns. On error nothing
// it made remains.
func attachFiles(spec *kernel.InitSpec, root vfs.Path, terminal bool, stdio []*os.File) (*devpts.Console, error) {
	if terminal {
		hostFD, err := unix.FcntlInt(stdio[0].Fd(), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return nil, fmt.Errorf("terminal: %w", err)
		}
		con, f, err := newConsole(root, hostFD)
		if err != nil {
			return nil, err
		}
		f.IncRef()
		f.IncRef() // a reference for each fd
		spec.Stdio = [3]*vfs.File{f, f, f}
		spec.Console = con.TTY()
		return con, nil
	}
	for i, hf := range stdio {
		f, err := hostFile(hf)
		if err != nil {
			releaseFiles(spec, nil)
			return nil, fmt.Errorf("stdio fd %d: %w", i, err)
		}
		spec.Stdio[i] = f
	}
	return nil, nil
}

// releaseFiles drops the references spec holds to its files, and closes
// con, for a process that will not be made.
func releaseFiles(spec *kernel.InitSpec, con *devpts.Console) {
	for _, f := range append(spec.Stdio[:], spec.ExtraFiles...) {
		if f != nil {
			f.DecRef()
		}
	}
	spec.Stdio, spec.ExtraFiles = [3]*vfs.File{}, nil
	if con != nil {
		con.Close()
	}
}

// hostFile wraps a duplicate of a host descriptor as a guest file, with
// the descriptor's access mode and flags, as stdioFiles does fds 0-2.
func hostFile(hf *os.File) (*vfs.File, error) {
	flags, err := unix.FcntlInt(hf.Fd(), unix.F_GETFL, 0)
	if err != nil {
		return nil, err
	}
	dup, err := unix.FcntlInt(hf.Fd(), unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return nil, err
	}
	impl, err := host.NewStdio(dup)
	if err != nil {
		unix.Close(dup)
		return nil, err
	}
	return vfs.NewFile(impl, vfs.Path{}, flags&(unix.O_ACCMODE|unix.O_APPEND|unix.O_NONBLOCK)), nil
}
