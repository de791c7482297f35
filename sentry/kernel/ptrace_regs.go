package kernel

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
)

// A stopped tracee's registers, floating-point state and memory as its
// tracer reads and writes them: struct user_regs_struct for
// PTRACE_GETREGS and NT_PRSTATUS, struct user for PTRACE_PEEKUSER, the
// FXSAVE area for PTRACE_GETFPREGS and NT_PRFPREG, the XSAVE area for
// NT_X86_XSTATE, with the checks Linux's putreg and regset setters make.
// The guest always runs in 64-bit mode with the kernel's user segments:
// a selector the tracer writes is checked and not kept.

// UserRegs is struct user_regs_struct.
type UserRegs struct {
	R15, R14, R13, R12, Rbp, Rbx, R11, R10, R9, R8 uint64
	Rax, Rcx, Rdx, Rsi, Rdi, OrigRax, Rip          uint64
	Cs, Eflags, Rsp, Ss, FsBase, GsBase            uint64
	Ds, Es, Fs, Gs                                 uint64
}

// eflagsPtrace are the flags a tracer may change (Linux's FLAG_MASK): CF
// PF AF ZF SF TF DF OF NT RF AC.
const eflagsPtrace = 0x54dd5

// The offsets in struct user_regs_struct that putreg treats specially.
var (
	offCs     = regOffset(&UserRegs{}, func(r *UserRegs) *uint64 { return &r.Cs })
	offSs     = regOffset(&UserRegs{}, func(r *UserRegs) *uint64 { return &r.Ss })
	offEflags = regOffset(&UserRegs{}, func(r *UserRegs) *uint64 { return &r.Eflags })
	offFsBase = regOffset(&UserRegs{}, func(r *UserRegs) *uint64 { return &r.FsBase })
	offGsBase = regOffset(&UserRegs{}, func(r *UserRegs) *uint64 { return &r.GsBase })
	offDs     = regOffset(&UserRegs{}, func(r *UserRegs) *uint64 { return &r.Ds })
)

func regOffset(r *UserRegs, field func(*UserRegs) *uint64) uintptr {
	return uintptr(unsafe.Pointer(field(r))) - uintptr(unsafe.Pointer(r))
}

// words views r as its 27 words.
func (r *UserRegs) words() *[linuxabi.SizeofUserRegs / 8]uint64 {
	return (*[linuxabi.SizeofUserRegs / 8]uint64)(unsafe.Pointer(r))
}

// Regs implements PTRACE_GETREGS. A trap flag the tracer's single-step
// set is hidden.
func (r *Tracee) Regs() UserRegs {
	t := r.t
	g := &t.regs
	u := UserRegs{R15: g.R15, R14: g.R14, R13: g.R13, R12: g.R12, Rbp: g.Rbp, Rbx: g.Rbx, R11: g.R11, R10: g.R10,
		R9: g.R9, R8: g.R8, Rax: g.Rax, Rcx: g.Rcx, Rdx: g.Rdx, Rsi: g.Rsi, Rdi: g.Rdi, OrigRax: g.OrigRax,
		Rip: g.Rip, Cs: userCS, Eflags: g.Eflags, Rsp: g.Rsp, Ss: userSS, FsBase: g.FSBase, GsBase: g.GSBase}
	t.tg.mu.Lock()
	if t.pt.forcedTF {
		u.Eflags &^= eflagsTF
	}
	t.tg.mu.Unlock()
	return u
}

// SetRegs implements PTRACE_SETREGS: register by register, in order, as
// Linux's putreg, stopping at the first it refuses (EIO).
func (r *Tracee) SetRegs(u UserRegs) error {
	for i, v := range u.words() {
		if err := r.putReg(uintptr(i*8), v); err != nil {
			return err
		}
	}
	return nil
}

