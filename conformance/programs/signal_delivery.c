/*
 * signal_delivery: running signal handlers and coming back from them.
 *
 * Language runtimes, debuggers, JITs and every program with a SIGINT or
 * SIGCHLD handler depend on delivery working to the letter: the handler sees
 * the right siginfo, the interrupted code gets back every register it had,
 * masks and alternate stacks behave, and faults arrive with the faulting
 * address.
 * Checks: rt_sigreturn restores all general registers (rcx and r11 too when
 * the signal did not come from a syscall), the flags (CF PF AF ZF SF DF OF),
 * xmm0-15 (and the upper ymm halves with AVX), MXCSR, the x87 control word
 * and stack, for a signal raised by tgkill from assembly, by a ud2 whose
 * handler moves rip on, and by a timer while spinning; the frame's saved
 * registers are the interrupted ones, and a handler starts with DF clear and
 * a clean MXCSR and x87 control word. SA_SIGINFO handlers see si_signo,
 * si_code (SI_USER from kill, SI_TKILL from tkill and tgkill, SI_QUEUE and
 * si_value from rt_sigqueueinfo and rt_tgsigqueueinfo), si_pid and si_uid;
 * neither may forge SI_USER or SI_TKILL for another process (EPERM). Blocked signals stay
 * pending (rt_sigpending) and arrive before the unblocking call returns;
 * standard signals coalesce, real-time ones queue, lowest number first, FIFO
 * with their values. sa_mask and the signal itself are blocked in the
 * handler and unblocked after; SA_NODEFER lets it nest; SA_RESETHAND restores
 * SIG_DFL on delivery. SIGCHLD, SIGURG and SIGWINCH are ignored by default
 * (blocked they stay pending; ignored ones too until the action is set
 * again). sigaltstack: SA_ONSTACK handlers run on it and see SS_ONSTACK
 * (changing it then is EPERM), uc_stack describes it, SS_AUTODISARM disarms
 * it during the handler. rt_sigsuspend returns EINTR after the handler and
 * restores the mask; pause returns EINTR after a handler ran; rt_sigtimedwait takes a blocked pending signal (handler
 * or not) with its siginfo, times out with EAGAIN, and checks its timeout.
 * Faults: SIGSEGV SEGV_MAPERR and SEGV_ACCERR, SIGBUS BUS_ADRERR past the
 * end of a mapped file, SIGFPE FPE_INTDIV for x/0 and INT_MIN/-1, SIGILL
 * ILL_ILLOPN, each with si_addr, left by siglongjmp with the mask restored.
 * Errors of kill, tkill, tgkill and rt_sigqueueinfo.
 */
// covers: rt_sigaction rt_sigprocmask rt_sigreturn rt_sigpending rt_sigsuspend rt_sigtimedwait sigaltstack kill tkill tgkill rt_sigqueueinfo rt_tgsigqueueinfo pause
#include "check.h"

#include <cpuid.h>
#include <limits.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)
#endif

/* A pid that no process has: above the largest pid_max (4194304). */
#define NO_PID 0x3ffffff0

#define RTSIG 40 /* a real-time signal the C library does not reserve */

static long sys_sigpending(unsigned long *set)
{
	return syscall(SYS_rt_sigpending, set, 8);
}

static unsigned long pending_mask(void)
{
	unsigned long set = 0;

	CHECK_EQ(sys_sigpending(&set), 0);
	return set;
}

static unsigned long blocked_mask(void)
{
	unsigned long set = 0;

	CHECK_EQ(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &set, 8), 0);
	return set;
}

#define BIT(s) (1UL << ((s) - 1))

static void set_mask(int how, unsigned long set)
{
	CHECK_EQ(syscall(SYS_rt_sigprocmask, how, &set, NULL, 8), 0);
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *), int flags,
		    unsigned long mask)
{
	struct sigaction sa;
	int s;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&sa.sa_mask);
	for (s = 1; s <= 64; s++)
		if (mask & BIT(s))
			sigaddset(&sa.sa_mask, s);
	CHECK_OK(sigaction(sig, &sa, NULL));
}

static void set_action(int sig, void (*h)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	CHECK_OK(sigaction(sig, &sa, NULL));
}

/* What handlers saw. */
static volatile int count[65];
static siginfo_t info[65];
static volatile int order[16], norder;
static volatile unsigned long mask_in_handler;

static void record(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	count[sig]++;
	info[sig] = *si;
	if (norder < 16)
		order[norder++] = sig * 100 + (si->si_code == SI_QUEUE ?
						       si->si_value.sival_int : 0);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &mask_in_handler, 8);
}

static void reset_records(void)
{
	memset((void *)count, 0, sizeof(count));
	memset(info, 0, sizeof(info));
	norder = 0;
}

/*
 * The register test. sd_run_* load every register from the sd_in* arrays,
 * raise a signal one way or another, and store every register into the
 * sd_out* arrays; sd_handler runs sd_clobber, which loads junk into all of
 * them. The C code never sees the registers in between.
 */
enum { RAX, RBX, RCX, RDX, RSI, RDI, RBP, R8, R9, R10, R11, R12, R13, R14, R15,
       NGPR };
static const char *const gpr_name[NGPR] = {
	"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8",
	"r9",  "r10", "r11", "r12", "r13", "r14", "r15",
};
/* Where each one is in the frame's gregs. */
static const int gpr_greg[NGPR] = {
	REG_RAX, REG_RBX, REG_RCX, REG_RDX, REG_RSI, REG_RDI, REG_RBP, REG_R8,
	REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
};

/* The flags SD_LOAD sets: CF PF AF ZF SF DF OF. */
#define SD_FLAGS 0xcd5UL
#define FLAG_DF 0x400UL

