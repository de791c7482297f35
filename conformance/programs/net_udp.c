/*
 * net_udp: UDP over loopback, IPv4 and IPv6: DNS stubs, statsd clients,
 * test harnesses that fire datagrams at 127.0.0.1.
 *
 * Checks: datagrams keep their boundaries; recvfrom names the sender
 * (address and port); a short buffer cuts a datagram (MSG_TRUNC in
 * msg_flags, its whole length with MSG_TRUNC asked); MSG_PEEK leaves it;
 * MSG_DONTWAIT on an empty socket is EAGAIN and poll says not readable;
 * a connected socket sends with send(), takes datagrams from its peer
 * alone, and AF_UNSPEC disconnects it; send without a destination is
 * EDESTADDRREQ; a datagram to a port nobody has makes the connected
 * sender's next call ECONNREFUSED; a zero-length datagram arrives as
 * one; IPv6 on ::1 with a mapped IPv4 peer; IP_RECVTOS and IP_TOS's
 * control message, IP_PKTINFO; recvmmsg and sendmmsg; SO_RCVTIMEO makes
 * a wait EAGAIN; FIONREAD gives the next datagram's size; a receive into
 * a zero-length buffer takes the datagram and returns 0 (its length with
 * MSG_TRUNC).
 */
// covers: socket bind connect sendto recvfrom sendmsg recvmsg sendmmsg recvmmsg getsockname setsockopt getsockopt
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

static int bound4(struct sockaddr_in *a)
{
	socklen_t len = sizeof(*a);
	int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));

	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK_OK(bind(s, (struct sockaddr *)a, sizeof(*a)));
	CHECK_OK(getsockname(s, (struct sockaddr *)a, &len));
	return s;
}

