/*
 * tcp-loopback: moving data over a TCP connection on 127.0.0.1 between two
 * processes, in ms per GiB.
 *
 * The parent writes 1 MiB per iteration in 64 KiB writes to a connection
 * a forked child accepted and reads to its end. This is a test suite's
 * local server, a language server or a database on localhost: the TCP
 * stack's segments, windows and wake-ups (the sandbox's own stack under
 * moat and runsc, the host's under runc). Iterations count MiB; the figure
 * is scaled to 1 GiB.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

enum { CHUNK = 64 * 1024, MIB = 1024 * 1024 };

static void drain(int listener)
{
	static char buf[CHUNK];
	ssize_t got;
	int c = accept(listener, NULL, NULL);

	if (c < 0)
		fail("accept");
	while ((got = read(c, buf, sizeof buf)) > 0)
		;
	if (got < 0)
		fail("read");
	_exit(0);
}

int main(int argc, char **argv)
{
	struct run r = run_begin(argc, argv);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	static char buf[CHUNK];
	int l, c, status;
	pid_t child;
	long n;

	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0 || listen(l, 1) < 0)
		fail("listen on 127.0.0.1");
	child = fork();
	if (child < 0)
		fail("fork");
	if (child == 0)
		drain(l);
	close(l);
	c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
		fail("connect to 127.0.0.1");
	while ((n = run_next(&r, 16)) > 0)
		for (long i = 0; i < n * (MIB / CHUNK); i++)
			for (size_t off = 0; off < sizeof buf;) {
				ssize_t put = write(c, buf + off, sizeof buf - off);

				if (put < 0)
					fail("write");
				off += (size_t)put;
			}
	close(c);
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail("reader");
	/* ns per MiB -> ms per GiB */
	run_report(&r, "tcp-loopback", 1024.0 / 1e6, "ms/GiB");
	return 0;
}
