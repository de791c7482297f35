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
// which brought its descriptors: it answers with the pid, passes on the
// signals the CLI sends, and answers again with the exit status. If conn
// closes first, the process is killed: nothing outlives the `moat exec`
// (or the process standing for it) that started it.
func (s *Sandbox) serveExec(conn *control.Conn, req control.Request, files []*os.File) {
	defer conn.Close()
	p, con, err := s.startExec(req.Exec, files)
	if err != nil {
		conn.Send(control.Response{Error: err.Error()})
		return
	}
	if err := conn.Send(control.Response{PID: int(p.PID())}); err != nil {
		p.Signal(int(unix.SIGKILL))
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
	gone := make(chan struct{})
	go func() {
		defer close(gone)
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
				p.Signal(r.Signal)
			}
		}
	}()
	select {
	case <-p.Done():
	case <-gone:
		p.Signal(int(unix.SIGKILL))
		<-p.Done()
	}
	if con != nil {
		con.Close() // the last output out, then the host terminal ends
	}
	code := p.ExitStatus().HostCode()
	conn.Send(control.Response{PID: int(p.PID()), Exit: &code})
}

// startExec starts e's process with files as its descriptors; it owns
// them whatever happens.
func (s *Sandbox) startExec(e *control.Exec, files []*os.File) (*kernel.Process, *devpts.Console, error) {
	defer func() {
		for _, f := range files {
			f.Close() // the sentry's files hold duplicates
		}
	}()
	switch {
	case e == nil || e.Process == nil:
		return nil, nil, fmt.Errorf("exec: no process")
	case s.Kernel.Frozen():
		return nil, nil, fmt.Errorf("cannot exec in a paused container")
	case e.Stdio < 0 || e.Stdio > len(files) || e.Stdio > 3 || (e.Process.Terminal && e.Stdio != 1):
		return nil, nil, fmt.Errorf("exec: %d descriptors for %d stdio", len(files), e.Stdio)
	}
	spec, err := initSpec(e.Process)
	if err != nil {
		return nil, nil, err
	}
	spec.Seccomp = s.seccomp
	var con *devpts.Console
	var opened []*vfs.File // one entry per reference held
	fail := func(err error) (*kernel.Process, *devpts.Console, error) {
		for _, f := range opened {
			f.DecRef()
		}
		if con != nil {
			con.Close()
		}
		return nil, nil, err
	}
	if e.Process.Terminal {
		hostFD, err := unix.FcntlInt(files[0].Fd(), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return fail(fmt.Errorf("exec: terminal: %w", err))
		}
		var f *vfs.File
		con, f, err = newConsole(s.Kernel.Root, hostFD)
		if err != nil {
			return fail(err)
		}
		f.IncRef()
		f.IncRef()
		opened = append(opened, f, f, f) // a reference for each fd
		spec.Stdio = [3]*vfs.File{f, f, f}
		spec.Console = con.TTY()
	} else {
		for i := 0; i < e.Stdio; i++ {
			f, err := hostFile(files[i])
			if err != nil {
				return fail(fmt.Errorf("exec: stdio fd %d: %w", i, err))
			}
			opened = append(opened, f)
			spec.Stdio[i] = f
		}
	}
	for _, hf := range files[e.Stdio:] {
		f, err := hostFile(hf)
		if err != nil {
			return fail(fmt.Errorf("exec: preserved fd: %w", err))
		}
		opened = append(opened, f)
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
