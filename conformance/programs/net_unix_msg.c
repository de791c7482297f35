/*
 * net_unix_msg: AF_UNIX datagrams and ancillary data: how a privilege
 * separator hands an fd to a worker, how journald and D-Bus learn who is
 * talking, how a pre-fork server passes accepted connections.
 *
 * Checks: datagram sockets keep message boundaries, cut a long message
 * with MSG_TRUNC (and report its length with the MSG_TRUNC flag), tell
 * the sender's name to recvfrom, give ENOTCONN without a peer and EPERM
 * when the target is connected to another socket; a socket connected to
 * a peer that closed gets ECONNREFUSED once, then ENOTCONN; a receiver
 * not connected back holds max_dgram_qlen+1 messages (EAGAIN after) and
 * the sender's poll says so; AF_UNSPEC disconnects; SCM_RIGHTS moves fds
 * of every kind (a pipe, a file, a socket, several in one message) into
 * the receiver's table, with MSG_CMSG_CLOEXEC setting FD_CLOEXEC, MSG_PEEK
 * giving copies, MSG_CTRUNC and the files closed when the control buffer
 * is too small, EBADF for a closed fd, EINVAL for more than 253; a socket
 * passed over itself is still usable after the fd is received; a stream
 * read stops after the data that came with files; SO_PASSCRED gives each
 * message the sender's pid, uid and gid, and a message sent with
 * SCM_CREDENTIALS the ids it names (EPERM for another pid without
 * CAP_SYS_ADMIN); SO_PEERCRED of a pair and of a connection is the
 * creating and the connecting process, at the time it connected;
 * sendmmsg and recvmmsg move several messages in one call (msg_len of
 * each, MSG_WAITFORONE); epoll reports a datagram socket readable when a
 * message arrives and EPOLLRDHUP|EPOLLHUP on a stream whose peer closed.
 */
// covers: socket socketpair bind connect sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg getsockopt setsockopt epoll_ctl epoll_wait
#include "check.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "%s-%d", name, getpid());
	return offsetof(struct sockaddr_un, sun_path) + 1 + strlen(a->sun_path + 1);
}

/* send_fds sends one byte with n fds. */
static long send_fds(int s, const int *fds, int n)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 256)];
	struct iovec iov = { "F", 1 };
	struct msghdr m = { 0 };
	struct cmsghdr *c;

	memset(cbuf, 0, sizeof(cbuf));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = CMSG_SPACE(sizeof(int) * n);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * n);
	memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	return sendmsg(s, &m, 0);
}

/* recv_fds receives into room bytes of control data and returns how many
 * fds came, filling fds and *flags. */
static int recv_fds(int s, int *fds, size_t room, int flags, int *mflags)
{
	char cbuf[CMSG_SPACE(sizeof(int) * 256)];
	char b[16];
	struct iovec iov = { b, sizeof(b) };
	struct msghdr m = { 0 };
	struct cmsghdr *c;
	int n = 0;

	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = room ? cbuf : NULL;
	m.msg_controllen = room;
	if (recvmsg(s, &m, flags) < 0)
		return -1;
	*mflags = m.msg_flags;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			memcpy(fds + n, CMSG_DATA(c), k * sizeof(int));
			n += k;
		}
	return n;
}

