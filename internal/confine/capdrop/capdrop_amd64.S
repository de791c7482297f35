/*
 * capdrop: the first program a confined moat process runs, in its new user
 * namespace, before moat itself. It drops from the bounding set every
 * capability not in KEEP, on its one thread, sizes the descriptor table to
 * hold TABLE_FD (a duplicate there, closed at exec: a table grows cheaply
 * only while one thread uses it, and keeps its size across execve), then
 * executes the file open at descriptor FD+1 (execveat, AT_EMPTY_PATH) with
 * the arguments after FD, closing FD (capdrop's own file) and FD+1 as it
 * does. Go cannot: its runtime has several threads before main, and the
 * bounding set is per thread, so each capability had to be dropped on
 * every thread, a stop of the world each (internal/confine/capdrop.go).
 *
 * TABLE_FD comes from capdrop.go's TableFD as a -D definition.
 *
 *   argv: capdrop KEEP FD ARGV...
 *
 * KEEP and FD in hexadecimal (lower case, 1 to 16 digits): KEEP a mask of
 * CAP_* bits; ARGV is the program's whole argument vector, its argv[0]
 * first. Any failure exits with status 127 and executes nothing.
 */
#define SYS_fcntl 72
#define SYS_prctl 157
#define SYS_exit_group 231
#define SYS_execveat 322
#define PR_CAPBSET_DROP 24
#define F_SETFD 2
#define F_DUPFD_CLOEXEC 1030
#define FD_CLOEXEC 1
#define AT_EMPTY_PATH 0x1000
#define EINVAL 22

	.text
	.globl _start
_start:
	mov	(%rsp), %rbx		/* argc */
	lea	8(%rsp), %r13		/* argv */
	lea	16(%rsp,%rbx,8), %r14	/* envp: past argv's NULL */
	cmp	$4, %rbx
	jb	fail
	mov	8(%r13), %rsi
	call	hex
	mov	%rax, %r15		/* KEEP */
	mov	16(%r13), %rsi
	call	hex
	mov	%rax, %rbp		/* FD */

	xor	%r12d, %r12d		/* the capability */
drop:
	cmp	$64, %r12
	jae	dropped
	bt	%r12, %r15
	jc	next
	mov	$SYS_prctl, %eax
	mov	$PR_CAPBSET_DROP, %edi
	mov	%r12, %rsi
	xor	%edx, %edx
	xor	%r10d, %r10d
	xor	%r8d, %r8d
	syscall
	cmp	$-EINVAL, %rax		/* past CAP_LAST_CAP */
	je	dropped
	test	%rax, %rax
	jnz	fail
next:
	inc	%r12
	jmp	drop

dropped:
	/* Under an RLIMIT_NOFILE below TABLE_FD the table grows as it would. */
	mov	$SYS_fcntl, %eax
	mov	%rbp, %rdi
	mov	$F_DUPFD_CLOEXEC, %esi
	mov	$TABLE_FD, %edx
	syscall
	mov	%rbp, %rdi
	call	cloexec
	inc	%rbp			/* the program */
	mov	%rbp, %rdi
	call	cloexec
	mov	$SYS_execveat, %eax
	mov	%rbp, %rdi
	lea	empty(%rip), %rsi
	lea	24(%r13), %rdx		/* ARGV */
	mov	%r14, %r10
	mov	$AT_EMPTY_PATH, %r8d
	syscall
fail:
	mov	$SYS_exit_group, %eax
	mov	$127, %edi
	syscall
	hlt

/* cloexec marks descriptor rdi close-on-exec, or fails. */
cloexec:
	mov	$SYS_fcntl, %eax
	mov	$F_SETFD, %esi
	mov	$FD_CLOEXEC, %edx
	syscall
	test	%rax, %rax
	jnz	fail
	ret

/* hex returns in rax the number the string at rsi spells, or fails. */
hex:
	xor	%eax, %eax
	mov	$16, %ecx
	cmpb	$0, (%rsi)
	je	fail
hexdigit:
	movzbl	(%rsi), %edx
	test	%edx, %edx
	jz	hexdone
	sub	$'0', %edx
	cmp	$9, %edx
	jbe	hexadd
	sub	$('a' - '0' - 10), %edx
	cmp	$10, %edx
	jb	fail
	cmp	$15, %edx
	ja	fail
hexadd:
	dec	%ecx
	js	fail			/* more than 16 digits */
	shl	$4, %rax
	or	%rdx, %rax
	inc	%rsi
	jmp	hexdigit
hexdone:
	ret

	.section .rodata
empty:
	.byte	0
