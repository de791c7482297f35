package kernel

import "golang.org/x/sys/unix"

// Process groups and sessions, and finding processes by id.

// ThreadGroupByPID returns the process pid (a zombie too), or nil.
func (k *Kernel) ThreadGroupByPID(pid int32) *ThreadGroup {
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	return k.tgs[pid]
}

// ProcessGroup returns the living processes of group pgid.
func (k *Kernel) ProcessGroup(pgid int32) []*ThreadGroup {
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	var out []*ThreadGroup
	for _, tg := range k.tgs {
		if tg.pgid == pgid && !tg.zombie {
			out = append(out, tg)
		}
	}
	return out
}

// Setpgid implements setpgid(2): pid 0 is the caller, pgid 0 is pid.
func (t *Task) Setpgid(pid, pgid int32) error {
	k := t.k
	if pgid < 0 {
		return unix.EINVAL
	}
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	self := t.tg
	// The caller's ids, as the kernel keys them (ns_pid.go): a pid not in
	// its namespace is no process of it, a group not there none it may
	// join.
	if pid != 0 {
		if pid = self.pidns.rootOf(pid); pid == 0 {
			return unix.ESRCH
		}
	}
	if pgid != 0 {
		if pgid = self.pidns.rootOf(pgid); pgid == 0 {
			return unix.EPERM
		}
	}
	target := self
	if pid != 0 && pid != self.pid {
		target = k.tgs[pid]
		if target == nil || target.parent != self {
			return unix.ESRCH
		}
		// A child in another session is EPERM, exec'd or not: Linux looks
		// at the session first.
		if target.sid != self.sid {
			return unix.EPERM
		}
		if target.execed {
			return unix.EACCES
		}
	}
	if pgid == 0 {
		pgid = target.pid
	}
	if target.pid == target.sid {
		return unix.EPERM // a session leader cannot move
	}
	if pgid != target.pid {
		ok := false
		for _, tg := range k.tgs {
			if tg.pgid == pgid && tg.sid == self.sid && !tg.zombie {
				ok = true
				break
			}
		}
		if !ok {
			return unix.EPERM
		}
	}
	target.pgid = pgid
	return nil
}

// Setsid implements setsid(2).
func (t *Task) Setsid() (int32, error) {
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	tg := t.tg
	for _, o := range k.tgs {
		if o.pgid == tg.pid && !o.zombie {
			return 0, unix.EPERM // already a process group leader
		}
	}
	// A new session starts with no controlling terminal.
	tg.sid, tg.pgid, tg.tty = tg.pid, tg.pid, nil
	return tg.vpid, nil
}

// PGIDIn and SIDIn return a process's group and session (getpgid,
// getsid) as pid namespace ns sees them: 0 for one outside it.
func (tg *ThreadGroup) PGIDIn(ns *PIDNamespace) int32 {
	tg.k.treeMu.Lock()
	defer tg.k.treeMu.Unlock()
	return ns.idOf(tg.pgid)
}

// SIDIn returns the process's session as ns sees it.
func (tg *ThreadGroup) SIDIn(ns *PIDNamespace) int32 {
	tg.k.treeMu.Lock()
	defer tg.k.treeMu.Unlock()
	return ns.idOf(tg.sid)
}

// signalImmune reports whether tg is an init that ignores the signals it
// has no handler for: the sandbox's (unless InitSpec.PlainSignals said
// otherwise) or a nested pid namespace's (ns_pid_init.go).
func (tg *ThreadGroup) signalImmune() bool {
	return (tg == tg.k.init && !tg.k.initPlainSignals) || tg.NamespaceInit()
}

// Unkillable reports whether sig, sent from inside the sandbox, cannot
// reach tg: init takes SIGKILL and SIGSTOP only from outside (Linux's
// SIGNAL_UNKILLABLE); other signals it has no handler for it ignores. An
// init with InitSpec.PlainSignals takes them as any process does.
func (tg *ThreadGroup) Unkillable(sig int) bool {
	return tg.signalImmune() && (sig == int(unix.SIGKILL) || sig == int(unix.SIGSTOP))
}