uint64_t sd_in[NGPR], sd_out[NGPR];
unsigned char sd_xin[16][16], sd_xout[16][16];
unsigned char sd_yin[16][16], sd_yout[16][16]; /* upper ymm halves */
double sd_fin[2], sd_fout[2];
uint32_t sd_mxcsr_in, sd_mxcsr_out, sd_mxcsr_default = 0x1f80;
uint16_t sd_fcw_in, sd_fcw_out;
uint64_t sd_flags_out;
uint8_t sd_avx;
volatile int sd_done;
uint64_t sd_budget;
/* sd_state: flags, mxcsr and the x87 control word, as sd_read_state finds
 * them (in the handler). */
uint64_t sd_state_flags;
uint32_t sd_state_mxcsr;
uint16_t sd_state_fcw;
/* sd_junk: what sd_clobber loads. */
uint64_t sd_junk = 0xdeadbeefdeadbeefULL;
uint32_t sd_junk_mxcsr = 0x3f80;
uint16_t sd_junk_fcw = 0x077f;

extern void sd_run_tgkill(void), sd_run_ud2(void), sd_run_spin(void);
extern void sd_clobber(void), sd_read_state(void);
extern int sd_div(int, int);
extern char sd_after_syscall[], sd_ud2[], sd_after_ud2[], sd_spin_begin[],
	sd_spin_end[], sd_div_insn[];

__asm__(
	".macro SD_LOAD\n"
	"	ldmxcsr sd_mxcsr_in(%rip)\n"
	"	fninit\n"
	"	fldcw sd_fcw_in(%rip)\n"
	"	fldl sd_fin(%rip)\n"
	"	fldl sd_fin+8(%rip)\n"
	"	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"	movdqu sd_xin+16*\\i(%rip), %xmm\\i\n"
	"	.endr\n"
	"	cmpb $0, sd_avx(%rip)\n"
	"	je 1f\n"
	"	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"	vinsertf128 $1, sd_yin+16*\\i(%rip), %ymm\\i, %ymm\\i\n"
	"	.endr\n"
	"1:\n"
	"	pushfq\n"
	"	orq $0xcd5, (%rsp)\n"
	"	popfq\n"
	"	movq sd_in+0(%rip), %rax\n"
	"	movq sd_in+8(%rip), %rbx\n"
	"	movq sd_in+16(%rip), %rcx\n"
	"	movq sd_in+24(%rip), %rdx\n"
	"	movq sd_in+32(%rip), %rsi\n"
	"	movq sd_in+40(%rip), %rdi\n"
	"	movq sd_in+48(%rip), %rbp\n"
	"	movq sd_in+56(%rip), %r8\n"
	"	movq sd_in+64(%rip), %r9\n"
	"	movq sd_in+72(%rip), %r10\n"
	"	movq sd_in+80(%rip), %r11\n"
	"	movq sd_in+88(%rip), %r12\n"
	"	movq sd_in+96(%rip), %r13\n"
	"	movq sd_in+104(%rip), %r14\n"
	"	movq sd_in+112(%rip), %r15\n"
	".endm\n"
	".macro SD_STORE\n"
	"	pushfq\n"
	"	popq sd_flags_out(%rip)\n"
	"	cld\n"
	"	movq %rax, sd_out+0(%rip)\n"
	"	movq %rbx, sd_out+8(%rip)\n"
	"	movq %rcx, sd_out+16(%rip)\n"
	"	movq %rdx, sd_out+24(%rip)\n"
	"	movq %rsi, sd_out+32(%rip)\n"
	"	movq %rdi, sd_out+40(%rip)\n"
	"	movq %rbp, sd_out+48(%rip)\n"
	"	movq %r8, sd_out+56(%rip)\n"
	"	movq %r9, sd_out+64(%rip)\n"
	"	movq %r10, sd_out+72(%rip)\n"
	"	movq %r11, sd_out+80(%rip)\n"
	"	movq %r12, sd_out+88(%rip)\n"
	"	movq %r13, sd_out+96(%rip)\n"
	"	movq %r14, sd_out+104(%rip)\n"
	"	movq %r15, sd_out+112(%rip)\n"
	"	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"	movdqu %xmm\\i, sd_xout+16*\\i(%rip)\n"
	"	.endr\n"
	"	cmpb $0, sd_avx(%rip)\n"
	"	je 1f\n"
	"	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"	vextractf128 $1, %ymm\\i, sd_yout+16*\\i(%rip)\n"
	"	.endr\n"
	"	vzeroupper\n"
	"1:\n"
	"	stmxcsr sd_mxcsr_out(%rip)\n"
	"	fnstcw sd_fcw_out(%rip)\n"
	"	fstpl sd_fout(%rip)\n"
	"	fstpl sd_fout+8(%rip)\n"
	"	fninit\n"
	"	ldmxcsr sd_mxcsr_default(%rip)\n"
	".endm\n"
	".macro SD_SAVE\n"
	"	push %rbx\n"
	"	push %rbp\n"
	"	push %r12\n"
	"	push %r13\n"
	"	push %r14\n"
	"	push %r15\n"
	".endm\n"
	".macro SD_RESTORE\n"
	"	pop %r15\n"
	"	pop %r14\n"
	"	pop %r13\n"
	"	pop %r12\n"
	"	pop %rbp\n"
	"	pop %rbx\n"
	".endm\n"
	".text\n"
	/* sd_in holds rax = SYS_tgkill and its arguments in rdi, rsi, rdx. */
	".globl sd_run_tgkill, sd_after_syscall\n"
	"sd_run_tgkill:\n"
	"	SD_SAVE\n"
	"	SD_LOAD\n"
	"	syscall\n"
	"sd_after_syscall:\n"
	"	SD_STORE\n"
	"	SD_RESTORE\n"
	"	ret\n"
	".globl sd_run_ud2, sd_ud2, sd_after_ud2\n"
	"sd_run_ud2:\n"
	"	SD_SAVE\n"
	"	SD_LOAD\n"
	"sd_ud2:\n"
	"	ud2\n"
	"sd_after_ud2:\n"
	"	SD_STORE\n"
	"	SD_RESTORE\n"
	"	ret\n"
	/* Spin, without touching a register, until the handler sets sd_done
	 * or sd_budget runs out. */
	".globl sd_run_spin, sd_spin_begin, sd_spin_end\n"
	"sd_run_spin:\n"
	"	SD_SAVE\n"
	"	SD_LOAD\n"
	"sd_spin_begin:\n"
	"	cmpl $0, sd_done(%rip)\n"
	"	jne sd_spin_end\n"
	"	decq sd_budget(%rip)\n"
	"	jnz sd_spin_begin\n"
	"sd_spin_end:\n"
	"	SD_STORE\n"
	"	SD_RESTORE\n"
	"	ret\n"
	/* Junk in every register a handler can change. */
	".globl sd_clobber\n"
	"sd_clobber:\n"
	"	SD_SAVE\n"
	"	ldmxcsr sd_junk_mxcsr(%rip)\n"
	"	fldcw sd_junk_fcw(%rip)\n"
	"	fldz\n"
	"	fld1\n"
	"	fldpi\n"
	"	fstp %st(0)\n"
	"	fstp %st(0)\n"
	"	fstp %st(0)\n"
	"	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"	movq sd_junk(%rip), %xmm\\i\n"
	"	.endr\n"
	"	cmpb $0, sd_avx(%rip)\n"
	"	je 1f\n"
	"	.irp i,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15\n"
	"	vbroadcastsd sd_junk(%rip), %ymm\\i\n"
	"	.endr\n"
	"	vzeroupper\n"
	"1:\n"
	"	pushfq\n"
	"	xorq $0x8d5, (%rsp)\n"
	"	popfq\n"
	"	movq sd_junk(%rip), %rax\n"
	"	movq %rax, %rbx\n"
	"	movq %rax, %rcx\n"
	"	movq %rax, %rdx\n"
	"	movq %rax, %rsi\n"
	"	movq %rax, %rdi\n"
	"	movq %rax, %rbp\n"
	"	movq %rax, %r8\n"
	"	movq %rax, %r9\n"
	"	movq %rax, %r10\n"
	"	movq %rax, %r11\n"
	"	movq %rax, %r12\n"
	"	movq %rax, %r13\n"
	"	movq %rax, %r14\n"
	"	movq %rax, %r15\n"
	"	SD_RESTORE\n"
	"	ret\n"
	".globl sd_read_state\n"
	"sd_read_state:\n"
	"	pushfq\n"
	"	popq sd_state_flags(%rip)\n"
	"	stmxcsr sd_state_mxcsr(%rip)\n"
	"	fnstcw sd_state_fcw(%rip)\n"
	"	ret\n"
	".globl sd_div, sd_div_insn\n"
	"sd_div:\n"
	"	movl %edi, %eax\n"
	"	cltd\n"
	"sd_div_insn:\n"
	"	idivl %esi\n"
	"	ret\n");

