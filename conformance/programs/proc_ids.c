/*
 * proc_ids: what a single process learns about itself.
 *
 * Checks: inside a container getpid is 1 and getppid 0 (the sandbox's own pid
 * namespace), gettid equals getpid, and the ids are the config's uid 0 gid 0;
 * uname names Linux on x86_64 with the config's hostname; getrandom fills
 * buffers and rejects bad flags; getrlimit/prlimit64/setrlimit agree, a lowered
 * RLIMIT_NOFILE is enforced (EMFILE) and raising past the hard limit fails;
 * arch_prctl sets and reads back the FS base; set_tid_address returns the tid;
 * umask and prctl(PR_SET_NAME) round trips; clocks: CLOCK_MONOTONIC never goes
 * back, the raw calls agree with the vDSO ones, clock_getres, nanosleep and
 * clock_nanosleep sleep at least as long as asked and reject bad timespecs.
 */
// covers: getpid getppid gettid getuid geteuid getgid getegid getresuid getresgid uname getrandom getrlimit setrlimit prlimit64 arch_prctl set_tid_address umask prctl clock_gettime clock_getres gettimeofday time nanosleep clock_nanosleep
#include "check.h"

#include <asm/prctl.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <time.h>

#ifndef GRND_NONBLOCK
#define GRND_NONBLOCK 1
#endif

static void test_ids(void)
{
	long pid = syscall(SYS_getpid);
	uid_t r, e, s;
	gid_t gr, ge, gs;

	CHECK_EQ(syscall(SYS_gettid), pid);
	CHECK_EQ(getpid(), pid);
	if (!check_native) {
		CHECK_EQ(pid, 1);
		/* The parent lives outside the pid namespace. */
		CHECK_EQ(syscall(SYS_getppid), 0);
		CHECK_EQ(syscall(SYS_getuid), 0);
		CHECK_EQ(syscall(SYS_getgid), 0);
	}
	CHECK_EQ(syscall(SYS_geteuid), syscall(SYS_getuid));
	CHECK_EQ(syscall(SYS_getegid), syscall(SYS_getgid));
	CHECK_OK(syscall(SYS_getresuid, &r, &e, &s));
	CHECK_EQ(r, syscall(SYS_getuid));
	CHECK_EQ(e, r);
	CHECK_EQ(s, r);
	CHECK_OK(syscall(SYS_getresgid, &gr, &ge, &gs));
	CHECK_EQ(gr, syscall(SYS_getgid));
	CHECK_EQ(ge, gr);
	CHECK_EQ(gs, gr);
	CHECK_ERR(syscall(SYS_getresuid, (void *)1, &e, &s), EFAULT);
}

static void test_uname(void)
{
	struct utsname u;

	CHECK_OK(syscall(SYS_uname, &u));
	CHECK_STR(u.sysname, "Linux");
	CHECK_STR(u.machine, "x86_64");
	CHECK(u.release[0] != '\0');
	CHECK(u.version[0] != '\0');
	CHECK(u.nodename[0] != '\0');
	if (!check_native)
		CHECK_STR(u.nodename, check_hostname);
	CHECK_ERR(syscall(SYS_uname, (void *)1), EFAULT);
}

static void test_getrandom(void)
{
	unsigned char a[64], b[64];

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	CHECK_EQ(syscall(SYS_getrandom, a, sizeof(a), 0), sizeof(a));
	CHECK_EQ(syscall(SYS_getrandom, b, sizeof(b), GRND_NONBLOCK), sizeof(b));
	CHECK(memcmp(a, b, sizeof(a)) != 0);
	CHECK_EQ(syscall(SYS_getrandom, a, 0, 0), 0);
	CHECK_ERR(syscall(SYS_getrandom, a, sizeof(a), 0x100), EINVAL);
	CHECK_ERR(syscall(SYS_getrandom, (void *)1, 16, 0), EFAULT);
}

