package systrap

// Linux ABI values that golang.org/x/sys/unix does not export.
const (
	futexWaitOp = 0
	futexWakeOp = 1

	saSiginfo  = 0x4
	saOnstack  = 0x08000000
	saRestorer = 0x04000000

	atHWCAP2 = 26
)
