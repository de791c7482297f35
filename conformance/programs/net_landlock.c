/*
 * net_landlock.c - Landlock's TCP rights (ABI 4): bind and connect of a
 * TCP socket allowed only to the ports a rule names (EACCES otherwise,
 * port 0 included), checked before the network stack sees the call;
 * other sockets unrestricted; the address checks Landlock makes first
 * (EINVAL for a short address or another family, AF_UNSPEC's special
 * cases). A ruleset of network rights alone leaves files alone.
 */
// covers: landlock_create_ruleset landlock_add_rule landlock_restrict_self bind connect
#include "check.h"
#include <arpa/inet.h>
#include <linux/landlock.h>
#include <netinet/in.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/socket.h>

/* The C library's headers may predate ABI 4. */
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#define LANDLOCK_RULE_NET_PORT 2
#endif

struct ruleset_attr {
	uint64_t handled_access_fs, handled_access_net;
};

struct net_port_attr {
	uint64_t allowed_access, port;
};

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sin;
}

static int tcp_bind(int port)
{
	struct sockaddr_in sin = loopback(port);
	int fd = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0)), r;

	r = bind(fd, (struct sockaddr *)&sin, sizeof(sin));
	close(fd);
	return r < 0 ? errno : 0;
}

static int tcp_connect(int port)
{
	struct sockaddr_in sin = loopback(port);
	int fd = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0)), r;

	r = connect(fd, (struct sockaddr *)&sin, sizeof(sin));
	close(fd);
	return r < 0 ? errno : 0;
}

static void allow_port(int rs, uint64_t access, uint64_t port)
{
	struct net_port_attr rule = { access, port };

	CHECK_OK(syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_NET_PORT, &rule, 0));
}

int main(int argc, char **argv)
{
	const uint64_t both = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
	struct ruleset_attr attr = { 0, both };
	struct net_port_attr rule = { LANDLOCK_ACCESS_NET_BIND_TCP, 65536 };
	int abi, rs, lfd, open_port, listen_port, shut_port;
	struct sockaddr_in sin;
	pid_t pid;

	check_init(argc, argv);
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	CHECK(abi >= 4);
	if (abi < 4)
		return check_finish();
	open_port = 20000 + getpid() % 20000;
	listen_port = open_port + 1;
	shut_port = open_port + 2;
	/* A listener the restricted child may and may not reach. */
	lfd = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
	sin = loopback(listen_port);
	CHECK_OK(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)));
	CHECK_OK(listen(lfd, 8));

	rs = CHECK_OK(syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0));
	/* Rule checks: rights the ruleset handles, ports up to 65535. */
	CHECK_ERR(syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_NET_PORT, &rule, 0), EINVAL);
	rule.port = 80;
	rule.allowed_access = 0;
	CHECK_ERR(syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_NET_PORT, &rule, 0), ENOMSG);
	rule.allowed_access = 1ULL << 10;
	CHECK_ERR(syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_NET_PORT, &rule, 0), EINVAL);
	allow_port(rs, both, open_port);
	allow_port(rs, LANDLOCK_ACCESS_NET_CONNECT_TCP, listen_port);

	pid = check_fork();
	if (pid == 0) {
		int udp, fd;
		struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(shut_port) };

		CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
		CHECK_OK(syscall(SYS_landlock_restrict_self, rs, 0));
		CHECK_EQ(tcp_bind(open_port), 0);
		CHECK_EQ(tcp_bind(shut_port), EACCES);
		CHECK_EQ(tcp_bind(0), EACCES); /* an ephemeral port needs a rule for 0 */
		CHECK_EQ(tcp_bind(listen_port), EACCES); /* connect only */
		CHECK_EQ(tcp_connect(listen_port), 0);
		CHECK_EQ(tcp_connect(shut_port), EACCES); /* not ECONNREFUSED */

		/* Other sockets are not restricted. */
		udp = CHECK_OK(socket(AF_INET, SOCK_DGRAM, 0));
		sin = loopback(shut_port);
		CHECK_OK(bind(udp, (struct sockaddr *)&sin, sizeof(sin)));
		CHECK_OK(connect(udp, (struct sockaddr *)&sin, sizeof(sin)));
		close(udp);

		/* Landlock's own checks of the address come first. */
		fd = CHECK_OK(socket(AF_INET, SOCK_STREAM, 0));
		CHECK_ERR(bind(fd, (struct sockaddr *)&sin, 1), EINVAL);
		CHECK_ERR(bind(fd, (struct sockaddr *)&sin, 8), EINVAL);
		CHECK_ERR(bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)), EINVAL);
		CHECK_ERR(connect(fd, (struct sockaddr *)&sin6, sizeof(sin6)), EINVAL);
		sin.sin_family = AF_UNSPEC;
		CHECK_ERR(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), EAFNOSUPPORT);
		sin.sin_addr.s_addr = htonl(INADDR_ANY);
		CHECK_ERR(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), EACCES);
		close(fd);

		/* IPv6 TCP is restricted alike. */
		fd = socket(AF_INET6, SOCK_STREAM, 0);
		if (fd >= 0) {
			sin6.sin6_addr = in6addr_loopback;
			CHECK_ERR(bind(fd, (struct sockaddr *)&sin6, sizeof(sin6)), EACCES);
			CHECK_ERR(connect(fd, (struct sockaddr *)&sin6, sizeof(sin6)), EACCES);
			close(fd);
		}
		/* Files are not handled. */
		CHECK_OK(close(CHECK_OK(open("/proc/self/status", O_RDONLY))));
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	/* The parent is free. */
	CHECK_EQ(tcp_bind(shut_port), 0);
	close(lfd);
	close(rs);
	return check_finish();
}