// putReg writes the register at offset off of struct user_regs_struct.
func (r *Tracee) putReg(off uintptr, v uint64) error {
	t := r.t
	g := &t.regs
	switch off {
	case offFsBase, offGsBase:
		if v >= uint64(t.mm.MaxAddr()) {
			return unix.EIO
		}
	case offCs, offSs:
		if v == 0 || v&3 != 3 {
			return unix.EIO
		}
		return nil
	case offDs, offDs + 8, offDs + 16, offDs + 24: // ds, es, fs, gs
		if v != 0 && v&3 != 3 {
			return unix.EIO
		}
		return nil
	case offEflags:
		t.tg.mu.Lock()
		// A trap flag the tracer writes is its own; one it leaves out stays
		// if its single-step set it.
		if v&eflagsTF != 0 {
			t.pt.forcedTF = false
		} else if t.pt.forcedTF {
			v |= eflagsTF
		}
		t.tg.mu.Unlock()
		g.Eflags = g.Eflags&^eflagsPtrace | v&eflagsPtrace
		return nil
	}
	var u UserRegs
	u = r.Regs()
	u.words()[off/8] = v
	*g = registersOf(&u, g)
	return nil
}

// registersOf returns the guest registers u holds, with the flags and
// segments of old.
func registersOf(u *UserRegs, old *arch.Registers) arch.Registers {
	return arch.Registers{R8: u.R8, R9: u.R9, R10: u.R10, R11: u.R11, R12: u.R12, R13: u.R13, R14: u.R14, R15: u.R15,
		Rdi: u.Rdi, Rsi: u.Rsi, Rbp: u.Rbp, Rbx: u.Rbx, Rdx: u.Rdx, Rax: u.Rax, Rcx: u.Rcx, Rsp: u.Rsp, Rip: u.Rip,
		Eflags: old.Eflags, OrigRax: u.OrigRax, FSBase: u.FsBase, GSBase: u.GsBase}
}

// PeekUser implements PTRACE_PEEKUSER: the word at offset off of struct
// user, the registers and the debug registers (the rest reads 0); an
// offset not aligned or past the struct is EIO.
func (r *Tracee) PeekUser(off uint64) (uint64, error) {
	if off%8 != 0 || off >= linuxabi.SizeofUser {
		return 0, unix.EIO
	}
	switch {
	case off < linuxabi.SizeofUserRegs:
		u := r.Regs()
		return u.words()[off/8], nil
	case off >= linuxabi.OffsetofUserDebugreg && off < linuxabi.OffsetofUserDebugreg+64:
		n := (off - linuxabi.OffsetofUserDebugreg) / 8
		r.t.tg.mu.Lock()
		defer r.t.tg.mu.Unlock()
		v := r.t.pt.debugRegs[n]
		if n == 6 {
			v ^= dr6Reserved
		}
		return v, nil
	}
	return 0, nil
}

// dr7Enable are DR7's bits that arm a breakpoint (L0-L3 and G0-G3).
const dr7Enable = 0xff

// dr6Reserved are DR6's bits that read as 1: a task's DR6 reads as them
// until the tracer writes it (debugRegs[6] holds the value xor them).
const dr6Reserved = 0xffff0ff0

// PokeUser implements PTRACE_POKEUSER: a register, or a debug register.
// The debug registers are kept for the tracer to read back, but no
// hardware breakpoint or watchpoint is armed: a DR7 that would enable one
// is ENOSPC, as Linux answers when it has no slot for it. A breakpoint
// address outside user space is EINVAL; DR4 and DR5, and anything else in
// struct user, are EIO.
func (r *Tracee) PokeUser(off, v uint64) error {
	if off%8 != 0 || off >= linuxabi.SizeofUser {
		return unix.EIO
	}
	switch {
	case off < linuxabi.SizeofUserRegs:
		return r.putReg(uintptr(off), v)
	case off >= linuxabi.OffsetofUserDebugreg && off < linuxabi.OffsetofUserDebugreg+64:
		n := (off - linuxabi.OffsetofUserDebugreg) / 8
		switch {
		case n == 4 || n == 5:
			return unix.EIO
		case n < 4 && v >= uint64(r.t.mm.MaxAddr()):
			return unix.EINVAL
		case n == 7 && v&dr7Enable != 0:
			return unix.ENOSPC
		case n == 6:
			v ^= dr6Reserved
		}
		r.t.tg.mu.Lock()
		r.t.pt.debugRegs[n] = v
		r.t.tg.mu.Unlock()
		return nil
	}
	return unix.EIO
}