/* What sd_handler found. */
static uint64_t frame_gregs[NGPR], frame_rip, frame_flags;
static unsigned char frame_xmm[16][16];
static uint32_t frame_mxcsr;
static uint16_t frame_fcw;
static uint64_t entry_flags;
static uint32_t entry_mxcsr;
static uint16_t entry_fcw;
static siginfo_t frame_info;
static int handled;

static void sd_handler(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	int i;

	(void)sig;
	sd_read_state();
	entry_flags = sd_state_flags;
	entry_mxcsr = sd_state_mxcsr;
	entry_fcw = sd_state_fcw;
	frame_info = *si;
	for (i = 0; i < NGPR; i++)
		frame_gregs[i] = uc->uc_mcontext.gregs[gpr_greg[i]];
	frame_rip = uc->uc_mcontext.gregs[REG_RIP];
	frame_flags = uc->uc_mcontext.gregs[REG_EFL];
	memcpy(frame_xmm, uc->uc_mcontext.fpregs->_xmm, sizeof(frame_xmm));
	frame_mxcsr = uc->uc_mcontext.fpregs->mxcsr;
	frame_fcw = uc->uc_mcontext.fpregs->cwd;
	/* ud2 is two bytes: go on after it. */
	if (frame_rip == (uintptr_t)sd_ud2)
		uc->uc_mcontext.gregs[REG_RIP] += 2;
	handled++;
	sd_done = 1;
	sd_clobber();
}

static void sd_fill(void)
{
	int i, j;

	for (i = 0; i < NGPR; i++)
		sd_in[i] = 0x0101010101010101ULL * (i + 1) ^ 0x8040201008040201ULL;
	for (i = 0; i < 16; i++)
		for (j = 0; j < 16; j++) {
			sd_xin[i][j] = (unsigned char)(i * 16 + j + 1);
			sd_yin[i][j] = (unsigned char)(0xff - i * 16 - j);
		}
	sd_fin[0] = 3.141592653589793;
	sd_fin[1] = -2.718281828459045;
	sd_mxcsr_in = 0x7f80; /* all masked, round toward zero */
	sd_fcw_in = 0x0f7f;   /* all masked, 64-bit precision, truncate */
	memset(sd_out, 0, sizeof(sd_out));
	memset(sd_xout, 0, sizeof(sd_xout));
	memset(sd_yout, 0, sizeof(sd_yout));
	memset(sd_fout, 0, sizeof(sd_fout));
	sd_mxcsr_out = 0;
	sd_fcw_out = 0;
	sd_flags_out = 0;
	handled = 0;
	sd_done = 0;
}

/* sd_check compares what came back with what went in. syscall leaves rcx
 * (the return address) and r11 (the flags) behind, and rax is its result. */
