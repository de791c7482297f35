/*
 * fork-exec: starting a program and waiting for it, in us per fork+exec+wait.
 *
 * Each iteration forks, execs /bin/true and waits for it: a new address space,
 * an ELF load and a process exit, what every shell command costs. In a
 * sandbox it adds the cost of creating and tearing down a guest address space.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

int main(int argc, char **argv)
{
	struct run r = run_begin(argc, argv);
	char *const true_argv[] = {"true", NULL};
	char *const env[] = {NULL};
	long n;

	while ((n = run_next(&r, 1)) > 0)
		for (long i = 0; i < n; i++) {
			int status;
			pid_t child = fork();

			if (child < 0)
				fail("fork");
			if (child == 0) {
				execve("/bin/true", true_argv, env);
				_exit(127);
			}
			if (waitpid(child, &status, 0) < 0)
				fail("waitpid");
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
				fprintf(stderr, "fork-exec: /bin/true failed (status %#x)\n", status);
				return 1;
			}
		}
	run_report(&r, "fork-exec", 1e-3, "us/op");
	return 0;
}