static void test_dgram(void)
{
	struct sockaddr_un a, b, from;
	socklen_t alen, blen, flen;
	struct pollfd p;
	char buf[64];
	int r, s, x, n;

	alen = abstract_addr(&a, "moat-dgram-r");
	blen = abstract_addr(&b, "moat-dgram-s");
	r = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	s = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	CHECK_OK(bind(r, (struct sockaddr *)&a, alen));
	CHECK_OK(bind(s, (struct sockaddr *)&b, blen));
	CHECK_ERR(send(s, "x", 1, 0), ENOTCONN);
	CHECK_EQ(sendto(s, "one message", 11, 0, (struct sockaddr *)&a, alen), 11);
	CHECK_EQ(sendto(s, "two", 3, 0, (struct sockaddr *)&a, alen), 3);
	flen = sizeof(from);
	CHECK_EQ(recvfrom(r, buf, 3, 0, (struct sockaddr *)&from, &flen), 3);
	CHECK_MEM(buf, "one", 3);
	CHECK_EQ(flen, blen);
	CHECK_MEM(from.sun_path, b.sun_path, blen - 2);
	CHECK_EQ(recv(r, buf, 1, MSG_TRUNC), 3);
	CHECK_ERR(recv(r, buf, 1, MSG_DONTWAIT), EAGAIN);

	/* r connected to s takes datagrams from s alone. */
	CHECK_OK(connect(r, (struct sockaddr *)&b, blen));
	x = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
	CHECK_ERR(sendto(x, "x", 1, 0, (struct sockaddr *)&a, alen), EPERM);
	CHECK_EQ(send(r, "to s", 4, 0), 4);
	CHECK_EQ(recv(s, buf, sizeof(buf), 0), 4);
	{
		struct sockaddr un = { AF_UNSPEC };
		CHECK_OK(connect(r, &un, sizeof(un)));
	}
	CHECK_EQ(sendto(x, "x", 1, 0, (struct sockaddr *)&a, alen), 1);
	CHECK_EQ(recv(r, buf, sizeof(buf), 0), 1);

	/* The queue of a receiver not connected back. */
	CHECK_OK(connect(x, (struct sockaddr *)&a, alen));
	n = 0;
	while (send(x, "q", 1, MSG_DONTWAIT) == 1 && n < 100)
		n++;
	CHECK_EQ(n, 11);
	CHECK_ERR(send(x, "q", 1, MSG_DONTWAIT), EAGAIN);
	p = (struct pollfd){ x, POLLOUT, 0 };
	CHECK_EQ(poll(&p, 1, 0), 0);
	CHECK_EQ(recv(r, buf, sizeof(buf), 0), 1);
	CHECK_EQ(poll(&p, 1, 0), 1);
	CHECK_EQ(p.revents, POLLOUT);

	/* The peer goes: ECONNREFUSED once, then ENOTCONN. */
	close(r);
	CHECK_ERR(send(x, "q", 1, 0), ECONNREFUSED);
	CHECK_ERR(send(x, "q", 1, 0), ENOTCONN);
	close(x);
	close(s);
}

static void test_rights(void)
{
	int sv[2], pv[2], qv[2], fds[300], got[300], mflags, n, i, f;
	char buf[16];
	struct stat st;

	CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	CHECK_OK(pipe(pv));
	f = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, qv));
	fds[0] = pv[1];
	fds[1] = f;
	fds[2] = qv[1];
	CHECK_EQ(send_fds(sv[0], fds, 3), 1);
	close(pv[1]);
	close(f);
	close(qv[1]);
	CHECK_EQ(recv_fds(sv[1], got, CMSG_SPACE(sizeof(int) * 3), MSG_CMSG_CLOEXEC, &mflags), 3);
	CHECK_EQ(mflags & MSG_CTRUNC, 0);
	for (i = 0; i < 3; i++)
		CHECK_EQ(fcntl(got[i], F_GETFD), FD_CLOEXEC);
	CHECK_EQ(write(got[0], "p", 1), 1);
	CHECK_EQ(read(pv[0], buf, 1), 1);
	CHECK_EQ(read(got[1], buf, 5), 5);
	CHECK_MEM(buf, "Hello", 5);
	CHECK_EQ(write(got[2], "s", 1), 1);
	CHECK_EQ(read(qv[0], buf, 1), 1);
	CHECK_OK(fstat(got[2], &st));
	CHECK_EQ(st.st_mode & S_IFMT, S_IFSOCK);
	for (i = 0; i < 3; i++)
		close(got[i]);

	/* MSG_PEEK gives copies; the real receive gives them again. */
	CHECK_EQ(send_fds(sv[0], pv, 1), 1);
	CHECK_EQ(recv_fds(sv[1], got, CMSG_SPACE(sizeof(int)), MSG_PEEK, &mflags), 1);
	CHECK_EQ(recv_fds(sv[1], got + 1, CMSG_SPACE(sizeof(int)), 0, &mflags), 1);
	CHECK(got[0] != got[1]);
	close(got[0]);
	close(got[1]);

	/* Room for one fd of two: the other is closed, MSG_CTRUNC. */
	CHECK_OK(pipe(pv));
	fds[0] = pv[1];
	fds[1] = pv[1];
	CHECK_EQ(send_fds(sv[0], fds, 2), 1);
	close(pv[1]);
	CHECK_EQ(recv_fds(sv[1], got, CMSG_LEN(sizeof(int)), 0, &mflags), 1);
	CHECK_EQ(mflags & MSG_CTRUNC, MSG_CTRUNC);
	close(got[0]);
	CHECK_EQ(read(pv[0], buf, 1), 0); /* no writer is left anywhere */
	close(pv[0]);
	/* No control buffer at all. */
	CHECK_EQ(send_fds(sv[0], sv, 1), 1);
	CHECK_EQ(recv_fds(sv[1], got, 0, 0, &mflags), 0);
	CHECK_EQ(mflags & MSG_CTRUNC, MSG_CTRUNC);

	CHECK_ERR(send_fds(sv[0], (int[]){ 999 }, 1), EBADF);
	for (i = 0; i < 254; i++)
		fds[i] = sv[0];
	CHECK_ERR(send_fds(sv[0], fds, 254), EINVAL);
	CHECK_EQ(send_fds(sv[0], fds, 253), 1);
	n = recv_fds(sv[1], got, sizeof(int) * 256 + 64, 0, &mflags);
	CHECK_EQ(n, 253);
	for (i = 0; i < n; i++)
		close(got[i]);

	/* A socket sent over itself, received back. */
	CHECK_EQ(send_fds(sv[1], &sv[0], 1), 1);
	CHECK_EQ(recv_fds(sv[0], got, CMSG_SPACE(sizeof(int)), 0, &mflags), 1);
	CHECK_EQ(send(got[0], "self", 4, 0), 4);
	CHECK_EQ(recv(sv[1], buf, sizeof(buf), 0), 4);
	close(got[0]);
	close(sv[0]);
	close(sv[1]);

	/* A stream read stops after the data the files came with. */
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	CHECK_EQ(write(sv[0], "ab", 2), 2);
	CHECK_EQ(send_fds(sv[0], sv, 1), 1);
	CHECK_EQ(write(sv[0], "cd", 2), 2);
	{
		char cbuf[CMSG_SPACE(sizeof(int))];
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr m = { 0 };

		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = cbuf;
		m.msg_controllen = sizeof(cbuf);
		CHECK_EQ(recvmsg(sv[1], &m, 0), 3);
		CHECK_MEM(buf, "abF", 3);
		CHECK(CMSG_FIRSTHDR(&m) != NULL);
		close(*(int *)CMSG_DATA(CMSG_FIRSTHDR(&m)));
		CHECK_EQ(read(sv[1], buf, sizeof(buf)), 2);
	}
	close(sv[0]);
	close(sv[1]);
}

