/*
 * net_tcp: TCP over loopback, IPv4 and IPv6, the way test suites start a
 * server on 127.0.0.1 and talk to it.
 *
 * Checks: bind to port 0 picks a port getsockname reports; listen,
 * connect (blocking, and non-blocking with EINPROGRESS, POLLOUT and
 * SO_ERROR 0, then 0 and EISCONN for the connects after), accept with
 * the peer's address and port; data both ways, in order, across a
 * process boundary, 1 MiB of it checked byte by byte; MSG_PEEK,
 * MSG_DONTWAIT (EAGAIN), MSG_WAITALL; shutdown(SHUT_WR) gives the peer
 * EOF and POLLRDHUP while it may still write back, and a write of its
 * own after that EPIPE (SIGPIPE without MSG_NOSIGNAL);
 * connect to a port nobody listens on is ECONNREFUSED; a second bind to
 * a listening port is EADDRINUSE, SO_REUSEADDR lets a new listener bind
 * a port whose old connection lingers; an IPv6 socket reaches ::1 and,
 * unless IPV6_V6ONLY, an IPv4 listener through ::ffff:127.0.0.1
 * (getpeername gives the mapped address); options: SO_TYPE, SO_DOMAIN,
 * SO_PROTOCOL, SO_ACCEPTCONN, TCP_NODELAY, SO_KEEPALIVE, TCP_KEEPIDLE,
 * TCP_KEEPINTVL, TCP_KEEPCNT, SO_LINGER, IP_TOS, IPV6_V6ONLY, SO_SNDBUF,
 * SO_RCVBUF round trips; TCP_INFO reports ESTABLISHED and a segment size;
 * FIONREAD counts the bytes waiting; what a send on loopback sent is
 * in the peer's receive queue when the send returns (FIONREAD, poll with
 * timeout 0), and one epoll_wait after sends on both ends reports both
 * ends readable at once, as CPython's test_epoll expects; a socket's send
 * buffer is tcp_wmem's default until its connection is established and
 * then sized for the connection (on loopback, megabytes: a non-blocking
 * send of 256 KiB that nobody reads yet goes whole, which asyncio's
 * flow control counts on), except where the program set SO_SNDBUF,
 * which an accepted socket takes from its listener.
 */
// covers: socket bind listen connect accept accept4 getsockname getpeername sendto recvfrom shutdown setsockopt getsockopt
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

static int got_sigpipe;

static void on_sigpipe(int sig)
{
	(void)sig;
	got_sigpipe++;
}

static int listener4(struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_OK(bind(l, (struct sockaddr *)a, sizeof(*a)));
	CHECK_OK(getsockname(l, (struct sockaddr *)a, &len));
	CHECK_EQ(len, sizeof(*a));
	CHECK(a->sin_port != 0);
	CHECK_OK(listen(l, 16));
	return l;
}

