package kernel

import (
	"errors"
	"fmt"
	"sync"

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
	tg      *ThreadGroup
	done    chan struct{}
	runOnce sync.Once
}

// StartProcess makes the process s describes and runs it at once. It
// takes over the caller's references to the files of s, and releases them
// if it fails.
func (k *Kernel) StartProcess(s InitSpec) (*Process, error) {
	p, err := k.CreateProcess(s)
	if err != nil {
		return nil, err
	}
	p.Run()
	return p, nil
}

// CreateProcess is StartProcess without the start: the process has its
// pid and is in the tree, loaded, but runs no code until Run (the init
// of a pod's container, between `moat create` and `moat start`). Signals
// sent meanwhile wait for it; a SIGKILL ends it as soon as it runs.
func (k *Kernel) CreateProcess(s InitSpec) (*Process, error) {
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
	ns, vpid := s.PIDNamespace, tid
	var nsErr error
	if tid != 0 && !full && ns != nil {
		vpid, nsErr = k.enterLocked(ns, tid)
	}
	if tid == 0 || full || nsErr != nil {
		k.treeMu.Unlock()
		if !t.mm.DecUsers() { // what buildProcess made, never run
			t.ctx.Release()
		}
		t.fds.DecRef()
		switch {
		case k.init == nil || k.init.zombie || nsErr == unix.ENOMEM:
			return nil, ErrSandboxEnded // the sandbox's init or the namespace's has ended
		case full:
			return nil, fmt.Errorf("the sandbox is at its pids.max: %w", unix.EAGAIN)
		}
		return nil, errors.New("no process id is free")
	}
	tg.pid, t.tid = tid, tid
	k.registerLocked(tg, s.Console)
	if ns != nil && ns.level > 0 {
		tg.pidns, tg.vpid, t.vtid, t.childPIDNS = ns, vpid, vpid, ns
		if ns.init == nil {
			ns.init = tg // its first process, pid 1
		}
	}
	k.treeMu.Unlock()
	return p, nil
}

// NewPIDNamespace makes a pid namespace nested in the sandbox's, for
// InitSpec.PIDNamespace.
func (k *Kernel) NewPIDNamespace() (*PIDNamespace, error) { return k.rootPIDNS.newChild() }

// Run starts the process CreateProcess made; later calls do nothing.
func (p *Process) Run() {
	p.runOnce.Do(func() { go p.tg.tasks[0].run() })
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

// SignalAsInit sends sig to the process from outside the sandbox as
// Linux sends it to a pid namespace's init from the parent namespace:
// SIGKILL always, another signal only if the process has a handler for
// it. The init of a pod's container stands where its own pid
// namespace's init would.
func (p *Process) SignalAsInit(sig int) {
	if sig != int(unix.SIGKILL) && !p.tg.handles(sig) {
		return
	}
	p.Signal(sig)
}

// SignalContainer sends sig from outside the sandbox to every process of
// the pod's container id (InitSpec.Container): `moat kill --all`, and
// the end of a container, whose processes end with its init as those of
// a pid namespace do.
func (k *Kernel) SignalContainer(id string, sig int) {
	if sig <= 0 || !ValidSignal(sig) {
		return
	}
	for _, tg := range k.ThreadGroups() {
		if tg.container == id {
			tg.SendSignal(SigInfo{Signo: int32(sig), Code: linuxabi.SI_USER})
		}
	}
}

// Container is the pod's container the process belongs to, "" for the
// sandbox's own.
func (tg *ThreadGroup) Container() string { return tg.container }
