package syscalls

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
	"github.com/moat-sandbox/moat/sentry/kernel"
)

// Ptrace implements Linux syscall ptrace(2), between the sandbox's tasks:
// attaching (PTRACE_TRACEME, ATTACH, SEIZE), the requests on a stopped
// tracee (memory, registers and register sets, siginfo, options, event
// message, system call information, signal mask), resuming it (CONT,
// SYSCALL, SINGLESTEP, SYSEMU, LISTEN, DETACH), and INTERRUPT and KILL on a
// running one. The raw call's PEEK requests store the word at data.
func Ptrace(t *kernel.Task, a *arch.SyscallArgs) (uintptr, error) {
	req, pid, addr, data := a[0], a.Int(1), a[2], a[3]
	if req == unix.PTRACE_TRACEME {
		return 0, t.PtraceTraceme()
	}
	target := t.LookupTask(pid)
	if target == nil {
		return 0, unix.ESRCH
	}
	switch req {
	case unix.PTRACE_ATTACH:
		return 0, t.PtraceAttach(target, false, 0)
	case unix.PTRACE_SEIZE:
		if addr != 0 || data&^unix.PTRACE_O_MASK != 0 {
			return 0, unix.EIO
		}
		return 0, t.PtraceAttach(target, true, uint32(data))
	case unix.PTRACE_INTERRUPT:
		return 0, t.PtraceInterrupt(target)
	case unix.PTRACE_KILL:
		return 0, t.PtraceKill(target)
	}
	tr, err := t.PtraceTracee(target, false)
	if err != nil {
		return 0, err
	}
	defer tr.Done()
	switch req {
	case unix.PTRACE_PEEKTEXT, unix.PTRACE_PEEKDATA:
		var b [8]byte
		if n, _ := tr.ReadMemory(uintptr(addr), b[:]); n != len(b) {
			return 0, unix.EIO
		}
		_, err := t.CopyOut(uintptr(data), b[:])
		return 0, err
	case unix.PTRACE_POKETEXT, unix.PTRACE_POKEDATA:
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], data)
		if n, _ := tr.WriteMemory(uintptr(addr), b[:]); n != len(b) {
			return 0, unix.EIO
		}
		return 0, nil
	case unix.PTRACE_PEEKUSR:
		v, err := tr.PeekUser(addr)
		if err != nil {
			return 0, err
		}
		return 0, copyOutU64(t, uintptr(data), v)
	case unix.PTRACE_POKEUSR:
		return 0, tr.PokeUser(addr, data)
	case unix.PTRACE_GETREGS:
		regs := tr.Regs()
		return 0, copyOutStruct(t, uintptr(data), &regs)
	case unix.PTRACE_SETREGS:
		var regs kernel.UserRegs
		if err := copyInStruct(t, uintptr(data), &regs); err != nil {
			return 0, err
		}
		return 0, tr.SetRegs(regs)
	case unix.PTRACE_GETFPREGS:
		b, err := tr.FPRegs()
		if err != nil {
			return 0, err
		}
		_, err = t.CopyOut(uintptr(data), b)
		return 0, err
	case unix.PTRACE_SETFPREGS:
		b := make([]byte, 512)
		if _, err := t.CopyIn(uintptr(data), b); err != nil {
			return 0, err
		}
		return 0, tr.SetFPRegs(b)
	case unix.PTRACE_GETREGSET, unix.PTRACE_SETREGSET:
		return 0, ptraceRegset(t, tr, req == unix.PTRACE_SETREGSET, addr, uintptr(data))
	case unix.PTRACE_GETSIGINFO:
		info, err := tr.SigInfo()
		if err != nil {
			return 0, err
		}
		return 0, copyOutStruct(t, uintptr(data), &info)
	case unix.PTRACE_PEEKSIGINFO:
		return ptracePeekSigInfo(t, tr, uintptr(addr), uintptr(data))
	case unix.PTRACE_SETSIGINFO:
		var info kernel.SigInfo
		if err := copyInStruct(t, uintptr(data), &info); err != nil {
			return 0, err
		}
		return 0, tr.SetSigInfo(info)
	case unix.PTRACE_GETEVENTMSG:
		return 0, copyOutU64(t, uintptr(data), tr.EventMsg())
	case unix.PTRACE_SETOPTIONS:
		if data > 0xffffffff {
			return 0, unix.EINVAL
		}
		return 0, tr.SetOptions(uint32(data))
	case unix.PTRACE_GETSIGMASK, unix.PTRACE_SETSIGMASK:
		if addr != linuxabi.SizeofSigset {
			return 0, unix.EINVAL
		}
		if req == unix.PTRACE_GETSIGMASK {
			return 0, copyOutU64(t, uintptr(data), tr.SigMask())
		}
		var m uint64
		if err := copyInStruct(t, uintptr(data), &m); err != nil {
			return 0, err
		}
		tr.SetSigMask(m)
		return 0, nil
	case unix.PTRACE_GET_SYSCALL_INFO:
		b, size := tr.SyscallInfo()
		if _, err := t.CopyOut(uintptr(data), b[:min(uint64(size), addr)]); err != nil {
			return 0, err
		}
		return uintptr(size), nil
	case unix.PTRACE_ARCH_PRCTL:
		v, err := tr.ArchPrctl(int32(data), addr)
		if err != nil || (int32(data) != linuxabi.ARCH_GET_FS && int32(data) != linuxabi.ARCH_GET_GS) {
			return 0, err
		}
		return 0, copyOutU64(t, uintptr(addr), v)
	case unix.PTRACE_CONT, unix.PTRACE_SYSCALL, unix.PTRACE_SINGLESTEP, unix.PTRACE_SYSEMU, unix.PTRACE_SYSEMU_SINGLESTEP:
		if data > linuxabi.NSIG {
			return 0, unix.EIO
		}
		return 0, tr.Resume(resumeMode(req), int(data))
	case unix.PTRACE_DETACH:
		if data > linuxabi.NSIG {
			return 0, unix.EIO
		}
		return 0, tr.Detach(int(data))
	case unix.PTRACE_LISTEN:
		return 0, tr.Listen()
	}
	return 0, unix.EIO
}

