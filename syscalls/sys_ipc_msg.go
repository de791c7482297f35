package syscalls

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// System V message queues: msgget, msgsnd, msgrcv, msgctl.

// msqid64Ds is struct msqid64_ds on x86-64.
type msqid64Ds struct {
	Perm                 ipc64Perm
	Stime, Rtime, Ctime  int64
	Cbytes, Qnum, Qbytes uint64
	LSPID, LRPID         int32
	_                    [2]uint64
}

// Msgget implements Linux syscall msgget(2).
func Msgget(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	id, err := t.IPCNamespace().Msgget(ipcCaller(t), a.Int(0), int(a.Int(1)))
	return retErr(uintptr(id), err)
}

// Msgsnd implements Linux syscall msgsnd(2): struct msgbuf is a long
// type, then the text.
func Msgsnd(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	id, msgp, size, flags := a.Int(0), a.Ptr(1), a[2], int(a.Int(3))
	var mtype [8]byte
	if _, err := t.CopyIn(msgp, mtype[:]); err != nil {
		return 0, err
	}
	ns := t.IPCNamespace()
	if size > uint64(ns.MsgMax()) || id < 0 {
		return 0, unix.EINVAL
	}
	typ := int64(binary.LittleEndian.Uint64(mtype[:]))
	if typ < 1 {
		return 0, unix.EINVAL
	}
	text := make([]byte, size)
	if _, err := t.CopyIn(msgp+8, text); err != nil {
		return 0, err
	}
	return 0, ns.Msgsnd(ipcCaller(t), id, typ, text, flags, t)
}

// Msgrcv implements Linux syscall msgrcv(2); it returns the bytes of text
// copied. A message taken off the queue is lost if it cannot be copied.
func Msgrcv(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	id, msgp, size, mtype, flags := a.Int(0), a.Ptr(1), int64(a[2]), int64(a[3]), int(a.Int(4))
	if id < 0 || size < 0 {
		return 0, unix.EINVAL
	}
	ns := t.IPCNamespace()
	if flags&linuxabi.MSG_COPY != 0 {
		size = min(size, int64(ns.MsgMax()))
	}
	typ, text, err := ns.Msgrcv(ipcCaller(t), id, int(min(size, 1<<31-1)), mtype, flags, t)
	if err != nil {
		return 0, err
	}
	out := make([]byte, 8+len(text))
	binary.LittleEndian.PutUint64(out, uint64(typ))
	copy(out[8:], text)
	if _, err := t.CopyOut(msgp, out); err != nil {
		return 0, err
	}
	return uintptr(len(text)), nil
}

// Msgctl implements Linux syscall msgctl(2).
func Msgctl(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	id, cmd, buf := a.Int(0), int(a.Int(1)), a.Ptr(2)
	if cmd < 0 || id < 0 {
		return 0, unix.EINVAL
	}
	ns, c := t.IPCNamespace(), ipcCaller(t)
	switch cmd {
	case linuxabi.IPC_INFO, linuxabi.MSG_INFO:
		info, maxIdx := ns.MsgInfo(cmd == linuxabi.MSG_INFO)
		return uintptr(maxIdx), copyOutStruct(t, buf, &info)
	case unix.IPC_STAT, linuxabi.MSG_STAT, linuxabi.MSG_STAT_ANY:
		st, err := ns.MsgStat(c, id, statCmd(cmd, linuxabi.MSG_STAT, linuxabi.MSG_STAT_ANY))
		if err != nil {
			return 0, err
		}
		ds := msqid64Ds{Perm: toIPC64Perm(st.Perm), Stime: st.Stime, Rtime: st.Rtime, Ctime: st.Ctime,
			Cbytes: st.Cbytes, Qnum: st.Qnum, Qbytes: st.Qbytes, LSPID: t.SeenID(st.LSPID), LRPID: t.SeenID(st.LRPID)}
		return statReturn(cmd, st.Perm.ID), copyOutStruct(t, buf, &ds)
	case unix.IPC_SET:
		var ds msqid64Ds
		if err := copyInStruct(t, buf, &ds); err != nil {
			return 0, err
		}
		return 0, ns.MsgSetPerm(c, id, ds.Perm.setting(), ds.Qbytes)
	case unix.IPC_RMID:
		return 0, ns.MsgRemove(c, id)
	}
	return 0, unix.EINVAL
}
