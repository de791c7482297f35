package e2b

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// envd's process.Process service (spec/envd/process/process.proto), in
// protobuf's JSON mapping.

type processConfig struct {
	Cmd  string            `json:"cmd"`
	Args []string          `json:"args,omitempty"`
	Envs map[string]string `json:"envs,omitempty"`
	Cwd  *string           `json:"cwd,omitempty"`
}

type ptyConfig struct {
	Size *struct {
		Cols uint32 `json:"cols"`
		Rows uint32 `json:"rows"`
	} `json:"size,omitempty"`
}

type startRequest struct {
	Process *processConfig `json:"process"`
	Pty     *ptyConfig     `json:"pty,omitempty"`
	Tag     *string        `json:"tag,omitempty"`
	Stdin   *bool          `json:"stdin,omitempty"`
}

type processSelector struct {
	Pid *uint32 `json:"pid,omitempty"`
	Tag *string `json:"tag,omitempty"`
}

type processEvent struct {
	Start     *startEvent `json:"start,omitempty"`
	Data      *dataEvent  `json:"data,omitempty"`
	End       *endEvent   `json:"end,omitempty"`
	Keepalive *struct{}   `json:"keepalive,omitempty"`
}

type startEvent struct {
	Pid uint32 `json:"pid"`
}

type dataEvent struct {
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	Pty    []byte `json:"pty,omitempty"`
}

type endEvent struct {
	ExitCode int32   `json:"exitCode"`
	Exited   bool    `json:"exited"`
	Status   string  `json:"status"`
	Error    *string `json:"error,omitempty"`
}

// eventResponse is StartResponse and ConnectResponse.
type eventResponse struct {
	Event processEvent `json:"event"`
}

type processInfo struct {
	Config processConfig `json:"config"`
	Pid    uint32        `json:"pid"`
	Tag    *string       `json:"tag,omitempty"`
}

type listResponse struct {
	Processes []processInfo `json:"processes"`
}

type connectRequest struct {
	Process processSelector `json:"process"`
}

type sendInputRequest struct {
	Process processSelector `json:"process"`
	Input   struct {
		Stdin []byte `json:"stdin,omitempty"`
		Pty   []byte `json:"pty,omitempty"`
	} `json:"input"`
}

type sendSignalRequest struct {
	Process processSelector `json:"process"`
	Signal  signalEnum      `json:"signal"`
}

type closeStdinRequest struct {
	Process processSelector `json:"process"`
}

type empty struct{}

// signalEnum is process.Signal: JSON gives an enum as its name or its
// number.
type signalEnum int32

func (s *signalEnum) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		switch name {
		case "SIGNAL_UNSPECIFIED":
			*s = 0
		case "SIGNAL_SIGTERM":
			*s = signalEnum(unix.SIGTERM)
		case "SIGNAL_SIGKILL":
			*s = signalEnum(unix.SIGKILL)
		default:
			return fmt.Errorf("unknown signal %q", name)
		}
		return nil
	}
	var n int32
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*s = signalEnum(n)
	return nil
}

// process is a command started through Start, until it ends.
type process struct {
	pid    uint32
	tag    *string
	config processConfig
	exec   *execution

	stdinMu sync.Mutex
	stdin   *os.File // nil without stdin, or once closed
	pty     *os.File // the terminal's master, nil without one; closed by begin's pump

	mu        sync.Mutex
	subs      map[*stream]struct{}
	ended     bool
	signalled syscall.Signal // the last signal sent through the API
	done      chan struct{}
}

