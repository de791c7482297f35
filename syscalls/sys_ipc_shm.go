package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/platform"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/kernel/ipc"
	"github.com/moat-sandbox/moat/sentry/mm"
)

// System V shared memory: shmget, shmat, shmdt, shmctl.

// shmid64Ds is struct shmid64_ds on x86-64.
type shmid64Ds struct {
	Perm                ipc64Perm
	Segsz               uint64
	Atime, Dtime, Ctime int64
	CPID, LPID          int32
	Nattch              uint64
	_                   [2]uint64
}

// Shmget implements Linux syscall shmget(2).
func Shmget(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	id, err := t.IPCNamespace().Shmget(ipcCaller(t), a.Int(0), a[1], int(a.Int(2)))
	return retErr(uintptr(id), err)
}

// shmLBA is SHMLBA, the alignment of an attach address: a page on x86.
const shmLBA = mm.PageSize

// Shmat implements Linux syscall shmat(2): the segment mapped shared, at
// an address the kernel picks or at addr (rounded down with SHM_RND,
// replacing what is there only with SHM_REMAP), read-only with
// SHM_RDONLY, executable with SHM_EXEC.
func Shmat(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	id, addr, flags := a.Int(0), a.Ptr(1), int(a.Int(2))
	if id < 0 {
		return 0, unix.EINVAL
	}
	if addr != 0 && addr%shmLBA != 0 {
		if flags&unix.SHM_RND == 0 {
			return 0, unix.EINVAL
		}
		addr &^= shmLBA - 1
		if addr == 0 && flags&linuxabi.SHM_REMAP != 0 {
			return 0, unix.EINVAL
		}
	}
	if addr == 0 && flags&linuxabi.SHM_REMAP != 0 {
		return 0, unix.EINVAL
	}
	readOnly, exec := flags&unix.SHM_RDONLY != 0, flags&linuxabi.SHM_EXEC != 0
	seg, err := t.IPCNamespace().Shmat(ipcCaller(t), id, readOnly, exec)
	if err != nil {
		return 0, err
	}
	defer seg.Attached(t.ThreadGroup().PID())
	prot, maxProt := platform.ProtRead, platform.ProtRead|platform.ProtExec
	if !readOnly {
		prot |= platform.ProtWrite
		maxProt |= platform.ProtWrite
	}
	if exec {
		prot |= platform.ProtExec
	}
	pages, size := seg.Pages()
	o := mm.MMapOpts{Addr: addr, Length: uintptr(size), Prot: prot, MaxProt: maxProt, Shared: true, Pages: pages,
		Name: seg.Name(), Tracker: seg}
	if addr != 0 {
		// Without SHM_REMAP, an attach over another mapping is EINVAL.
		o.Fixed, o.NoReplace = flags&linuxabi.SHM_REMAP != 0, flags&linuxabi.SHM_REMAP == 0
	}
	got, err := t.MM().MMap(o)
	switch {
	case err == unix.EEXIST:
		return 0, unix.EINVAL
	case err != nil:
		return 0, err
	}
	return got, nil
}

// Shmdt implements Linux syscall shmdt(2).
func Shmdt(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	tr, err := t.MM().Shmdt(a.Ptr(0), func(tr mm.Tracker) uintptr {
		if seg, ok := tr.(*ipc.Shm); ok {
			return uintptr(seg.Size())
		}
		return 0
	})
	if err != nil {
		return 0, err
	}
	if seg, ok := tr.(*ipc.Shm); ok {
		seg.Detached(t.ThreadGroup().PID())
	}
	return 0, nil
}

// Shmctl implements Linux syscall shmctl(2).
func Shmctl(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	id, cmd, buf := a.Int(0), int(a.Int(1)), a.Ptr(2)
	if cmd < 0 || id < 0 {
		return 0, unix.EINVAL
	}
	ns, c := t.IPCNamespace(), ipcCaller(t)
	switch cmd {
	case linuxabi.IPC_INFO:
		info, maxIdx := ns.ShmLimitsInfo()
		return uintptr(maxIdx), copyOutStruct(t, buf, &info)
	case linuxabi.SHM_INFO:
		info, maxIdx := ns.ShmUsageInfo()
		return uintptr(maxIdx), copyOutStruct(t, buf, &info)
	case unix.IPC_STAT, linuxabi.SHM_STAT, linuxabi.SHM_STAT_ANY:
		st, err := ns.ShmStat(c, id, statCmd(cmd, linuxabi.SHM_STAT, linuxabi.SHM_STAT_ANY))
		if err != nil {
			return 0, err
		}
		ds := shmid64Ds{Perm: toIPC64Perm(st.Perm), Segsz: st.Size, Atime: st.Atime, Dtime: st.Dtime, Ctime: st.Ctime,
			CPID: t.SeenID(st.CPID), LPID: t.SeenID(st.LPID), Nattch: st.Nattch}
		return statReturn(cmd, st.Perm.ID), copyOutStruct(t, buf, &ds)
	case unix.IPC_SET:
		var ds shmid64Ds
		if err := copyInStruct(t, buf, &ds); err != nil {
			return 0, err
		}
		return 0, ns.ShmSet(c, id, ds.Perm.setting())
	case unix.IPC_RMID:
		return 0, ns.ShmRemove(c, id)
	case linuxabi.SHM_LOCK, linuxabi.SHM_UNLOCK:
		return 0, ns.ShmLock(c, id, cmd == linuxabi.SHM_LOCK, t.Limits().Get(unix.RLIMIT_MEMLOCK).Cur)
	}
	return 0, unix.EINVAL
}
