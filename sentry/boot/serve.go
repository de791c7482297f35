package boot

import (
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
)

// execDrain bounds how long a sentry whose init has ended waits for the
// exec'd processes' last answers (their exit statuses) to go out.
const execDrain = 2 * time.Second

// Serve answers control requests on l until the guest is done, then returns
// the exit status the sentry must exit with.
func (s *Sandbox) Serve(l net.Listener) int {
	var execs sync.WaitGroup
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go s.handle(conn.(*net.UnixConn), &execs)
		}
	}()
	<-s.Kernel.Done()
	l.Close()
	drained := make(chan struct{})
	go func() {
		execs.Wait()
		close(drained)
	}()
	select {
	case <-drained:
	case <-time.After(execDrain):
	}
	if s.kept != nil {
		s.saveKept()
	}
	return s.Kernel.ExitStatus().HostCode()
}

func (s *Sandbox) handle(uc *net.UnixConn, execs *sync.WaitGroup) {
	conn := control.NewConn(uc)
	var req control.Request
	files, err := conn.Receive(&req)
	if err != nil {
		conn.Send(control.Response{Error: fmt.Sprintf("bad control request: %v", err)})
		conn.Close()
		return
	}
	switch req.Op {
	case control.OpExec:
		execs.Add(1)
		defer execs.Done()
		s.serveExec(conn, req, files)
		return
	case control.OpCreate:
		execs.Add(1)
		defer execs.Done()
		s.serveCreate(conn, req, files)
		return
	case control.OpRead, control.OpWrite:
		s.serveFileIO(conn, req, files)
		return
	case control.OpConnect:
		s.serveConnect(conn, req, files)
		return
	}
	defer conn.Close()
	for _, f := range files {
		f.Close() // only exec and the file data bring descriptors
	}
	resp, err := s.do(req)
	if err != nil {
		resp = errorResponse(err)
	}
	conn.Send(resp)
}

func (s *Sandbox) do(req control.Request) (control.Response, error) {
	if req.Container != "" {
		return s.doMember(req)
	}
	switch req.Op {
	case control.OpStart:
		return control.Response{}, s.Kernel.Start()
	case control.OpKill:
		return control.Response{}, s.signal(req.Signal, req.All)
	case control.OpPause:
		s.Kernel.Freeze()
		return control.Response{}, nil
	case control.OpResume:
		s.Kernel.Thaw()
		return control.Response{}, nil
	case control.OpPs:
		return control.Response{Processes: s.processes("")}, nil
	case control.OpStats:
		st := s.stats()
		return control.Response{Stats: &st}, nil
	case control.OpUpdate:
		return control.Response{}, s.update(req.Resources)
	case control.OpEgress:
		return control.Response{}, s.setEgress(req.Egress)
	case control.OpStat, control.OpList, control.OpMkdir, control.OpRename, control.OpRemove:
		return s.doFile(req)
	}
	return control.Response{}, fmt.Errorf("unknown control operation %q", req.Op)
}

// doMember serves a request for one of the pod's other containers. Its
// stats are the pod's (the sentry accounts for the sandbox as a whole);
// pause and update act on the whole sandbox, and are refused.
func (s *Sandbox) doMember(req control.Request) (control.Response, error) {
	if _, err := s.pod.get(req.Container); err != nil {
		return control.Response{}, err
	}
	switch req.Op {
	case control.OpStart:
		return control.Response{}, s.startMember(req.Container)
	case control.OpKill:
		return control.Response{}, s.signalMember(req.Container, req.Signal, req.All)
	case control.OpPs:
		return control.Response{Processes: s.processes(req.Container)}, nil
	case control.OpStats:
		st := s.stats()
		return control.Response{Stats: &st}, nil
	}
	return control.Response{}, fmt.Errorf("%s of a single container of a pod is not supported", req.Op)
}

// signal delivers a signal from outside the sandbox, as Linux does for a
// pid namespace's init signalled from its parent namespace: SIGKILL always
// ends it (and so the sandbox); another signal reaches init only if it has
// a handler for it. With all, every process gets it.
func (s *Sandbox) signal(sig int, all bool) error {
	switch {
	case sig < 0 || sig > 64:
		return fmt.Errorf("invalid signal %d", sig)
	case sig == 0:
		return nil
	case sig == int(unix.SIGKILL):
		s.Kernel.Kill(sig)
	case all:
		s.Kernel.SignalAll(sig)
	default:
		s.Kernel.SignalInit(sig)
	}
	return nil
}
