package kernel

import (
	"encoding/binary"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/linuxabi"
	"github.com/moat-sandbox/moat/sentry/arch"
)

// The x86-64 signal frame, as Linux writes it on the guest's stack:
//
//	sp+0    return address: the action's restorer (which calls rt_sigreturn)
//	sp+8    struct ucontext: flags, link, stack_t, sigcontext, sigmask
//	sp+312  siginfo_t
//	...     the fpstate, 64-byte aligned above the frame
const (
	frameUcontext  = 8
	frameSiginfo   = 312
	frameSize      = 440
	ucStack        = 16 // in the ucontext
	ucMcontext     = 40
	ucSigmask      = 296
	ucontextSize   = 304
	mcCSGSFS       = 18 * 8 // in the sigcontext, after the 18 general registers
	mcErr          = 19 * 8
	mcTrapno       = 20 * 8
	mcOldmask      = 21 * 8
	mcCR2          = 22 * 8
	mcFpstate      = 23 * 8
	redZone        = 128
	ucFPXState     = 1 // uc_flags: the fpstate has XSAVE state
	ucSigcontextSS = 2
	ucStrictSS     = 4
	userCS         = 0x33
	userSS         = 0x2b
	fpXstateMagic2 = 0x46505845
	fxswBytes      = 464 // fpx_sw_bytes in the FXSAVE area
	fpXstateMagic1 = 0x46505853
	mxcsrMaskOff   = 28
	mxcsrOff       = 24
	xsaveHeaderOff = 512
)

// Flags a signal frame may change, and what a handler starts without.
const (
	eflagsUser  = 0x40dd5 // CF PF AF ZF SF TF DF OF RF AC
	eflagsClean = 0x10500 // TF DF RF
)

// onAltStack reports whether sp is on the task's alternate signal stack.
func (t *Task) onAltStack(sp uint64) bool {
	a := t.altStack
	return a.Flags&linuxabi.SS_DISABLE == 0 && sp > a.SP && sp-a.SP <= a.Size
}

// deliverHandler sets up a signal frame and points the task at act's
// handler, as Linux's setup_rt_frame does.
func (t *Task) deliverHandler(info *SigInfo, act SigAction) error {
	sig := int(info.Signo)
	regs := &t.regs
	onAlt := t.onAltStack(regs.Rsp)
	sp := regs.Rsp - redZone
	alt := t.altStack // what the frame records, and sigreturn restores
	if act.Flags&linuxabi.SA_ONSTACK != 0 && t.altStack.Flags&linuxabi.SS_DISABLE == 0 && !onAlt {
		sp = t.altStack.SP + t.altStack.Size
		if uint32(t.altStack.Flags)&linuxabi.SS_AUTODISARM != 0 {
			t.altStack = AltStack{Flags: linuxabi.SS_DISABLE} // until the handler returns
		}
	}
	fp := t.ctx.FPState()
	fpSize := uint64(len(fp)) + 4 // and FP_XSTATE_MAGIC2
	sp = (sp - fpSize) &^ 63
	fpAddr := sp
	sp = ((sp - frameSize) &^ 15) - 8
	t.mm.EnsureStack(uintptr(sp))

	frame := make([]byte, frameSize)
	le := binary.LittleEndian
	le.PutUint64(frame[0:], act.Restorer)
	uc := frame[frameUcontext:]
	le.PutUint64(uc[0:], ucFPXState|ucSigcontextSS|ucStrictSS)
	stackFlags := uint32(alt.Flags)
	if onAlt {
		stackFlags = linuxabi.SS_ONSTACK
	}
	le.PutUint64(uc[ucStack:], alt.SP)
	le.PutUint32(uc[ucStack+8:], stackFlags)
	le.PutUint64(uc[ucStack+16:], alt.Size)
	mc := uc[ucMcontext:]
	copy(mc, unsafe.Slice((*byte)(unsafe.Pointer(regs)), arch.NumSigcontextRegs*8))
	le.PutUint64(mc[mcCSGSFS:], userCS|userSS<<48)
	le.PutUint64(mc[mcErr:], t.lastFault.err)
	le.PutUint64(mc[mcTrapno:], t.lastFault.trapno)
	le.PutUint64(mc[mcCR2:], t.lastFault.addr)
	// The frame records the mask sigreturn restores: the one a temporary
	// mask (rt_sigsuspend, ppoll, pselect6) replaced, if any.
	blocked := t.SigMask()
	oldMask := blocked
	if t.haveSavedMask {
		oldMask = t.savedMask
		t.haveSavedMask = false
	}
	le.PutUint64(mc[mcOldmask:], oldMask)
	le.PutUint64(mc[mcFpstate:], fpAddr)
	le.PutUint64(uc[ucSigmask:], oldMask)
	copy(frame[frameSiginfo:], unsafe.Slice((*byte)(unsafe.Pointer(info)), unsafe.Sizeof(*info)))

	if _, err := t.CopyOut(uintptr(fpAddr), fp); err != nil {
		return err
	}
	var magic [4]byte
	le.PutUint32(magic[:], fpXstateMagic2)
	if _, err := t.CopyOut(uintptr(fpAddr)+uintptr(len(fp)), magic[:]); err != nil {
		return err
	}
	if _, err := t.CopyOut(uintptr(sp), frame); err != nil {
		return err
	}

	regs.Rip = act.Handler
	regs.Rsp = sp
	regs.Rdi = uint64(sig)
	regs.Rsi = sp + frameSiginfo
	regs.Rdx = sp + frameUcontext
	regs.Rax = 0
	regs.Eflags &^= eflagsClean
	resetFPState(fp)

	// The handler runs with the mask in force now, temporary or not, and
	// its own.
	mask := blocked | act.Mask
	if act.Flags&linuxabi.SA_NODEFER == 0 {
		mask |= sigBit(sig)
	}
	t.SetSigMask(mask)
	if act.Flags&linuxabi.SA_RESETHAND != 0 {
		h := t.tg.sighand
		h.mu.Lock()
		h.actions[sig] = SigAction{}
		h.mu.Unlock()
	}
	return nil
}