static void test_rlimits(void)
{
	struct rlimit rl, old, got;
	int a, b;

	CHECK_OK(syscall(SYS_getrlimit, RLIMIT_NOFILE, &old));
	CHECK(old.rlim_cur > 3 && old.rlim_cur <= old.rlim_max);
	CHECK_OK(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &got));
	CHECK_EQ(got.rlim_cur, old.rlim_cur);
	CHECK_EQ(got.rlim_max, old.rlim_max);
	CHECK_OK(syscall(SYS_getrlimit, RLIMIT_STACK, &rl));
	CHECK(rl.rlim_cur >= 128 * 1024 && rl.rlim_cur <= rl.rlim_max);

	/* Lower the soft limit to 5: descriptors 0-4 may exist, 5 may not. */
	rl.rlim_cur = 5;
	rl.rlim_max = old.rlim_max;
	CHECK_OK(syscall(SYS_setrlimit, RLIMIT_NOFILE, &rl));
	CHECK_OK(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &got));
	CHECK_EQ(got.rlim_cur, 5);
	a = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	b = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	CHECK_EQ(a, 3);
	CHECK_EQ(b, 4);
	CHECK_ERR(open(HELLO_PATH, O_RDONLY), EMFILE);
	close(a);
	close(b);

	/* prlimit64 sets and returns the old value in one call. */
	CHECK_OK(syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &old, &got));
	CHECK_EQ(got.rlim_cur, 5);
	CHECK_OK(syscall(SYS_getrlimit, RLIMIT_NOFILE, &got));
	CHECK_EQ(got.rlim_cur, old.rlim_cur);

	/* Soft above hard is invalid, and so is an unknown resource. */
	if (old.rlim_max != RLIM_INFINITY) {
		rl.rlim_cur = old.rlim_max + 1;
		rl.rlim_max = old.rlim_max;
		CHECK_ERR(syscall(SYS_setrlimit, RLIMIT_NOFILE, &rl), EINVAL);
	}
	CHECK_ERR(syscall(SYS_getrlimit, 999, &got), EINVAL);
	CHECK_ERR(syscall(SYS_prlimit64, 0, 999, NULL, &got), EINVAL);
}

/*
 * raw2 makes a two-argument system call without the C library. While the FS
 * base is changed, nothing may touch thread-local storage, and the C
 * library's syscall() writes errno there on failure.
 */
static inline long raw2(long nr, long a, long b)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b)
			 : "rcx", "r11", "memory");
	return ret;
}

/* The stack protector's canary lives at %fs:0x28, so it must stay out of the
 * function that moves %fs. */
__attribute__((no_stack_protector)) static void test_arch_prctl(void)
{
	static unsigned long scratch[8];
	unsigned long old = 0, got = 0;
	long set, restore;

	CHECK_EQ(raw2(SYS_arch_prctl, ARCH_GET_FS, (long)&old), 0);
	set = raw2(SYS_arch_prctl, ARCH_SET_FS, (long)scratch);
	raw2(SYS_arch_prctl, ARCH_GET_FS, (long)&got);
	restore = raw2(SYS_arch_prctl, ARCH_SET_FS, (long)old);
	CHECK_EQ(set, 0);
	CHECK_EQ(restore, 0);
	CHECK_EQ(got, (unsigned long)scratch);
	CHECK(old != 0);
	CHECK_EQ(raw2(SYS_arch_prctl, ARCH_GET_FS, (long)&got), 0);
	CHECK_EQ(got, old);
	/* A non-canonical base is refused, an unknown code is invalid. */
	CHECK_EQ(raw2(SYS_arch_prctl, ARCH_SET_FS, 1L << 63), -EPERM);
	CHECK_EQ(raw2(SYS_arch_prctl, 0x9999, 0), -EINVAL);
	CHECK_EQ(raw2(SYS_arch_prctl, ARCH_GET_FS, 1), -EFAULT);
}

static void test_small_calls(void)
{
	static int tid_word;
	char name[16];
	long old_mask;

	CHECK_EQ(syscall(SYS_set_tid_address, &tid_word), syscall(SYS_gettid));

	old_mask = syscall(SYS_umask, 027);
	CHECK(old_mask >= 0 && old_mask <= 0777);
	CHECK_EQ(syscall(SYS_umask, old_mask), 027);
	/* Only the permission bits are kept. */
	CHECK_EQ(syscall(SYS_umask, 07777), old_mask);
	CHECK_EQ(syscall(SYS_umask, old_mask), 0777);

	CHECK_EQ(syscall(SYS_prctl, PR_SET_NAME, "conformance-12345", 0, 0, 0), 0);
	memset(name, 'x', sizeof(name));
	CHECK_EQ(syscall(SYS_prctl, PR_GET_NAME, name, 0, 0, 0), 0);
	/* Names are cut to 15 bytes and a NUL. */
	CHECK_STR(name, "conformance-123");
}

