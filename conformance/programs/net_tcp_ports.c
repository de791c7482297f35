/*
 * net_tcp_ports: how TCP sockets share a port and where a connection
 * goes, the rules Linux's kernel selftests reuseaddr_conflict,
 * sk_bind_sendto_listen, sk_connect_zero_addr and tcp_inq check.
 *
 * Checks: SO_REUSEADDR shares a port only with sockets that are not
 * listening, on bind (0.0.0.0 beside a listener on 127.0.0.1 is
 * EADDRINUSE, and so is a dual-stack :: socket; an IPV6_V6ONLY one is
 * not in the way) and on listen (a second listener on the port, or on an
 * address that overlaps it, is EADDRINUSE); SO_REUSEPORT lets two
 * listeners of one owner share it; a connect from a port another
 * connection uses to the same peer is EADDRNOTAVAIL and the socket can
 * still listen; listen(fd, 0) takes a connection; connect and sendto to
 * 0.0.0.0 and :: reach loopback; sendto with MSG_FASTOPEN connects and
 * sends (EISCONN once connected or on a listener, as connect is,
 * EOPNOTSUPP for AF_UNSPEC, EINVAL with no address), without it an unconnected socket's send is EPIPE;
 * TCP_INQ (0 or 1, EINVAL else, inherited by an accepted socket) adds a
 * TCP_CM_INQ control message to each recvmsg with the bytes left to read
 * (one more once the peer's FIN has come, 1 after the end was read).
 */
// covers: socket bind listen connect accept sendto recvmsg setsockopt getsockopt
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

static const int one = 1;

static int tcp(int family, int reuseaddr)
{
	int fd = CHECK_OK(socket(family, SOCK_STREAM, 0));

	if (reuseaddr)
		CHECK_OK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	return fd;
}

static struct sockaddr_in sin4(const char *addr, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	inet_pton(AF_INET, addr, &a.sin_addr);
	return a;
}

static struct sockaddr_in6 sin6(const char *addr, int port)
{
	struct sockaddr_in6 a = { .sin6_family = AF_INET6, .sin6_port = htons(port) };

	inet_pton(AF_INET6, addr, &a.sin6_addr);
	return a;
}

static int port_of(int fd)
{
	struct sockaddr_in6 a;
	socklen_t len = sizeof(a);

	CHECK_OK(getsockname(fd, (struct sockaddr *)&a, &len));
	return ntohs(a.sin6_port); /* sin_port is at the same offset */
}

/* bind_port binds fd to addr:port and says whether it could (or errno). */
static int bind4(int fd, const char *addr, int port)
{
	struct sockaddr_in a = sin4(addr, port);

	return bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : errno;
}

static int bind6(int fd, const char *addr, int port)
{
	struct sockaddr_in6 a = sin6(addr, port);

	return bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 ? 0 : errno;
}

static void test_reuseaddr_and_listeners(void)
{
	int l = tcp(AF_INET, 1), a, b, c, e, f, port, port2;

	CHECK_EQ(bind4(l, "127.0.0.1", 0), 0);
	port = port_of(l);
	CHECK_OK(listen(l, 1));
	a = tcp(AF_INET, 1);
	CHECK_EQ(bind4(a, "0.0.0.0", port), EADDRINUSE);
	b = tcp(AF_INET6, 1);
	CHECK_OK(setsockopt(b, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)));
	CHECK_EQ(bind6(b, "::", port), 0);
	c = tcp(AF_INET6, 1);
	CHECK_EQ(bind6(c, "::", port), EADDRINUSE);
	close(a);
	close(b);
	close(c);
	close(l);

	/* Bound, not listening: shared; the second to listen is in the way
	 * of the first, also where its address only overlaps. */
	e = tcp(AF_INET, 1);
	CHECK_EQ(bind4(e, "0.0.0.0", 0), 0);
	port2 = port_of(e);
	f = tcp(AF_INET, 1);
	CHECK_EQ(bind4(f, "127.0.0.1", port2), 0);
	CHECK_OK(listen(f, 1));
	CHECK_ERR(listen(e, 1), EADDRINUSE);
	close(e);
	close(f);

	/* SO_REUSEPORT: two listeners of one owner on one port. */
	e = tcp(AF_INET, 0);
	CHECK_OK(setsockopt(e, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)));
	CHECK_EQ(bind4(e, "127.0.0.1", 0), 0);
	port2 = port_of(e);
	CHECK_OK(listen(e, 1));
	f = tcp(AF_INET, 0);
	CHECK_OK(setsockopt(f, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)));
	CHECK_EQ(bind4(f, "127.0.0.1", port2), 0);
	CHECK_OK(listen(f, 1));
	a = tcp(AF_INET, 1);
	CHECK_EQ(bind4(a, "127.0.0.1", port2), EADDRINUSE);
	close(a);
	close(e);
	close(f);
}

