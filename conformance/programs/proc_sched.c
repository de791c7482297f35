/*
 * proc_sched: nice values, scheduling policies, CPU affinity and I/O
 * priorities.
 *
 * nice(1), renice, ionice, taskset, chrt, build tools and language
 * runtimes (os.nice, os.sched_setaffinity) set these, and read them back
 * to decide how many workers to start. Checks: getpriority returns 20
 * less the nice value, per thread, which setpriority clamps to [-20, 19];
 * a thread created or a process forked after it starts with its creator's
 * value, and a thread's change stays its own; lowering the value without
 * CAP_SYS_NICE (RLIMIT_NICE is 0) is EACCES; PRIO_PGRP names a process
 * group, PRIO_USER a user (ESRCH for one with no process); ESRCH for a
 * missing pid, EINVAL for another "which". The sched_* family: SCHED_OTHER
 * at first, the priority range of every policy, EINVAL for an unknown
 * one; SCHED_BATCH and SCHED_IDLE set and read back, the way back from
 * SCHED_IDLE needing CAP_SYS_NICE or RLIMIT_NICE; the real-time policies
 * need CAP_SYS_NICE (EPERM without it), with which SCHED_RR's time slice is
 * 100 ms and SCHED_FIFO's 0; EINVAL for a priority outside the policy's
 * range, a NULL sched_param, a negative pid and SCHED_DEADLINE through
 * sched_setscheduler, ESRCH for a missing thread; SCHED_RESET_ON_FORK is
 * reported with the policy, cleared in the child, and cannot be cleared
 * without CAP_SYS_NICE. sched_setattr and sched_getattr: the nice value
 * through sched_attr (clamped), E2BIG with the kernel's size written back
 * for a size too small or a larger structure with non-zero bytes past the
 * kernel's, size 0 meaning the first version, EINVAL for unknown flags,
 * getattr's size the smaller of the two and EINVAL for less than the
 * first version or flags. sched_setaffinity and sched_getaffinity: a mask
 * of one CPU read back, inherited by fork, EINVAL for a mask without any
 * CPU of the machine or a length of 0, EFAULT for a NULL mask, ESRCH for
 * a missing pid. ioprio_get and ioprio_set: 0 until set, the value set read
 * back and inherited by fork, a process group's priority the best of its
 * threads' (from the nice value for a thread that set none), EINVAL for
 * class none with a level, an unknown class or "which", EPERM for the
 * real-time class without CAP_SYS_NICE.
 */
// covers: getpriority setpriority sched_setscheduler sched_getscheduler sched_setparam sched_getparam sched_get_priority_max sched_get_priority_min sched_rr_get_interval sched_setattr sched_getattr sched_setaffinity sched_getaffinity ioprio_get ioprio_set
#include "check.h"

#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/resource.h>

#define NO_SUCH_PID 4194000 /* above the largest pid_max */
#define NOBODY_UID 54321    /* a user with no process */

struct attr {
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
	uint32_t util_min, util_max;
	unsigned char beyond[16];
};

#define ATTR_SIZE 56 /* the kernel's struct sched_attr */
#define ATTR_SIZE_VER0 48

static long raw_getprio(int which, int who)
{
	return syscall(SYS_getpriority, which, who);
}

static int nice_of(int which, int who)
{
	return 20 - (int)raw_getprio(which, who);
}

static void *thread_nice(void *arg)
{
	int *out = arg;

	out[0] = nice_of(PRIO_PROCESS, 0);
	syscall(SYS_setpriority, PRIO_PROCESS, 0, out[1]);
	out[2] = nice_of(PRIO_PROCESS, 0);
	return NULL;
}