static long long ns(const struct timespec *t)
{
	return t->tv_sec * 1000000000LL + t->tv_nsec;
}

static void test_clocks(void)
{
	struct timespec a, b, req, res;
	struct timeval tv;
	long t;

	CHECK_OK(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &a));
	CHECK_OK(clock_gettime(CLOCK_MONOTONIC, &b)); /* through the vDSO */
	CHECK(ns(&b) >= ns(&a));
	CHECK_OK(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &a));
	CHECK(ns(&a) >= ns(&b));
	CHECK(a.tv_nsec >= 0 && a.tv_nsec < 1000000000);

	/* The realtime clock tells the same time through each interface, to a
	 * few seconds: time() reads a coarse clock that may lag a tick. */
	CHECK_OK(syscall(SYS_clock_gettime, CLOCK_REALTIME, &a));
	CHECK_OK(syscall(SYS_gettimeofday, &tv, NULL));
	t = syscall(SYS_time, NULL);
	CHECK(labs(tv.tv_sec - a.tv_sec) <= 2);
	CHECK(labs(t - a.tv_sec) <= 2);
	CHECK(tv.tv_usec >= 0 && tv.tv_usec < 1000000);
	CHECK_OK(clock_gettime(CLOCK_REALTIME, &b));
	CHECK(labs(b.tv_sec - a.tv_sec) <= 2);

	CHECK_OK(syscall(SYS_clock_getres, CLOCK_MONOTONIC, &res));
	CHECK(res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 1000000);
	CHECK_ERR(syscall(SYS_clock_gettime, 1000, &a), EINVAL);
	CHECK_ERR(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, (void *)1), EFAULT);

	/* Sleeps last at least as long as asked. */
	req.tv_sec = 0;
	req.tv_nsec = 20 * 1000000;
	CHECK_OK(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &a));
	CHECK_OK(syscall(SYS_nanosleep, &req, NULL));
	CHECK_OK(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &b));
	CHECK(ns(&b) - ns(&a) >= ns(&req));
	CHECK_OK(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &req, NULL));
	CHECK_OK(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &a));
	CHECK(ns(&a) - ns(&b) >= ns(&req));
	/* An absolute deadline: the call returns once it has passed. */
	req = a;
	req.tv_nsec += 20 * 1000000;
	if (req.tv_nsec >= 1000000000) {
		req.tv_sec++;
		req.tv_nsec -= 1000000000;
	}
	CHECK_OK(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME,
			 &req, NULL));
	CHECK_OK(syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &b));
	CHECK(ns(&b) >= ns(&req));
	/* A deadline in the past returns at once. */
	CHECK_EQ(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, TIMER_ABSTIME,
			 &a, NULL), 0);

	req.tv_sec = 0;
	req.tv_nsec = 1000000000;
	CHECK_ERR(syscall(SYS_nanosleep, &req, NULL), EINVAL);
	CHECK_ERR(syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &req, NULL),
		  EINVAL);
	req.tv_nsec = -1;
	CHECK_ERR(syscall(SYS_nanosleep, &req, NULL), EINVAL);
	req.tv_sec = -1;
	req.tv_nsec = 0;
	CHECK_ERR(syscall(SYS_nanosleep, &req, NULL), EINVAL);
	req.tv_sec = 0;
	CHECK_ERR(syscall(SYS_clock_nanosleep, 1000, 0, &req, NULL), EINVAL);
	CHECK_ERR(syscall(SYS_nanosleep, (void *)1, NULL), EFAULT);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_ids();
	test_uname();
	test_getrandom();
	test_rlimits();
	test_arch_prctl();
	test_small_calls();
	test_clocks();
	return check_finish();
}