static void test_v4(void)
{
	struct sockaddr_in ra, sa, from;
	struct pollfd p;
	struct msghdr m;
	struct iovec iov;
	socklen_t len;
	char buf[64];
	int r, s, v;

	r = bound4(&ra);
	s = bound4(&sa);
	CHECK_ERR(send(s, "x", 1, 0), EDESTADDRREQ);
	CHECK_EQ(sendto(s, "first datagram", 14, 0, (struct sockaddr *)&ra, sizeof(ra)), 14);
	CHECK_EQ(sendto(s, "second", 6, 0, (struct sockaddr *)&ra, sizeof(ra)), 6);
	CHECK_EQ(sendto(s, "", 0, 0, (struct sockaddr *)&ra, sizeof(ra)), 0);
	p = (struct pollfd){ r, POLLIN, 0 };
	CHECK_EQ(poll(&p, 1, 5000), 1);
	CHECK_OK(ioctl(r, FIONREAD, &v));
	CHECK_EQ(v, 14);
	len = sizeof(from);
	CHECK_EQ(recvfrom(r, buf, 5, MSG_PEEK, (struct sockaddr *)&from, &len), 5);
	CHECK_EQ(len, sizeof(from));
	CHECK_EQ(from.sin_port, sa.sin_port);
	CHECK_EQ(from.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
	iov = (struct iovec){ buf, 5 };
	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	CHECK_EQ(recvmsg(r, &m, 0), 5);
	CHECK_EQ(m.msg_flags & MSG_TRUNC, MSG_TRUNC);
	CHECK_MEM(buf, "first", 5);
	CHECK_EQ(recv(r, buf, 2, MSG_TRUNC), 6);
	CHECK_EQ(recv(r, buf, sizeof(buf), 0), 0);
	CHECK_ERR(recv(r, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	CHECK_EQ(poll(&p, 1, 0), 0);

	/* Connected: send() goes to the peer; datagrams from others are
	 * not taken. */
	CHECK_OK(connect(s, (struct sockaddr *)&ra, sizeof(ra)));
	CHECK_OK(connect(r, (struct sockaddr *)&sa, sizeof(sa)));
	CHECK_EQ(send(s, "c", 1, 0), 1);
	{
		struct sockaddr_in oa;
		int o = bound4(&oa);
		CHECK_EQ(sendto(o, "o", 1, 0, (struct sockaddr *)&ra, sizeof(ra)), 1);
		close(o);
	}
	CHECK_EQ(recv(r, buf, sizeof(buf), 0), 1);
	CHECK_EQ(buf[0], 'c');
	check_sleep_ms(20);
	CHECK_ERR(recv(r, buf, sizeof(buf), MSG_DONTWAIT), EAGAIN);
	{
		struct sockaddr un = { AF_UNSPEC };
		CHECK_OK(connect(r, &un, sizeof(un)));
	}

	/* A port nobody has: the connected sender learns ECONNREFUSED. */
	close(r);
	CHECK_EQ(send(s, "x", 1, 0), 1);
	check_sleep_ms(20);
	CHECK_ERR(send(s, "x", 1, 0), ECONNREFUSED);
	close(s);
}

static void test_control(void)
{
	struct sockaddr_in ra;
	char cbuf[256], buf[8];
	struct cmsghdr *c;
	struct msghdr m;
	struct iovec iov;
	int r, s, v, tos = -1, pkt = 0;

	r = bound4(&ra);
	s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
	v = 1;
	CHECK_OK(setsockopt(r, IPPROTO_IP, IP_RECVTOS, &v, sizeof(v)));
	CHECK_OK(setsockopt(r, IPPROTO_IP, IP_PKTINFO, &v, sizeof(v)));
	v = 0x20;
	CHECK_OK(setsockopt(s, IPPROTO_IP, IP_TOS, &v, sizeof(v)));
	CHECK_EQ(sendto(s, "t", 1, 0, (struct sockaddr *)&ra, sizeof(ra)), 1);
	iov = (struct iovec){ buf, sizeof(buf) };
	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	CHECK_EQ(recvmsg(r, &m, 0), 1);
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
			tos = *(unsigned char *)CMSG_DATA(c);
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo *pi = (struct in_pktinfo *)CMSG_DATA(c);
			pkt = pi->ipi_addr.s_addr == htonl(INADDR_LOOPBACK);
		}
	}
	CHECK_EQ(tos, 0x20);
	CHECK_EQ(pkt, 1);
	close(s);
	close(r);
}

static void test_v6_and_mmsg(void)
{
	struct sockaddr_in6 a6, from;
	struct mmsghdr mm[3];
	struct iovec iov[3];
	struct timeval tv = { 0, 50000 };
	char bufs[3][8];
	socklen_t len;
	int r, s, i;

	r = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
	memset(&a6, 0, sizeof(a6));
	a6.sin6_family = AF_INET6;
	a6.sin6_addr = in6addr_loopback;
	CHECK_OK(bind(r, (struct sockaddr *)&a6, sizeof(a6)));
	len = sizeof(a6);
	CHECK_OK(getsockname(r, (struct sockaddr *)&a6, &len));
	CHECK_EQ(len, sizeof(a6));
	s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
	CHECK_OK(connect(s, (struct sockaddr *)&a6, sizeof(a6)));
	memset(mm, 0, sizeof(mm));
	for (i = 0; i < 3; i++) {
		iov[i] = (struct iovec){ (void *)"v6data", (size_t)(i + 1) };
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	CHECK_EQ(sendmmsg(s, mm, 3, 0), 3);
	check_sleep_ms(20);
	memset(mm, 0, sizeof(mm));
	for (i = 0; i < 3; i++) {
		iov[i] = (struct iovec){ bufs[i], sizeof(bufs[i]) };
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
		mm[i].msg_hdr.msg_name = i == 0 ? &from : NULL;
		mm[i].msg_hdr.msg_namelen = i == 0 ? sizeof(from) : 0;
	}
	CHECK_EQ(recvmmsg(r, mm, 3, MSG_WAITFORONE, NULL), 3);
	CHECK_EQ(mm[0].msg_len, 1);
	CHECK_EQ(mm[2].msg_len, 3);
	CHECK_EQ(mm[0].msg_hdr.msg_namelen, sizeof(from));
	CHECK(IN6_IS_ADDR_LOOPBACK(&from.sin6_addr));

	/* SO_RCVTIMEO: the wait ends with EAGAIN. */
	CHECK_OK(setsockopt(r, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	CHECK_ERR(recv(r, bufs[0], 1, 0), EAGAIN);
	close(s);

	/* A mapped IPv4 peer on a dual-stack socket. */
	{
		struct sockaddr_in a4;
		int s4 = bound4(&a4);
		struct sockaddr_in6 m6 = { .sin6_family = AF_INET6, .sin6_port = a4.sin_port };

		inet_pton(AF_INET6, "::ffff:127.0.0.1", &m6.sin6_addr);
		s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, 0));
		CHECK_EQ(sendto(s, "m", 1, 0, (struct sockaddr *)&m6, sizeof(m6)), 1);
		CHECK_EQ(recv(s4, bufs[0], 8, 0), 1);
		close(s);
		close(s4);
	}
	close(r);
}

/* A receive with no room takes the next datagram, cut to nothing. */
static void test_no_room(void)
{
	struct sockaddr_in a;
	char b;
	int s = bound4(&a);

	CHECK_EQ(sendto(s, "first", 5, 0, (struct sockaddr *)&a, sizeof(a)), 5);
	CHECK_EQ(sendto(s, "second!", 7, 0, (struct sockaddr *)&a, sizeof(a)), 7);
	CHECK_EQ(recvfrom(s, &b, 0, 0, NULL, NULL), 0);
	CHECK_EQ(recvfrom(s, NULL, 0, MSG_TRUNC, NULL, NULL), 7);
	CHECK_ERR(recv(s, &b, 1, MSG_DONTWAIT), EAGAIN);
	close(s);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_v4();
	test_control();
	test_v6_and_mmsg();
	test_no_room();
	return check_finish();
}
