/*
 * repeat: a program's start-up throughput, in ms per run.
 *
 *   repeat ITERATIONS BUDGET_MS NAME PROGRAM ARGS...
 *
 * Each iteration forks, execs PROGRAM ARGS and waits for it to exit 0; the
 * loop stops after ITERATIONS runs or once BUDGET_MS have passed. With
 * python3 -c pass, each run is an interpreter's start-up: hundreds of file
 * opens and mmaps, a new address space, an exit. The figure is reported
 * under NAME.
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

int main(int argc, char **argv)
{
	struct run r;
	long n;

	if (argc < 5) {
		fprintf(stderr, "usage: %s ITERATIONS BUDGET_MS NAME PROGRAM ARGS...\n", argv[0]);
		return 2;
	}
	r = run_begin(3, argv);
	while ((n = run_next(&r, 1)) > 0)
		for (long i = 0; i < n; i++) {
			int status;
			pid_t child = fork();

			if (child < 0)
				fail("fork");
			if (child == 0) {
				execv(argv[4], argv + 4);
				_exit(127);
			}
			if (waitpid(child, &status, 0) < 0)
				fail("waitpid");
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				fprintf(stderr, "repeat: %s failed (status %#x)\n", argv[4], status);
				return 1;
			}
		}
	run_report(&r, argv[3], 1e-6, "ms/run");
	return 0;
}
