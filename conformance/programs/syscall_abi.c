/*
 * syscall_abi: how x86-64 Linux reads a system call's number, reports the
 * CPU a thread runs on, and tells a signal handler about a fault.
 *
 * Checks: a number with any of rax's high 32 bits set runs the call its low
 * 32 bits name (getpid), and a tracer sees the whole 64-bit value in
 * orig_rax at the entry stop; a tracer that sets high bits of orig_rax
 * there changes nothing; a tracer that makes orig_rax -1 skips the call,
 * which returns what the tracer put in rax; the x32 bit, numbers past the
 * table and -1 answer -ENOSYS. getcpu, the system call and glibc's
 * sched_getcpu alike, names the one CPU the affinity allows, for every CPU
 * the thread may use. A page fault's signal frame carries trap number 14,
 * the error code (user and write, not fetch, for a write to a read-only page) and
 * the address in cr2. The legacy vsyscall page: where /proc/self/maps lists
 * no [vsyscall] (as in moat, or Linux with vsyscall=none), calling its
 * gettimeofday entry faults with SIGSEGV at the entry, error code user and
 * instruction fetch; where it is listed executable, the call works.
 * Syscall user dispatch (prctl PR_SET_SYSCALL_USER_DISPATCH): the argument
 * checks; a call made while the selector says block is not run but becomes
 * a SIGSYS (SYS_USER_DISPATCH, si_syscall the number, rax the number again)
 * whose handler gives the result; allow, and dispatch off, let calls run;
 * a forked child starts without it. mmap's MAP_32BIT places a mapping in
 * the second GiB.
 */
// covers: getpid getppid getcpu sched_setaffinity sched_getaffinity ptrace rt_sigaction prctl mmap
#include "check.h"

#include <sched.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/time.h>
#include <sys/user.h>
#include <ucontext.h>

/* raw_syscall0 makes call nr with rax exactly nr, all 64 bits. */
static long raw_syscall0(unsigned long nr)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "0"(nr) : "rcx", "r11", "memory");
	return ret;
}

static void test_numbers(void)
{
	long pid = getpid();

	CHECK_EQ(raw_syscall0(SYS_getpid), pid);
	CHECK_EQ(raw_syscall0(0x100000000UL | SYS_getpid), pid);
	CHECK_EQ(raw_syscall0(0xffffffff00000000UL | SYS_getpid), pid);
	CHECK_EQ(raw_syscall0(0x8000000100000000UL | SYS_getpid), pid);
	CHECK_EQ(raw_syscall0(0x40000000UL | SYS_getpid), -ENOSYS); /* x32 */
	CHECK_EQ(raw_syscall0(1000), -ENOSYS);
	CHECK_EQ(raw_syscall0(0x3fffffff), -ENOSYS);
	CHECK_EQ(raw_syscall0(0x7fffffff), -ENOSYS);
	CHECK_EQ(raw_syscall0(0xffffffffUL), -ENOSYS);
	CHECK_EQ(raw_syscall0(~0UL), -ENOSYS);
}

/*
 * test_traced: a child stops itself, then makes getpid with high bits set
 * three times. At each entry stop the tracer checks orig_rax, then lets the
 * first call run as it is, sets orig_rax's high bits on the second, and
 * makes the third -1 with rax 1234. The child reports what it got in its
 * exit status: 0 if all three are right.
 */
