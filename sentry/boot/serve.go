package boot

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/control"
)

// Serve answers control requests on l until the guest is done, then returns
// the exit status the sentry must exit with.
func (s *Sandbox) Serve(l net.Listener) int {
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go s.handle(conn)
		}
	}()
	<-s.Kernel.Done()
	l.Close()
	return s.Kernel.ExitStatus().HostCode()
}

func (s *Sandbox) handle(conn net.Conn) {
	defer conn.Close()
	var req control.Request
	var resp control.Response
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&req); err != nil {
		resp.Error = fmt.Sprintf("bad control request: %v", err)
	} else if err := s.do(req); err != nil {
		resp.Error = err.Error()
	}
	json.NewEncoder(conn).Encode(resp)
}

func (s *Sandbox) do(req control.Request) error {
	switch req.Op {
	case control.OpStart:
		return s.Kernel.Start()
	case control.OpKill:
		return s.signal(req.Signal, req.All)
	}
	return fmt.Errorf("unknown control operation %q", req.Op)
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
