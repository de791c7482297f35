/*
 * signal_state: the per-process signal state, set and read back without
 * delivering a signal.
 *
 * Every C library and language runtime installs handlers, masks signals
 * around critical sections and sets up an alternate stack at start-up, and
 * reads the state back to chain or restore it; all of that must round-trip
 * exactly before any signal is delivered. No signal is raised here.
 * Checks: rt_sigaction stores handler, flags (SA_RESTART|SA_SIGINFO|
 * SA_RESTORER), restorer and mask and returns the previous action in oldact;
 * SIGKILL and SIGSTOP are dropped from a stored mask; SA_UNSUPPORTED and
 * other unknown flag bits are dropped too (so a program can detect support);
 * SIG_IGN and SIG_DFL; reading SIGKILL/SIGSTOP works, changing them is
 * EINVAL; EINVAL for signal 0 and 65 and a sigsetsize other than 8, EFAULT
 * for a bad pointer. rt_sigprocmask SIG_BLOCK, SIG_UNBLOCK and SIG_SETMASK
 * with the previous mask returned each time; SIGKILL and SIGSTOP can never be
 * blocked; a bad how is EINVAL, but not when there is no new set (Linux only
 * looks at how when it has a set to apply); EINVAL for sigsetsize other
 * than 8. sigaltstack starts disabled, stores and returns sp, size and flags
 * (SS_AUTODISARM kept), ENOMEM below MINSIGSTKSZ (2048), EINVAL for bad
 * flags, and SS_DISABLE clears it.
 */
// covers: rt_sigaction rt_sigprocmask sigaltstack
#include "check.h"

#include <signal.h>

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif
#ifndef SA_UNSUPPORTED
#define SA_UNSUPPORTED 0x00000400
#endif
#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)
#endif

/* The kernel's minimum alternate stack size; the C library's MINSIGSTKSZ
 * is a sysconf call under _GNU_SOURCE and may be larger. */
#define KERNEL_MINSIGSTKSZ 2048

/* A real-time signal, as a number the C library does not reserve. */
#define RTSIG 40

/* The kernel's struct sigaction on x86-64 (not the C library's). */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
};

/* A mask bit for signal s, in the kernel's 64-bit sigset. */
#define BIT(s) (1UL << ((s) - 1))

static void handler(int sig)
{
	(void)sig;
}

static void restorer(void)
{
}

static long sigaction_raw(int sig, const struct ksigaction *act,
			  struct ksigaction *old)
{
	return syscall(SYS_rt_sigaction, sig, act, old, 8);
}

static long sigprocmask_raw(int how, const unsigned long *set,
			    unsigned long *old)
{
	return syscall(SYS_rt_sigprocmask, how, set, old, 8);
}

