/*
 * clocks: asks glibc for the time every way the vDSO serves, then times
 * clock_gettime(CLOCK_MONOTONIC). Built static, static-pie and dynamic by
 * glibc_test.go and run under testdata/loader.c with moat's vDSO.
 *
 *   clocks [CALLS]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/time.h>
#include <time.h>

static long long ns(struct timespec t) { return t.tv_sec * 1000000000LL + t.tv_nsec; }

#define TRY(what, call)                                               \
	do {                                                          \
		if ((call) != 0) {                                    \
			printf("error %s %d\n", what, errno);         \
			return 1;                                     \
		}                                                     \
	} while (0)

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	struct timespec m, r, res, a, b, x;
	struct timeval tv;
	unsigned cpu = 99, node = 99;

	printf("ehdr %#lx\n", getauxval(AT_SYSINFO_EHDR));
	TRY("monotonic", clock_gettime(CLOCK_MONOTONIC, &m));
	TRY("realtime", clock_gettime(CLOCK_REALTIME, &r));
	TRY("gettimeofday", gettimeofday(&tv, NULL));
	time_t t = time(NULL);
	if (t == (time_t)-1) {
		printf("error time %d\n", errno);
		return 1;
	}
	TRY("clock_getres", clock_getres(CLOCK_MONOTONIC_COARSE, &res));
	TRY("getcpu", getcpu(&cpu, &node));
	printf("monotonic %lld\nrealtime %lld\n", ns(m), ns(r));
	printf("gettimeofday %lld\ntime %lld\n", tv.tv_sec * 1000000LL + tv.tv_usec, (long long)t);
	printf("getres_coarse %lld\ngetcpu %u %u\n", ns(res), cpu, node);

	/* Not a clock the vDSO knows: it makes the system call itself. */
	errno = 0;
	int rc = clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &x);
	printf("cputime %d %d\n", rc, rc ? errno : 0);

	long long prev = 0, back = 0;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &x);
		long long v = ns(x);
		if (v < prev)
			back++;
		prev = v;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("calls %ld\nns_per_call %.1f\nbackwards %lld\n", n, (double)(ns(b) - ns(a)) / n, back);
	return 0;
}