static void test_priority(void)
{
	int privileged = check_has_cap(CAP_SYS_NICE);
	int res[3] = { 0, 12, 0 };
	pthread_t th;
	pid_t pid;

	CHECK_EQ(nice_of(PRIO_PROCESS, 0), 0);
	CHECK_EQ(nice_of(PRIO_PROCESS, getpid()), 0);
	CHECK_OK(syscall(SYS_setpriority, PRIO_PROCESS, 0, 3));
	CHECK_EQ(raw_getprio(PRIO_PROCESS, 0), 17);
	errno = 0;
	CHECK_EQ(nice(2), 5); /* the C library's: get, then set */
	CHECK_EQ(errno, 0);

	/* A thread starts with the creator's value; its change is its own. */
	CHECK_OK(syscall(SYS_setpriority, PRIO_PROCESS, 0, 6));
	CHECK_EQ(pthread_create(&th, NULL, thread_nice, res), 0);
	pthread_join(th, NULL);
	CHECK_EQ(res[0], 6);
	CHECK_EQ(res[2], 12);
	CHECK_EQ(nice_of(PRIO_PROCESS, 0), 6);

	/* A child inherits it; its process group is named by PRIO_PGRP. */
	pid = check_fork();
	if (pid == 0) {
		CHECK_EQ(nice_of(PRIO_PROCESS, 0), 6);
		CHECK_OK(setpgid(0, 0));
		CHECK_OK(syscall(SYS_setpriority, PRIO_PROCESS, 0, 9));
		CHECK_EQ(nice_of(PRIO_PGRP, 0), 9);
		CHECK_OK(syscall(SYS_setpriority, PRIO_PGRP, 0, 11));
		CHECK_EQ(nice_of(PRIO_PROCESS, 0), 11);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	CHECK_ERR(raw_getprio(PRIO_PROCESS, NO_SUCH_PID), ESRCH);
	CHECK_ERR(syscall(SYS_setpriority, PRIO_PROCESS, NO_SUCH_PID, 1), ESRCH);
	CHECK_ERR(raw_getprio(PRIO_PGRP, NO_SUCH_PID), ESRCH);
	CHECK_ERR(raw_getprio(PRIO_USER, NOBODY_UID), ESRCH);
	CHECK_ERR(syscall(SYS_setpriority, PRIO_USER, NOBODY_UID, 1), ESRCH);
	CHECK_ERR(raw_getprio(3, 0), EINVAL);
	CHECK_ERR(syscall(SYS_setpriority, 3, 0, 1), EINVAL);
	/* In the container the processes of uid 0 are this one alone. */
	if (!check_native)
		CHECK_EQ(nice_of(PRIO_USER, 0), 6);

	/* Lower is higher priority: CAP_SYS_NICE or RLIMIT_NICE (0 here). */
	if (privileged) {
		CHECK_OK(syscall(SYS_setpriority, PRIO_PROCESS, 0, -100));
		CHECK_EQ(nice_of(PRIO_PROCESS, 0), -20);
	} else {
		CHECK_ERR(syscall(SYS_setpriority, PRIO_PROCESS, 0, 5), EACCES);
		CHECK_EQ(nice_of(PRIO_PROCESS, 0), 6);
	}
	CHECK_OK(syscall(SYS_setpriority, PRIO_PROCESS, 0, 100));
	CHECK_EQ(nice_of(PRIO_PROCESS, 0), 19);
	if (privileged)
		CHECK_OK(syscall(SYS_setpriority, PRIO_PROCESS, 0, 0));
}

static void test_policies(void)
{
	int privileged = check_has_cap(CAP_SYS_NICE);
	struct sched_param sp = { 0 };
	struct timespec ts;
	pid_t pid;

	CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);
	CHECK_OK(sched_getparam(0, &sp));
	CHECK_EQ(sp.sched_priority, 0);
	CHECK_EQ(sched_get_priority_max(SCHED_FIFO), 99);
	CHECK_EQ(sched_get_priority_min(SCHED_FIFO), 1);
	CHECK_EQ(sched_get_priority_max(SCHED_RR), 99);
	CHECK_EQ(sched_get_priority_min(SCHED_RR), 1);
	CHECK_EQ(sched_get_priority_max(SCHED_OTHER), 0);
	CHECK_EQ(sched_get_priority_min(SCHED_BATCH), 0);
	CHECK_EQ(sched_get_priority_max(SCHED_IDLE), 0);
	CHECK_EQ(sched_get_priority_max(6), 0); /* SCHED_DEADLINE */
	CHECK_ERR(sched_get_priority_max(4), EINVAL);
	CHECK_ERR(sched_get_priority_min(-1), EINVAL);

	CHECK_OK(sched_rr_get_interval(0, &ts));
	CHECK_OK(sched_setscheduler(0, SCHED_BATCH, &sp));
	CHECK_EQ(sched_getscheduler(0), SCHED_BATCH);
	CHECK_EQ(sched_getscheduler(getpid()), SCHED_BATCH);
	CHECK_OK(sched_setscheduler(0, SCHED_OTHER, &sp));
	/* Leaving SCHED_IDLE is like lowering the nice value: a child tries,
	 * which may be left in it. */
	pid = check_fork();
	if (pid == 0) {
		CHECK_OK(sched_setscheduler(0, SCHED_IDLE, &sp));
		CHECK_EQ(sched_getscheduler(0), SCHED_IDLE);
		if (privileged)
			CHECK_OK(sched_setscheduler(0, SCHED_OTHER, &sp));
		else
			CHECK_ERR(sched_setscheduler(0, SCHED_OTHER, &sp), EPERM);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	sp.sched_priority = 5;
	CHECK_ERR(sched_setscheduler(0, SCHED_BATCH, &sp), EINVAL);
	CHECK_ERR(sched_setparam(0, &sp), EINVAL);
	CHECK_ERR(sched_setscheduler(0, 4, &sp), EINVAL);
	CHECK_ERR(sched_setscheduler(0, 6, &sp), EINVAL);
	CHECK_ERR(syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, NULL), EINVAL);
	CHECK_ERR(syscall(SYS_sched_setscheduler, -1, SCHED_OTHER, &sp), EINVAL);
	CHECK_ERR(syscall(SYS_sched_setscheduler, 0, -1, &sp), EINVAL);
	CHECK_ERR(syscall(SYS_sched_setscheduler, NO_SUCH_PID, SCHED_OTHER, &sp), ESRCH);
	CHECK_ERR(syscall(SYS_sched_getscheduler, -1), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getscheduler, NO_SUCH_PID), ESRCH);
	CHECK_ERR(syscall(SYS_sched_getparam, 0, NULL), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getparam, NO_SUCH_PID, &sp), ESRCH);
	CHECK_ERR(syscall(SYS_sched_rr_get_interval, -1, &ts), EINVAL);
	CHECK_ERR(syscall(SYS_sched_rr_get_interval, NO_SUCH_PID, &ts), ESRCH);

	sp.sched_priority = 10;
	if (!privileged) {
		CHECK_ERR(sched_setscheduler(0, SCHED_FIFO, &sp), EPERM);
		CHECK_ERR(sched_setscheduler(0, SCHED_RR, &sp), EPERM);
		return;
	}
	/* Natively, as root: real time, briefly. */
	CHECK_OK(sched_setscheduler(0, SCHED_RR, &sp));
	CHECK_EQ(sched_getscheduler(0), SCHED_RR);
	CHECK_OK(sched_rr_get_interval(0, &ts));
	CHECK_EQ(ts.tv_sec * 1000000000LL + ts.tv_nsec, 100000000LL);
	sp.sched_priority = 20;
	CHECK_OK(sched_setparam(0, &sp));
	sp.sched_priority = 0;
	CHECK_OK(sched_getparam(0, &sp));
	CHECK_EQ(sp.sched_priority, 20);
	sp.sched_priority = 0; /* no real-time priority */
	CHECK_ERR(sched_setparam(0, &sp), EINVAL);
	sp.sched_priority = 100;
	CHECK_ERR(sched_setscheduler(0, SCHED_FIFO, &sp), EINVAL);
	sp.sched_priority = 5;
	CHECK_OK(sched_setscheduler(0, SCHED_FIFO, &sp));
	CHECK_OK(sched_rr_get_interval(0, &ts));
	CHECK_EQ(ts.tv_sec + ts.tv_nsec, 0);
	sp.sched_priority = 0;
	CHECK_OK(sched_setscheduler(0, SCHED_OTHER, &sp));

	/* SCHED_RESET_ON_FORK: reported, and the child starts without it. */
	CHECK_OK(sched_setscheduler(0, SCHED_BATCH | SCHED_RESET_ON_FORK, &sp));
	CHECK_EQ(sched_getscheduler(0), SCHED_BATCH | SCHED_RESET_ON_FORK);
	pid = check_fork();
	if (pid == 0) {
		CHECK_EQ(sched_getscheduler(0), SCHED_BATCH);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_OK(sched_setscheduler(0, SCHED_OTHER, &sp));
	CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);
}

