/*
 * pipe: moving data through a pipe between two processes, in ms per GiB.
 *
 * The parent writes 1 MiB per iteration in 64 KiB chunks (the default pipe
 * capacity); a forked child reads it all. This is bulk data through the
 * kernel's pipe buffers plus the wake-ups between two tasks, the pattern of
 * any shell pipeline. Iterations count MiB; the figure is scaled to 1 GiB.
 */
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

enum { CHUNK = 64 * 1024, MIB = 1024 * 1024 };

static void drain(int fd)
{
	static char buf[CHUNK];
	ssize_t got;

	while ((got = read(fd, buf, sizeof buf)) > 0)
		;
	if (got < 0)
		fail("read");
	_exit(0);
}

int main(int argc, char **argv)
{
	struct run r = run_begin(argc, argv);
	static char buf[CHUNK];
	int fds[2], status;
	pid_t child;
	long n;

	if (pipe(fds) < 0)
		fail("pipe");
	child = fork();
	if (child < 0)
		fail("fork");
	if (child == 0) {
		close(fds[1]);
		drain(fds[0]);
	}
	close(fds[0]);
	while ((n = run_next(&r, 16)) > 0)
		for (long i = 0; i < n * (MIB / CHUNK); i++)
			for (size_t off = 0; off < sizeof buf;) {
				ssize_t put = write(fds[1], buf + off, sizeof buf - off);

				if (put < 0)
					fail("write");
				off += (size_t)put;
			}
	close(fds[1]);
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail("reader");
	/* ns per MiB -> ms per GiB */
	run_report(&r, "pipe", 1024.0 / 1e6, "ms/GiB");
	return 0;
}
