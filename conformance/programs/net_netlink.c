/*
 * net_netlink: what programs learn of the interfaces: getifaddrs (which
 * asks rtnetlink), if_nametoindex and if_indextoname (ioctls on a
 * socket), and RTM_GETLINK and RTM_GETADDR dumps as ip(8) makes them.
 *
 * Checks: getifaddrs lists lo with IFF_UP and IFF_LOOPBACK, its link
 * entry (AF_PACKET), 127.0.0.1 with netmask 255.0.0.0 and ::1; lo is
 * index 1 both ways; an RTM_GETLINK dump on a NETLINK_ROUTE socket
 * answers with RTM_NEWLINK messages (lo's with its name and flags), in
 * replies addressed to the socket's port id (getsockname), ending with
 * NLMSG_DONE; RTM_GETADDR with family AF_INET gives 127.0.0.1/8 on
 * index 1; MSG_PEEK|MSG_TRUNC tells a reply's size first; a request
 * the kernel does not know answers NLMSG_ERROR; SIOCGIFFLAGS and
 * SIOCGIFMTU of lo; a protocol other families have is EPROTONOSUPPORT.
 */
// covers: socket bind getsockname sendto recvfrom recvmsg ioctl
#include "check.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

static void test_getifaddrs(void)
{
	struct ifaddrs *ifa, *i;
	int link = 0, v4 = 0, v6 = 0;

	CHECK_OK(getifaddrs(&ifa));
	for (i = ifa; i; i = i->ifa_next) {
		if (strcmp(i->ifa_name, "lo") != 0 || !i->ifa_addr)
			continue;
		CHECK(i->ifa_flags & IFF_UP);
		CHECK(i->ifa_flags & IFF_LOOPBACK);
		if (i->ifa_addr->sa_family == AF_PACKET)
			link = 1;
		if (i->ifa_addr->sa_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)i->ifa_addr;
			struct sockaddr_in *m = (struct sockaddr_in *)i->ifa_netmask;
			v4 = a->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
			CHECK(m && m->sin_addr.s_addr == htonl(0xff000000));
		}
		if (i->ifa_addr->sa_family == AF_INET6)
			v6 = IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr);
	}
	freeifaddrs(ifa);
	CHECK_EQ(link, 1);
	CHECK_EQ(v4, 1);
	CHECK_EQ(v6, 1);
	CHECK_EQ(if_nametoindex("lo"), 1);
	{
		char name[IF_NAMESIZE];
		CHECK(if_indextoname(1, name) != NULL);
		CHECK_STR(name, "lo");
	}
	CHECK_EQ(if_nametoindex("moat-no-such-if"), 0);
}

static void test_ioctl(void)
{
	struct ifreq r;
	int s = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));

	memset(&r, 0, sizeof(r));
	strcpy(r.ifr_name, "lo");
	CHECK_OK(ioctl(s, SIOCGIFFLAGS, &r));
	CHECK(r.ifr_flags & IFF_LOOPBACK);
	CHECK(r.ifr_flags & IFF_UP);
	CHECK_OK(ioctl(s, SIOCGIFMTU, &r));
	CHECK(r.ifr_mtu > 0);
	strcpy(r.ifr_name, "moat-none");
	CHECK_ERR(ioctl(s, SIOCGIFFLAGS, &r), ENODEV);
	close(s);
}

struct req {
	struct nlmsghdr h;
	union {
		struct ifinfomsg ifi;
		struct ifaddrmsg ifa;
		struct rtgenmsg g;
	};
};