/* The reset flag cannot be cleared without CAP_SYS_NICE. */
static void test_reset_on_fork_unprivileged(void)
{
	struct sched_param sp = { 0 };
	pid_t pid;

	if (check_has_cap(CAP_SYS_NICE))
		return;
	pid = check_fork();
	if (pid == 0) {
		CHECK_OK(sched_setscheduler(0, SCHED_BATCH | SCHED_RESET_ON_FORK, &sp));
		CHECK_EQ(sched_getscheduler(0), SCHED_BATCH | SCHED_RESET_ON_FORK);
		CHECK_ERR(sched_setscheduler(0, SCHED_BATCH, &sp), EPERM);
		CHECK_OK(sched_setscheduler(0, SCHED_OTHER | SCHED_RESET_ON_FORK, &sp));
		CHECK_EQ(sched_getscheduler(0), SCHED_OTHER | SCHED_RESET_ON_FORK);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
}

static void test_attr(void)
{
	struct attr a;

	memset(&a, 0, sizeof(a));
	CHECK_OK(syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0));
	CHECK_EQ(a.size, ATTR_SIZE);
	CHECK_EQ(a.policy, SCHED_OTHER);
	CHECK_EQ(a.nice, nice_of(PRIO_PROCESS, 0));
	CHECK_EQ(a.priority, 0);
	memset(&a, 0, sizeof(a));
	CHECK_OK(syscall(SYS_sched_getattr, 0, &a, ATTR_SIZE_VER0, 0));
	CHECK_EQ(a.size, ATTR_SIZE_VER0);
	CHECK_ERR(syscall(SYS_sched_getattr, 0, &a, ATTR_SIZE_VER0 - 8, 0), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getattr, 0, &a, sizeof(a), 1), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getattr, 0, NULL, sizeof(a), 0), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getattr, NO_SUCH_PID, &a, sizeof(a), 0), ESRCH);

	/* The nice value of a fair policy, clamped. */
	memset(&a, 0, sizeof(a));
	a.size = ATTR_SIZE;
	a.nice = 50;
	CHECK_OK(syscall(SYS_sched_setattr, 0, &a, 0));
	CHECK_EQ(nice_of(PRIO_PROCESS, 0), 19);
	memset(&a, 0, sizeof(a)); /* size 0: the first version */
	a.policy = SCHED_BATCH;
	a.nice = 19;
	CHECK_OK(syscall(SYS_sched_setattr, 0, &a, 0));
	CHECK_EQ(sched_getscheduler(0), SCHED_BATCH);
	a.size = ATTR_SIZE_VER0 - 8;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 0), E2BIG);
	CHECK_EQ(a.size, ATTR_SIZE);
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.nice = 19;
	CHECK_OK(syscall(SYS_sched_setattr, 0, &a, 0)); /* zeros past the kernel's */
	CHECK_EQ(sched_getscheduler(0), SCHED_OTHER);
	a.beyond[3] = 1;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 0), E2BIG);
	CHECK_EQ(a.size, ATTR_SIZE);
	memset(&a, 0, sizeof(a));
	a.size = ATTR_SIZE;
	a.nice = 19;
	a.flags = 0x100;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 0), EINVAL);
	a.flags = 0;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 1), EINVAL);
	CHECK_ERR(syscall(SYS_sched_setattr, -1, &a, 0), EINVAL);
	CHECK_ERR(syscall(SYS_sched_setattr, NO_SUCH_PID, &a, 0), ESRCH);
	a.policy = SCHED_FIFO; /* priority 0 is none of FIFO's */
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 0), EINVAL);
	a.policy = 6; /* SCHED_DEADLINE with a runtime past the deadline */
	a.runtime = 40000000;
	a.deadline = 30000000;
	a.period = 100000000;
	CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 0), EINVAL);
	if (!check_has_cap(CAP_SYS_NICE)) {
		a.runtime = 10000000;
		CHECK_ERR(syscall(SYS_sched_setattr, 0, &a, 0), EPERM);
	}
}