static void test_taken_tuple_then_listen(void)
{
	int a = tcp(AF_INET, 1), b = tcp(AF_INET, 1), port;
	struct sockaddr_in self;

	CHECK_EQ(bind4(a, "127.0.0.1", 0), 0);
	port = port_of(a);
	self = sin4("127.0.0.1", port);
	/* A socket connected to itself (simultaneous open) holds the tuple. */
	CHECK_OK(connect(a, (struct sockaddr *)&self, sizeof(self)));
	CHECK_EQ(bind4(b, "127.0.0.1", port), 0);
	CHECK_ERR(connect(b, (struct sockaddr *)&self, sizeof(self)), EADDRNOTAVAIL);
	CHECK_OK(listen(b, 0));
	close(b);
	close(a);
}

static void test_backlog_zero_and_any(void)
{
	int l = tcp(AF_INET, 0), c, s, port, err = -1;
	struct sockaddr_in any, peer;
	struct sockaddr_in6 any6, peer6;
	socklen_t len = sizeof(err);
	struct pollfd p;
	char buf[INET6_ADDRSTRLEN];

	CHECK_EQ(bind4(l, "127.0.0.1", 0), 0);
	port = port_of(l);
	CHECK_OK(listen(l, 0));
	c = CHECK_OK(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0));
	any = sin4("0.0.0.0", port);
	if (connect(c, (struct sockaddr *)&any, sizeof(any)) != 0)
		CHECK_EQ(errno, EINPROGRESS);
	p = (struct pollfd){ .fd = c, .events = POLLOUT };
	CHECK_EQ(poll(&p, 1, 5000), 1);
	CHECK_OK(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len));
	CHECK_EQ(err, 0);
	len = sizeof(peer);
	CHECK_OK(getpeername(c, (struct sockaddr *)&peer, &len));
	CHECK_STR(inet_ntop(AF_INET, &peer.sin_addr, buf, sizeof(buf)), "127.0.0.1");
	s = CHECK_OK(accept(l, NULL, NULL));
	close(s);
	close(c);
	close(l);

	l = tcp(AF_INET6, 0);
	CHECK_EQ(bind6(l, "::1", 0), 0);
	port = port_of(l);
	CHECK_OK(listen(l, 1));
	c = tcp(AF_INET6, 0);
	any6 = sin6("::", port);
	CHECK_OK(connect(c, (struct sockaddr *)&any6, sizeof(any6)));
	len = sizeof(peer6);
	CHECK_OK(getpeername(c, (struct sockaddr *)&peer6, &len));
	CHECK_STR(inet_ntop(AF_INET6, &peer6.sin6_addr, buf, sizeof(buf)), "::1");
	close(c);
	close(l);
}

static void test_udp_to_any(void)
{
	int u = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0)), v, port;
	struct sockaddr_in any;
	struct sockaddr_in6 any6;
	char buf[8];

	CHECK_EQ(bind4(u, "127.0.0.1", 0), 0);
	port = port_of(u);
	any = sin4("0.0.0.0", port);
	CHECK_EQ(sendto(u, "v4", 2, 0, (struct sockaddr *)&any, sizeof(any)), 2);
	CHECK_EQ(recv(u, buf, sizeof(buf), MSG_DONTWAIT), 2);
	close(u);

	v = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
	CHECK_EQ(bind6(v, "::1", 0), 0);
	port = port_of(v);
	any6 = sin6("::", port);
	CHECK_EQ(sendto(v, "v6", 2, 0, (struct sockaddr *)&any6, sizeof(any6)), 2);
	CHECK_EQ(recv(v, buf, sizeof(buf), MSG_DONTWAIT), 2);
	close(v);
}

