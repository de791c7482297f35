/*
 * The systrap stub: the only code that runs in a stub process besides the
 * guest's own. It is position-independent machine code mapped read-execute at
 * a fixed address (codeVA) in every stub. It has three jobs:
 *
 *  - the signal handler: a guest thread that makes a system call (SIGSYS from
 *    seccomp) or faults lands here on its signal stack; the handler publishes
 *    where the saved registers are, hands the thread to the sentry through the
 *    slot's state word and waits (spin, then futex) until the sentry says
 *    resume; rt_sigreturn then restores the registers the sentry wrote;
 *  - the syscall thread: executes mmap, munmap, mprotect, clone and
 *    recvmsg (of host files' descriptors) on the sentry's behalf, reading
 *    requests from a page the stub can only read;
 *  - start-up of new stubs and new guest threads.
 *
 * The syscall thread never touches its stack: the guest can write every
 * writable page of the process, so a return address there could be forged.
 * The handler's stack is guest-writable too, but a guest thread that corrupts
 * it only harms itself: its seccomp filter lets it make no host call but
 * futex, sched_yield, rt_sigreturn and a read of its own CPU clock.
 *
 * Layout constants come from layout.go as -D definitions.
 */

#define SYS_read 0
#define SYS_mmap 9
#define SYS_munmap 11
#define SYS_rt_sigaction 13
#define SYS_rt_sigprocmask 14
#define SYS_rt_sigreturn 15
#define SYS_sched_yield 24
#define SYS_clone 56
#define SYS_exit 60
#define SYS_getppid 110
#define SYS_sigaltstack 131
#define SYS_prctl 157
#define SYS_futex 202
#define SYS_clock_gettime 228
#define SYS_exit_group 231
#define SYS_seccomp 317
#define SYS_close_range 436

#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define PROT_READ 1
#define PROT_WRITE 2
#define PROT_EXEC 4
#define MAP_SHARED 1
#define MAP_FIXED 0x10
#define SIG_SETMASK 2
#define PR_SET_PDEATHSIG 1
#define PR_SET_NO_NEW_PRIVS 38
#define SECCOMP_SET_MODE_FILTER 1
#define SIGKILL 9
#define CLOCK_THREAD_CPUTIME_ID 3

	.text
	.globl stub_start
stub_start:
	/* Entry table: offsets the sentry needs, read by the Go build step. */
	.long first_stub_init - stub_start
	.long handler - stub_start
	.long restorer - stub_start
	.long thread_exit - stub_start
	.long 0x6d6f6174 /* "moat": marks a well-formed blob */

/*
 * YIELD_EVERY(counter, allowed, start, loop): every 64th spin iteration,
 * if allowed (a 32-bit register) is not zero, sched_yield, then go on at
 * loop. On a machine with few CPUs a spinner may hold the CPU that the
 * thread it waits for was woken on; yielding lets that thread run. But when
 * other host processes keep the CPUs busy, a yield gives one of them a whole
 * slice (milliseconds) while the thread that yielded waits in the run queue,
 * where a request does not wake it up: a yield that took longer than
 * PAR_YIELD_SLOW TSC ticks clears allowed, and the wait goes on spinning,
 * then sleeps. start (a 64-bit register) is scratch; rax, rcx, rdx and r11
 * are clobbered. The handler of a guest thread also yields only while the
 * guest leaves a CPU idle (PAR_GUEST_BUSY, busy.go).
 */
#define RDTSC64 rdtsc; shlq $32, %rdx; orq %rdx, %rax
#define YIELD_EVERY(counter, allowed, start, loop) \
	testl $63, counter; jnz loop; testl allowed, allowed; jz loop; \
	RDTSC64; movq %rax, start; \
	movl $SYS_sched_yield, %eax; syscall; \
	RDTSC64; subq start, %rax; movabsq $PARAMS_VA, %rdx; \
	cmpq PAR_YIELD_SLOW(%rdx), %rax; jb loop; \
	xorl allowed, allowed; jmp loop

/* exit_group(code) from stub code: used when start-up fails. */
#define DIE(code) movl $SYS_exit_group, %eax; movl $code, %edi; syscall; ud2

/*
 * first_stub_init: entered from the sentry's raw fork (fork_amd64.s), in a
 * copy of the sentry's address space, with no usable stack.
 *   r12 = control file fd, r14 = control-file offset of this stub's request page.
 * It keeps only the stub region, the control and memory files and the
 * host-file socket, then becomes a syscall thread.
 */
