package kernel

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel/ipc"
)

// A task's System V IPC: its IPC namespace, which clone inherits, and its
// semaphore undo list (SEM_UNDO), which CLONE_SYSVSEM shares and which is
// applied when the last task holding it exits.

// newRootIPC is the sandbox's IPC namespace, whose times are the guest's
// realtime clock.
func (k *Kernel) newRootIPC() *ipc.Namespace {
	return ipc.NewNamespace(k.MemFile, func() time.Time {
		ts, _ := k.ClockGettime(unix.CLOCK_REALTIME, nil)
		return time.Unix(ts.Sec, ts.Nsec)
	})
}

// IPCNamespace is the task's IPC namespace.
func (t *Task) IPCNamespace() *ipc.Namespace { return t.ipcns }

// RootIPCNamespace is the sandbox's first IPC namespace, the one /proc
// shows.
func (k *Kernel) RootIPCNamespace() *ipc.Namespace { return k.ipcns }

// SemUndo returns the task's undo list, made on first use. Only the task
// calls it; tasks that share a list got it at clone.
func (t *Task) SemUndo() *ipc.UndoList {
	if t.semUndo == nil {
		t.semUndo = ipc.NewUndoList(t.ipcns)
	}
	return t.semUndo
}

// cloneSemUndo gives child the list it starts with: t's, shared, with
// CLONE_SYSVSEM (made now if t has none, as Linux's copy_semundo does),
// else none.
func (t *Task) cloneSemUndo(child *Task, flags uint64) {
	if flags&unix.CLONE_SYSVSEM != 0 {
		u := t.SemUndo()
		u.IncRef()
		child.semUndo = u
	}
}

// releaseSemUndo drops the task's hold on its undo list, applying it if
// it was the last (exit, or unshare(CLONE_SYSVSEM)).
func (t *Task) releaseSemUndo() {
	if t.semUndo != nil {
		t.semUndo.DecRef(t.tg.pid)
		t.semUndo = nil
	}
}