static void test_dump(void)
{
	struct sockaddr_nl me = { .nl_family = AF_NETLINK }, kern = { .nl_family = AF_NETLINK };
	static char buf[1 << 16];
	struct req q;
	struct nlmsghdr *h;
	socklen_t len;
	long n;
	int s, found = 0, done = 0, addr = 0, guard;

	s = CHECK_OK(socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
	CHECK_OK(bind(s, (struct sockaddr *)&me, sizeof(me)));
	len = sizeof(me);
	CHECK_OK(getsockname(s, (struct sockaddr *)&me, &len));
	CHECK_EQ(me.nl_family, AF_NETLINK);
	CHECK(me.nl_pid != 0);

	memset(&q, 0, sizeof(q));
	q.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg));
	q.h.nlmsg_type = RTM_GETLINK;
	q.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	q.h.nlmsg_seq = 41;
	CHECK_EQ(sendto(s, &q, q.h.nlmsg_len, 0, (struct sockaddr *)&kern, sizeof(kern)), q.h.nlmsg_len);
	/* The size first, as getifaddrs asks it. */
	n = recv(s, buf, 1, MSG_PEEK | MSG_TRUNC);
	CHECK(n > (long)NLMSG_HDRLEN);
	for (guard = 0; !done && guard < 100; guard++) {
		n = recv(s, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			CHECK_EQ(h->nlmsg_seq, 41);
			CHECK_EQ(h->nlmsg_pid, me.nl_pid);
			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			CHECK_EQ(h->nlmsg_type, RTM_NEWLINK);
			{
				struct ifinfomsg *ifi = NLMSG_DATA(h);
				struct rtattr *a = IFLA_RTA(ifi);
				int l = IFLA_PAYLOAD(h);
				for (; RTA_OK(a, l); a = RTA_NEXT(a, l))
					if (a->rta_type == IFLA_IFNAME && strcmp(RTA_DATA(a), "lo") == 0) {
						found = 1;
						CHECK_EQ(ifi->ifi_index, 1);
						CHECK(ifi->ifi_flags & IFF_LOOPBACK);
					}
			}
		}
	}
	CHECK_EQ(done, 1);
	CHECK_EQ(found, 1);

	memset(&q, 0, sizeof(q));
	q.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifaddrmsg));
	q.h.nlmsg_type = RTM_GETADDR;
	q.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	q.h.nlmsg_seq = 42;
	q.ifa.ifa_family = AF_INET;
	CHECK_EQ(send(s, &q, q.h.nlmsg_len, 0), q.h.nlmsg_len);
	for (done = 0, guard = 0; !done && guard < 100; guard++) {
		n = recv(s, buf, sizeof(buf), 0);
		if (n <= 0)
			break;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			struct ifaddrmsg *ifa = NLMSG_DATA(h);
			struct rtattr *a;
			int l;

			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			CHECK_EQ(h->nlmsg_type, RTM_NEWADDR);
			CHECK_EQ(ifa->ifa_family, AF_INET);
			l = IFA_PAYLOAD(h);
			for (a = IFA_RTA(ifa); RTA_OK(a, l); a = RTA_NEXT(a, l))
				if (a->rta_type == IFA_LOCAL && ifa->ifa_index == 1 &&
				    *(uint32_t *)RTA_DATA(a) == htonl(INADDR_LOOPBACK)) {
					addr = 1;
					CHECK_EQ(ifa->ifa_prefixlen, 8);
				}
		}
	}
	CHECK_EQ(done, 1);
	CHECK_EQ(addr, 1);

	/* A request no one answers: NLMSG_ERROR naming it. */
	memset(&q, 0, sizeof(q));
	q.h.nlmsg_len = NLMSG_LENGTH(sizeof(struct rtgenmsg));
	q.h.nlmsg_type = 0x3ff;
	q.h.nlmsg_flags = NLM_F_REQUEST;
	q.h.nlmsg_seq = 43;
	CHECK_EQ(send(s, &q, q.h.nlmsg_len, 0), q.h.nlmsg_len);
	n = recv(s, buf, sizeof(buf), 0);
	h = (struct nlmsghdr *)buf;
	CHECK(n >= (long)NLMSG_LENGTH(sizeof(struct nlmsgerr)));
	CHECK_EQ(h->nlmsg_type, NLMSG_ERROR);
	CHECK_EQ(h->nlmsg_seq, 43);
	CHECK(((struct nlmsgerr *)NLMSG_DATA(h))->error < 0);
	close(s);
	CHECK_ERR(socket(AF_NETLINK, SOCK_RAW, 31), EPROTONOSUPPORT);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_getifaddrs();
	test_ioctl();
	test_dump();
	return check_finish();
}