static void test_creds(void)
{
	char cbuf[CMSG_SPACE(sizeof(struct ucred))];
	struct ucred uc, *rc;
	struct iovec iov;
	struct msghdr m;
	struct cmsghdr *c;
	socklen_t len;
	char buf[8];
	int sv[2], on = 1;
	pid_t pid;

	CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	len = sizeof(uc);
	CHECK_OK(getsockopt(sv[0], SOL_SOCKET, SO_PEERCRED, &uc, &len));
	CHECK_EQ(uc.pid, getpid());
	CHECK_EQ(uc.uid, geteuid());
	CHECK_EQ(uc.gid, getegid());
	CHECK_OK(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)));
	CHECK_EQ(write(sv[0], "m", 1), 1);
	iov = (struct iovec){ buf, sizeof(buf) };
	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	CHECK_EQ(recvmsg(sv[1], &m, 0), 1);
	c = CMSG_FIRSTHDR(&m);
	CHECK(c != NULL);
	if (c) {
		CHECK_EQ(c->cmsg_type, SCM_CREDENTIALS);
		rc = (struct ucred *)CMSG_DATA(c);
		CHECK_EQ(rc->pid, getpid());
		CHECK_EQ(rc->uid, getuid());
		CHECK_EQ(rc->gid, getgid());
	}
	/* No room for them: MSG_CTRUNC. */
	CHECK_EQ(write(sv[0], "m", 1), 1);
	m.msg_control = NULL;
	m.msg_controllen = 0;
	CHECK_EQ(recvmsg(sv[1], &m, 0), 1);
	CHECK_EQ(m.msg_flags & MSG_CTRUNC, MSG_CTRUNC);

	/* Named credentials: the sender's own pid; another needs
	 * CAP_SYS_ADMIN. */
	memset(&m, 0, sizeof(m));
	iov = (struct iovec){ "c", 1 };
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_CREDENTIALS;
	c->cmsg_len = CMSG_LEN(sizeof(uc));
	uc = (struct ucred){ getpid(), getuid(), getgid() };
	memcpy(CMSG_DATA(c), &uc, sizeof(uc));
	CHECK_EQ(sendmsg(sv[0], &m, 0), 1);
	CHECK_EQ(recv(sv[1], buf, sizeof(buf), 0), 1);
	if (!check_has_cap(CAP_SYS_ADMIN)) {
		uc.pid = getppid();
		memcpy(CMSG_DATA(c), &uc, sizeof(uc));
		CHECK_ERR(sendmsg(sv[0], &m, 0), EPERM);
	}
	c->cmsg_len = CMSG_LEN(sizeof(uc) - 4);
	CHECK_ERR(sendmsg(sv[0], &m, 0), EINVAL);
	close(sv[0]);
	close(sv[1]);

	/* SO_PEERCRED of a connection: the connecting child. */
	{
		struct sockaddr_un a;
		socklen_t alen = abstract_addr(&a, "moat-peercred");
		int l = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0)), s;

		CHECK_OK(bind(l, (struct sockaddr *)&a, alen));
		CHECK_OK(listen(l, 1));
		pid = check_fork();
		if (pid == 0) {
			int c2 = socket(AF_UNIX, SOCK_STREAM, 0);
			CHECK_OK(connect(c2, (struct sockaddr *)&a, alen));
			len = sizeof(uc);
			CHECK_OK(getsockopt(c2, SOL_SOCKET, SO_PEERCRED, &uc, &len));
			CHECK_EQ(uc.pid, getppid()); /* the listener's, at listen */
			write(c2, "x", 1);
			check_child_exit();
		}
		s = CHECK_OK(accept(l, NULL, NULL));
		len = sizeof(uc);
		CHECK_OK(getsockopt(s, SOL_SOCKET, SO_PEERCRED, &uc, &len));
		CHECK_EQ(uc.pid, pid);
		CHECK_CHILD(pid, "exited 0");
		close(s);
		close(l);
	}
	{
		int s = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
		len = sizeof(uc);
		CHECK_OK(getsockopt(s, SOL_SOCKET, SO_PEERCRED, &uc, &len));
		CHECK_EQ(uc.pid, 0);
		CHECK_EQ((int)uc.uid, -1);
		close(s);
	}
}