// resetFPState gives a handler the clean floating-point state Linux starts
// handlers with: x87 and SSE at their defaults, every XSAVE component at
// its initial state.
func resetFPState(fp []byte) {
	if len(fp) < xsaveHeaderOff {
		return
	}
	sw := append([]byte(nil), fp[fxswBytes:xsaveHeaderOff]...)
	mxcsrMask := binary.LittleEndian.Uint32(fp[mxcsrMaskOff:])
	clear(fp[:xsaveHeaderOff])
	binary.LittleEndian.PutUint16(fp[0:], 0x37f) // FCW
	binary.LittleEndian.PutUint32(fp[mxcsrOff:], 0x1f80)
	binary.LittleEndian.PutUint32(fp[mxcsrMaskOff:], mxcsrMask)
	copy(fp[fxswBytes:], sw)
	if len(fp) >= xsaveHeaderOff+8 {
		binary.LittleEndian.PutUint64(fp[xsaveHeaderOff:], 0) // XSTATE_BV: all components initial
	}
}

// SigReturn implements rt_sigreturn(2): it restores what the frame at the
// stack pointer saved. Everything in the frame is the guest's to forge, so
// what reaches the platform is sanitized: the flags the guest may not set
// stay, and the floating-point state must be well-formed.
func (t *Task) SigReturn() error {
	regs := &t.regs
	ucAddr := uintptr(regs.Rsp) // the handler's return popped the restorer's address
	uc := make([]byte, ucontextSize)
	if _, err := t.CopyIn(ucAddr, uc); err != nil {
		t.forceSignal(SigInfo{Signo: int32(unix.SIGSEGV), Code: linuxabi.SI_KERNEL})
		return ErrNoReturn
	}
	le := binary.LittleEndian
	mc := uc[ucMcontext:]
	var saved arch.Registers
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&saved)), arch.NumSigcontextRegs*8), mc)
	eflags := regs.Eflags
	fs, gs := regs.FSBase, regs.GSBase
	*regs = saved
	regs.Eflags = eflags&^eflagsUser | saved.Eflags&eflagsUser
	regs.FSBase, regs.GSBase = fs, gs
	regs.OrigRax = ^uint64(0) // not a system call: nothing to restart
	t.SetSigMask(le.Uint64(uc[ucSigmask:]))

	// The alternate stack the frame recorded, unless the task is still
	// running on the current one.
	alt := AltStack{SP: le.Uint64(uc[ucStack:]), Flags: int32(le.Uint32(uc[ucStack+8:])), Size: le.Uint64(uc[ucStack+16:])}
	flags := uint32(alt.Flags) &^ (linuxabi.SS_ONSTACK | linuxabi.SS_AUTODISARM)
	if !t.onAltStack(regs.Rsp) {
		switch {
		case flags == linuxabi.SS_DISABLE:
			t.altStack = AltStack{Flags: linuxabi.SS_DISABLE}
		case flags == 0 && alt.Size >= linuxabi.MINSIGSTKSZ:
			alt.Flags &^= linuxabi.SS_ONSTACK
			t.altStack = alt
		}
	}

	fp := t.ctx.FPState()
	if fpAddr := le.Uint64(mc[mcFpstate:]); fpAddr == 0 {
		resetFPState(fp)
	} else if !t.restoreFPState(fp, uintptr(fpAddr)) {
		t.forceSignal(SigInfo{Signo: int32(unix.SIGSEGV), Code: linuxabi.SI_KERNEL})
	}
	return ErrNoReturn
}

// restoreFPState copies a frame's fpstate into fp if it is well-formed:
// the same XSAVE layout the kernel wrote (its software bytes), no XSAVE
// component the CPU state does not have, no reserved MXCSR bit.
func (t *Task) restoreFPState(fp []byte, addr uintptr) bool {
	in := make([]byte, len(fp))
	if _, err := t.CopyIn(addr, in); err != nil {
		return false
	}
	le := binary.LittleEndian
	if len(fp) > xsaveHeaderOff {
		// The software bytes describe the layout: keep the kernel's.
		copy(in[fxswBytes:xsaveHeaderOff], fp[fxswBytes:xsaveHeaderOff])
		features := le.Uint64(fp[fxswBytes+8:])
		hdr := in[xsaveHeaderOff:]
		le.PutUint64(hdr[0:], le.Uint64(hdr[0:])&features)
		clear(hdr[8:64]) // XCOMP_BV and the reserved bytes must be zero
	}
	mask := le.Uint32(fp[mxcsrMaskOff:])
	if mask == 0 {
		mask = 0xffbf
	}
	if le.Uint32(in[mxcsrOff:])&^mask != 0 {
		return false
	}
	le.PutUint32(in[mxcsrMaskOff:], mask)
	copy(fp, in)
	return true
}

// AltStack returns the task's alternate signal stack setting.
func (t *Task) AltStack() *AltStack { return &t.altStack }

// OnAltStack reports whether the task is running on its alternate stack
// (sigaltstack reports SS_ONSTACK, and refuses changes, then).
func (t *Task) OnAltStack() bool { return t.onAltStack(t.regs.Rsp) }