first_stub_init:
	/* Map the parameters read-only. */
	movl $SYS_mmap, %eax
	movabsq $PARAMS_VA, %rdi
	movl $PARAM_SIZE, %esi
	movl $PROT_READ, %edx
	movl $(MAP_SHARED|MAP_FIXED), %r10d
	movq %r12, %r8
	movl $PARAMS_OFF, %r9d
	syscall
	cmpq $-4095, %rax
	jae 1f

	/* Drop everything below and above the stub region. */
	movl $SYS_munmap, %eax
	xorl %edi, %edi
	movabsq $STUB_BASE, %rsi
	syscall
	testq %rax, %rax
	jnz 1f
	movl $SYS_munmap, %eax
	movabsq $STUB_END, %rdi
	movabsq $(TASK_END - STUB_END), %rsi
	syscall
	testq %rax, %rax
	jnz 1f

	/* Close every fd but the control and memory files and the socket
	 * host files' descriptors come on: PAR_KEEP_FDS, sorted, distinct. */
	movabsq $PARAMS_VA, %r15
	xorl %ebx, %ebx /* the lowest fd neither kept nor closed yet */
	xorl %ebp, %ebp
2:	cmpl $NUM_KEEP_FDS, %ebp
	jae 4f
	movl PAR_KEEP_FDS(%r15,%rbp,4), %esi
	cmpl %ebx, %esi
	je 3f
	movl $SYS_close_range, %eax
	movl %ebx, %edi
	decl %esi
	xorl %edx, %edx
	syscall
	movl PAR_KEEP_FDS(%r15,%rbp,4), %esi
3:	leal 1(%rsi), %ebx
	incl %ebp
	jmp 2b
4:	movl $SYS_close_range, %eax
	movl %ebx, %edi
	movl $-1, %esi
	xorl %edx, %edx
	syscall

	/* Every signal to its default action (the sentry's handlers were
	 * inherited, and point at code that is gone), ... */
	movl $1, %ebp
7:	cmpl $9, %ebp /* SIGKILL and SIGSTOP cannot be changed */
	je 8f
	cmpl $19, %ebp
	je 8f
	movl $SYS_rt_sigaction, %eax
	movl %ebp, %edi
	leaq PAR_DFL_ACTION(%r15), %rsi
	xorl %edx, %edx
	movl $8, %r10d
	syscall
8:	incl %ebp
	cmpl $64, %ebp
	jbe 7b

	/* ... then the handler for every signal the stub serves. */
	movl PAR_NUM_SIGNALS(%r15), %ebx
	cmpl $16, %ebx
	ja 1f
	xorl %ebp, %ebp
5:	cmpl %ebx, %ebp
	jae 6f
	movl $SYS_rt_sigaction, %eax
	movl PAR_SIGNALS(%r15,%rbp,4), %edi
	leaq PAR_SIGACTION(%r15), %rsi
	xorl %edx, %edx
	movl $8, %r10d
	syscall
	testq %rax, %rax
	jnz 1f
	incl %ebp
	jmp 5b

	/* No privileges ever again, and the syscall thread's filter. */
6:	movl $SYS_prctl, %eax
	movl $PR_SET_NO_NEW_PRIVS, %edi
	movl $1, %esi
	xorl %edx, %edx
	xorl %r10d, %r10d
	xorl %r8d, %r8d
	syscall
	testq %rax, %rax
	jnz 1f
	movl $SYS_seccomp, %eax
	movl $SECCOMP_SET_MODE_FILTER, %edi
	xorl %esi, %esi
	leaq PAR_SYS_FPROG(%r15), %rdx
	syscall
	testq %rax, %rax
	jnz 1f
	jmp stub_common_init
1:	DIE(120)

/*
 * stub_common_init: map this stub's request and result pages, die with the
 * sentry, and serve requests.
 *   r14 = control-file offset of the request page (the result page follows).
 */
stub_common_init:
	movabsq $PARAMS_VA, %r15
	movl $SYS_mmap, %eax
	movabsq $REQUEST_VA, %rdi
	movl $4096, %esi
	movl $PROT_READ, %edx
	movl $(MAP_SHARED|MAP_FIXED), %r10d
	movl PAR_CTL_FD(%r15), %r8d
	movq %r14, %r9
	syscall
	cmpq $-4095, %rax
	jae 1f
	movl $SYS_mmap, %eax
	movabsq $RESULT_VA, %rdi
	movl $4096, %esi
	movl $(PROT_READ|PROT_WRITE), %edx
	movl $(MAP_SHARED|MAP_FIXED), %r10d
	movl PAR_CTL_FD(%r15), %r8d
	leaq 4096(%r14), %r9
	syscall
	cmpq $-4095, %rax
	jae 1f

	/* Parent death kills the stub; if the sentry is already gone, die now. */
	movl $SYS_prctl, %eax
	movl $PR_SET_PDEATHSIG, %edi
	movl $SIGKILL, %esi
	syscall
	testq %rax, %rax
	jnz 1f
	movl $SYS_getppid, %eax
	syscall
	cmpl PAR_PPID(%r15), %eax
	jne 1f

	movabsq $REQUEST_VA, %r15
	movabsq $RESULT_VA, %r14
	xorl %r13d, %r13d
	jmp sys_loop