static void test_v4(void)
{
	struct sockaddr_in a, peer, me;
	socklen_t len;
	char buf[64];
	int l, c, s, v;
	pid_t pid;

	l = listener4(&a);
	len = sizeof(v);
	CHECK_OK(getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &v, &len));
	CHECK_EQ(v, 1);
	pid = check_fork();
	if (pid == 0) {
		c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
		CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
		CHECK_EQ(write(c, "hello", 5), 5);
		CHECK_EQ(recv(c, buf, 5, MSG_WAITALL), 5);
		CHECK_MEM(buf, "world", 5);
		CHECK_OK(shutdown(c, SHUT_WR));
		CHECK_EQ(read(c, buf, sizeof(buf)), 4);
		CHECK_MEM(buf, "last", 4);
		CHECK_EQ(read(c, buf, sizeof(buf)), 0);
		close(c);
		check_child_exit();
	}
	len = sizeof(peer);
	s = CHECK_OK(accept(l, (struct sockaddr *)&peer, &len));
	CHECK_EQ(len, sizeof(peer));
	CHECK_EQ(peer.sin_family, AF_INET);
	CHECK_EQ(peer.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	len = sizeof(me);
	CHECK_OK(getsockname(s, (struct sockaddr *)&me, &len));
	CHECK_EQ(me.sin_port, a.sin_port);
	CHECK_EQ(recv(s, buf, 5, MSG_WAITALL | MSG_PEEK), 5);
	CHECK_OK(ioctl(s, FIONREAD, &v));
	CHECK_EQ(v, 5);
	CHECK_EQ(recv(s, buf, 5, MSG_WAITALL), 5);
	CHECK_MEM(buf, "hello", 5);
	CHECK_EQ(write(s, "world", 5), 5);
	{
		struct pollfd p = { s, POLLIN | POLLRDHUP, 0 };
		CHECK_EQ(poll(&p, 1, 5000), 1);
		CHECK_EQ(p.revents, POLLIN | POLLRDHUP);
	}
	CHECK_EQ(read(s, buf, sizeof(buf)), 0);
	CHECK_EQ(write(s, "last", 4), 4);
	CHECK_OK(shutdown(s, SHUT_WR));
	CHECK_CHILD(pid, "exited 0");
	/* Shut down for writing: EPIPE, with SIGPIPE unless MSG_NOSIGNAL. */
	signal(SIGPIPE, on_sigpipe);
	CHECK_ERR(send(s, "x", 1, MSG_NOSIGNAL), EPIPE);
	CHECK_EQ(got_sigpipe, 0);
	CHECK_ERR(write(s, "x", 1), EPIPE);
	CHECK_EQ(got_sigpipe, 1);
	signal(SIGPIPE, SIG_DFL);
	close(s);

	/* A second listener on the port is EADDRINUSE. */
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_ERR(bind(c, (struct sockaddr *)&a, sizeof(a)), EADDRINUSE);
	close(c);
	close(l);

	/* Nobody listens there now. */
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof(a)), ECONNREFUSED);
	close(c);
	/* SO_REUSEADDR: the port is free again for a listener. */
	l = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	v = 1;
	CHECK_OK(setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &v, sizeof(v)));
	CHECK_OK(bind(l, (struct sockaddr *)&a, sizeof(a)));
	CHECK_OK(listen(l, 1));
	close(l);
}

static void test_nonblocking_and_bulk(void)
{
	struct sockaddr_in a;
	static char big[1 << 20], got[1 << 20];
	socklen_t len;
	int l, c, s, v, i;
	long n, total;
	pid_t pid;

	for (i = 0; i < (int)sizeof(big); i++)
		big[i] = (char)(i * 7 + i / 4096);
	l = listener4(&a);
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
	CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof(a)), EINPROGRESS);
	{
		struct pollfd p = { c, POLLOUT, 0 };
		CHECK_EQ(poll(&p, 1, 5000), 1);
		CHECK_EQ(p.revents & POLLOUT, POLLOUT);
	}
	len = sizeof(v);
	CHECK_OK(getsockopt(c, SOL_SOCKET, SO_ERROR, &v, &len));
	CHECK_EQ(v, 0);
	CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
	CHECK_ERR(connect(c, (struct sockaddr *)&a, sizeof(a)), EISCONN);
	s = CHECK_OK(accept4(l, NULL, NULL, SOCK_NONBLOCK));
	CHECK_ERR(recv(s, got, 1, 0), EAGAIN);
	CHECK_ERR(recv(s, got, 1, MSG_DONTWAIT), EAGAIN);
	fcntl(c, F_SETFL, 0);
	fcntl(s, F_SETFL, 0);

	pid = check_fork();
	if (pid == 0) {
		CHECK_EQ(write(c, big, sizeof(big)), sizeof(big));
		close(c);
		check_child_exit();
	}
	close(c);
	for (total = 0; total < (long)sizeof(got); total += n) {
		n = read(s, got + total, sizeof(got) - total);
		if (n <= 0)
			break;
	}
	CHECK_EQ(total, sizeof(big));
	CHECK_MEM(got, big, sizeof(big));
	CHECK_EQ(read(s, got, 1), 0);
	CHECK_CHILD(pid, "exited 0");
	close(s);
	close(l);
}

/*
 * Loopback's transmit runs the peer's receive path before the send
 * returns: the bytes are already waiting, and an edge-triggered epoll
 * over both ends has both ready in one epoll_wait.
 */