static void test_sigaction(void)
{
	struct ksigaction act, old, got, saved;

	/* A fresh program has the default action for SIGUSR1. */
	memset(&saved, 0x5a, sizeof(saved));
	CHECK_EQ(sigaction_raw(SIGUSR1, NULL, &saved), 0);
	CHECK(saved.handler == SIG_DFL);

	memset(&act, 0, sizeof(act));
	act.handler = (void *)handler;
	act.flags = SA_RESTART | SA_SIGINFO | SA_RESTORER;
	act.restorer = (void *)restorer;
	act.mask = BIT(SIGUSR2) | BIT(SIGTERM) | BIT(SIGKILL) | BIT(SIGSTOP);
	memset(&old, 0x5a, sizeof(old));
	CHECK_EQ(sigaction_raw(SIGUSR1, &act, &old), 0);
	CHECK(old.handler == saved.handler);
	CHECK_EQ(old.flags, saved.flags);
	CHECK_EQ(old.mask, saved.mask);

	memset(&got, 0x5a, sizeof(got));
	CHECK_EQ(sigaction_raw(SIGUSR1, NULL, &got), 0);
	CHECK(got.handler == (void *)handler);
	CHECK_EQ(got.flags, SA_RESTART | SA_SIGINFO | SA_RESTORER);
	CHECK(got.restorer == (void *)restorer);
	/* SIGKILL and SIGSTOP cannot be masked, not even in a handler. */
	CHECK_EQ(got.mask, BIT(SIGUSR2) | BIT(SIGTERM));

	/* Setting returns the action being replaced, in the same call. */
	act.handler = SIG_IGN;
	act.flags = SA_RESTORER | SA_UNSUPPORTED | 0x00010000;
	act.mask = 0;
	memset(&old, 0x5a, sizeof(old));
	CHECK_EQ(sigaction_raw(SIGUSR1, &act, &old), 0);
	CHECK(old.handler == (void *)handler);
	CHECK_EQ(old.flags, SA_RESTART | SA_SIGINFO | SA_RESTORER);
	CHECK_EQ(old.mask, BIT(SIGUSR2) | BIT(SIGTERM));
	CHECK_EQ(sigaction_raw(SIGUSR1, NULL, &got), 0);
	CHECK(got.handler == SIG_IGN);
	/* Unknown flag bits are cleared: SA_UNSUPPORTED exists to show it. */
	CHECK_EQ(got.flags, SA_RESTORER);
	CHECK_EQ(got.mask, 0);

	/* The action is per signal. */
	CHECK_EQ(sigaction_raw(SIGUSR2, NULL, &got), 0);
	CHECK(got.handler == SIG_DFL);

	/* SIGKILL and SIGSTOP can be read, not changed, not even to the
	 * default. */
	memset(&got, 0x5a, sizeof(got));
	CHECK_EQ(sigaction_raw(SIGKILL, NULL, &got), 0);
	CHECK(got.handler == SIG_DFL);
	CHECK_EQ(sigaction_raw(SIGSTOP, NULL, &got), 0);
	CHECK(got.handler == SIG_DFL);
	act.handler = SIG_IGN;
	act.flags = SA_RESTORER;
	CHECK_ERR(sigaction_raw(SIGKILL, &act, NULL), EINVAL);
	CHECK_ERR(sigaction_raw(SIGSTOP, &act, NULL), EINVAL);
	act.handler = SIG_DFL;
	CHECK_ERR(sigaction_raw(SIGKILL, &act, &got), EINVAL);

	CHECK_ERR(sigaction_raw(0, NULL, &got), EINVAL);
	CHECK_ERR(sigaction_raw(65, NULL, &got), EINVAL);
	CHECK_ERR(sigaction_raw(-1, NULL, &got), EINVAL);
	CHECK_ERR(syscall(SYS_rt_sigaction, SIGUSR1, NULL, &got, 4), EINVAL);
	CHECK_ERR(syscall(SYS_rt_sigaction, SIGUSR1, &act, NULL, 16), EINVAL);
	CHECK_ERR(sigaction_raw(SIGUSR1, (void *)1, NULL), EFAULT);
	CHECK_ERR(sigaction_raw(SIGUSR1, NULL, (void *)1), EFAULT);
	/* The real-time signals go up to 64. */
	CHECK_EQ(sigaction_raw(64, NULL, &got), 0);
	CHECK(got.handler == SIG_DFL);

	/* Put SIGUSR1 back as it was; a failed call changed nothing. */
	CHECK_EQ(sigaction_raw(SIGUSR1, NULL, &got), 0);
	CHECK(got.handler == SIG_IGN);
	CHECK_EQ(sigaction_raw(SIGUSR1, &saved, NULL), 0);
}

static void test_sigprocmask(void)
{
	unsigned long saved, set, old, got;

	CHECK_EQ(sigprocmask_raw(SIG_SETMASK, NULL, &saved), 0);
	set = 0;
	CHECK_EQ(sigprocmask_raw(SIG_SETMASK, &set, &old), 0);
	CHECK_EQ(old, saved);

	set = BIT(SIGUSR1) | BIT(RTSIG);
	CHECK_EQ(sigprocmask_raw(SIG_BLOCK, &set, &old), 0);
	CHECK_EQ(old, 0);
	set = BIT(SIGUSR2);
	CHECK_EQ(sigprocmask_raw(SIG_BLOCK, &set, &old), 0);
	CHECK_EQ(old, BIT(SIGUSR1) | BIT(RTSIG));
	set = BIT(SIGUSR1) | BIT(SIGTERM); /* SIGTERM was not blocked */
	CHECK_EQ(sigprocmask_raw(SIG_UNBLOCK, &set, &old), 0);
	CHECK_EQ(old, BIT(SIGUSR1) | BIT(SIGUSR2) | BIT(RTSIG));
	CHECK_EQ(sigprocmask_raw(SIG_BLOCK, NULL, &got), 0);
	CHECK_EQ(got, BIT(SIGUSR2) | BIT(RTSIG));
	set = BIT(SIGHUP);
	CHECK_EQ(sigprocmask_raw(SIG_SETMASK, &set, &old), 0);
	CHECK_EQ(old, BIT(SIGUSR2) | BIT(RTSIG));

	/* SIGKILL and SIGSTOP are silently left out. */
	set = ~0UL;
	CHECK_EQ(sigprocmask_raw(SIG_SETMASK, &set, NULL), 0);
	CHECK_EQ(sigprocmask_raw(SIG_SETMASK, NULL, &got), 0);
	CHECK_EQ(got, ~(BIT(SIGKILL) | BIT(SIGSTOP)));
	set = BIT(SIGKILL) | BIT(SIGSTOP);
	CHECK_EQ(sigprocmask_raw(SIG_UNBLOCK, &set, NULL), 0);
	set = 0;
	CHECK_EQ(sigprocmask_raw(SIG_SETMASK, &set, NULL), 0);
	set = BIT(SIGKILL) | BIT(SIGSTOP) | BIT(SIGINT);
	CHECK_EQ(sigprocmask_raw(SIG_BLOCK, &set, &old), 0);
	CHECK_EQ(old, 0);
	CHECK_EQ(sigprocmask_raw(SIG_BLOCK, NULL, &got), 0);
	CHECK_EQ(got, BIT(SIGINT));

	/* A bad how is refused only when there is a set to apply. */
	set = BIT(SIGUSR1);
	CHECK_ERR(sigprocmask_raw(3, &set, &old), EINVAL);
	CHECK_ERR(sigprocmask_raw(-1, &set, NULL), EINVAL);
	CHECK_EQ(sigprocmask_raw(3, NULL, &got), 0);
	CHECK_EQ(got, BIT(SIGINT));
	CHECK_ERR(syscall(SYS_rt_sigprocmask, SIG_BLOCK, &set, &old, 4), EINVAL);
	CHECK_ERR(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &old, 16), EINVAL);
	CHECK_ERR(sigprocmask_raw(SIG_BLOCK, (void *)1, NULL), EFAULT);
	CHECK_ERR(sigprocmask_raw(SIG_BLOCK, NULL, (void *)1), EFAULT);
	CHECK_EQ(sigprocmask_raw(SIG_BLOCK, NULL, &got), 0);
	CHECK_EQ(got, BIT(SIGINT)); /* the failures changed nothing */

	CHECK_EQ(sigprocmask_raw(SIG_SETMASK, &saved, NULL), 0);
}