// startProcess starts req's command as u and registers it; its output
// waits in the pipes (or the terminal) until begin.
func (sb *sandbox) startProcess(u guestUser, req *startRequest) (*process, []*os.File, error) {
	if req.Process == nil || req.Process.Cmd == "" {
		return nil, nil, rpcErrorf(codeInvalidArgument, "process.cmd is empty")
	}
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}
	var stdio, outs []*os.File // the process's ends, and ours to read
	var input *os.File         // ours to write: its stdin or its terminal
	var err error
	if req.Pty != nil {
		var cols, rows uint32
		if req.Pty.Size != nil {
			cols, rows = req.Pty.Size.Cols, req.Pty.Size.Rows
		}
		if cols > 0xffff || rows > 0xffff {
			return nil, nil, rpcErrorf(codeInvalidArgument, "pty size %dx%d is out of range", cols, rows)
		}
		var master, replica *os.File
		if master, replica, err = openPTY(uint16(cols), uint16(rows)); err != nil {
			return nil, nil, err
		}
		stdio, outs, input = []*os.File{replica}, []*os.File{master}, master
	} else {
		var in, outR, outW, errR, errW *os.File
		if req.Stdin != nil && *req.Stdin {
			in, input, err = os.Pipe()
		} else {
			in, err = os.Open(os.DevNull)
		}
		if err == nil {
			outR, outW, err = os.Pipe()
		}
		if err == nil {
			errR, errW, err = os.Pipe()
		}
		if err != nil {
			closeAll(in, input, outR, outW, errR, errW)
			return nil, nil, err
		}
		stdio, outs = []*os.File{in, outW, errW}, []*os.File{outR, errR}
	}
	cwd := ""
	if req.Process.Cwd != nil {
		cwd = *req.Process.Cwd
	}
	args := append([]string{req.Process.Cmd}, req.Process.Args...)
	spec := sb.spec(u, args, cwd, req.Process.Envs)
	spec.Terminal = req.Pty != nil
	e, err := sb.inst.exec(spec, stdio...)
	closeAll(stdio...)
	if err != nil {
		if req.Pty == nil {
			closeAll(input)
		}
		closeAll(outs...)
		return nil, nil, rpcErrorf(codeInvalidArgument, "starting %s: %v", req.Process.Cmd, err)
	}
	p := &process{pid: e.pid, tag: req.Tag, config: *req.Process, exec: e,
		subs: make(map[*stream]struct{}), done: make(chan struct{})}
	if req.Pty != nil {
		p.pty = input
	} else {
		p.stdin = input
	}
	sb.mu.Lock()
	if sb.dead {
		sb.mu.Unlock()
		e.abandon()
		if req.Pty == nil {
			closeAll(input)
		}
		closeAll(outs...)
		return nil, nil, rpcErrorf(codeUnavailable, "the sandbox was killed")
	}
	sb.procs[p.pid] = p
	sb.mu.Unlock()
	return p, outs, nil
}

// begin sends the process's output to its subscribers, and its end
// once it has ended and its output is all out. With a terminal, outs is
// its master, which ends when the sentry lets go of the terminal.
func (sb *sandbox) begin(p *process, outs []*os.File) {
	go func() {
		ended := make(chan struct{})
		var pumps sync.WaitGroup
		for i, f := range outs {
			kind := outputStdout
			switch {
			case p.pty != nil:
				kind = outputPty
			case i == 1:
				kind = outputStderr
			}
			pumps.Add(1)
			go func() { defer pumps.Done(); pump(f, outputWriter{p, kind}, ended) }()
		}
		code := p.exec.wait()
		close(ended)
		pumps.Wait()
		p.closeStdin()
		sb.mu.Lock()
		delete(sb.procs, p.pid)
		sb.mu.Unlock()
		p.finish(code)
	}()
}

// Kinds of output.
const (
	outputStdout = iota
	outputStderr
	outputPty
)

// outputWriter turns one output stream of p into data events.
type outputWriter struct {
	p    *process
	kind int
}

func (o outputWriter) Write(b []byte) (int, error) {
	data := append([]byte(nil), b...)
	ev := &dataEvent{Stdout: data}
	switch o.kind {
	case outputStderr:
		ev = &dataEvent{Stderr: data}
	case outputPty:
		ev = &dataEvent{Pty: data}
	}
	o.p.broadcast(processEvent{Data: ev})
	return len(b), nil
}

func (p *process) broadcast(ev processEvent) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.subs {
		if s.Send(eventResponse{Event: ev}) != nil {
			delete(p.subs, s)
		}
	}
}

// subscribe sends p's events to s from now on, starting with a start
// event; it is false once p has ended.
func (p *process) subscribe(s *stream) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return false
	}
	p.subs[s] = struct{}{}
	s.Send(eventResponse{Event: processEvent{Start: &startEvent{Pid: p.pid}}})
	return true
}

func (p *process) unsubscribe(s *stream) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.subs, s)
}

// finish sends the end event for the host status code.
func (p *process) finish(code int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	end := &endEvent{ExitCode: int32(code), Exited: true, Status: "exit status " + strconv.Itoa(code)}
	// A signal the API sent that killed it ends it as Go's os/exec (and so
	// envd) reports a killed process: no exit code.
	if sig := p.signalled; sig != 0 && code == 128+int(sig) {
		end = &endEvent{ExitCode: -1, Exited: false, Status: "signal: " + unix.SignalName(sig)}
		if sig == unix.SIGKILL {
			end.Status = "signal: killed"
		}
	}
	p.ended = true
	for s := range p.subs {
		s.Send(eventResponse{Event: processEvent{End: end}})
	}
	p.subs = nil
	close(p.done)
}