static void test_sent_is_delivered(void)
{
	struct sockaddr_in a;
	struct epoll_event ev, evs[4];
	int l, c, s, ep, n, i, ready;

	l = listener4(&a);
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
	s = CHECK_OK(accept(l, NULL, NULL));
	ep = CHECK_OK(epoll_create1(0));
	ev.events = EPOLLIN | EPOLLOUT | EPOLLET;
	ev.data.fd = c;
	CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev));
	ev.data.fd = s;
	CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));
	CHECK_EQ(epoll_wait(ep, evs, 4, 1000), 2); /* both writable */
	CHECK_EQ(epoll_wait(ep, evs, 4, 0), 0);

	CHECK_EQ(send(c, "Hello!", 6, 0), 6);
	CHECK_OK(ioctl(s, FIONREAD, &n));
	CHECK_EQ(n, 6);
	CHECK_EQ(send(s, "world!!!", 8, 0), 8);
	{
		struct pollfd p = { c, POLLIN, 0 };
		CHECK_EQ(poll(&p, 1, 0), 1);
	}
	n = CHECK_OK(epoll_wait(ep, evs, 4, 1000));
	CHECK_EQ(n, 2);
	for (i = 0, ready = 0; i < n; i++)
		if ((evs[i].events & (EPOLLIN | EPOLLOUT)) == (EPOLLIN | EPOLLOUT))
			ready++;
	CHECK_EQ(ready, 2);
	close(ep);
	close(s);
	close(c);
	close(l);
}

static void test_v6(void)
{
	struct sockaddr_in6 a6, peer;
	struct sockaddr_in a4;
	socklen_t len;
	char buf[8];
	int l, c, s, v;

	l = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0));
	memset(&a6, 0, sizeof(a6));
	a6.sin6_family = AF_INET6;
	a6.sin6_addr = in6addr_loopback;
	CHECK_OK(bind(l, (struct sockaddr *)&a6, sizeof(a6)));
	len = sizeof(a6);
	CHECK_OK(getsockname(l, (struct sockaddr *)&a6, &len));
	CHECK_EQ(len, sizeof(a6));
	CHECK_OK(listen(l, 4));
	c = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0));
	CHECK_OK(connect(c, (struct sockaddr *)&a6, sizeof(a6)));
	s = CHECK_OK(accept(l, NULL, NULL));
	CHECK_EQ(send(c, "six", 3, 0), 3);
	CHECK_EQ(recv(s, buf, 3, MSG_WAITALL), 3);
	CHECK_MEM(buf, "six", 3);
	close(s);
	close(c);
	close(l);

	/* An IPv6 socket reaches an IPv4 listener through a mapped address,
	 * unless IPV6_V6ONLY. */
	l = listener4(&a4);
	c = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0));
	len = sizeof(v);
	CHECK_OK(getsockopt(c, IPPROTO_IPV6, IPV6_V6ONLY, &v, &len));
	CHECK_EQ(v, 0);
	memset(&a6, 0, sizeof(a6));
	a6.sin6_family = AF_INET6;
	a6.sin6_port = a4.sin_port;
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &a6.sin6_addr);
	CHECK_OK(connect(c, (struct sockaddr *)&a6, sizeof(a6)));
	len = sizeof(peer);
	CHECK_OK(getpeername(c, (struct sockaddr *)&peer, &len));
	CHECK_EQ(len, sizeof(peer));
	CHECK_EQ(peer.sin6_family, AF_INET6);
	CHECK(IN6_IS_ADDR_V4MAPPED(&peer.sin6_addr));
	s = CHECK_OK(accept(l, NULL, NULL));
	close(s);
	close(c);
	c = CHECK_OK(socket(AF_INET6, SOCK_STREAM, 0));
	v = 1;
	CHECK_OK(setsockopt(c, IPPROTO_IPV6, IPV6_V6ONLY, &v, sizeof(v)));
	CHECK(connect(c, (struct sockaddr *)&a6, sizeof(a6)) == -1);
	close(c);
	close(l);
}