static void sd_check(const char *how, int after_syscall, int check_flags)
{
	int i;

	if (handled != 1)
		check_fail(__FILE__, __LINE__, "%s: the handler ran %d times", how,
			   handled);
	for (i = 0; i < NGPR; i++) {
		uint64_t want = sd_in[i];

		if (after_syscall && i == RAX)
			want = 0;
		if (after_syscall && i == RCX)
			want = (uintptr_t)sd_after_syscall;
		if (after_syscall && i == R11)
			continue;
		if (sd_out[i] != want)
			check_fail(__FILE__, __LINE__,
				   "%s: %s came back as %#lx, not %#lx", how,
				   gpr_name[i], (unsigned long)sd_out[i],
				   (unsigned long)want);
		if (frame_gregs[i] != want)
			check_fail(__FILE__, __LINE__,
				   "%s: the frame holds %s = %#lx, not %#lx", how,
				   gpr_name[i], (unsigned long)frame_gregs[i],
				   (unsigned long)want);
	}
	for (i = 0; i < 16; i++) {
		if (memcmp(sd_xout[i], sd_xin[i], 16) != 0)
			check_fail(__FILE__, __LINE__, "%s: xmm%d changed", how, i);
		if (memcmp(frame_xmm[i], sd_xin[i], 16) != 0)
			check_fail(__FILE__, __LINE__,
				   "%s: the frame's xmm%d is wrong", how, i);
		if (sd_avx && memcmp(sd_yout[i], sd_yin[i], 16) != 0)
			check_fail(__FILE__, __LINE__,
				   "%s: the upper half of ymm%d changed", how, i);
	}
	if (check_flags) {
		if ((sd_flags_out & SD_FLAGS) != SD_FLAGS)
			check_fail(__FILE__, __LINE__,
				   "%s: flags came back as %#lx", how,
				   (unsigned long)sd_flags_out);
		CHECK_EQ(frame_flags & SD_FLAGS, SD_FLAGS);
	} else {
		CHECK_EQ(sd_flags_out & FLAG_DF, FLAG_DF);
		CHECK_EQ(frame_flags & FLAG_DF, FLAG_DF);
	}
	CHECK_EQ(sd_mxcsr_out, sd_mxcsr_in);
	CHECK_EQ(frame_mxcsr, sd_mxcsr_in);
	CHECK_EQ(sd_fcw_out, sd_fcw_in);
	CHECK_EQ(frame_fcw, sd_fcw_in);
	/* The x87 stack: last in, first out. */
	CHECK(sd_fout[0] == sd_fin[1]);
	CHECK(sd_fout[1] == sd_fin[0]);
	/* The handler started clean: DF clear (the ABI wants it), default
	 * MXCSR and x87 control word. */
	CHECK_EQ(entry_flags & FLAG_DF, 0);
	CHECK_EQ(entry_mxcsr, 0x1f80);
	CHECK_EQ(entry_fcw, 0x037f);
}

static void test_registers(void)
{
	unsigned int a, b, c, d;
	struct itimerval it;
	int tries;

	/* AVX, and the OS saving the ymm state (OSXSAVE, XCR0 bits 1-2). */
	if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_AVX) &&
	    (c & bit_OSXSAVE)) {
		uint32_t lo, hi;

		__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
		sd_avx = (lo & 6) == 6;
	}

	/* tgkill from the assembly: the signal is delivered on the way out
	 * of the system call. */
	install(SIGUSR1, sd_handler, 0, 0);
	sd_fill();
	sd_in[RAX] = SYS_tgkill;
	sd_in[RDI] = getpid();
	sd_in[RSI] = syscall(SYS_gettid);
	sd_in[RDX] = SIGUSR1;
	sd_run_tgkill();
	sd_check("tgkill", 1, 1);
	CHECK_EQ(frame_info.si_signo, SIGUSR1);
	CHECK_EQ(frame_info.si_code, SI_TKILL);
	CHECK_EQ(frame_rip, (uintptr_t)sd_after_syscall);

	/* ud2: a fault, the handler moves rip past it. */
	install(SIGILL, sd_handler, 0, 0);
	sd_fill();
	sd_run_ud2();
	sd_check("ud2", 0, 1);
	CHECK_EQ(frame_rip, (uintptr_t)sd_ud2);
	CHECK_EQ(frame_info.si_signo, SIGILL);
	CHECK_EQ(frame_info.si_code, ILL_ILLOPN);
	CHECK(frame_info.si_addr == (void *)sd_ud2);

	/* A timer interrupting a spin: the signal arrives between two
	 * arbitrary instructions. Tried again if it came too early. */
	install(SIGALRM, sd_handler, 0, 0);
	for (tries = 0; tries < 5; tries++) {
		sd_fill();
		sd_budget = 2000000000ULL;
		memset(&it, 0, sizeof(it));
		it.it_value.tv_usec = 2000;
		CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
		sd_run_spin();
		if (frame_rip >= (uintptr_t)sd_spin_begin &&
		    frame_rip <= (uintptr_t)sd_spin_end)
			break;
	}
	CHECK(tries < 5);
	CHECK(sd_budget != 0);
	sd_check("timer", 0, 0);
	CHECK_EQ(frame_info.si_signo, SIGALRM);

	set_action(SIGUSR1, SIG_DFL);
	set_action(SIGILL, SIG_DFL);
	set_action(SIGALRM, SIG_DFL);
}

