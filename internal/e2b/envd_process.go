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

	mu        sync.Mutex
	subs      map[*stream]struct{}
	ended     bool
	signalled syscall.Signal // the last signal sent through the API
	done      chan struct{}
}

// startProcess starts req's command as u and registers it; its output
// waits in the pipes until begin.
func (sb *sandbox) startProcess(u guestUser, req *startRequest) (*process, [2]*os.File, error) {
	var none [2]*os.File
	if req.Process == nil || req.Process.Cmd == "" {
		return nil, none, rpcErrorf(codeInvalidArgument, "process.cmd is empty")
	}
	if req.Pty != nil {
		return nil, none, rpcErrorf(codeUnimplemented, "pty: moat serve does not give commands a terminal yet")
	}
	var stdio [3]*os.File
	var stdinW *os.File
	var outs [2]*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			if f != nil {
				f.Close()
			}
		}
	}
	var err error
	if req.Stdin != nil && *req.Stdin {
		stdio[0], stdinW, err = os.Pipe()
	} else {
		stdio[0], err = os.Open(os.DevNull)
	}
	if err == nil {
		outs[0], stdio[1], err = os.Pipe()
	}
	if err == nil {
		outs[1], stdio[2], err = os.Pipe()
	}
	if err != nil {
		closeAll(append(stdio[:], stdinW, outs[0], outs[1]))
		return nil, none, err
	}
	cwd := ""
	if req.Process.Cwd != nil {
		cwd = *req.Process.Cwd
	}
	args := append([]string{req.Process.Cmd}, req.Process.Args...)
	e, err := sb.inst.exec(sb.spec(u, args, cwd, req.Process.Envs), stdio)
	closeAll(stdio[:])
	if err != nil {
		closeAll([]*os.File{stdinW, outs[0], outs[1]})
		return nil, none, rpcErrorf(codeInvalidArgument, "starting %s: %v", req.Process.Cmd, err)
	}
	p := &process{pid: e.pid, tag: req.Tag, config: *req.Process, exec: e, stdin: stdinW,
		subs: make(map[*stream]struct{}), done: make(chan struct{})}
	sb.mu.Lock()
	if sb.dead {
		sb.mu.Unlock()
		e.abandon()
		closeAll([]*os.File{stdinW, outs[0], outs[1]})
		return nil, none, rpcErrorf(codeUnavailable, "the sandbox was killed")
	}
	sb.procs[p.pid] = p
	sb.mu.Unlock()
	return p, outs, nil
}

// begin sends the process's output to its subscribers, and its end
// once it has ended and its output is all out.
func (sb *sandbox) begin(p *process, outs [2]*os.File) {
	go func() {
		ended := make(chan struct{})
		var pumps sync.WaitGroup
		pumps.Add(2)
		go func() { defer pumps.Done(); pump(outs[0], outputWriter{p, false}, ended) }()
		go func() { defer pumps.Done(); pump(outs[1], outputWriter{p, true}, ended) }()
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

// outputWriter turns one output stream of p into data events.
type outputWriter struct {
	p      *process
	stderr bool
}

func (o outputWriter) Write(b []byte) (int, error) {
	data := append([]byte(nil), b...)
	ev := &dataEvent{Stdout: data}
	if o.stderr {
		ev = &dataEvent{Stderr: data}
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
		return rpcErrorf(codeFailedPrecondition, "process %d has no terminal", p.pid)
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
