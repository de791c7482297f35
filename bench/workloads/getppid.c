/*
 * getppid: the round trip of the cheapest system call, in ns per call.
 *
 * getppid does no work in any kernel, so the figure is the pure cost of
 * entering and leaving the kernel that serves it: the host's for native and
 * runc, the sentry's (through systrap, ptrace or KVM) for gVisor and moat.
 * It goes through syscall() so that no C library can answer from a cache.
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "bench.h"

int main(int argc, char **argv)
{
	struct run r = run_begin(argc, argv);
	long n;

	while ((n = run_next(&r, 1000)) > 0)
		for (long i = 0; i < n; i++)
			syscall(SYS_getppid);
	run_report(&r, "getppid", 1, "ns/op");
	return 0;
}
