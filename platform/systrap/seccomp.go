package systrap

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

// The stubs' seccomp filters. Both trap (SIGSYS) every call whose instruction
// pointer lies outside the stub's code, which is every call the guest makes.
// Filters stack: a guest thread carries the syscall thread's filter (inherited
// at clone) and its own, and the stricter answer wins.

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retTrap  = unix.SECCOMP_RET_TRAP
	retKill  = unix.SECCOMP_RET_KILL_PROCESS

	seccompDataNr     = 0
	seccompDataArch   = 4
	seccompDataIPLow  = 8
	seccompDataIPHigh = 12
	seccompDataArg0   = 16 // low half of args[0]
	seccompDataArg1   = 24 // low half of args[1]
)

// bpfInsn is a struct sock_filter.
type bpfInsn struct {
	code   uint16
	jt, jf uint8
	k      uint32
}

func stmt(code uint16, k uint32) bpfInsn { return bpfInsn{code: code, k: k} }
func jump(code uint16, k uint32, jt, jf uint8) bpfInsn {
	return bpfInsn{code: code, jt: jt, jf: jf, k: k}
}

const (
	ldW  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
	jeqK = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
	jgtK = unix.BPF_JMP | unix.BPF_JGT | unix.BPF_K
	retK = unix.BPF_RET | unix.BPF_K
)

// filterFromStubCode builds: kill unless x86-64; trap unless the call comes
// from the stub's code; then allow the calls in allowed (those for which
// check is nil outright, others when check's extra instructions allow) and
// trap the rest.
func filterFromStubCode(allowed []uint32, extra map[uint32][]bpfInsn) []bpfInsn {
	prog := []bpfInsn{
		stmt(ldW, seccompDataArch),
		jump(jeqK, unix.AUDIT_ARCH_X86_64, 1, 0),
		stmt(retK, retKill),
		stmt(ldW, seccompDataIPHigh),
		jump(jeqK, uint32(uint64(codeVA)>>32), 1, 0),
		stmt(retK, retTrap),
		stmt(ldW, seccompDataIPLow),
		// The reported address is the one after the syscall instruction.
		jump(jgtK, uint32(codeVA&0xffffffff)+codeSize, 0, 1),
		stmt(retK, retTrap),
		stmt(ldW, seccompDataNr),
	}
	for _, nr := range allowed {
		x := extra[nr]
		// Not this call: skip the allow (and its extra checks).
		prog = append(prog, jump(jeqK, nr, 0, uint8(len(x)+1)))
		prog = append(prog, x...)
		prog = append(prog, stmt(retK, retAllow))
	}
	return append(prog, stmt(retK, retTrap))
}

// threadCPUClockOnly lets clock_gettime read the calling thread's CPU
// clock alone (the clock id is args[0]): what the handler bounds the
// guest's CPU time by.
var threadCPUClockOnly = []bpfInsn{
	stmt(ldW, seccompDataArg0),
	jump(jeqK, unix.CLOCK_THREAD_CPUTIME_ID, 1, 0),
	stmt(retK, retTrap),
}

// syscallThreadFilter allows what the syscall thread and stub start-up need,
// and what a guest thread's handler needs (a guest thread carries this filter
// too); recvmsg only on fdSocket, where the sentry sends host files'
// descriptors (hostfds.go), which a guest thread's own filter refuses.
func syscallThreadFilter(fdSocket int) []bpfInsn {
	fromSentry := []bpfInsn{
		stmt(ldW, seccompDataArg0),
		jump(jeqK, uint32(fdSocket), 1, 0),
		stmt(retK, retTrap),
	}
	return filterFromStubCode([]uint32{
		unix.SYS_MMAP, unix.SYS_MUNMAP, unix.SYS_MPROTECT, unix.SYS_MADVISE,
		unix.SYS_CLONE, unix.SYS_FUTEX, unix.SYS_EXIT, unix.SYS_EXIT_GROUP,
		unix.SYS_RT_SIGRETURN, unix.SYS_SCHED_YIELD, unix.SYS_SIGALTSTACK,
		unix.SYS_RT_SIGPROCMASK, unix.SYS_SECCOMP, unix.SYS_PRCTL, unix.SYS_GETPPID,
		unix.SYS_CLOCK_GETTIME, unix.SYS_RECVMSG,
	}, map[uint32][]bpfInsn{unix.SYS_CLOCK_GETTIME: threadCPUClockOnly, unix.SYS_RECVMSG: fromSentry})
}

// guestThreadFilter allows a guest thread, from stub code only, to wait and
// wake on futexes (its hand-off with the sentry), read its own CPU clock,
// return from its handler and end itself.
func guestThreadFilter() []bpfInsn {
	// futex: only FUTEX_WAIT and FUTEX_WAKE; the op is args[1].
	futexOps := []bpfInsn{
		stmt(ldW, seccompDataArg1),
		jump(jeqK, futexWaitOp, 2, 0),
		jump(jeqK, futexWakeOp, 1, 0),
		stmt(retK, retTrap),
	}
	return filterFromStubCode([]uint32{
		unix.SYS_FUTEX, unix.SYS_RT_SIGRETURN, unix.SYS_SCHED_YIELD, unix.SYS_EXIT,
		unix.SYS_CLOCK_GETTIME,
	}, map[uint32][]bpfInsn{unix.SYS_FUTEX: futexOps, unix.SYS_CLOCK_GETTIME: threadCPUClockOnly})
}

// encodeFilter writes prog as a sock_filter array into b and returns the
// bytes used.
func encodeFilter(b []byte, prog []bpfInsn) int {
	for i, in := range prog {
		o := b[i*8:]
		binary.LittleEndian.PutUint16(o[0:], in.code)
		o[2], o[3] = in.jt, in.jf
		binary.LittleEndian.PutUint32(o[4:], in.k)
	}
	return len(prog) * 8
}
