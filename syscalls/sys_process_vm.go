package syscalls

import (
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
	"github.com/moat-sandbox/moat/sentry/mm"
	"github.com/moat-sandbox/moat/sentry/vfs"
)

// ProcessVMReadv implements Linux syscall process_vm_readv(2).
func ProcessVMReadv(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return processVMRW(t, a, false)
}

// ProcessVMWritev implements Linux syscall process_vm_writev(2).
func ProcessVMWritev(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	return processVMRW(t, a, true)
}

// processVMRW moves bytes between the caller's buffers and another
// process's memory, as Linux's process_vm_rw: the local vector is checked
// as readv's is, and an empty one does nothing (not even look for the
// process); the remote one only for its lengths. The target must be one
// the caller may PTRACE_ATTACH to with its real ids. The remote memory is
// reached with its protection (no forcing, unlike /proc/<pid>/mem); the
// copy stops at the first address on either side that faults, and what
// was moved by then is the result (EFAULT if nothing).
func processVMRW(t *kernel.Task, a *arch.SyscallArgs, write bool) (uintptr, error) {
	pid, lvec, lcnt, rvec, rcnt, flags := a.Int(0), a.Ptr(1), a[2], a.Ptr(3), a[4], a[5]
	if flags != 0 {
		return 0, unix.EINVAL
	}
	local, err := copyInIovecs(t, lvec, lcnt)
	if err != nil {
		return 0, err
	}
	total := 0
	for _, r := range local {
		total += r.Len
	}
	if total == 0 {
		return 0, nil
	}
	remote, err := copyInRemoteIovecs(t, rvec, rcnt)
	if err != nil {
		return 0, err
	}
	m, err := t.MemoryOf(pid, kernel.PtraceAttachRealCreds)
	if err == unix.EACCES {
		return 0, unix.EPERM // as Linux's process_vm_rw_core turns mm_access's
	}
	if err != nil {
		return 0, err
	}
	n := moveVM(t, m, local, remote, write)
	if n == 0 {
		return 0, unix.EFAULT
	}
	return uintptr(n), nil
}

// copyInRemoteIovecs reads the remote vector of process_vm_readv and
// process_vm_writev: its addresses are the other process's, so only the
// lengths are checked (EINVAL if negative), as Linux's iovec_from_user.
func copyInRemoteIovecs(t *kernel.Task, addr uintptr, count uint64) ([]vfs.Range, error) {
	if count > linuxabi.UIO_MAXIOV {
		return nil, unix.EINVAL
	}
	type iovec struct{ Base, Len uint64 }
	rs := make([]vfs.Range, count)
	for i := range rs {
		var v iovec
		if err := copyInStruct(t, addr+uintptr(i)*16, &v); err != nil {
			return nil, err
		}
		if int64(v.Len) < 0 {
			return nil, unix.EINVAL
		}
		rs[i] = vfs.Range{Addr: uintptr(v.Base), Len: int(min(v.Len, linuxabi.MAX_RW_COUNT))}
	}
	return rs, nil
}

// vmChunk is how much moveVM moves at a time: a page, so that a fault ends
// the copy with every byte before it moved, as Linux's page-at-a-time
// copy does.
const vmChunk = mm.PageSize

// moveVM copies between the caller's ranges local and m's ranges remote,
// in order, until either runs out or an access faults, and returns how
// many bytes moved.
func moveVM(t *kernel.Task, m *mm.MemoryManager, local, remote []vfs.Range, write bool) int {
	var buf [vmChunk]byte
	done := 0
	li, loff := 0, 0
	for _, r := range remote {
		for roff := 0; roff < r.Len; {
			for li < len(local) && loff == local[li].Len {
				li, loff = li+1, 0
			}
			if li == len(local) {
				return done
			}
			raddr := r.Addr + uintptr(roff)
			laddr := local[li].Addr + uintptr(loff)
			// Neither side's chunk crosses a page: a fault is at a page.
			n := min(r.Len-roff, local[li].Len-loff,
				int(vmChunk-raddr%vmChunk), int(vmChunk-laddr%vmChunk))
			b := buf[:n]
			var got int
			if write {
				got, _ = t.CopyIn(laddr, b)
				if got > 0 {
					got, _ = m.CopyOut(raddr, b[:got])
				}
			} else {
				got, _ = m.CopyIn(raddr, b)
				if got > 0 {
					got, _ = t.CopyOut(laddr, b[:got])
				}
			}
			done += got
			if got < n {
				return done
			}
			roff += n
			loff += n
		}
	}
	return done
}

// processMadviseRemote reports whether advice may be given to another
// process's memory: the hints that change no contents (Linux's
// process_madvise_remote_valid).
func processMadviseRemote(advice int32) bool {
	switch advice {
	case unix.MADV_COLD, unix.MADV_PAGEOUT, unix.MADV_WILLNEED, unix.MADV_COLLAPSE:
		return true
	}
	return false
}

// ProcessMadvise implements Linux syscall process_madvise(2): madvise on
// the ranges of a vector in the memory of the process a pidfd names.
// Another process takes only the hints, from a caller that may read it
// (PTRACE_MODE_READ with file-system ids: EACCES) and has CAP_SYS_NICE
// (EPERM); the process itself takes any advice madvise does. The result is
// the bytes advised before a range failed, or its error if the first did.
// MADV_COLLAPSE is EINVAL, as on a Linux without transparent huge pages:
// the sandbox maps none.
func ProcessMadvise(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	fd, vec, vlen, advice, flags := a.Int(0), a.Ptr(1), a[2], a.Int(3), a.Uint(4)
	if flags != 0 {
		return 0, unix.EINVAL
	}
	ranges, err := copyInIovecs(t, vec, vlen)
	if err != nil {
		return 0, err
	}
	tg, f, err := pidfdProcess(t, fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	leader := tg.Leader()
	if leader == nil || tg.Ended() {
		return 0, unix.ESRCH
	}
	m, err := t.MemoryOf(t.SeenID(leader.RootTID()), kernel.PtraceReadFSCreds)
	if err != nil {
		return 0, err
	}
	if m != t.MM() {
		if !processMadviseRemote(advice) {
			return 0, unix.EINVAL
		}
		if !t.Capable(unix.CAP_SYS_NICE) {
			return 0, unix.EPERM
		}
	}
	done := 0
	for _, r := range ranges {
		if err := madvise(m, r.Addr, uintptr(r.Len), advice); err != nil {
			if done > 0 {
				break
			}
			return 0, err
		}
		done += r.Len
	}
	return uintptr(done), nil
}

// ProcessMrelease implements Linux syscall process_mrelease(2): for a
// process on its way out (EINVAL for one that is not), its memory goes
// with its tasks, which the sentry ends at once; there is nothing to reap
// ahead of them. A process whose tasks are all gone is ESRCH, as Linux
// finds it.
func ProcessMrelease(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	fd, flags := a.Int(0), a.Uint(1)
	if flags != 0 {
		return 0, unix.EINVAL
	}
	tg, f, err := pidfdProcess(t, fd)
	if err != nil {
		return 0, err
	}
	defer f.DecRef()
	switch {
	case tg.Ended():
		return 0, unix.ESRCH
	case !tg.Dying():
		return 0, unix.EINVAL
	}
	return 0, nil
}
