#include "textflag.h"

// func spinPause()
TEXT ·spinPause(SB),NOSPLIT|NOFRAME,$0-0
	PAUSE
	RET