static void test_options(void)
{
	struct sockaddr_in a;
	struct tcp_info ti;
	struct linger lg;
	socklen_t len;
	int l, c, s, v;

	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	len = sizeof(v);
	CHECK_OK(getsockopt(c, SOL_SOCKET, SO_TYPE, &v, &len));
	CHECK_EQ(v, SOCK_STREAM);
	CHECK_OK(getsockopt(c, SOL_SOCKET, SO_DOMAIN, &v, &len));
	CHECK_EQ(v, AF_INET);
	CHECK_OK(getsockopt(c, SOL_SOCKET, SO_PROTOCOL, &v, &len));
	CHECK_EQ(v, IPPROTO_TCP);
	CHECK_OK(getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &len));
	CHECK_EQ(v, 0);
	v = 1;
	CHECK_OK(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)));
	CHECK_OK(getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &v, &len));
	CHECK_EQ(v, 1);
	v = 1;
	CHECK_OK(setsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &v, sizeof(v)));
	CHECK_OK(getsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &v, &len));
	CHECK_EQ(v, 1);
	v = 30;
	CHECK_OK(setsockopt(c, IPPROTO_TCP, TCP_KEEPIDLE, &v, sizeof(v)));
	v = 5;
	CHECK_OK(setsockopt(c, IPPROTO_TCP, TCP_KEEPINTVL, &v, sizeof(v)));
	v = 3;
	CHECK_OK(setsockopt(c, IPPROTO_TCP, TCP_KEEPCNT, &v, sizeof(v)));
	CHECK_OK(getsockopt(c, IPPROTO_TCP, TCP_KEEPIDLE, &v, &len));
	CHECK_EQ(v, 30);
	CHECK_OK(getsockopt(c, IPPROTO_TCP, TCP_KEEPINTVL, &v, &len));
	CHECK_EQ(v, 5);
	CHECK_OK(getsockopt(c, IPPROTO_TCP, TCP_KEEPCNT, &v, &len));
	CHECK_EQ(v, 3);
	v = 0;
	CHECK_ERR(setsockopt(c, IPPROTO_TCP, TCP_KEEPCNT, &v, sizeof(v)), EINVAL);
	lg = (struct linger){ 1, 7 };
	CHECK_OK(setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	len = sizeof(lg);
	CHECK_OK(getsockopt(c, SOL_SOCKET, SO_LINGER, &lg, &len));
	CHECK_EQ(lg.l_onoff, 1);
	CHECK_EQ(lg.l_linger, 7);
	v = 0x10;
	CHECK_OK(setsockopt(c, IPPROTO_IP, IP_TOS, &v, sizeof(v)));
	len = sizeof(v);
	CHECK_OK(getsockopt(c, IPPROTO_IP, IP_TOS, &v, &len));
	CHECK_EQ(v, 0x10);
	CHECK_OK(getsockopt(c, SOL_SOCKET, SO_SNDBUF, &v, &len));
	CHECK(v > 0);
	v = 65536;
	CHECK_OK(setsockopt(c, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
	CHECK_OK(getsockopt(c, SOL_SOCKET, SO_RCVBUF, &v, &len));
	CHECK_EQ(v, 131072);
	CHECK_ERR(getsockopt(c, IPPROTO_TCP, 9999, &v, &len), ENOPROTOOPT);

	l = listener4(&a);
	CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
	s = CHECK_OK(accept(l, NULL, NULL));
	len = sizeof(ti);
	CHECK_OK(getsockopt(c, IPPROTO_TCP, TCP_INFO, &ti, &len));
	CHECK(len >= 104);
	CHECK_EQ(ti.tcpi_state, 1); /* TCP_ESTABLISHED */
	CHECK(ti.tcpi_snd_mss > 0);
	len = sizeof(v);
	CHECK_OK(getsockopt(s, SOL_SOCKET, SO_ACCEPTCONN, &v, &len));
	CHECK_EQ(v, 0);
	close(s);
	close(c);
	close(l);
}

static int sndbuf(int fd)
{
	socklen_t len = sizeof(int);
	int v;

	CHECK_OK(getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &len));
	return v;
}

/* tcp_wmem_default is net.ipv4.tcp_wmem's middle value. */
static int tcp_wmem_default(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/tcp_wmem", "r");
	int min, def, max;

	CHECK(f != NULL);
	CHECK_EQ(fscanf(f, "%d %d %d", &min, &def, &max), 3);
	fclose(f);
	return def;
}

static void test_send_buffer(void)
{
	static char chunk[256 << 10];
	struct sockaddr_in a;
	int l, c, s, v;

	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_EQ(sndbuf(c), tcp_wmem_default());
	l = listener4(&a);
	CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
	s = CHECK_OK(accept(l, NULL, NULL));
	CHECK(sndbuf(c) >= 1 << 20);
	CHECK(sndbuf(s) >= 1 << 20);
	CHECK_EQ(send(c, chunk, sizeof(chunk), MSG_DONTWAIT), sizeof(chunk));
	close(s);
	close(c);
	close(l);

	l = listener4(&a);
	v = 50000;
	CHECK_OK(setsockopt(l, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)));
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	CHECK_OK(setsockopt(c, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)));
	CHECK_OK(connect(c, (struct sockaddr *)&a, sizeof(a)));
	s = CHECK_OK(accept(l, NULL, NULL));
	CHECK_EQ(sndbuf(c), 2 * v);
	CHECK_EQ(sndbuf(s), 2 * v);
	close(s);
	close(c);
	close(l);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_v4();
	test_nonblocking_and_bulk();
	test_sent_is_delivered();
	test_v6();
	test_options();
	test_send_buffer();
	return check_finish();
}
