package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/ipc"
)

// What the System V IPC calls (sys_ipc_shm.go, sys_ipc_sem.go,
// sys_ipc_msg.go) share: the caller as the ipc package sees it, and the
// kernel's struct ipc64_perm.

// ipcCaller describes t for a permission check: Linux compares the
// effective uid, and the fs gid and groups (in_group_p).
func ipcCaller(t *kernel.Task) *ipc.Caller {
	caps := t.CapsIn(kernel.IPCOwner(t.IPCNamespace())) // those over the namespace's objects
	c := t.Creds()
	c.Lock()
	defer c.Unlock()
	return &ipc.Caller{PID: t.ThreadGroup().PID(), EUID: c.EUID, EGID: c.FSGID, Groups: append([]uint32(nil), c.Groups...),
		Caps: caps}
}

// ipc64Perm is struct ipc64_perm on x86-64.
type ipc64Perm struct {
	Key                  int32
	UID, GID, CUID, CGID uint32
	Mode                 uint16
	_                    uint16
	Seq                  uint16
	_                    uint16
	_                    [2]uint64
}

func toIPC64Perm(p ipc.Perm) ipc64Perm {
	return ipc64Perm{Key: p.Key, UID: p.UID, GID: p.GID, CUID: p.CUID, CGID: p.CGID, Mode: p.Mode, Seq: p.Seq}
}

// setting is what IPC_SET takes from a perm.
func (p *ipc64Perm) setting() ipc.Setting { return ipc.Setting{UID: p.UID, GID: p.GID, Mode: p.Mode} }

// statCmd maps the *_STAT commands: IPC_STAT names an id, the others an
// index (the _ANY form without the read check).
func statCmd(cmd, byIndex, byIndexAny int) ipc.StatCmd {
	switch cmd {
	case byIndex:
		return ipc.StatIndex
	case byIndexAny:
		return ipc.StatIndexAny
	}
	return ipc.StatID
}

// statReturn is what a *_STAT command returns: the object's id for the
// index forms, 0 for IPC_STAT.
func statReturn(cmd int, id int32) uintptr {
	if cmd == unix.IPC_STAT {
		return 0
	}
	return uintptr(id)
}