// The FXSAVE area's layout (the kernel's fpstate, see signal_frame.go).
const fxsaveSize = 512

// fpState is the tracee's floating-point state, or EIO if its platform
// thread has none to give.
func (r *Tracee) fpState() ([]byte, error) {
	fp := r.t.ctx.FPState()
	if len(fp) < fxsaveSize {
		return nil, unix.EIO
	}
	return fp, nil
}

// FPRegs implements PTRACE_GETFPREGS and NT_PRFPREG: the FXSAVE area, its
// bytes for software (which hold the signal frame's description of the
// XSAVE state) zero, as Linux's own copy has them.
func (r *Tracee) FPRegs() ([]byte, error) {
	fp, err := r.fpState()
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), fp[:fxsaveSize]...)
	clear(out[fxswBytes:])
	return out, nil
}

// SetFPRegs implements PTRACE_SETFPREGS and NT_PRFPREG's set: the x87 and
// SSE state, with an MXCSR the CPU accepts (else EINVAL); the XSAVE
// header then says both are in use.
func (r *Tracee) SetFPRegs(b []byte) error {
	fp, err := r.fpState()
	if err != nil {
		return err
	}
	if len(b) < fxsaveSize {
		return unix.EINVAL
	}
	le := binary.LittleEndian
	if le.Uint32(b[mxcsrOff:])&^mxcsrMask(fp) != 0 {
		return unix.EINVAL
	}
	mask := le.Uint32(fp[mxcsrMaskOff:])
	copy(fp[:fxswBytes], b[:fxswBytes])
	le.PutUint32(fp[mxcsrMaskOff:], mask)
	if len(fp) >= xsaveHeaderOff+8 {
		le.PutUint64(fp[xsaveHeaderOff:], le.Uint64(fp[xsaveHeaderOff:])|3) // XFEATURE_MASK_FPSSE
	}
	return nil
}

// mxcsrMask is the MXCSR bits the CPU has.
func mxcsrMask(fp []byte) uint32 {
	if m := binary.LittleEndian.Uint32(fp[mxcsrMaskOff:]); m != 0 {
		return m
	}
	return 0xffbf
}

// xfeatures is the XSAVE features the fpstate holds (the signal frame's
// software bytes say), 0 if it has no XSAVE state.
func xfeatures(fp []byte) uint64 {
	if len(fp) <= xsaveHeaderOff || binary.LittleEndian.Uint32(fp[fxswBytes:]) != fpXstateMagic1 {
		return 0
	}
	return binary.LittleEndian.Uint64(fp[fxswBytes+8:])
}

// XState implements NT_X86_XSTATE: the XSAVE area in its standard form,
// the software bytes holding XCR0 (the features), as Linux's regset gives
// them.
func (r *Tracee) XState() ([]byte, error) {
	fp, err := r.fpState()
	if err != nil {
		return nil, err
	}
	features := xfeatures(fp)
	if features == 0 {
		return nil, unix.ENODEV
	}
	out := append([]byte(nil), fp...)
	clear(out[fxswBytes:xsaveHeaderOff])
	binary.LittleEndian.PutUint64(out[fxswBytes:], features)
	return out, nil
}

