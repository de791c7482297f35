#include "textflag.h"

// func rawForkStub(ctlFD, requestOff, codeAddr, codeLen, entry uintptr, newMask, oldMask *uint64) (pid, errno uintptr)
//
// Forks the sentry without running any Go code in the child: the child maps
// the stub's code from the control file and jumps to its start-up routine,
// which throws away everything of the sentry it inherited. Every signal is
// blocked across the fork, so none can reach the child before the stub
// installs its own handlers. The calling goroutine must be locked to its
// thread: the child's parent-death signal is tied to that thread.
TEXT ·rawForkStub(SB),NOSPLIT|NOFRAME,$0-72
	MOVQ	$14, AX // rt_sigprocmask(SIG_SETMASK, newMask, oldMask, 8)
	MOVQ	$2, DI
	MOVQ	newMask+40(FP), SI
	MOVQ	oldMask+48(FP), DX
	MOVQ	$8, R10
	SYSCALL

	MOVQ	$56, AX // clone(SIGCHLD, 0, 0, 0, 0)
	MOVQ	$17, DI
	XORQ	SI, SI
	XORQ	DX, DX
	XORQ	R10, R10
	XORQ	R8, R8
	SYSCALL
	CMPQ	AX, $0
	JEQ	child
	MOVQ	AX, R12

	MOVQ	$14, AX // rt_sigprocmask(SIG_SETMASK, oldMask, nil, 8)
	MOVQ	$2, DI
	MOVQ	oldMask+48(FP), SI
	XORQ	DX, DX
	MOVQ	$8, R10
	SYSCALL

	CMPQ	R12, $-4095
	JCC	failed // unsigned >=: -errno
	MOVQ	R12, pid+56(FP)
	MOVQ	$0, errno+64(FP)
	RET
failed:
	NEGQ	R12
	MOVQ	$0, pid+56(FP)
	MOVQ	R12, errno+64(FP)
	RET

child:
	MOVQ	$9, AX // mmap(codeAddr, codeLen, PROT_READ|PROT_EXEC, MAP_SHARED|MAP_FIXED, ctlFD, 0)
	MOVQ	codeAddr+16(FP), DI
	MOVQ	codeLen+24(FP), SI
	MOVQ	$5, DX
	MOVQ	$0x11, R10
	MOVQ	ctlFD+0(FP), R8
	XORQ	R9, R9
	SYSCALL
	CMPQ	AX, $-4095
	JCC	childfailed
	MOVQ	ctlFD+0(FP), R12
	MOVQ	requestOff+8(FP), R14
	MOVQ	entry+32(FP), AX
	JMP	AX
childfailed:
	MOVQ	$231, AX // exit_group(119)
	MOVQ	$119, DI
	SYSCALL
	INT	$3