static void test_traced(void)
{
	const unsigned long nr = 0x500000000UL | SYS_getpid;
	pid_t child = fork();

	if (child == 0) {
		long pid;
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		pid = getpid();
		if (raw_syscall0(nr) != pid || raw_syscall0(nr) != pid)
			_exit(1);
		_exit(raw_syscall0(nr) == 1234 ? 0 : 2);
	}
	CHECK(child > 0);
	if (child <= 0)
		return;
	int status, stops = 0;
	CHECK_EQ(waitpid(child, &status, 0), child);
	CHECK(WIFSTOPPED(status));
	CHECK_OK(ptrace(PTRACE_SETOPTIONS, child, 0, PTRACE_O_TRACESYSGOOD));
	int entry = 1;
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, child, 0, 0) != 0)
			break;
		if (waitpid(child, &status, 0) != child || !WIFSTOPPED(status))
			break;
		if (WSTOPSIG(status) != (SIGTRAP | 0x80))
			continue;
		struct user_regs_struct regs;
		CHECK_OK(ptrace(PTRACE_GETREGS, child, 0, &regs));
		if (entry && (regs.orig_rax & 0xffffffffUL) == SYS_getpid && regs.orig_rax != SYS_getpid) {
			CHECK_EQ(regs.orig_rax, nr);
			stops++;
			if (stops == 2)
				regs.orig_rax |= 0xabcd000000000000UL;
			if (stops == 3) {
				regs.orig_rax = 0xffffffffUL; /* -1 in the low half */
				regs.rax = 1234;
			}
			CHECK_OK(ptrace(PTRACE_SETREGS, child, 0, &regs));
		}
		entry = !entry;
	}
	CHECK_EQ(stops, 3);
	CHECK(WIFEXITED(status));
	CHECK_EQ(WEXITSTATUS(status), 0);
}

static void test_getcpu(void)
{
	cpu_set_t all, one;
	int cpu;

	CHECK_OK(sched_getaffinity(0, sizeof(all), &all));
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		unsigned got = ~0U, node = ~0U;
		if (!CPU_ISSET(cpu, &all))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		CHECK_OK(sched_setaffinity(0, sizeof(one), &one));
		CHECK_EQ(syscall(SYS_getcpu, &got, &node, NULL), 0);
		CHECK_EQ(got, cpu);
		CHECK_EQ(node, 0);
		CHECK_EQ(sched_getcpu(), cpu); /* the vDSO's answer */
	}
	CHECK_OK(sched_setaffinity(0, sizeof(all), &all));
}

static sigjmp_buf jump;
static volatile unsigned long fault_addr, fault_err, fault_trapno, fault_cr2, fault_rip;

static void on_segv(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	(void)sig;
	fault_addr = (unsigned long)si->si_addr;
	fault_err = uc->uc_mcontext.gregs[REG_ERR];
	fault_trapno = uc->uc_mcontext.gregs[REG_TRAPNO];
	fault_cr2 = uc->uc_mcontext.gregs[REG_CR2];
	fault_rip = uc->uc_mcontext.gregs[REG_RIP];
	siglongjmp(jump, 1);
}

#define PF_WRITE 2
#define PF_USER 4
#define PF_INSTR 16
#define VSYSCALL 0xffffffffff600000UL

/* vsyscall_listed says whether /proc/self/maps lists the vsyscall page, and
 * whether executable. */
static int vsyscall_listed(int *exec)
{
	char line[256];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	*exec = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, "[vsyscall]")) {
			found = 1;
			*exec = strchr(line, ' ')[3] == 'x';
		}
	}
	fclose(f);
	return found;
}

static void test_faults(void)
{
	struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO};
	char *page = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int exec;

	CHECK(page != MAP_FAILED);
	CHECK_OK(sigaction(SIGSEGV, &sa, NULL));
	if (page != MAP_FAILED && sigsetjmp(jump, 1) == 0) {
		*(volatile char *)(page + 8) = 1;
		CHECK(0); /* the write must fault */
	} else if (page != MAP_FAILED) {
		CHECK_EQ(fault_addr, (unsigned long)page + 8);
		CHECK_EQ(fault_trapno, 14);
		CHECK_EQ(fault_err & (PF_USER | PF_WRITE | PF_INSTR), PF_USER | PF_WRITE);
		CHECK_EQ(fault_cr2, (unsigned long)page + 8);
	}

	int listed = vsyscall_listed(&exec);
	typedef long (*gtod_t)(struct timeval *, void *);
	gtod_t gtod = (gtod_t)VSYSCALL;
	struct timeval tv;
	fault_addr = 0;
	if (sigsetjmp(jump, 1) == 0) {
		long r = gtod(&tv, NULL);
		CHECK(listed && exec); /* only an executable page may be called */
		CHECK_EQ(r, 0);
	} else {
		CHECK(!(listed && exec));
		CHECK_EQ(fault_addr, VSYSCALL);
		CHECK_EQ(fault_rip, VSYSCALL);
		CHECK_EQ(fault_trapno, 14);
		CHECK_EQ(fault_err & (PF_USER | PF_INSTR), PF_USER | PF_INSTR);
	}
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = 0;
	sigaction(SIGSEGV, &sa, NULL);
}

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#define PR_SYS_DISPATCH_OFF 0
#define PR_SYS_DISPATCH_ON 1
#endif
#define SYS_USER_DISPATCH_CODE 2