// SetXState implements NT_X86_XSTATE's set: the whole area at once (else
// EFAULT, as Linux), with a header naming no feature the CPU lacks and
// reserved bytes zero, and an MXCSR the CPU accepts (else EINVAL).
func (r *Tracee) SetXState(b []byte) error {
	fp, err := r.fpState()
	if err != nil {
		return err
	}
	features := xfeatures(fp)
	if features == 0 {
		return unix.ENODEV
	}
	if len(b) != len(fp) {
		return unix.EFAULT
	}
	le := binary.LittleEndian
	hdr := b[xsaveHeaderOff:]
	if le.Uint64(hdr)&^features != 0 || !allZero(hdr[8:64]) || le.Uint32(b[mxcsrOff:])&^mxcsrMask(fp) != 0 {
		return unix.EINVAL
	}
	mask := le.Uint32(fp[mxcsrMaskOff:])
	copy(fp[:fxswBytes], b[:fxswBytes])
	copy(fp[xsaveHeaderOff:], b[xsaveHeaderOff:])
	le.PutUint32(fp[mxcsrMaskOff:], mask)
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// ReadMemory implements PTRACE_PEEKTEXT and PTRACE_PEEKDATA (and
// /proc/<pid>/mem's reads): the tracee's memory, whatever its protection.
func (r *Tracee) ReadMemory(addr uintptr, b []byte) (int, error) {
	return r.t.mm.ForceCopyIn(addr, b)
}

// WriteMemory implements PTRACE_POKETEXT and PTRACE_POKEDATA: into a
// private mapping whatever its protection (a breakpoint in text), into a
// shared one where it is writable.
func (r *Tracee) WriteMemory(addr uintptr, b []byte) (int, error) {
	return r.t.mm.ForceCopyOut(addr, b)
}

// SyscallInfo implements PTRACE_GET_SYSCALL_INFO: struct
// ptrace_syscall_info for the stop, and how much of it is meaningful (the
// call's number and arguments at an entry stop, its result at an exit
// stop, only the header elsewhere). Only system-call-stops of a tracee
// with PTRACE_O_TRACESYSGOOD tell entry from exit, as on Linux.
func (r *Tracee) SyscallInfo() ([]byte, int) {
	t := r.t
	t.tg.mu.Lock()
	code, msg := int32(0), t.pt.msg
	if t.pt.info != nil {
		code = t.pt.info.Code
	}
	t.tg.mu.Unlock()
	g := &t.regs
	b := make([]byte, 88)
	le := binary.LittleEndian
	le.PutUint32(b[4:], unix.AUDIT_ARCH_X86_64)
	le.PutUint64(b[8:], g.Rip)
	le.PutUint64(b[16:], g.Rsp)
	size := 24
	if code == int32(unix.SIGTRAP)|0x80 {
		switch msg {
		case unix.PTRACE_EVENTMSG_SYSCALL_ENTRY:
			b[0] = unix.PTRACE_SYSCALL_INFO_ENTRY
			le.PutUint64(b[24:], g.OrigRax)
			for i, a := range g.Args() {
				le.PutUint64(b[32+8*i:], a)
			}
			size = 80
		case unix.PTRACE_EVENTMSG_SYSCALL_EXIT:
			b[0] = unix.PTRACE_SYSCALL_INFO_EXIT
			rval := int64(g.Rax)
			if rval < 0 && rval >= -4095 {
				b[32] = 1 // is_error
			}
			le.PutUint64(b[24:], uint64(rval))
			size = 33
		}
	}
	return b, size
}

// ArchPrctl implements PTRACE_ARCH_PRCTL, arch_prctl(2) on the tracee:
// ARCH_SET_FS and ARCH_SET_GS set its bases (EPERM beyond user space, as
// arch_prctl answers), ARCH_GET_FS and ARCH_GET_GS return them for the
// tracer to store; any other code is EINVAL.
func (r *Tracee) ArchPrctl(code int32, addr uint64) (uint64, error) {
	g := &r.t.regs
	switch code {
	case linuxabi.ARCH_SET_FS, linuxabi.ARCH_SET_GS:
		if addr >= uint64(r.t.mm.MaxAddr()) {
			return 0, unix.EPERM
		}
		if code == linuxabi.ARCH_SET_FS {
			g.FSBase = addr
		} else {
			g.GSBase = addr
		}
		return 0, nil
	case linuxabi.ARCH_GET_FS:
		return g.FSBase, nil
	case linuxabi.ARCH_GET_GS:
		return g.GSBase, nil
	}
	return 0, unix.EINVAL
}
