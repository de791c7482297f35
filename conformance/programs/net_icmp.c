/*
 * net_icmp: ping of 127.0.0.1 and ::1, with an ICMP echo ("ping") socket
 * as iputils ping makes one when net.ipv4.ping_group_range lets it.
 *
 * Checks: socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP) in a group the range
 * holds; an echo request sent to 127.0.0.1 comes back as an echo reply
 * (type 0) with the same sequence and payload, from 127.0.0.1, with the
 * socket's identifier (its port, which getsockname gives); the same over
 * IPv6 (types 128 and 129, IPPROTO_ICMPV6 on ::1); without CAP_NET_RAW a
 * raw socket is EPERM. Natively, where the host's range lets no one
 * make echo sockets (EACCES), the ping goes through a raw socket.
 */
// covers: socket sendto recvfrom getsockname
// sysctl: net.ipv4.ping_group_range=0 2147483647
#include "check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <netinet/icmp6.h>
#include <poll.h>
#include <sys/socket.h>

/* wait_readable waits up to two seconds for s. */
static int wait_readable(int s)
{
	struct pollfd p = { s, POLLIN, 0 };

	return poll(&p, 1, 2000) == 1;
}

static void ping4(int s, int raw)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in from, me;
	unsigned char pkt[64], buf[256];
	struct icmphdr *h = (struct icmphdr *)pkt, *r;
	socklen_t len;
	long n;
	int tries, off, got = 0;

	memset(pkt, 0, sizeof(pkt));
	h->type = ICMP_ECHO;
	h->un.echo.id = htons(0x1234);
	h->un.echo.sequence = htons(7);
	memcpy(pkt + sizeof(*h), "moat ping", 9);
	if (raw) {
		/* The raw socket sends the checksum as it is. */
		unsigned sum = 0, i;
		for (i = 0; i < sizeof(*h) + 9; i += 2)
			sum += pkt[i] << 8 | (i + 1 < sizeof(*h) + 9 ? pkt[i + 1] : 0);
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		h->checksum = htons(~sum & 0xffff);
	}
	CHECK_EQ(sendto(s, pkt, sizeof(*h) + 9, 0, (struct sockaddr *)&to, sizeof(to)), sizeof(*h) + 9);
	for (tries = 0; tries < 4 && !got && wait_readable(s); tries++) {
		len = sizeof(from);
		n = recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&from, &len);
		off = raw ? (buf[0] & 0xf) * 4 : 0;
		if (n < off + (long)sizeof(*r))
			continue;
		r = (struct icmphdr *)(buf + off);
		if (r->type != ICMP_ECHOREPLY)
			continue; /* a raw socket sees the request too */
		got = 1;
		CHECK_EQ(ntohs(r->un.echo.sequence), 7);
		CHECK_EQ(n - off, (long)sizeof(*h) + 9);
		CHECK_MEM(buf + off + sizeof(*r), "moat ping", 9);
		CHECK_EQ(from.sin_addr.s_addr, htonl(INADDR_LOOPBACK));
		if (!raw) {
			len = sizeof(me);
			CHECK_OK(getsockname(s, (struct sockaddr *)&me, &len));
			CHECK_EQ(r->un.echo.id, me.sin_port);
		}
	}
	CHECK_EQ(got, 1);
}

static void ping6(int s)
{
	struct sockaddr_in6 to = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in6 from;
	unsigned char pkt[64], buf[256];
	struct icmp6_hdr *h = (struct icmp6_hdr *)pkt, *r = (struct icmp6_hdr *)buf;
	socklen_t len;
	long n;
	int tries, got = 0;

	memset(pkt, 0, sizeof(pkt));
	h->icmp6_type = ICMP6_ECHO_REQUEST;
	h->icmp6_seq = htons(9);
	memcpy(pkt + sizeof(*h), "six", 3);
	CHECK_EQ(sendto(s, pkt, sizeof(*h) + 3, 0, (struct sockaddr *)&to, sizeof(to)), sizeof(*h) + 3);
	for (tries = 0; tries < 4 && !got && wait_readable(s); tries++) {
		len = sizeof(from);
		n = recvfrom(s, buf, sizeof(buf), 0, (struct sockaddr *)&from, &len);
		if (n < (long)sizeof(*r) || r->icmp6_type != ICMP6_ECHO_REPLY)
			continue;
		got = 1;
		CHECK_EQ(ntohs(r->icmp6_seq), 9);
		CHECK_MEM(buf + sizeof(*r), "six", 3);
		CHECK(IN6_IS_ADDR_LOOPBACK(&from.sin6_addr));
	}
	CHECK_EQ(got, 1);
}

int main(int argc, char **argv)
{
	int s;

	check_init(argc, argv);
	s = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
	if (s < 0 && check_native && errno == EACCES && check_has_cap(CAP_NET_RAW)) {
		s = CHECK_OK(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));
		ping4(s, 1);
		close(s);
		return check_finish();
	}
	CHECK(s >= 0);
	ping4(s, 0);
	close(s);
	s = CHECK_OK(socket(AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6));
	ping6(s);
	close(s);
	if (!check_has_cap(CAP_NET_RAW))
		CHECK_ERR(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP), EPERM);
	return check_finish();
}
