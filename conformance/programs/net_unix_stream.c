/*
 * net_unix_stream: AF_UNIX stream and seqpacket sockets, what asyncio,
 * multiprocessing, git's credential cache and every local daemon use.
 *
 * Checks: socketpair carries bytes both ways in order; EOF after the
 * peer's close, then EPIPE (and SIGPIPE, not with MSG_NOSIGNAL) for a
 * write; the peer's close with data left unread gives the reader its data
 * and then ECONNRESET; bind makes a socket node (S_IFSOCK, 0777 less the
 * umask) that open() refuses with ENXIO, EADDRINUSE for a name that
 * exists, EINVAL for a second bind (whose node is removed again); listen needs a name (EINVAL) and a
 * stream or seqpacket socket (EOPNOTSUPP); connect finds the listener
 * through any name of the node (a hard link) and fails with ENOENT,
 * ECONNREFUSED (a node nothing listens on, a bound socket that does not
 * listen), EPROTOTYPE (another type) and EISCONN; a connection is made
 * before accept and carries data at once; accept4 with SOCK_CLOEXEC and
 * SOCK_NONBLOCK, EAGAIN on an empty non-blocking listener; getsockname
 * and getpeername (the path with its NUL, the family alone for an unbound
 * socket, ENOTCONN); abstract names (a NUL first) are free again when
 * their socket closes, autobind picks five hex digits; shutdown SHUT_WR
 * gives the peer EOF and POLLRDHUP, both ways POLLHUP; poll of a new
 * socket is POLLOUT|POLLHUP, of a listener POLLIN once a connection
 * waits; MSG_PEEK leaves data, MSG_DONTWAIT is EAGAIN on an empty socket,
 * MSG_WAITALL waits for all; FIONREAD and SIOCOUTQ; seqpacket keeps
 * message boundaries, cuts with MSG_TRUNC and reports a length with it;
 * SO_TYPE, SO_DOMAIN, SO_PROTOCOL, SO_ACCEPTCONN; SO_SNDBUF doubles what
 * is asked, with Linux's floor; a full socket is not writable and a
 * non-blocking write is EAGAIN; SO_RCVTIMEO makes a read fail with EAGAIN
 * after about its time and reads back rounded to the clock tick.
 */
// covers: socket socketpair bind listen connect accept accept4 getsockname getpeername shutdown sendto recvfrom setsockopt getsockopt
#include "check.h"

#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <linux/sockios.h>

static char dir[64];

static socklen_t path_addr(struct sockaddr_un *a, const char *name)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof(a->sun_path), "%s/%s", dir, name);
	return offsetof(struct sockaddr_un, sun_path) + strlen(a->sun_path);
}

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "%s-%d", name, getpid());
	return offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a->sun_path + 1);
}

static int got_sigpipe;

static void on_sigpipe(int sig)
{
	(void)sig;
	got_sigpipe++;
}