static volatile char selector;
static volatile int sud_code, sud_nr, sud_errno;
static volatile unsigned long sud_rax;

static void on_sigsys(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	(void)sig;
	sud_code = si->si_code;
	sud_nr = si->si_syscall;
	sud_errno = si->si_errno;
	sud_rax = uc->uc_mcontext.gregs[REG_RAX];
	selector = 0; /* let the handler's rt_sigreturn through */
	uc->uc_mcontext.gregs[REG_RAX] = 4242;
}

/*
 * test_user_dispatch: prctl's argument checks; with a selector saying
 * block, a call is not run but becomes a SIGSYS (SYS_USER_DISPATCH, the
 * call's number, rax holding it again) whose handler sets the result; with
 * the selector saying allow, or the dispatch off, calls run; a forked
 * child starts without it.
 */
static void test_user_dispatch(void)
{
	struct sigaction sa = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
	char sel = 0;

	CHECK_ERR(prctl(PR_SET_SYSCALL_USER_DISPATCH, 7, 0, 0, &sel), EINVAL);
	CHECK_ERR(prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 1, 0, 0), EINVAL);
	CHECK_ERR(prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, &sel), EINVAL);
	CHECK_ERR(prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 1, 0, &sel), EINVAL);
	CHECK_ERR(prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, -1L, 1, &sel), EINVAL);
	CHECK_ERR(prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 1, (void *)-1), EFAULT);

	CHECK_OK(sigaction(SIGSYS, &sa, NULL));
	selector = 0;
	CHECK_OK(prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_ON, 0, 0, &selector));
	CHECK_EQ(raw_syscall0(SYS_getppid), getppid()); /* allowed */
	selector = 1;
	long r = raw_syscall0(SYS_getppid);
	CHECK_EQ(selector, 0); /* the handler ran */
	CHECK_EQ(r, 4242);
	CHECK_EQ(sud_code, SYS_USER_DISPATCH_CODE);
	CHECK_EQ(sud_nr, SYS_getppid);
	CHECK_EQ(sud_errno, 0);
	CHECK_EQ(sud_rax, SYS_getppid);
	pid_t child = fork();
	if (child == 0) {
		selector = 1;
		_exit(raw_syscall0(SYS_getpid) > 0 ? 0 : 1);
	}
	CHECK_CHILD(child, "exited 0");
	CHECK_OK(prctl(PR_SET_SYSCALL_USER_DISPATCH, PR_SYS_DISPATCH_OFF, 0, 0, 0));
	selector = 1;
	CHECK(raw_syscall0(SYS_getpid) > 0); /* off: the selector is not read */
	selector = 0;
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = 0;
	sigaction(SIGSYS, &sa, NULL);
}

/* test_map32: MAP_32BIT places a mapping in the second GiB (x86-64). */
static void test_map32(void)
{
	char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);

	CHECK(p != MAP_FAILED);
	if (p == MAP_FAILED)
		return;
	CHECK((unsigned long)p >= 0x40000000UL && (unsigned long)p + 8192 <= 0x80000000UL);
	p[8191] = 1;
	CHECK_OK(munmap(p, 8192));
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_numbers();
	test_traced();
	test_getcpu();
	test_faults();
	test_user_dispatch();
	test_map32();
	return check_finish();
}