static void test_sigaltstack(void)
{
	static char stack[64 * 1024];
	stack_t ss, old;

	/* A new program starts without one (execve clears it). */
	memset(&old, 0x5a, sizeof(old));
	CHECK_EQ(syscall(SYS_sigaltstack, NULL, &old), 0);
	CHECK_EQ(old.ss_flags, SS_DISABLE);
	CHECK(old.ss_sp == NULL);
	CHECK_EQ(old.ss_size, 0);

	ss.ss_sp = stack;
	ss.ss_size = sizeof(stack);
	ss.ss_flags = 0;
	CHECK_EQ(syscall(SYS_sigaltstack, &ss, &old), 0);
	CHECK_EQ(old.ss_flags, SS_DISABLE);
	memset(&old, 0x5a, sizeof(old));
	CHECK_EQ(syscall(SYS_sigaltstack, NULL, &old), 0);
	CHECK(old.ss_sp == stack);
	CHECK_EQ(old.ss_size, sizeof(stack));
	CHECK_EQ(old.ss_flags, 0); /* not on it */

	/* SS_AUTODISARM is stored and reported with the stack. */
	ss.ss_size = KERNEL_MINSIGSTKSZ;
	ss.ss_flags = SS_AUTODISARM;
	CHECK_EQ(syscall(SYS_sigaltstack, &ss, NULL), 0);
	CHECK_EQ(syscall(SYS_sigaltstack, NULL, &old), 0);
	CHECK(old.ss_sp == stack);
	CHECK_EQ(old.ss_size, KERNEL_MINSIGSTKSZ);
	CHECK_EQ((unsigned)old.ss_flags, SS_AUTODISARM);

	/* Too small a stack, bad flags: refused, nothing changed. */
	ss.ss_size = KERNEL_MINSIGSTKSZ - 1;
	ss.ss_flags = 0;
	CHECK_ERR(syscall(SYS_sigaltstack, &ss, NULL), ENOMEM);
	ss.ss_size = sizeof(stack);
	ss.ss_flags = SS_DISABLE | SS_ONSTACK;
	CHECK_ERR(syscall(SYS_sigaltstack, &ss, NULL), EINVAL);
	ss.ss_flags = 0x10;
	CHECK_ERR(syscall(SYS_sigaltstack, &ss, NULL), EINVAL);
	CHECK_ERR(syscall(SYS_sigaltstack, (void *)1, NULL), EFAULT);
	CHECK_ERR(syscall(SYS_sigaltstack, NULL, (void *)1), EFAULT);
	CHECK_EQ(syscall(SYS_sigaltstack, NULL, &old), 0);
	CHECK_EQ(old.ss_size, KERNEL_MINSIGSTKSZ);
	CHECK_EQ((unsigned)old.ss_flags, SS_AUTODISARM);

	/* SS_DISABLE turns it off whatever the size; sp and size read 0. */
	ss.ss_sp = stack;
	ss.ss_size = 1;
	ss.ss_flags = SS_DISABLE;
	CHECK_EQ(syscall(SYS_sigaltstack, &ss, &old), 0);
	CHECK(old.ss_sp == stack);
	CHECK_EQ(syscall(SYS_sigaltstack, NULL, &old), 0);
	CHECK_EQ(old.ss_flags, SS_DISABLE);
	CHECK(old.ss_sp == NULL);
	CHECK_EQ(old.ss_size, 0);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_sigaction();
	test_sigprocmask();
	test_sigaltstack();
	return check_finish();
}
