#include "textflag.h"

// func rdtsc() uint64
// The TSC, read after every earlier load has completed (as the vDSO reads it).
TEXT ·rdtsc(SB), NOSPLIT, $0-8
	LFENCE
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+0(FP)
	RET

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL	leaf+0(FP), AX
	MOVL	sub+4(FP), CX
	CPUID
	MOVL	AX, a+8(FP)
	MOVL	BX, b+12(FP)
	MOVL	CX, c+16(FP)
	MOVL	DX, d+20(FP)
	RET

// func callSysV(fn, a0, a1, a2 uintptr) uintptr
// Calls the C function at fn with the System V ABI (rdi, rsi, rdx; result in
// rax), on this goroutine's stack: the frame below is what the callee may
// use (the vDSO's functions need a few dozen bytes). The tests use it to run
// the image in the test process. Arguments must not point into a goroutine
// stack, which may move.
TEXT ·callSysV(SB), 0, $1024-40
	MOVQ	fn+0(FP), AX
	MOVQ	a0+8(FP), DI
	MOVQ	a1+16(FP), SI
	MOVQ	a2+24(FP), DX
	MOVQ	SP, BX		// callee-saved in the System V ABI
	LEAQ	960(SP), SP	// run the callee in the top of this frame
	ANDQ	$~15, SP
	CALL	AX
	MOVQ	BX, SP
	MOVQ	AX, ret+32(FP)
	RET
