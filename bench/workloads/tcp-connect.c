/*
 * tcp-connect: a request over a new TCP connection on 127.0.0.1, in us per
 * connect + request + reply + close.
 *
 * Each iteration connects to a server a forked child runs, sends a one-byte
 * request, reads the one-byte reply and closes: an HTTP client's call to a
 * local service without keep-alive, a test suite's health check. It costs
 * the handshake, two small segments each way and the teardown in the TCP
 * stack (the sandbox's own under moat and runsc, the host's under runc),
 * and a wake-up of the other process for each.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

enum { REQUEST = 'r', QUIT = 'q' };

/* serve answers each connection's request byte with one byte, until a
 * connection asks it to quit. */
static void serve(int listener)
{
	for (;;) {
		char req;
		int c = accept(listener, NULL, NULL);

		if (c < 0)
			fail("accept");
		if (read(c, &req, 1) != 1)
			fail("read the request");
		if (req == QUIT)
			_exit(0);
		if (write(c, &req, 1) != 1)
			fail("write the reply");
		close(c);
	}
}

/* call makes one connection and sends req on it; it waits for the reply
 * unless the request is QUIT. */
static void call(const struct sockaddr_in *a, char req)
{
	int one = 1;
	char reply;
	int c = socket(AF_INET, SOCK_STREAM, 0);

	if (c < 0 || connect(c, (const struct sockaddr *)a, sizeof(*a)) < 0)
		fail("connect to 127.0.0.1");
	/* The request is one write: sent at once, as a client's would be. */
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (write(c, &req, 1) != 1)
		fail("write the request");
	if (req != QUIT && read(c, &reply, 1) != 1)
		fail("read the reply");
	close(c);
}

int main(int argc, char **argv)
{
	struct run r = run_begin(argc, argv);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int l, status;
	pid_t child;
	long n;

	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(l, (struct sockaddr *)&a, &len) < 0 || listen(l, 128) < 0)
		fail("listen on 127.0.0.1");
	child = fork();
	if (child < 0)
		fail("fork");
	if (child == 0)
		serve(l);
	close(l);
	while ((n = run_next(&r, 100)) > 0)
		for (long i = 0; i < n; i++)
			call(&a, REQUEST);
	call(&a, QUIT);
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail("server");
	run_report(&r, "tcp-connect", 1e-3, "us/op");
	return 0;
}