static void test_siginfo(void)
{
	siginfo_t si;
	pid_t pid = getpid();
	long tid = syscall(SYS_gettid);

	install(SIGUSR1, record, 0, 0);
	reset_records();
	/* A signal a thread sends itself arrives before the call returns. */
	CHECK_EQ(kill(pid, SIGUSR1), 0);
	CHECK_EQ(count[SIGUSR1], 1);
	CHECK_EQ(info[SIGUSR1].si_signo, SIGUSR1);
	CHECK_EQ(info[SIGUSR1].si_code, SI_USER);
	CHECK_EQ(info[SIGUSR1].si_pid, pid);
	CHECK_EQ(info[SIGUSR1].si_uid, getuid());
	CHECK_EQ(info[SIGUSR1].si_errno, 0);

	CHECK_EQ(syscall(SYS_tgkill, pid, tid, SIGUSR1), 0);
	CHECK_EQ(count[SIGUSR1], 2);
	CHECK_EQ(info[SIGUSR1].si_code, SI_TKILL);
	CHECK_EQ(info[SIGUSR1].si_pid, pid);
	CHECK_EQ(info[SIGUSR1].si_uid, getuid());

	CHECK_EQ(syscall(SYS_tkill, tid, SIGUSR1), 0);
	CHECK_EQ(count[SIGUSR1], 3);
	CHECK_EQ(info[SIGUSR1].si_code, SI_TKILL);
	CHECK_EQ(info[SIGUSR1].si_pid, pid);

	/* rt_sigqueueinfo delivers the siginfo it is given. */
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGUSR1;
	si.si_code = SI_QUEUE;
	si.si_pid = pid;
	si.si_uid = getuid();
	si.si_value.sival_int = 42;
	CHECK_EQ(syscall(SYS_rt_sigqueueinfo, pid, SIGUSR1, &si), 0);
	CHECK_EQ(count[SIGUSR1], 4);
	CHECK_EQ(info[SIGUSR1].si_code, SI_QUEUE);
	CHECK_EQ(info[SIGUSR1].si_value.sival_int, 42);
	CHECK_EQ(info[SIGUSR1].si_pid, pid);
	/* rt_tgsigqueueinfo: the same, aimed at one thread. */
	si.si_value.sival_int = 43;
	CHECK_EQ(syscall(SYS_rt_tgsigqueueinfo, pid, tid, SIGUSR1, &si), 0);
	CHECK_EQ(count[SIGUSR1], 5);
	CHECK_EQ(info[SIGUSR1].si_code, SI_QUEUE);
	CHECK_EQ(info[SIGUSR1].si_value.sival_int, 43);
	CHECK_ERR(syscall(SYS_rt_tgsigqueueinfo, pid, NO_PID, SIGUSR1, &si), ESRCH);
	CHECK_ERR(syscall(SYS_rt_tgsigqueueinfo, NO_PID, tid, SIGUSR1, &si), ESRCH);
	CHECK_ERR(syscall(SYS_rt_tgsigqueueinfo, 0, tid, SIGUSR1, &si), EINVAL);
	/* Signal 0 only checks. */
	CHECK_EQ(kill(pid, 0), 0);
	CHECK_EQ(syscall(SYS_tgkill, pid, tid, 0), 0);
	CHECK_EQ(count[SIGUSR1], 5);

	/* Errors. */
	CHECK_ERR(kill(pid, 65), EINVAL);
	CHECK_ERR(kill(NO_PID, SIGUSR1), ESRCH);
	CHECK_ERR(syscall(SYS_tgkill, 0, tid, SIGUSR1), EINVAL);
	CHECK_ERR(syscall(SYS_tgkill, pid, 0, SIGUSR1), EINVAL);
	CHECK_ERR(syscall(SYS_tgkill, pid, tid, 65), EINVAL);
	CHECK_ERR(syscall(SYS_tgkill, pid, NO_PID, SIGUSR1), ESRCH);
	CHECK_ERR(syscall(SYS_tgkill, NO_PID, tid, SIGUSR1), ESRCH);
	CHECK_ERR(syscall(SYS_tkill, 0, SIGUSR1), EINVAL);
	CHECK_ERR(syscall(SYS_tkill, NO_PID, SIGUSR1), ESRCH);
	/* Forging a kill or tkill for someone else is refused before the
	 * target is even looked for; a queued one is not. */
	si.si_code = SI_USER;
	CHECK_ERR(syscall(SYS_rt_sigqueueinfo, NO_PID, SIGUSR1, &si), EPERM);
	si.si_code = SI_TKILL;
	CHECK_ERR(syscall(SYS_rt_sigqueueinfo, NO_PID, SIGUSR1, &si), EPERM);
	CHECK_ERR(syscall(SYS_rt_tgsigqueueinfo, pid, NO_PID, SIGUSR1, &si),
		  EPERM);
	si.si_code = SI_QUEUE;
	CHECK_ERR(syscall(SYS_rt_sigqueueinfo, NO_PID, SIGUSR1, &si), ESRCH);
	CHECK_ERR(syscall(SYS_rt_sigqueueinfo, pid, SIGUSR1, (void *)8), EFAULT);
	CHECK_EQ(count[SIGUSR1], 5);
	set_action(SIGUSR1, SIG_DFL);
}

static void test_pending(void)
{
	siginfo_t si;
	int v;

	reset_records();
	install(SIGUSR1, record, 0, ~0UL);
	install(SIGUSR2, record, 0, ~0UL);
	install(35, record, 0, ~0UL);
	install(RTSIG, record, 0, ~0UL);

	set_mask(SIG_BLOCK, BIT(SIGUSR1));
	CHECK_EQ(kill(getpid(), SIGUSR1), 0);
	CHECK_EQ(kill(getpid(), SIGUSR1), 0);
	CHECK_EQ(count[SIGUSR1], 0);
	CHECK_EQ(pending_mask(), BIT(SIGUSR1));
	/* Unblocking delivers it (once: a standard signal does not queue)
	 * before rt_sigprocmask returns. */
	set_mask(SIG_UNBLOCK, BIT(SIGUSR1));
	CHECK_EQ(count[SIGUSR1], 1);
	CHECK_EQ(pending_mask(), 0);

	/* Real-time signals queue, with their values, and the lowest
	 * pending signal goes first. */
	reset_records();
	set_mask(SIG_BLOCK, BIT(SIGUSR2) | BIT(35) | BIT(RTSIG));
	memset(&si, 0, sizeof(si));
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	for (v = 1; v <= 3; v++) {
		si.si_signo = RTSIG;
		si.si_value.sival_int = v;
		CHECK_EQ(syscall(SYS_rt_sigqueueinfo, getpid(), RTSIG, &si), 0);
	}
	si.si_signo = 35;
	si.si_value.sival_int = 7;
	CHECK_EQ(syscall(SYS_rt_sigqueueinfo, getpid(), 35, &si), 0);
	CHECK_EQ(kill(getpid(), SIGUSR2), 0);
	CHECK_EQ(kill(getpid(), SIGUSR2), 0);
	CHECK_EQ(pending_mask(), BIT(SIGUSR2) | BIT(35) | BIT(RTSIG));
	CHECK_EQ(norder, 0);
	set_mask(SIG_UNBLOCK, BIT(SIGUSR2) | BIT(35) | BIT(RTSIG));
	CHECK_EQ(norder, 5);
	CHECK_EQ(order[0], SIGUSR2 * 100);
	CHECK_EQ(order[1], 35 * 100 + 7);
	CHECK_EQ(order[2], RTSIG * 100 + 1);
	CHECK_EQ(order[3], RTSIG * 100 + 2);
	CHECK_EQ(order[4], RTSIG * 100 + 3);
	CHECK_EQ(pending_mask(), 0);

	/* A smaller set size is fine (only that much is written), a larger
	 * one is not. */
	CHECK_EQ(syscall(SYS_rt_sigpending, &si, 4), 0);
	CHECK_ERR(syscall(SYS_rt_sigpending, &si, 16), EINVAL);
	CHECK_ERR(syscall(SYS_rt_sigpending, (void *)8, 8), EFAULT);
	set_action(SIGUSR1, SIG_DFL);
	set_action(SIGUSR2, SIG_DFL);
	set_action(35, SIG_DFL);
	set_action(RTSIG, SIG_DFL);
}