static void test_fastopen(void)
{
	int l = tcp(AF_INET, 0), c = tcp(AF_INET, 0), d = tcp(AF_INET, 0), s;
	struct sockaddr_in to, unspec = { .sin_family = AF_UNSPEC };
	char buf[8];

	CHECK_EQ(bind4(l, "127.0.0.1", 0), 0);
	to = sin4("127.0.0.1", port_of(l));
	CHECK_OK(listen(l, 1));
	CHECK_ERR(sendto(l, "hi", 2, MSG_FASTOPEN, (struct sockaddr *)&to, sizeof(to)), EISCONN);
	CHECK_ERR(connect(l, (struct sockaddr *)&to, sizeof(to)), EISCONN);
	CHECK_EQ(sendto(c, "hi", 2, MSG_FASTOPEN, (struct sockaddr *)&to, sizeof(to)), 2);
	CHECK_ERR(sendto(c, "hi", 2, MSG_FASTOPEN, (struct sockaddr *)&to, sizeof(to)), EISCONN);
	s = CHECK_OK(accept(l, NULL, NULL));
	CHECK_EQ(recv(s, buf, sizeof(buf), 0), 2);
	CHECK_MEM(buf, "hi", 2);
	CHECK_ERR(sendto(d, "hi", 2, MSG_FASTOPEN, (struct sockaddr *)&unspec, sizeof(unspec)), EOPNOTSUPP);
	CHECK_ERR(sendto(d, "hi", 2, MSG_FASTOPEN, NULL, 0), EINVAL);
	CHECK_ERR(sendto(d, "hi", 2, MSG_NOSIGNAL, (struct sockaddr *)&to, sizeof(to)), EPIPE);
	close(s);
	close(d);
	close(c);
	close(l);
}

/* recv_inq reads up to n bytes with recvmsg and returns TCP_CM_INQ's
 * value, -1 if there was none; *got is what recvmsg returned. */
static int recv_inq(int fd, size_t n, long *got)
{
	char data[256], cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { data, n };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;
	int inq = -1;

	*got = recvmsg(fd, &m, 0);
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_TCP && c->cmsg_type == TCP_CM_INQ)
			memcpy(&inq, CMSG_DATA(c), sizeof(inq));
	return inq;
}

static void test_inq(void)
{
	int l = tcp(AF_INET, 0), c = tcp(AF_INET, 0), s, v = -1, two = 2, n;
	struct sockaddr_in to;
	socklen_t len = sizeof(v);
	char data[100];
	long got;

	CHECK_EQ(bind4(l, "127.0.0.1", 0), 0);
	to = sin4("127.0.0.1", port_of(l));
	CHECK_OK(getsockopt(l, SOL_TCP, TCP_INQ, &v, &len));
	CHECK_EQ(v, 0);
	CHECK_ERR(setsockopt(l, SOL_TCP, TCP_INQ, &two, sizeof(two)), EINVAL);
	CHECK_OK(setsockopt(l, SOL_TCP, TCP_INQ, &one, sizeof(one)));
	CHECK_OK(listen(l, 1));
	CHECK_OK(connect(c, (struct sockaddr *)&to, sizeof(to)));
	s = CHECK_OK(accept(l, NULL, NULL));
	len = sizeof(v);
	CHECK_OK(getsockopt(s, SOL_TCP, TCP_INQ, &v, &len));
	CHECK_EQ(v, 1);

	memset(data, 'x', sizeof(data));
	CHECK_EQ(send(c, data, sizeof(data), 0), 100);
	for (n = 0; n < 100; n++) { /* until all 100 bytes are queued */
		int q = 0;

		CHECK_OK(ioctl(s, FIONREAD, &q));
		if (q == 100)
			break;
		usleep(10000);
	}
	CHECK_EQ(recv_inq(s, 40, &got), 60);
	CHECK_EQ(got, 40);
	CHECK_EQ(recv_inq(s, 100, &got), 0);
	CHECK_EQ(got, 60);
	/* Without TCP_INQ no such control message. */
	CHECK_EQ(send(s, data, 10, 0), 10);
	CHECK_EQ(recv_inq(c, 100, &got), -1);
	CHECK_EQ(got, 10);
	/* The peer's FIN counts one, and the end read says 1. */
	CHECK_EQ(send(c, data, 10, 0), 10);
	close(c);
	for (n = 0; n < 100; n++) {
		struct pollfd p = { .fd = s, .events = POLLRDHUP };

		if (poll(&p, 1, 10) == 1)
			break;
	}
	CHECK_EQ(recv_inq(s, 4, &got), 7);
	CHECK_EQ(recv_inq(s, 100, &got), 1);
	CHECK_EQ(got, 6);
	CHECK_EQ(recv_inq(s, 100, &got), 1);
	CHECK_EQ(got, 0);
	close(s);
	close(l);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_reuseaddr_and_listeners();
	test_taken_tuple_then_listen();
	test_backlog_zero_and_any();
	test_udp_to_any();
	test_fastopen();
	test_inq();
	return check_finish();
}