static void test_affinity(void)
{
	cpu_set_t all, one, got;
	unsigned long mask[1024 / sizeof(long)];
	pid_t pid;
	long n;

	CPU_ZERO(&all);
	n = CHECK_OK(syscall(SYS_sched_getaffinity, 0, sizeof(all), &all));
	CHECK(n >= 8 && n % 8 == 0 && n <= (long)sizeof(all));
	CHECK(CPU_ISSET(0, &all));
	CHECK(CPU_COUNT(&all) <= sysconf(_SC_NPROCESSORS_CONF));
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, 4, &got), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, 12, &got), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getaffinity, NO_SUCH_PID, sizeof(got), &got), ESRCH);
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, sizeof(got), NULL), EFAULT);

	CPU_ZERO(&one);
	CPU_SET(0, &one);
	CHECK_OK(sched_setaffinity(0, sizeof(one), &one));
	CPU_ZERO(&got);
	CHECK_OK(sched_getaffinity(0, sizeof(got), &got));
	CHECK_EQ(CPU_COUNT(&got), 1);
	CHECK(CPU_ISSET(0, &got));
	pid = check_fork();
	if (pid == 0) {
		CPU_ZERO(&got);
		CHECK_OK(sched_getaffinity(0, sizeof(got), &got));
		CHECK(CPU_EQUAL(&got, &one));
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	/* A mask of CPUs the machine does not have, or of none. */
	memset(mask, 0, sizeof(mask));
	mask[sizeof(mask) / sizeof(long) - 1] = 1UL << 63;
	CHECK_ERR(syscall(SYS_sched_setaffinity, 0, sizeof(mask), mask), EINVAL);
	CHECK_ERR(syscall(SYS_sched_setaffinity, 0, 0, mask), EINVAL);
	CHECK_ERR(syscall(SYS_sched_setaffinity, 0, sizeof(mask), NULL), EFAULT);
	CHECK_ERR(syscall(SYS_sched_setaffinity, -1, sizeof(all), &all), ESRCH);
	/* Every bit set: what the machine has. */
	memset(mask, 0xff, sizeof(mask));
	CHECK_OK(syscall(SYS_sched_setaffinity, 0, sizeof(mask), mask));
	CPU_ZERO(&got);
	CHECK_OK(sched_getaffinity(0, sizeof(got), &got));
	CHECK(CPU_EQUAL(&got, &all));
}

