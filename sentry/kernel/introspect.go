package kernel

import (
	"sort"
	"time"

	"github.com/moat-sandbox/moat/sentry/vfs"
)

// What /proc shows of tasks and processes: read-only views for procfs.

// ThreadGroups returns the living processes, by pid.
func (k *Kernel) ThreadGroups() []*ThreadGroup {
	k.treeMu.Lock()
	var out []*ThreadGroup
	for _, tg := range k.tgs {
		if !tg.zombie {
			out = append(out, tg)
		}
	}
	k.treeMu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].pid < out[j].pid })
	return out
}

// TaskByTID returns the living task tid, or nil.
func (k *Kernel) TaskByTID(tid int32) *Task {
	k.treeMu.Lock()
	defer k.treeMu.Unlock()
	return k.tasks[tid]
}

// BootTime is when the sandbox started.
func (k *Kernel) BootTime() time.Time { return k.bootTime }

// PID is the process id.
func (tg *ThreadGroup) PID() int32 { return tg.pid }

// Tasks returns the process's living tasks, the leader first.
func (tg *ThreadGroup) Tasks() []*Task {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return append([]*Task(nil), tg.tasks...)
}

// Leader returns the process's main task, or nil once all have exited.
func (tg *ThreadGroup) Leader() *Task {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if len(tg.tasks) == 0 {
		return nil
	}
	return tg.tasks[0]
}

// Executable is the file the task's program was loaded from.
func (t *Task) Executable() vfs.Path {
	t.tg.mu.Lock()
	defer t.tg.mu.Unlock()
	return t.exe
}

// StartTime is when the task started.
func (t *Task) StartTime() time.Time { return t.started }

// FDInfo is one entry of an fd table.
type FDInfo struct {
	FD          int32
	File        *vfs.File
	CloseOnExec bool
}

// Snapshot lists the open fds in order. The files are not referenced: use
// them only for what they name.
func (t *FDTable) Snapshot() []FDInfo {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []FDInfo
	for fd, e := range t.files {
		if e.file != nil {
			out = append(out, FDInfo{FD: int32(fd), File: e.file, CloseOnExec: e.cloexec})
		}
	}
	return out
}

// Umask returns the umask.
func (f *FSContext) Umask() uint32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.umask
}
