package kernel

import (
	"sync"
	"sync/atomic"
)

// freezer stops every guest thread of the sandbox (`moat pause`), as
// runc's cgroup freezer does a container: no guest code runs until it is
// thawed. A task frozen in its run loop waits there; one blocked in a
// system call goes on waiting for what it waits for, and freezes when it
// would next run guest code. Timers, signals and the guest's time go on
// meanwhile, as they do for a frozen cgroup; SIGKILL still ends the
// sandbox.
type freezer struct {
	frozen atomic.Bool
	mu     sync.Mutex
	thawed chan struct{} // closed by Thaw; replaced by each Freeze
}

// Freeze stops every guest thread; it returns once each is told, not
// once each has stopped (a thread running guest code stops at its next
// event, soon: it is interrupted).
func (k *Kernel) Freeze() {
	k.freezer.mu.Lock()
	if !k.freezer.frozen.Load() {
		k.freezer.thawed = make(chan struct{})
		k.freezer.frozen.Store(true)
	}
	k.freezer.mu.Unlock()
	k.treeMu.Lock()
	for _, t := range k.tasks {
		// Not kick: a blocked call must not be interrupted, which a
		// guest could see.
		t.check.Store(true)
		if t.ctx != nil {
			t.ctx.Interrupt()
		}
	}
	k.treeMu.Unlock()
}

// Thaw lets the guest threads run again.
func (k *Kernel) Thaw() {
	k.freezer.mu.Lock()
	defer k.freezer.mu.Unlock()
	if k.freezer.frozen.Load() {
		k.freezer.frozen.Store(false)
		close(k.freezer.thawed)
	}
}

// Frozen reports whether the sandbox is paused.
func (k *Kernel) Frozen() bool { return k.freezer.frozen.Load() }

// waitThawed holds the task while the sandbox is frozen, until it is
// thawed or the task must exit.
func (t *Task) waitThawed() {
	f := &t.k.freezer
	for f.frozen.Load() && !t.exiting.Load() {
		f.mu.Lock()
		ch := f.thawed
		f.mu.Unlock()
		if !f.frozen.Load() {
			return
		}
		t.park()
		select {
		case <-ch:
		case <-t.interrupt:
			// A kick: a signal to look at, or SIGKILL. Signals wait for
			// the thaw, except the exit, which the run loop sees.
			if !t.exiting.Load() {
				t.check.Store(true)
			}
		}
	}
}