static void test_mmsg(void)
{
	struct mmsghdr mm[4];
	struct iovec iov[4];
	char bufs[4][8];
	int sv[2], i;

	CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	memset(mm, 0, sizeof(mm));
	for (i = 0; i < 3; i++) {
		iov[i] = (struct iovec){ (void *)"abcdef", (size_t)(i + 1) };
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	CHECK_EQ(sendmmsg(sv[0], mm, 3, 0), 3);
	CHECK_EQ(mm[2].msg_len, 3);
	memset(mm, 0, sizeof(mm));
	for (i = 0; i < 4; i++) {
		iov[i] = (struct iovec){ bufs[i], sizeof(bufs[i]) };
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	CHECK_EQ(recvmmsg(sv[1], mm, 4, MSG_WAITFORONE, NULL), 3);
	CHECK_EQ(mm[0].msg_len, 1);
	CHECK_EQ(mm[1].msg_len, 2);
	CHECK_EQ(mm[2].msg_len, 3);
	CHECK_MEM(bufs[2], "abc", 3);
	CHECK_ERR(recvmmsg(sv[1], mm, 4, MSG_DONTWAIT, NULL), EAGAIN);
	close(sv[0]);
	close(sv[1]);
}

static void test_epoll(void)
{
	struct epoll_event ev, out[4];
	int ep, sv[2], qv[2];

	ep = CHECK_OK(epoll_create1(0));
	CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
	ev = (struct epoll_event){ .events = EPOLLIN, .data.u32 = 1 };
	CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev));
	CHECK_EQ(epoll_wait(ep, out, 4, 0), 0);
	CHECK_EQ(write(sv[0], "e", 1), 1);
	CHECK_EQ(epoll_wait(ep, out, 4, 1000), 1);
	CHECK_EQ(out[0].events, EPOLLIN);
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, qv));
	ev = (struct epoll_event){ .events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.u32 = 2 };
	CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, qv[1], &ev));
	close(qv[0]);
	CHECK_EQ(epoll_wait(ep, out, 4, 1000), 2);
	CHECK(out[0].data.u32 == 2 || out[1].data.u32 == 2);
	if (out[0].data.u32 == 2)
		CHECK_EQ(out[0].events, EPOLLIN | EPOLLRDHUP | EPOLLHUP);
	close(qv[1]);
	close(sv[0]);
	close(sv[1]);
	close(ep);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_dgram();
	test_rights();
	test_creds();
	test_mmsg();
	test_epoll();
	return check_finish();
}
