package linuxabi

// ptrace's si_code values and the layout of struct user that
// PTRACE_PEEKUSER and PTRACE_POKEUSER address, which golang.org/x/sys/unix
// lacks: include/uapi/asm-generic/siginfo.h, arch/x86/include/asm/user_64.h.
const (
	// CLD_TRAPPED is the si_code of a tracee's ptrace-stop in its
	// tracer's SIGCHLD and waitid.
	CLD_TRAPPED = 4

	// TRAP_BRKPT and TRAP_TRACE: a breakpoint's and a single-step's SIGTRAP.
	TRAP_BRKPT = 1
	TRAP_TRACE = 2

	// SizeofUserRegs is sizeof(struct user_regs_struct): 27 registers.
	SizeofUserRegs = 27 * 8
	// OffsetofUserDebugreg is offsetof(struct user, u_debugreg) and
	// SizeofUser sizeof(struct user), the kernel's (which has error_code
	// and fault_address after the debug registers).
	OffsetofUserDebugreg = 848
	SizeofUser           = 928
)