1:	DIE(121)

/*
 * sys_loop: the syscall thread. Registers, never memory, hold its state:
 *   r15 = request page, r14 = result page, r13d = last request seq served,
 *   rbx = op count, rbp = op index, r12d = the op's kind.
 * A clone child learns what it is from r12 (the kind) and r9 (its
 * argument), which the syscall preserves: the request page may already
 * hold the next request by the time the child runs. Between requests it
 * spins PAR_SYS_SPIN polls, then sleeps; at once while REQ_IDLE is set.
 */
sys_loop:
	movabsq $PARAMS_VA, %rbx
	movl PAR_SYS_SPIN(%rbx), %ebx
	movl $1, %esi /* yields allowed; rdi is YIELD_EVERY's scratch */
10:	movl REQ_SEQ(%r15), %eax
	cmpl %r13d, %eax
	jne 12f
	cmpl $0, REQ_IDLE(%r15)
	jne 13f
	pause
	decl %ebx
	jz 13f
	YIELD_EVERY(%ebx, %esi, %rdi, 10b)
13:
	/* Sleep: announce it, then re-check so a request posted meanwhile is not missed. */
	movl $1, RES_STUB_SLEEPING(%r14)
	mfence
	movl REQ_SEQ(%r15), %eax
	cmpl %r13d, %eax
	jne 11f
	movl $SYS_futex, %eax
	leaq REQ_SEQ(%r15), %rdi
	movl $FUTEX_WAIT, %esi
	movl %r13d, %edx
	xorl %r10d, %r10d
	syscall
11:	movl $0, RES_STUB_SLEEPING(%r14)
	jmp sys_loop

12:	movl %eax, %r13d
	movl REQ_NOPS(%r15), %ebx
	cmpl $MAX_OPS, %ebx
	jbe 13f
	movl $MAX_OPS, %ebx
13:	xorl %ebp, %ebp
14:	cmpl %ebx, %ebp
	jae 17f
	movl %ebp, %eax
	shll $6, %eax /* OP_SIZE == 64 */
	leaq REQ_OPS(%r15,%rax), %rcx
	movq OP_ARGS+0(%rcx), %rdi
	movq OP_ARGS+8(%rcx), %rsi
	movq OP_ARGS+16(%rcx), %rdx
	movq OP_ARGS+24(%rcx), %r10
	movq OP_ARGS+32(%rcx), %r8
	movq OP_ARGS+40(%rcx), %r9
	movq OP_NR(%rcx), %rax
	movl OP_KIND(%rcx), %r12d
	testl %r12d, %r12d
	jz 15f
	movl $SYS_clone, %eax
15:	syscall
	testq %rax, %rax
	jnz 16f
	/* rax == 0: a clone child, or a call that returned 0. */
	cmpl $OP_CLONE_THREAD, %r12d
	je thread_start
	cmpl $OP_CLONE_STUB, %r12d
	je clone_stub_start
16:	movq %rax, RES_RESULTS(%r14,%rbp,8)
	incl %ebp
	cmpq $-4095, %rax
	jb 14b
17:	movl %ebp, RES_NDONE(%r14)
	movl %r13d, %eax
	xchgl %eax, RES_ACK(%r14)
	cmpl $0, RES_SENTRY_SLEEPING(%r14)
	je sys_loop
	movl $SYS_futex, %eax
	leaq RES_ACK(%r14), %rdi
	movl $FUTEX_WAKE, %esi
	movl $1, %edx
	syscall
	jmp sys_loop

/* clone_stub_start: a fresh stub process, cloned from the source stub. r9 = its request page offset. */
clone_stub_start:
	movq %r9, %r14
	jmp stub_common_init

/*
 * thread_start: a new guest thread. r9 = its slot. It takes the slot's
 * signal stack, unblocks the signals the handler serves, confines itself to
 * the guest filter and parks in the handler (ud2 raises SIGILL) until the
 * sentry gives it guest registers.
 */
