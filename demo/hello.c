/*
 * hello.c - the demo's guest program: it shows where it runs. Built static
 * and run inside a moat sandbox by demo.sh.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
	struct utsname u;
	struct timespec a, b;
	const long n = 200000;

	uname(&u);
	printf("hello from pid %d (parent %d) on %s, kernel \"%s %s\"\n", getpid(), getppid(), u.nodename,
	       u.sysname, u.version);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%ld system calls, each trapped and answered by the sentry: %.0f ns per call\n", n,
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
