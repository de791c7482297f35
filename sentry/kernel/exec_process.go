package kernel

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// ErrSandboxEnded is StartProcess's answer once init has ended: the
// container has stopped and nothing more can run in it.
var ErrSandboxEnded = errors.New("the sandbox has ended")

// Process is a process started from outside the sandbox (`moat exec`),
// as runc's exec starts one with setns: its parent is outside the
// sandbox, like init's (getppid gives 0), it leads a session and process
// group of its own, and when it ends it is reaped at once, its status
// kept here for whoever started it. The processes it leaves behind go to
// init, as orphans in a pid namespace do.
type Process struct {
	tg   *ThreadGroup
	done chan struct{}
}

// StartProcess makes the process s describes and runs it at once. It
// takes over the caller's references to the files of s, and releases them
// if it fails.
func (k *Kernel) StartProcess(s InitSpec) (*Process, error) {
	tg, t, err := k.buildProcess(s)
	if err != nil {
		for _, f := range append(s.Stdio[:], s.ExtraFiles...) {
			if f != nil {
				f.DecRef()
			}
		}
		return nil, err
	}
	p := &Process{tg: tg, done: make(chan struct{})}
	tg.outsideDone = p.done
	k.treeMu.Lock()
	tid := int32(0)
	if k.init != nil && !k.init.zombie {
		tid = k.allocTIDLocked()
	}
	// As runc's exec forks into the container's cgroup, the process is
	// one more task for pids.max.
	full := tid != 0 && k.pidsFullLocked()
	if tid == 0 || full {
		k.treeMu.Unlock()
		if !t.mm.DecUsers() { // what buildProcess made, never run
			t.ctx.Release()
		}
		t.fds.DecRef()
		switch {
		case k.init == nil || k.init.zombie:
			return nil, ErrSandboxEnded
		case full:
			return nil, fmt.Errorf("the sandbox is at its pids.max: %w", unix.EAGAIN)
		}
		return nil, errors.New("no process id is free")
	}
	tg.pid, t.tid = tid, tid
	k.registerLocked(tg, s.Console)
	k.treeMu.Unlock()
	go t.run()
	return p, nil
}

// PID is the process's id in the sandbox.
func (p *Process) PID() int32 { return p.tg.pid }

// Done is closed when the process has ended; ExitStatus then says how.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitStatus is how the process ended; valid once Done is closed.
func (p *Process) ExitStatus() ExitStatus {
	p.tg.mu.Lock()
	defer p.tg.mu.Unlock()
	return p.tg.status
}

// Signal sends sig to the process from outside the sandbox, as runc's
// exec passes on a signal it receives (kill(2) from the parent pid
// namespace: with the sender's pid 0).
func (p *Process) Signal(sig int) {
	if sig <= 0 || !ValidSignal(sig) {
		return
	}
	p.tg.SendSignal(SigInfo{Signo: int32(sig), Code: linuxabi.SI_USER})
}