thread_start:
	movq %r9, %r12
	movl $SYS_sigaltstack, %eax
	leaq TS_ALT_STACK(%r12), %rdi
	xorl %esi, %esi
	syscall
	testq %rax, %rax
	jnz 1f
	movabsq $PARAMS_VA, %r15
	movl $SYS_rt_sigprocmask, %eax
	movl $SIG_SETMASK, %edi
	leaq PAR_GUEST_MASK(%r15), %rsi
	xorl %edx, %edx
	movl $8, %r10d
	syscall
	testq %rax, %rax
	jnz 1f
	movl $SYS_seccomp, %eax
	movl $SECCOMP_SET_MODE_FILTER, %edi
	xorl %esi, %esi
	leaq PAR_GUEST_FPROG(%r15), %rdx
	syscall
	testq %rax, %rax
	jnz 1f
	ud2
	/* Never reached: the sentry resumes the thread in guest code. */
1:	DIE(122)

/*
 * handler(signo, siginfo, ucontext): runs on the slot's signal stack with
 * every signal blocked. It may clobber any register: rt_sigreturn restores
 * them from the ucontext, which is exactly where the sentry reads and writes
 * the guest's registers.
 */
handler:
	movq %rsp, %rbx
	andq $~(SLOT_SIZE-1), %rbx /* the slot's state page */
	movl %edi, TS_SIGNO(%rbx)
	movq %rsi, TS_SIGINFO(%rbx)
	movq %rdx, TS_UCONTEXT(%rbx)
	RDTSC64
	movq %rax, TS_TRAP_TSC(%rbx)
	/*
	 * The TSC counts the time the host ran other threads too. After a run
	 * of guest code that long (or a first entry: no resume yet), read
	 * the thread's CPU clock, by which the sentry bounds what it counts
	 * (context.go, hostCPUBound); otherwise mark the reading absent.
	 */
	subq TS_RESUME_TSC(%rbx), %rax
	movabsq $PARAMS_VA, %rdx
	cmpq PAR_CPU_CHECK(%rdx), %rax
	jb 19f
	movl $SYS_clock_gettime, %eax
	movl $CLOCK_THREAD_CPUTIME_ID, %edi
	leaq TS_CPU_TIME(%rbx), %rsi
	syscall
	jmp 18f
19:	movq $-1, TS_CPU_TIME+8(%rbx)
18:	rdfsbase %rax
	movq %rax, TS_FSBASE(%rbx)
	rdgsbase %rax
	movq %rax, TS_GSBASE(%rbx)
	movl $THREAD_TRAPPED, %eax
	xchgl %eax, TS_STATE(%rbx)
	cmpl $0, TS_SENTRY_SLEEPING(%rbx)
	je 20f
	movl $SYS_futex, %eax
	leaq TS_STATE(%rbx), %rdi
	movl $FUTEX_WAKE, %esi
	movl $1, %edx
	syscall
20:	movabsq $PARAMS_VA, %r12
	movl PAR_HANDLER_SPIN(%r12), %r12d
	movl $1, %r13d /* yields allowed; r14 is YIELD_EVERY's scratch */
21:	cmpl $THREAD_RESUME, TS_STATE(%rbx)
	je 23f
	cmpl $0, TS_PARK(%rbx)
	jne 25f
	pause
	decl %r12d
	jz 25f
	movabsq $PARAMS_VA, %rax
	cmpl $0, PAR_GUEST_BUSY(%rax)
	jne 21b
	YIELD_EVERY(%r12d, %r13d, %r14, 21b)
25:	movl $1, TS_STUB_SLEEPING(%rbx)
	mfence
	cmpl $THREAD_TRAPPED, TS_STATE(%rbx)
	jne 22f
	movl $SYS_futex, %eax
	leaq TS_STATE(%rbx), %rdi
	movl $FUTEX_WAIT, %esi
	movl $THREAD_TRAPPED, %edx
	xorl %r10d, %r10d
	syscall
22:	movl $0, TS_STUB_SLEEPING(%rbx)
	jmp 20b
23:	RDTSC64 /* the guest's CPU time runs from here to the next trap */
	movq %rax, TS_RESUME_TSC(%rbx)
	cmpl $0, TS_FSGS_DIRTY(%rbx)
	je 24f
	movl $0, TS_FSGS_DIRTY(%rbx)
	movq TS_FSBASE(%rbx), %rax
	wrfsbase %rax
	movq TS_GSBASE(%rbx), %rax
	wrgsbase %rax
24:	ret /* to restorer, whose address the kernel put at the top of the frame */

restorer:
	movl $SYS_rt_sigreturn, %eax
	syscall
	ud2

/* thread_exit: the sentry resumes a guest thread here to end its host thread. */
thread_exit:
	movl $SYS_exit, %eax
	xorl %edi, %edi
	syscall
	ud2

	.globl stub_end
stub_end:
