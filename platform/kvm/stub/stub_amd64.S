// The guest's supervisor-mode stub: the handlers every IDT gate and the
// syscall entry (MSR_LSTAR) point to. Each handler only leaves the VM with
// an OUT to a port that names the event (the vector, or SYSCALL_PORT): the
// sentry reads what the CPU saved and resumes the vCPU in user mode itself,
// so no instruction here ever runs after its OUT. The HLT behind each OUT
// makes a resumption at the wrong place an exit the sentry reports.
//
// Built by stub_build_test.go (`go test ./platform/kvm -run StubCode
// -update`) with layout.go's constants as -D definitions.

	.text
	.code64
	.globl	_start
_start:
	// The header: where the entry points are, then "moat".
	.long	vectors - _start
	.long	syscall_entry - _start
	.long	VECTOR_STRIDE
	.long	0x6d6f6174

	.balign	VECTOR_STRIDE
vectors:
	.set	vector, 0
	.rept	NUM_VECTORS
	outb	%al, $vector
	hlt
	.balign	VECTOR_STRIDE
	.set	vector, vector + 1
	.endr

syscall_entry:
	outb	%al, $SYSCALL_PORT
	hlt
