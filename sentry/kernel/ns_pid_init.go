package kernel

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
)

// The init of a nested pid namespace, as pid_namespaces(7) has it: it
// reaps the namespace's orphans (becomeZombieLocked), takes from inside
// the namespace only the signals it has handlers for, SIGKILL and SIGSTOP
// too, though from an ancestor namespace those two are forced
// (UnkillableBy), and its end kills every other process in the namespace
// (zapNamespace).

// zapPoll bounds each wait of zapNamespace for a killed process that is
// not init's child, whose end and reaping do not wake init.
const zapPoll = 10 * time.Millisecond

// zapNamespace is what a nested namespace's init does as its last task
// exits, Linux's zap_pid_ns_processes: the namespace takes no new
// process, every other process in it (those of namespaces nested in it
// too) is sent SIGKILL, and init reaps its children until no other id of
// the namespace is in use: a member whose parent is outside must have
// been reaped by that parent too. Only then does init become a zombie for
// its parent, as on Linux.
func (t *Task) zapNamespace() {
	k, tg, ns := t.k, t.tg, t.tg.pidns
	k.treeMu.Lock()
	ns.closed = true
	var victims []*ThreadGroup
	for _, id := range ns.rootIDs() {
		if o := k.tgs[id]; o != nil && o != tg && !o.zombie {
			victims = append(victims, o)
		}
	}
	k.treeMu.Unlock()
	kill := SigInfo{Signo: int32(unix.SIGKILL), Code: linuxabi.SI_KERNEL}
	for _, o := range victims {
		o.mu.Lock()
		o.sendLocked(kill, nil)
		o.mu.Unlock()
	}
	for {
		k.treeMu.Lock()
		ch := tg.childEvents.wait()
		left := false
		for _, id := range ns.rootIDs() {
			if id == tg.pid || id == t.tid {
				continue
			}
			if o := k.tgs[id]; o != nil && o.zombie && o.parent == tg && !o.childHeldByPtraceLocked(tg, false) {
				o.reapLocked()
				continue
			}
			left = true
		}
		k.treeMu.Unlock()
		if !left {
			return
		}
		select {
		case <-ch:
		case <-time.After(zapPoll):
		}
	}
}

// UnkillableBy reports whether sig, sent by sender, cannot reach tg: an
// init takes SIGKILL and SIGSTOP only from outside its namespace (the
// sandbox's init from outside the sandbox), as Linux's SIGNAL_UNKILLABLE.
func (tg *ThreadGroup) UnkillableBy(sender *Task, sig int) bool {
	if sig != int(unix.SIGKILL) && sig != int(unix.SIGSTOP) {
		return false
	}
	if tg.NamespaceInit() {
		from := sender.tg.pidns
		return from == tg.pidns || !from.IsAncestorOf(tg.pidns)
	}
	return tg.signalImmune()
}