// follow keeps the call open until p ends or ctx does, with a keepalive
// event every interval (none if 0).
func (p *process) follow(ctx context.Context, s *stream, interval time.Duration) error {
	var tick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-p.done:
			return nil
		case <-ctx.Done():
			p.unsubscribe(s)
			return ctx.Err()
		case <-tick:
			p.mu.Lock()
			if _, ok := p.subs[s]; ok {
				s.Send(eventResponse{Event: processEvent{Keepalive: &struct{}{}}})
			}
			p.mu.Unlock()
		}
	}
}

func (p *process) closeStdin() {
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin != nil {
		p.stdin.Close()
		p.stdin = nil
	}
}

// find is the running process sel names.
func (sb *sandbox) find(sel processSelector) (*process, error) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	switch {
	case sel.Pid != nil:
		if p, ok := sb.procs[*sel.Pid]; ok {
			return p, nil
		}
		return nil, rpcErrorf(codeNotFound, "process with pid %d not found", *sel.Pid)
	case sel.Tag != nil:
		for _, p := range sb.procs {
			if p.tag != nil && *p.tag == *sel.Tag {
				return p, nil
			}
		}
		return nil, rpcErrorf(codeNotFound, "process with tag %q not found", *sel.Tag)
	}
	return nil, rpcErrorf(codeInvalidArgument, "no process selected: give a pid or a tag")
}

func (sb *sandbox) listProcesses() *listResponse {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	resp := &listResponse{Processes: []processInfo{}}
	for _, p := range sb.procs {
		resp.Processes = append(resp.Processes, processInfo{Config: p.config, Pid: p.pid, Tag: p.tag})
	}
	return resp
}

func (sb *sandbox) sendInput(req *sendInputRequest) error {
	p, err := sb.find(req.Process)
	if err != nil {
		return err
	}
	if req.Input.Pty != nil {
		if p.pty == nil {
			return rpcErrorf(codeFailedPrecondition, "process %d has no terminal", p.pid)
		}
		if _, err := p.pty.Write(req.Input.Pty); err != nil {
			return rpcErrorf(codeFailedPrecondition, "writing to the terminal of process %d: %v", p.pid, err)
		}
		return nil
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin == nil {
		return rpcErrorf(codeFailedPrecondition, "process %d has no stdin open (start it with stdin)", p.pid)
	}
	if _, err := p.stdin.Write(req.Input.Stdin); err != nil {
		return rpcErrorf(codeFailedPrecondition, "writing to the stdin of process %d: %v", p.pid, err)
	}
	return nil
}

func (sb *sandbox) sendSignal(req *sendSignalRequest) error {
	p, err := sb.find(req.Process)
	if err != nil {
		return err
	}
	sig := syscall.Signal(req.Signal)
	if sig != unix.SIGKILL && sig != unix.SIGTERM {
		return rpcErrorf(codeInvalidArgument, "signal %d: envd sends SIGTERM or SIGKILL", req.Signal)
	}
	p.mu.Lock()
	p.signalled = sig
	p.mu.Unlock()
	if err := p.exec.signal(sig); err != nil {
		return rpcErrorf(codeNotFound, "process %d: %v", p.pid, err)
	}
	return nil
}

func (sb *sandbox) closeStdinOf(req *closeStdinRequest) error {
	p, err := sb.find(req.Process)
	if err != nil {
		return err
	}
	p.closeStdin()
	return nil
}

type updateRequest struct {
	Process processSelector `json:"process"`
	Pty     *ptyConfig      `json:"pty,omitempty"`
}

// update resizes a process's terminal.
func (sb *sandbox) update(req *updateRequest) error {
	p, err := sb.find(req.Process)
	if err != nil {
		return err
	}
	if req.Pty == nil || req.Pty.Size == nil {
		return nil
	}
	if p.pty == nil {
		return rpcErrorf(codeFailedPrecondition, "process %d has no terminal", p.pid)
	}
	cols, rows := req.Pty.Size.Cols, req.Pty.Size.Rows
	if cols == 0 || rows == 0 || cols > 0xffff || rows > 0xffff {
		return rpcErrorf(codeInvalidArgument, "pty size %dx%d is out of range", cols, rows)
	}
	return resize(p.pty, uint16(cols), uint16(rows))
}