/* Handlers for the mask tests. */
static volatile int depth, max_depth, raise_again;
static volatile unsigned long inner_mask, inner_pending;
static volatile void *inner_handler;

static void nest(int sig, siginfo_t *si, void *uc)
{
	struct sigaction sa;

	(void)si;
	(void)uc;
	count[sig]++;
	depth++;
	if (depth > max_depth)
		max_depth = depth;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &inner_mask, 8);
	sigaction(sig, NULL, &sa);
	inner_handler = (void *)sa.sa_handler;
	if (raise_again) {
		raise_again = 0;
		kill(getpid(), sig);
		if (sig == SIGUSR1)
			kill(getpid(), SIGUSR2);
		syscall(SYS_rt_sigpending, &inner_pending, 8);
	}
	depth--;
}

static void test_handler_mask(void)
{
	struct sigaction sa;

	/* The signal and sa_mask are blocked in the handler: raised there,
	 * both wait for it to return. */
	reset_records();
	install(SIGUSR1, nest, 0, BIT(SIGUSR2));
	install(SIGUSR2, record, 0, 0);
	depth = max_depth = 0;
	raise_again = 1;
	CHECK_EQ(kill(getpid(), SIGUSR1), 0);
	CHECK_EQ(inner_mask, BIT(SIGUSR1) | BIT(SIGUSR2));
	CHECK_EQ(inner_pending, BIT(SIGUSR1) | BIT(SIGUSR2));
	CHECK_EQ(max_depth, 1);
	CHECK_EQ(count[SIGUSR1], 2);
	CHECK_EQ(count[SIGUSR2], 1);
	CHECK_EQ(blocked_mask(), 0);
	CHECK_EQ(pending_mask(), 0);

	/* SA_NODEFER: the signal itself is not blocked, it nests. */
	reset_records();
	install(SIGUSR1, nest, SA_NODEFER, 0);
	depth = max_depth = 0;
	raise_again = 1;
	CHECK_EQ(kill(getpid(), SIGUSR1), 0);
	CHECK_EQ(max_depth, 2);
	CHECK_EQ(count[SIGUSR1], 2);
	CHECK_EQ(count[SIGUSR2], 1);
	CHECK_EQ(blocked_mask(), 0);

	/* SA_RESETHAND: back to SIG_DFL as the handler is entered (the
	 * signal is still blocked in it: SA_NODEFER is not implied). */
	reset_records();
	install(SIGUSR1, nest, SA_RESETHAND, 0);
	depth = max_depth = 0;
	raise_again = 0;
	CHECK_EQ(kill(getpid(), SIGUSR1), 0);
	CHECK_EQ(count[SIGUSR1], 1);
	CHECK(inner_handler == (void *)SIG_DFL);
	CHECK_EQ(inner_mask, BIT(SIGUSR1));
	CHECK_EQ(sigaction(SIGUSR1, NULL, &sa), 0);
	CHECK(sa.sa_handler == SIG_DFL);
	set_action(SIGUSR2, SIG_DFL);
}

static void test_default_ignore(void)
{
	/* Ignored by default: nothing happens, nothing stays pending. */
	CHECK_EQ(kill(getpid(), SIGCHLD), 0);
	CHECK_EQ(kill(getpid(), SIGURG), 0);
	CHECK_EQ(kill(getpid(), SIGWINCH), 0);
	CHECK_EQ(pending_mask(), 0);

	/* Blocked, it is kept: the action may change before the unblock. */
	set_mask(SIG_BLOCK, BIT(SIGCHLD));
	CHECK_EQ(kill(getpid(), SIGCHLD), 0);
	CHECK_EQ(pending_mask(), BIT(SIGCHLD));
	set_mask(SIG_UNBLOCK, BIT(SIGCHLD));
	CHECK_EQ(pending_mask(), 0);

	/* SIG_IGN: the same; setting SIG_IGN (again) drops it. */
	set_action(SIGUSR2, SIG_IGN);
	CHECK_EQ(kill(getpid(), SIGUSR2), 0);
	CHECK_EQ(pending_mask(), 0);
	set_mask(SIG_BLOCK, BIT(SIGUSR2));
	CHECK_EQ(kill(getpid(), SIGUSR2), 0);
	CHECK_EQ(pending_mask(), BIT(SIGUSR2));
	set_action(SIGUSR2, SIG_IGN);
	CHECK_EQ(pending_mask(), 0);
	set_mask(SIG_UNBLOCK, BIT(SIGUSR2));
	set_action(SIGUSR2, SIG_DFL);
}

static char altstack[65536] __attribute__((aligned(16)));
static volatile uintptr_t local_addr;
static stack_t inner_ss, uc_ss;
static volatile int inner_ss_err, try_set;

