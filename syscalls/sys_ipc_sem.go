package syscalls

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/ipc"
)

// System V semaphores: semget, semop, semtimedop, semctl.

// semid64Ds is struct semid64_ds on x86-64.
type semid64Ds struct {
	Perm  ipc64Perm
	Otime int64
	_     uint64
	Ctime int64
	_     uint64
	Nsems uint64
	_     [2]uint64
}

// Semget implements Linux syscall semget(2).
func Semget(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	id, err := t.IPCNamespace().Semget(ipcCaller(t), a.Int(0), int(a.Int(1)), int(a.Int(2)))
	return retErr(uintptr(id), err)
}

// Semop implements Linux syscall semop(2).
func Semop(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, semtimedop(t, a.Int(0), a.Ptr(1), a[2], 0)
}

// Semtimedop implements Linux syscall semtimedop(2).
func Semtimedop(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return 0, semtimedop(t, a.Int(0), a.Ptr(1), a[2], a.Ptr(3))
}

// sizeofSembuf is sizeof(struct sembuf).
const sizeofSembuf = 6

func semtimedop(t *kernel.Task, id int32, sopsAddr uintptr, nsops uint64, timeout uintptr) error {
	ns := t.IPCNamespace()
	if nsops < 1 || int64(nsops) < 0 || id < 0 {
		return unix.EINVAL
	}
	if nsops > uint64(ns.SemOPM()) {
		return unix.E2BIG
	}
	buf := make([]byte, nsops*sizeofSembuf)
	if _, err := t.CopyIn(sopsAddr, buf); err != nil {
		return err
	}
	sops := make([]ipc.Sembuf, nsops)
	undo := false
	for i := range sops {
		b := buf[i*sizeofSembuf:]
		sops[i] = ipc.Sembuf{Num: binary.LittleEndian.Uint16(b), Op: int16(binary.LittleEndian.Uint16(b[2:])),
			Flg: int16(binary.LittleEndian.Uint16(b[4:]))}
		undo = undo || sops[i].Flg&linuxabi.SEM_UNDO != 0
	}
	var deadline time.Time
	if timeout != 0 {
		ts, err := copyInTimespec(t, timeout)
		if err != nil {
			return err
		}
		deadline = time.Now().Add(timespecDuration(ts))
	}
	var u *ipc.UndoList
	if undo {
		u = t.SemUndo()
	}
	return ns.Semop(ipcCaller(t), id, sops, u, t, deadline)
}

// Semctl implements Linux syscall semctl(2). The fourth argument is a
// union semun passed by value: an int for SETVAL, else a pointer.
func Semctl(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	id, num, cmd, arg := a.Int(0), int(a.Int(1)), int(a.Int(2)), a[3]
	if id < 0 {
		return 0, unix.EINVAL
	}
	ns, c := t.IPCNamespace(), ipcCaller(t)
	ptr := uintptr(arg)
	switch cmd {
	case linuxabi.IPC_INFO, linuxabi.SEM_INFO:
		info, maxIdx := ns.SemInfo(cmd == linuxabi.SEM_INFO)
		return uintptr(maxIdx), copyOutStruct(t, ptr, &info)
	case unix.IPC_STAT, linuxabi.SEM_STAT, linuxabi.SEM_STAT_ANY:
		st, err := ns.SemStat(c, id, statCmd(cmd, linuxabi.SEM_STAT, linuxabi.SEM_STAT_ANY))
		if err != nil {
			return 0, err
		}
		ds := semid64Ds{Perm: toIPC64Perm(st.Perm), Otime: st.Otime, Ctime: st.Ctime, Nsems: st.Nsems}
		return statReturn(cmd, st.Perm.ID), copyOutStruct(t, ptr, &ds)
	case linuxabi.GETVAL, linuxabi.GETPID, linuxabi.GETNCNT, linuxabi.GETZCNT:
		v, err := ns.SemRead(c, id, num, cmd)
		if cmd == linuxabi.GETPID {
			v = int(t.SeenID(int32(v)))
		}
		return retErr(uintptr(v), err)
	case linuxabi.GETALL:
		vals, err := ns.SemGetAll(c, id)
		if err != nil {
			return 0, err
		}
		out := make([]byte, 2*len(vals))
		for i, v := range vals {
			binary.LittleEndian.PutUint16(out[2*i:], v)
		}
		_, err = t.CopyOut(ptr, out)
		return 0, err
	case linuxabi.SETVAL:
		return 0, ns.SemSetVal(c, id, num, int(int32(arg)))
	case linuxabi.SETALL:
		n, err := ns.SemCount(c, id, true)
		if err != nil {
			return 0, err
		}
		in := make([]byte, 2*n)
		if _, err := t.CopyIn(ptr, in); err != nil {
			return 0, err
		}
		vals := make([]int, n)
		for i := range vals {
			vals[i] = int(binary.LittleEndian.Uint16(in[2*i:]))
		}
		return 0, ns.SemSetAll(c, id, vals)
	case unix.IPC_SET:
		var ds semid64Ds
		if err := copyInStruct(t, ptr, &ds); err != nil {
			return 0, err
		}
		return 0, ns.SemSetPerm(c, id, ds.Perm.setting())
	case unix.IPC_RMID:
		return 0, ns.SemRemove(c, id)
	}
	return 0, unix.EINVAL
}
