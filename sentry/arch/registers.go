// Package arch describes the guest's CPU state on x86-64: general registers,
// system call argument conventions and the layouts the kernel shares with
// user space (signal frames, auxiliary vector). It holds no behaviour of its
// own and imports nothing from the sentry.
package arch

// Registers is a guest thread's general-purpose state. The first eighteen
// fields are in the order of the kernel's struct sigcontext, so a platform
// that traps through signals can copy them in one go.
type Registers struct {
	R8, R9, R10, R11, R12, R13, R14, R15 uint64
	Rdi, Rsi, Rbp, Rbx, Rdx, Rax, Rcx    uint64
	Rsp, Rip, Eflags                     uint64

	// OrigRax is the system call number at entry; Rax then holds the result.
	OrigRax uint64
	FSBase  uint64
	GSBase  uint64
}

// NumSigcontextRegs is how many leading fields of Registers mirror sigcontext.
const NumSigcontextRegs = 18

// SyscallArgs are the six arguments of a system call, in argument order.
type SyscallArgs [6]uint64

// Args returns the system call arguments held in r.
func (r *Registers) Args() SyscallArgs {
	return SyscallArgs{r.Rdi, r.Rsi, r.Rdx, r.R10, r.R8, r.R9}
}

// Int returns argument i as a signed 32-bit value, as the kernel reads an int.
func (a *SyscallArgs) Int(i int) int32 { return int32(a[i]) }

// Uint returns argument i as an unsigned 32-bit value.
func (a *SyscallArgs) Uint(i int) uint32 { return uint32(a[i]) }

// Ptr returns argument i as a guest address.
func (a *SyscallArgs) Ptr(i int) uintptr { return uintptr(a[i]) }

// Int64 returns argument i as a signed 64-bit value.
func (a *SyscallArgs) Int64(i int) int64 { return int64(a[i]) }

// User-mode eflags after execve: only the reserved bit 1 and IF.
const InitialEflags = 0x202