static void on_stack(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	volatile int local;
	stack_t ss;

	(void)sig;
	(void)si;
	local_addr = (uintptr_t)&local;
	syscall(SYS_sigaltstack, NULL, &inner_ss);
	uc_ss = uc->uc_stack;
	if (try_set) {
		ss.ss_sp = altstack;
		ss.ss_size = sizeof(altstack);
		ss.ss_flags = 0;
		inner_ss_err =
			syscall(SYS_sigaltstack, &ss, NULL) == -1 ? errno : 0;
	}
}

static int on_altstack(uintptr_t p)
{
	return p >= (uintptr_t)altstack && p < (uintptr_t)altstack + sizeof(altstack);
}

static void test_altstack(void)
{
	stack_t ss, old;

	ss.ss_sp = altstack;
	ss.ss_size = sizeof(altstack);
	ss.ss_flags = 0;
	CHECK_EQ(syscall(SYS_sigaltstack, &ss, NULL), 0);

	install(SIGUSR1, on_stack, SA_ONSTACK, 0);
	try_set = 1;
	CHECK_EQ(kill(getpid(), SIGUSR1), 0);
	CHECK(on_altstack(local_addr));
	CHECK_EQ(inner_ss.ss_flags, SS_ONSTACK);
	CHECK(inner_ss.ss_sp == altstack);
	CHECK_EQ(inner_ss.ss_size, sizeof(altstack));
	CHECK_EQ(inner_ss_err, EPERM);
	CHECK(uc_ss.ss_sp == altstack);
	CHECK_EQ(uc_ss.ss_size, sizeof(altstack));
	CHECK_EQ(syscall(SYS_sigaltstack, NULL, &old), 0);
	CHECK_EQ(old.ss_flags, 0);

	/* Without SA_ONSTACK the alternate stack is not used. */
	install(SIGUSR1, on_stack, 0, 0);
	CHECK_EQ(kill(getpid(), SIGUSR1), 0);
	CHECK(!on_altstack(local_addr));
	CHECK_EQ(inner_ss.ss_flags, 0);
	CHECK_EQ(inner_ss_err, 0);
	try_set = 0;

	/* SS_AUTODISARM: disabled while the handler runs, back after. */
	ss.ss_flags = SS_AUTODISARM;
	CHECK_EQ(syscall(SYS_sigaltstack, &ss, NULL), 0);
	install(SIGUSR1, on_stack, SA_ONSTACK, 0);
	CHECK_EQ(kill(getpid(), SIGUSR1), 0);
	CHECK(on_altstack(local_addr));
	CHECK_EQ(inner_ss.ss_flags, SS_DISABLE);
	CHECK(uc_ss.ss_sp == altstack);
	CHECK_EQ((unsigned)uc_ss.ss_flags, SS_AUTODISARM);
	CHECK_EQ(syscall(SYS_sigaltstack, NULL, &old), 0);
	CHECK(old.ss_sp == altstack);
	CHECK_EQ((unsigned)old.ss_flags, SS_AUTODISARM);

	ss.ss_flags = SS_DISABLE;
	CHECK_EQ(syscall(SYS_sigaltstack, &ss, NULL), 0);
	set_action(SIGUSR1, SIG_DFL);
}

static void test_sigsuspend(void)
{
	unsigned long none = 0;
	struct itimerval it;
	long long t0;

	reset_records();
	install(SIGUSR1, record, 0, 0);
	set_mask(SIG_BLOCK, BIT(SIGUSR1));
	CHECK_EQ(kill(getpid(), SIGUSR1), 0);
	CHECK_EQ(count[SIGUSR1], 0);
	/* The pending signal is let in by the temporary mask. */
	CHECK_ERR(syscall(SYS_rt_sigsuspend, &none, 8), EINTR);
	CHECK_EQ(count[SIGUSR1], 1);
	/* In the handler: the temporary mask plus the signal. */
	CHECK_EQ(mask_in_handler, BIT(SIGUSR1));
	/* After: the old mask again. */
	CHECK_EQ(blocked_mask(), BIT(SIGUSR1));

	/* A signal that comes while suspended. */
	install(SIGALRM, record, 0, 0);
	memset(&it, 0, sizeof(it));
	it.it_value.tv_usec = 10000;
	t0 = check_now_ns();
	CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
	CHECK_ERR(syscall(SYS_rt_sigsuspend, &none, 8), EINTR);
	CHECK(check_now_ns() - t0 >= 10000000LL);
	CHECK_EQ(count[SIGALRM], 1);
	CHECK_EQ(blocked_mask(), BIT(SIGUSR1));
	CHECK_ERR(syscall(SYS_rt_sigsuspend, &none, 4), EINVAL);

	/* pause: until a handler has run, then EINTR. */
	it.it_value.tv_usec = 5000;
	CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
	CHECK_ERR(syscall(SYS_pause), EINTR);
	CHECK_EQ(count[SIGALRM], 2);

	set_mask(SIG_SETMASK, 0);
	set_action(SIGUSR1, SIG_DFL);
	set_action(SIGALRM, SIG_DFL);
}

static long sys_sigtimedwait(unsigned long set, siginfo_t *si,
			     const struct timespec *ts)
{
	return syscall(SYS_rt_sigtimedwait, &set, si, ts, 8);
}

