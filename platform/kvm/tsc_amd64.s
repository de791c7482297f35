#include "textflag.h"

// func hostTSC() uint64
TEXT ·hostTSC(SB),NOSPLIT,$0-8
	RDTSC
	SHLQ	$32, DX
	ORQ	DX, AX
	MOVQ	AX, ret+0(FP)
	RET