// ptracePeekSigInfo implements PTRACE_PEEKSIGINFO: struct
// ptrace_peeksiginfo_args at argsAddr (off, flags, nr) asks for nr of the
// tracee's pending signals from the off-th, of its thread's queue or with
// PTRACE_PEEKSIGINFO_SHARED its process's, written as siginfo_t from
// data. It returns how many were written; a fault after the first ends
// the copy short, as Linux's does.
func ptracePeekSigInfo(t *kernel.Task, tr *kernel.Tracee, argsAddr, data uintptr) (uintptr, error) {
	var args struct {
		Off   uint64
		Flags uint32
		Nr    int32
	}
	if err := copyInStruct(t, argsAddr, &args); err != nil {
		return 0, err
	}
	if args.Flags&^unix.PTRACE_PEEKSIGINFO_SHARED != 0 || args.Nr < 0 {
		return 0, unix.EINVAL
	}
	infos := tr.PeekSigInfo(args.Flags&unix.PTRACE_PEEKSIGINFO_SHARED != 0, args.Off, int(args.Nr))
	for i := range infos {
		if err := copyOutStruct(t, data+uintptr(i)*unsafe.Sizeof(infos[i]), &infos[i]); err != nil {
			if i > 0 {
				return uintptr(i), nil
			}
			return 0, err
		}
	}
	return uintptr(len(infos)), nil
}

// resumeMode is what request req resumes a tracee to.
func resumeMode(req uint64) kernel.ResumeMode {
	switch req {
	case unix.PTRACE_SYSCALL:
		return kernel.ResumeSyscall
	case unix.PTRACE_SINGLESTEP:
		return kernel.ResumeStep
	case unix.PTRACE_SYSEMU:
		return kernel.ResumeSysemu
	case unix.PTRACE_SYSEMU_SINGLESTEP:
		return kernel.ResumeSysemuStep
	}
	return kernel.ResumeCont
}

// asBytes views regs as the bytes of struct user_regs_struct.
func asBytes(regs *kernel.UserRegs) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(regs)), unsafe.Sizeof(*regs))
}

// ptraceRegset implements PTRACE_GETREGSET and PTRACE_SETREGSET: typ
// names the set (NT_PRSTATUS, NT_PRFPREG, NT_X86_XSTATE, else EINVAL) and
// iovAddr a struct iovec whose length must be a whole number of words; at
// most the set's size is moved, and the length written back says how much.
func ptraceRegset(t *kernel.Task, tr *kernel.Tracee, set bool, typ uint64, iovAddr uintptr) error {
	var iov [2]uint64 // iov_base, iov_len
	if err := copyInStruct(t, iovAddr, &iov); err != nil {
		return err
	}
	var full []byte
	var err error
	switch typ {
	case unix.NT_PRSTATUS:
		regs := tr.Regs()
		full = asBytes(&regs)
	case unix.NT_PRFPREG:
		full, err = tr.FPRegs()
	case unix.NT_X86_XSTATE:
		full, err = tr.XState()
	default:
		return unix.EINVAL
	}
	if err != nil {
		return err
	}
	if iov[1]%8 != 0 {
		return unix.EINVAL
	}
	n := min(iov[1], uint64(len(full)))
	if !set {
		if _, err := t.CopyOut(uintptr(iov[0]), full[:n]); err != nil {
			return err
		}
	} else {
		b := make([]byte, n)
		if _, err := t.CopyIn(uintptr(iov[0]), b); err != nil {
			return err
		}
		switch typ {
		case unix.NT_PRSTATUS:
			for i := 0; i+8 <= len(b); i += 8 {
				if err := tr.PokeUser(uint64(i), binary.LittleEndian.Uint64(b[i:])); err != nil {
					return err
				}
			}
		case unix.NT_PRFPREG:
			if len(b) != len(full) {
				return unix.EINVAL // the whole set at once, as Linux's xfpregs_set
			}
			err = tr.SetFPRegs(b)
		case unix.NT_X86_XSTATE:
			err = tr.SetXState(b)
		}
		if err != nil {
			return err
		}
	}
	return copyOutU64(t, iovAddr+8, n)
}
