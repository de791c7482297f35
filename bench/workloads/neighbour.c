/*
 * neighbour: a tenant that misbehaves, for the noisy-neighbours workload.
 * It is not measured: it runs in a sandbox of its own, under the limits a
 * platform sets (linux.resources), beside the sandbox that is.
 *
 *   neighbour memory CEILING_MIB  allocates and touches memory, 1 MiB at a
 *                                 time, until it is killed; at CEILING_MIB it
 *                                 says so and exits 3, which means the
 *                                 sandbox's memory limit did not hold (and
 *                                 keeps a broken limit from taking the host)
 *   neighbour fork                forks until fork fails, in every process
 *                                 it makes, and keeps trying: a fork bomb
 *   neighbour cpu THREADS         THREADS threads that spin and never make a
 *                                 system call
 *
 * Each mode prints "start MODE" first, so that a sandbox that restarts it
 * in a loop (while :; do ...; done) shows how often it was killed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB (1024L * 1024L)

static int memory_bomb(long ceiling_mib)
{
	long page = sysconf(_SC_PAGESIZE);

	for (long mib = 0; mib < ceiling_mib; mib++) {
		char *p = mmap(NULL, MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (p == MAP_FAILED) {
			/* Address space or overcommit, not the cgroup: keep
			 * pressing, as a leaking program would. */
			mib--;
			continue;
		}
		/* Touched, so that the pages are resident and charged. */
		for (long off = 0; off < MIB; off += page)
			p[off] = 1;
	}
	printf("ceiling %ld MiB reached: the memory limit did not hold\n", ceiling_mib);
	return 3;
}

static void fork_bomb(void)
{
	/* Parent and children alike: fork, and on failure (EAGAIN at the
	 * pids limit) at once again. */
	for (;;)
		fork();
}

static void *spin(void *arg)
{
	volatile unsigned long *n = arg;

	for (;;)
		(*n)++;
	return NULL;
}

static int cpu_hog(long threads)
{
	static unsigned long counters[256];

	if (threads < 1 || threads > 256) {
		fprintf(stderr, "neighbour cpu: THREADS must be 1 to 256\n");
		return 2;
	}
	for (long i = 1; i < threads; i++) {
		pthread_t t;
		int err = pthread_create(&t, NULL, spin, &counters[i]);

		if (err != 0) {
			fprintf(stderr, "neighbour cpu: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}
	spin(&counters[0]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s memory CEILING_MIB | fork | cpu THREADS\n", argv[0]);
		return 2;
	}
	printf("start %s\n", argv[1]);
	fflush(stdout);
	if (strcmp(argv[1], "memory") == 0 && argc == 3)
		return memory_bomb(atol(argv[2]));
	if (strcmp(argv[1], "fork") == 0 && argc == 2)
		fork_bomb();
	if (strcmp(argv[1], "cpu") == 0 && argc == 3)
		return cpu_hog(atol(argv[2]));
	fprintf(stderr, "usage: %s memory CEILING_MIB | fork | cpu THREADS\n", argv[0]);
	return 2;
}