static void test_sigtimedwait(void)
{
	struct timespec ts = { 1, 0 }, zero = { 0, 0 }, short_ts = { 0, 20000000 };
	siginfo_t si;
	long long t0;
	int v;

	/* Default action and blocked: taken with its siginfo. */
	set_mask(SIG_BLOCK, BIT(SIGUSR2) | BIT(SIGUSR1) | BIT(RTSIG));
	CHECK_EQ(kill(getpid(), SIGUSR2), 0);
	memset(&si, 0, sizeof(si));
	CHECK_EQ(sys_sigtimedwait(BIT(SIGUSR2), &si, &ts), SIGUSR2);
	CHECK_EQ(si.si_signo, SIGUSR2);
	CHECK_EQ(si.si_code, SI_USER);
	CHECK_EQ(si.si_pid, getpid());
	CHECK_EQ(si.si_uid, getuid());
	CHECK_EQ(pending_mask(), 0);

	/* Nothing pending: EAGAIN at once, or when the timeout ends. */
	t0 = check_now_ns();
	CHECK_ERR(sys_sigtimedwait(BIT(SIGUSR2), &si, &zero), EAGAIN);
	CHECK(check_now_ns() - t0 < 10000000LL);
	t0 = check_now_ns();
	CHECK_ERR(sys_sigtimedwait(BIT(SIGUSR2), NULL, &short_ts), EAGAIN);
	CHECK(check_now_ns() - t0 >= 20000000LL);

	/* A handled signal is taken too, and the handler does not run. */
	reset_records();
	install(SIGUSR1, record, 0, 0);
	CHECK_EQ(kill(getpid(), SIGUSR1), 0);
	CHECK_EQ(sys_sigtimedwait(BIT(SIGUSR1) | BIT(SIGUSR2), NULL, &ts), SIGUSR1);
	CHECK_EQ(count[SIGUSR1], 0);

	/* Queued real-time signals come out one at a time, in order. */
	memset(&si, 0, sizeof(si));
	si.si_signo = RTSIG;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	for (v = 1; v <= 2; v++) {
		si.si_value.sival_int = v;
		CHECK_EQ(syscall(SYS_rt_sigqueueinfo, getpid(), RTSIG, &si), 0);
	}
	for (v = 1; v <= 2; v++) {
		memset(&si, 0, sizeof(si));
		CHECK_EQ(sys_sigtimedwait(BIT(RTSIG), &si, &zero), RTSIG);
		CHECK_EQ(si.si_code, SI_QUEUE);
		CHECK_EQ(si.si_value.sival_int, v);
	}
	CHECK_ERR(sys_sigtimedwait(BIT(RTSIG), &si, &zero), EAGAIN);

	ts.tv_nsec = 1000000000;
	CHECK_ERR(sys_sigtimedwait(BIT(SIGUSR2), &si, &ts), EINVAL);
	ts.tv_nsec = 0;
	ts.tv_sec = -1;
	CHECK_ERR(sys_sigtimedwait(BIT(SIGUSR2), &si, &ts), EINVAL);
	CHECK_ERR(syscall(SYS_rt_sigtimedwait, &ts, &si, &zero, 4), EINVAL);

	set_mask(SIG_SETMASK, 0);
	set_action(SIGUSR1, SIG_DFL);
}

static sigjmp_buf fault_env;
static siginfo_t fault_info;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	fault_info = *si;
	siglongjmp(fault_env, 1);
}

/* fault runs fn(arg) expecting a fault, and reports whether one came. */
static int fault(void (*fn)(void *), void *arg)
{
	memset(&fault_info, 0, sizeof(fault_info));
	if (sigsetjmp(fault_env, 1) == 0) {
		fn(arg);
		return 0;
	}
	return 1;
}

static void write_to(void *p)
{
	*(volatile int *)p = 1;
}

static void read_from(void *p)
{
	(void)*(volatile char *)p;
}

static volatile int divisor;

static void divide(void *p)
{
	divisor = sd_div(*(int *)p, divisor);
}

static void test_faults(void)
{
	long page = sysconf(_SC_PAGESIZE);
	char *p;
	int fd, x;

	install(SIGSEGV, on_fault, 0, 0);
	install(SIGBUS, on_fault, 0, 0);
	install(SIGFPE, on_fault, 0, 0);

	/* A hole in the address space: SEGV_MAPERR at the exact address. */
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	CHECK(p != MAP_FAILED);
	CHECK_OK(munmap(p, page));
	CHECK(fault(write_to, p + 100));
	CHECK_EQ(fault_info.si_signo, SIGSEGV);
	CHECK_EQ(fault_info.si_code, SEGV_MAPERR);
	CHECK(fault_info.si_addr == p + 100);
	/* siglongjmp put back the mask of sigsetjmp: SIGSEGV unblocked. */
	CHECK_EQ(blocked_mask(), 0);

	/* A read-only page: SEGV_ACCERR. */
	p = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED);
	CHECK(fault(write_to, p + 8));
	CHECK_EQ(fault_info.si_signo, SIGSEGV);
	CHECK_EQ(fault_info.si_code, SEGV_ACCERR);
	CHECK(fault_info.si_addr == p + 8);
	CHECK(!fault(read_from, p + 8));
	munmap(p, page);

	/* A mapped page wholly past the end of the file: SIGBUS. */
	fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	p = mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(p != MAP_FAILED);
	CHECK(!fault(read_from, p + 1));
	CHECK(fault(read_from, p + page + 3));
	CHECK_EQ(fault_info.si_signo, SIGBUS);
	CHECK_EQ(fault_info.si_code, BUS_ADRERR);
	CHECK(fault_info.si_addr == p + page + 3);
	munmap(p, 2 * page);
	close(fd);

	/* Integer division by zero, and the overflow of INT_MIN / -1: both
	 * are the divide error, FPE_INTDIV, at the idiv. */
	x = 1;
	divisor = 0;
	CHECK(fault(divide, &x));
	CHECK_EQ(fault_info.si_signo, SIGFPE);
	CHECK_EQ(fault_info.si_code, FPE_INTDIV);
	CHECK(fault_info.si_addr == (void *)sd_div_insn);
	x = INT_MIN;
	divisor = -1;
	CHECK(fault(divide, &x));
	CHECK_EQ(fault_info.si_signo, SIGFPE);
	CHECK_EQ(fault_info.si_code, FPE_INTDIV);
	x = 7;
	divisor = 2;
	CHECK(!fault(divide, &x));
	CHECK_EQ(divisor, 3);
	CHECK_EQ(blocked_mask(), 0);

	set_action(SIGSEGV, SIG_DFL);
	set_action(SIGBUS, SIG_DFL);
	set_action(SIGFPE, SIG_DFL);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_registers();
	test_siginfo();
	test_pending();
	test_handler_mask();
	test_default_ignore();
	test_altstack();
	test_sigsuspend();
	test_sigtimedwait();
	test_faults();
	return check_finish();
}
