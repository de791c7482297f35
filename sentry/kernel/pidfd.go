package kernel

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/vfs"
	"github.com/moat-sandbox/moat/sentry/waiter"
)

// What pidfds (pidfd_open, pidfd_send_signal, pidfd_getfd, waitid's
// P_PIDFD, clone's CLONE_PIDFD) need of a process: a pidfd holds the
// ThreadGroup itself, so that a pid used again never redirects it.

// PidfdTarget is the process pidfd_open(pid) refers to, as t sees pid: a
// zombie too. A thread that leads no process is EINVAL (as Linux before
// PIDFD_THREAD), no task at all ESRCH.
func (t *Task) PidfdTarget(pid int32) (*ThreadGroup, error) {
	if pid <= 0 {
		return nil, unix.EINVAL
	}
	k := t.k
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	pid = t.tg.pidns.rootOf(pid)
	if tg := k.tgs[pid]; tg != nil {
		return tg, nil
	}
	if k.tasks[pid] != nil {
		return nil, unix.EINVAL
	}
	return nil, unix.ESRCH
}

// Reaped reports whether the process's end has been waited for: its pid
// is free, and a pidfd's signal finds no one (ESRCH).
func (tg *ThreadGroup) Reaped() bool {
	tg.k.treeMu.Lock()
	defer tg.k.treeMu.Unlock()
	return tg.k.tgs[tg.pid] != tg
}

// Ended reports whether every task of the process has exited: a pidfd
// polls readable from then on, reaped or not.
func (tg *ThreadGroup) Ended() bool {
	tg.k.treeMu.Lock()
	defer tg.k.treeMu.Unlock()
	return tg.zombie
}

// Dying reports whether the process is on its way out (exit_group, a
// fatal signal) while some of its tasks live on.
func (tg *ThreadGroup) Dying() bool {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.exiting
}

// ExitQueue is notified when the process ends, for pidfds' poll.
func (tg *ThreadGroup) ExitQueue() *waiter.Queue { return &tg.exitQueue }

// GetFileOf is pidfd_getfd's copy of descriptor fd of process tg: it needs
// what PTRACE_ATTACH with real credentials would (EPERM), the process
// must not be reaped (ESRCH), and it must hold fd (EBADF, as it is for a
// zombie, which holds none). The caller drops the reference.
func (t *Task) GetFileOf(tg *ThreadGroup, fd int32) (*vfs.File, error) {
	if tg.Reaped() {
		return nil, unix.ESRCH
	}
	target := tg.Leader()
	if target == nil {
		return nil, unix.EBADF
	}
	if !t.MayPtrace(target, PtraceAttachRealCreds) {
		return nil, unix.EPERM
	}
	return target.FDs().Get(fd)
}