static void test_pair(void)
{
	char buf[64];
	int sv[2];

	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	CHECK_EQ(write(sv[0], "hello, ", 7), 7);
	CHECK_EQ(write(sv[0], "world", 5), 5);
	CHECK_EQ(read(sv[1], buf, sizeof(buf)), 12);
	CHECK_MEM(buf, "hello, world", 12);
	CHECK_EQ(write(sv[1], "back", 4), 4);
	CHECK_EQ(recv(sv[0], buf, 2, MSG_PEEK), 2);
	CHECK_EQ(recv(sv[0], buf, sizeof(buf), 0), 4);
	CHECK_MEM(buf, "back", 4);
	CHECK_ERR(recv(sv[0], buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	CHECK_OK(close(sv[1]));
	CHECK_EQ(read(sv[0], buf, sizeof(buf)), 0);
	signal(SIGPIPE, on_sigpipe);
	CHECK_ERR(write(sv[0], "x", 1), EPIPE);
	CHECK_EQ(got_sigpipe, 1);
	CHECK_ERR(send(sv[0], "x", 1, MSG_NOSIGNAL), EPIPE);
	CHECK_EQ(got_sigpipe, 1);
	signal(SIGPIPE, SIG_DFL);
	close(sv[0]);

	/* The peer closed with data unread: the reader gets its own data,
	 * then ECONNRESET, then the end. */
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	CHECK_EQ(write(sv[0], "unread", 6), 6);
	CHECK_EQ(write(sv[1], "y", 1), 1);
	close(sv[1]);
	CHECK_EQ(read(sv[0], buf, sizeof(buf)), 1);
	CHECK_ERR(read(sv[0], buf, sizeof(buf)), ECONNRESET);
	CHECK_EQ(read(sv[0], buf, sizeof(buf)), 0);
	close(sv[0]);
}

static void test_bind_connect(void)
{
	struct sockaddr_un a, b, got;
	socklen_t alen, blen, glen;
	struct stat st;
	char buf[64];
	int l, c, s, x;

	umask(022);
	l = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	alen = path_addr(&a, "sock");
	CHECK_ERR(listen(l, 5), EINVAL);
	CHECK_OK(bind(l, (struct sockaddr *)&a, alen));
	CHECK_OK(stat(a.sun_path, &st));
	CHECK_EQ(st.st_mode, S_IFSOCK | 0755);
	CHECK_ERR(open(a.sun_path, O_RDWR), ENXIO);
	x = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	CHECK_ERR(bind(x, (struct sockaddr *)&a, alen), EADDRINUSE);
	blen = path_addr(&b, "other");
	CHECK_OK(bind(x, (struct sockaddr *)&b, blen));
	CHECK_ERR(bind(x, (struct sockaddr *)&b, blen), EADDRINUSE);
	{
		/* Bound already: the new node is made, then removed again. */
		struct sockaddr_un n;
		socklen_t nlen = path_addr(&n, "third");
		CHECK_ERR(bind(x, (struct sockaddr *)&n, nlen), EINVAL);
		CHECK_ERR(stat(n.sun_path, &st), ENOENT);
	}
	/* x is bound but does not listen. */
	c = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	CHECK_ERR(connect(c, (struct sockaddr *)&b, blen), ECONNREFUSED);
	close(x);
	CHECK_ERR(connect(c, (struct sockaddr *)&b, blen), ECONNREFUSED); /* the node stays */
	unlink(b.sun_path);
	CHECK_ERR(connect(c, (struct sockaddr *)&b, blen), ENOENT);
	CHECK_OK(mknod(b.sun_path, S_IFSOCK | 0777, 0));
	CHECK_ERR(connect(c, (struct sockaddr *)&b, blen), ECONNREFUSED);
	unlink(b.sun_path);

	CHECK_OK(listen(l, 5));
	x = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	CHECK_ERR(connect(x, (struct sockaddr *)&a, alen), EPROTOTYPE);
	CHECK_ERR(listen(x, 5), EOPNOTSUPP);
	close(x);

	/* Through a hard link of the node, after the first name is gone. */
	CHECK_OK(link(a.sun_path, b.sun_path));
	CHECK_OK(unlink(a.sun_path));
	CHECK_OK(connect(c, (struct sockaddr *)&b, blen));
	CHECK_ERR(connect(c, (struct sockaddr *)&b, blen), EISCONN);
	CHECK_EQ(write(c, "early", 5), 5); /* before accept */
	s = CHECK_OK(accept4(l, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK));
	CHECK_EQ(fcntl(s, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(s, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	CHECK_EQ(read(s, buf, sizeof(buf)), 5);
	CHECK_MEM(buf, "early", 5);

	glen = sizeof(got);
	CHECK_OK(getsockname(s, (struct sockaddr *)&got, &glen));
	CHECK_EQ(glen, alen + 1);
	CHECK_STR(got.sun_path, a.sun_path);
	glen = sizeof(got);
	CHECK_OK(getpeername(c, (struct sockaddr *)&got, &glen));
	CHECK_EQ(glen, alen + 1);
	glen = sizeof(got);
	CHECK_OK(getsockname(c, (struct sockaddr *)&got, &glen));
	CHECK_EQ(glen, offsetof(struct sockaddr_un, sun_path));
	glen = sizeof(got);
	CHECK_OK(getpeername(s, (struct sockaddr *)&got, &glen));
	CHECK_EQ(glen, offsetof(struct sockaddr_un, sun_path));
	x = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	glen = sizeof(got);
	CHECK_ERR(getpeername(x, (struct sockaddr *)&got, &glen), ENOTCONN);
	close(x);

	/* accept on an empty non-blocking listener. */
	fcntl(l, F_SETFL, O_NONBLOCK);
	CHECK_ERR(accept(l, NULL, NULL), EAGAIN);
	CHECK_ERR(accept4(l, NULL, NULL, 0x10), EINVAL);
	close(s);
	close(c);
	close(l);
	unlink(b.sun_path);
}

static void test_abstract(void)
{
	struct sockaddr_un a, got;
	socklen_t alen, glen;
	int s, t;

	alen = abstract_addr(&a, "moat-conf");
	s = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	CHECK_OK(bind(s, (struct sockaddr *)&a, alen));
	t = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	CHECK_ERR(bind(t, (struct sockaddr *)&a, alen), EADDRINUSE);
	glen = sizeof(got);
	CHECK_OK(getsockname(s, (struct sockaddr *)&got, &glen));
	CHECK_EQ(glen, alen);
	CHECK_MEM(got.sun_path, a.sun_path, alen - 2);
	close(s);
	CHECK_OK(bind(t, (struct sockaddr *)&a, alen));
	close(t);

	s = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	CHECK_OK(bind(s, (struct sockaddr *)&a, offsetof(struct sockaddr_un, sun_path)));
	memset(&got, 0, sizeof(got));
	glen = sizeof(got);
	CHECK_OK(getsockname(s, (struct sockaddr *)&got, &glen));
	CHECK_EQ(glen, offsetof(struct sockaddr_un, sun_path) + 6);
	CHECK_EQ(got.sun_path[0], 0);
	CHECK_EQ(strspn(got.sun_path + 1, "0123456789abcdef"), 5);
	close(s);
}

static void test_shutdown_poll(void)
{
	struct pollfd p;
	struct sockaddr_un a;
	socklen_t alen;
	char buf[16];
	int sv[2], l, c, n;

	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	p = (struct pollfd){ sv[1], POLLIN | POLLOUT | POLLRDHUP, 0 };
	CHECK_EQ(poll(&p, 1, 0), 1);
	CHECK_EQ(p.revents, POLLOUT);
	CHECK_EQ(write(sv[0], "last", 4), 4);
	CHECK_OK(ioctl(sv[1], FIONREAD, &n));
	CHECK_EQ(n, 4);
	CHECK_OK(ioctl(sv[0], SIOCOUTQ, &n));
	CHECK(n >= 4);
	CHECK_OK(shutdown(sv[0], SHUT_WR));
	p.events = POLLIN | POLLRDHUP;
	CHECK_EQ(poll(&p, 1, 0), 1);
	CHECK_EQ(p.revents, POLLIN | POLLRDHUP);
	CHECK_EQ(read(sv[1], buf, sizeof(buf)), 4);
	CHECK_EQ(read(sv[1], buf, sizeof(buf)), 0);
	CHECK_OK(shutdown(sv[0], SHUT_RD));
	p.events = POLLIN | POLLOUT;
	poll(&p, 1, 0);
	CHECK(p.revents & POLLHUP);
	CHECK_ERR(shutdown(sv[0], 3), EINVAL);
	close(sv[0]);
	close(sv[1]);

	l = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	p = (struct pollfd){ l, POLLIN | POLLOUT, 0 };
	CHECK_EQ(poll(&p, 1, 0), 1);
	CHECK_EQ(p.revents, POLLOUT | POLLHUP);
	alen = abstract_addr(&a, "moat-poll");
	CHECK_OK(bind(l, (struct sockaddr *)&a, alen));
	CHECK_OK(listen(l, 1));
	CHECK_EQ(poll(&p, 1, 0), 0);
	c = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	CHECK_OK(connect(c, (struct sockaddr *)&a, alen));
	CHECK_EQ(poll(&p, 1, 0), 1);
	CHECK_EQ(p.revents, POLLIN);
	CHECK_ERR(ioctl(l, FIONREAD, &n), EINVAL);
	close(c);
	close(l);
}

static void test_waitall(void)
{
	char buf[16];
	int sv[2];
	pid_t pid;

	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = check_fork();
	if (pid == 0) {
		write(sv[1], "abc", 3);
		check_sleep_ms(20);
		write(sv[1], "def", 3);
		check_child_exit();
	}
	CHECK_EQ(recv(sv[0], buf, 6, MSG_WAITALL), 6);
	CHECK_MEM(buf, "abcdef", 6);
	CHECK_CHILD(pid, "exited 0");
	close(sv[0]);
	close(sv[1]);
}

static void test_seqpacket(void)
{
	struct msghdr m;
	struct iovec iov;
	char buf[16];
	int sv[2];

	CHECK_OK(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv));
	CHECK_EQ(write(sv[0], "first message", 13), 13);
	CHECK_EQ(write(sv[0], "second", 6), 6);
	CHECK_EQ(write(sv[0], "", 0), 0);
	iov = (struct iovec){ buf, 5 };
	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	CHECK_EQ(recvmsg(sv[1], &m, 0), 5);
	CHECK_EQ(m.msg_flags & MSG_TRUNC, MSG_TRUNC);
	CHECK_MEM(buf, "first", 5);
	CHECK_EQ(recv(sv[1], buf, 2, MSG_PEEK | MSG_TRUNC), 6);
	CHECK_EQ(recv(sv[1], buf, sizeof(buf), 0), 6);
	CHECK_MEM(buf, "second", 6);
	CHECK_EQ(recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT), 0); /* the empty message */
	CHECK_ERR(recv(sv[1], buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	close(sv[0]);
	CHECK_EQ(recv(sv[1], buf, sizeof(buf), 0), 0);
	signal(SIGPIPE, on_sigpipe);
	got_sigpipe = 0;
	CHECK_ERR(write(sv[1], "x", 1), EPIPE);
	CHECK_EQ(got_sigpipe, 0); /* datagram sends raise no SIGPIPE */
	signal(SIGPIPE, SIG_DFL);
	close(sv[1]);
}

static void test_options(void)
{
	struct timeval tv;
	socklen_t len;
	char buf[64 * 1024];
	long long t0, dt;
	int s, sv[2], v;

	s = CHECK_OK(socket(AF_UNIX, SOCK_SEQPACKET, 0));
	len = sizeof(v);
	CHECK_OK(getsockopt(s, SOL_SOCKET, SO_TYPE, &v, &len));
	CHECK_EQ(v, SOCK_SEQPACKET);
	CHECK_EQ(len, sizeof(int));
	CHECK_OK(getsockopt(s, SOL_SOCKET, SO_DOMAIN, &v, &len));
	CHECK_EQ(v, AF_UNIX);
	CHECK_OK(getsockopt(s, SOL_SOCKET, SO_PROTOCOL, &v, &len));
	CHECK_EQ(v, 0);
	CHECK_OK(getsockopt(s, SOL_SOCKET, SO_ACCEPTCONN, &v, &len));
	CHECK_EQ(v, 0);
	CHECK_OK(getsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, &len));
	CHECK_EQ(v, 212992);
	v = 10000;
	CHECK_OK(setsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)));
	CHECK_OK(getsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, &len));
	CHECK_EQ(v, 20000);
	v = 1;
	CHECK_OK(setsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v)));
	CHECK_OK(getsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, &len));
	CHECK_EQ(v, 4608);
	v = 1;
	CHECK_OK(setsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)));
	CHECK_OK(getsockopt(s, SOL_SOCKET, SO_RCVBUF, &v, &len));
	CHECK_EQ(v, 2304);
	CHECK_ERR(setsockopt(s, SOL_SOCKET, SO_SNDBUF, &v, 2), EINVAL);
	CHECK_ERR(getsockopt(s, SOL_SOCKET, 999, &v, &len), ENOPROTOOPT);
	CHECK_ERR(getsockopt(s, 0 /* SOL_IP */, 1, &v, &len), EOPNOTSUPP);
	CHECK_ERR(getsockopt(0, SOL_SOCKET, SO_TYPE, &v, &len), ENOTSOCK);
	close(s);

	/* A full stream socket: not writable, EAGAIN for a non-blocking write. */
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	while (send(sv[0], buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	CHECK_ERR(send(sv[0], buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	{
		struct pollfd p = { sv[0], POLLOUT, 0 };
		CHECK_EQ(poll(&p, 1, 0), 0);
	}

	/* SO_RCVTIMEO: rounded to the 4 ms tick, then EAGAIN after it. */
	tv = (struct timeval){ 0, 50001 };
	CHECK_OK(setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	len = sizeof(tv);
	CHECK_OK(getsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, &len));
	CHECK_EQ(tv.tv_sec, 0);
	CHECK_EQ(tv.tv_usec, 52000);
	tv = (struct timeval){ 0, 1000000 };
	CHECK_ERR(setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), EDOM);
	close(sv[1]);
	tv = (struct timeval){ 0, 40000 };
	s = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	CHECK_OK(setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	t0 = check_now_ns();
	CHECK_ERR(recv(s, buf, 1, 0), EAGAIN);
	dt = check_now_ns() - t0;
	CHECK(dt >= 39000000LL && dt < 2000000000LL);
	close(s);
	close(sv[0]);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	strcpy(dir, "/tmp/net_unix_stream.XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_pair();
	test_bind_connect();
	test_abstract();
	test_shutdown_poll();
	test_waitall();
	test_seqpacket();
	test_options();
	rmdir(dir);
	return check_finish();
}
