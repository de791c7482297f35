#include "textflag.h"

// func spinPause()
TEXT ·spinPause(SB),NOSPLIT|NOFRAME,$0-0
	PAUSE
	RET

// func rdtsc() uint64
TEXT ·rdtsc(SB),NOSPLIT|NOFRAME,$0-8
	RDTSC
	SHLQ $32, DX
	ORQ DX, AX
	MOVQ AX, ret+0(FP)
	RET