#define IOPRIO(class, level) ((class) << 13 | (level))

static void test_ioprio(void)
{
	pid_t pid;
	int fds[2];
	char c;

	CHECK_EQ(syscall(SYS_ioprio_get, 1, 0), 0);
	CHECK_OK(syscall(SYS_ioprio_set, 1, 0, IOPRIO(2, 7)));
	CHECK_EQ(syscall(SYS_ioprio_get, 1, 0), IOPRIO(2, 7));
	CHECK_EQ(syscall(SYS_ioprio_get, 1, getpid()), IOPRIO(2, 7));
	CHECK_OK(syscall(SYS_ioprio_set, 1, 0, IOPRIO(3, 0)));
	CHECK_EQ(syscall(SYS_ioprio_get, 1, 0), IOPRIO(3, 0));
	CHECK_ERR(syscall(SYS_ioprio_set, 1, 0, IOPRIO(0, 5)), EINVAL);
	CHECK_ERR(syscall(SYS_ioprio_set, 1, 0, IOPRIO(4, 0)), EINVAL);
	CHECK_ERR(syscall(SYS_ioprio_set, 4, 0, IOPRIO(2, 0)), EINVAL);
	CHECK_ERR(syscall(SYS_ioprio_get, 4, 0), EINVAL);
	CHECK_ERR(syscall(SYS_ioprio_get, 1, NO_SUCH_PID), ESRCH);
	CHECK_ERR(syscall(SYS_ioprio_set, 1, NO_SUCH_PID, IOPRIO(2, 0)), ESRCH);
	if (check_has_cap(CAP_SYS_NICE) || check_has_cap(CAP_SYS_ADMIN)) {
		CHECK_OK(syscall(SYS_ioprio_set, 1, 0, IOPRIO(1, 2)));
		CHECK_EQ(syscall(SYS_ioprio_get, 1, 0), IOPRIO(1, 2));
		CHECK_OK(syscall(SYS_ioprio_set, 1, 0, IOPRIO(3, 0)));
	} else {
		CHECK_ERR(syscall(SYS_ioprio_set, 1, 0, IOPRIO(1, 2)), EPERM);
	}

	/* Inherited by a child. A process group's priority is the best of
	 * its threads': one that set none has its nice value's (best effort,
	 * level (nice + 20) / 5). */
	CHECK_OK(pipe(fds));
	pid = check_fork();
	if (pid == 0) {
		CHECK_EQ(syscall(SYS_ioprio_get, 1, 0), IOPRIO(3, 0));
		CHECK_OK(setpgid(0, 0));
		CHECK_OK(syscall(SYS_ioprio_set, 1, 0, 0));
		CHECK_EQ(syscall(SYS_ioprio_get, 2, 0),
			 IOPRIO(2, (nice_of(PRIO_PROCESS, 0) + 20) / 5));
		CHECK_OK(syscall(SYS_ioprio_set, 1, 0, IOPRIO(2, 3)));
		CHECK_EQ(syscall(SYS_ioprio_get, 2, getpid()), IOPRIO(2, 3));
		CHECK_OK(syscall(SYS_ioprio_set, 2, 0, IOPRIO(3, 0)));
		CHECK_EQ(syscall(SYS_ioprio_get, 1, 0), IOPRIO(3, 0));
		close(fds[0]);
		close(fds[1]);
		check_child_exit();
	}
	close(fds[1]);
	CHECK_EQ(read(fds[0], &c, 1), 0);
	close(fds[0]);
	CHECK_CHILD(pid, "exited 0");
	CHECK_OK(syscall(SYS_ioprio_set, 1, 0, 0));
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_priority();
	test_policies();
	test_reset_on_fork_unprivileged();
	test_attr();
	test_affinity();
	test_ioprio();
	return check_finish();
}
