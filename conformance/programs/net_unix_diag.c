/*
 * net_unix_diag: NETLINK_SOCK_DIAG for AF_UNIX sockets, as ss -x and the
 * kernel selftest af_unix/diag_uid ask it.
 *
 * Checks: SOCK_DIAG_BY_FAMILY for one socket by inode and SO_COOKIE
 * answers one unix_diag_msg (family, type, TCP_* state, inode, cookie),
 * with UNIX_DIAG_SHUTDOWN always and then UNIX_DIAG_UID (the owner) when
 * UDIAG_SHOW_UID asks; a cookie of all ones matches any, another one is
 * ESTALE (the error quoting the whole request), an unknown inode ENOENT; a listener on an abstract name shows
 * UNIX_DIAG_NAME and UNIX_DIAG_RQLEN (connections pending, backlog); a
 * datagram socketpair shows UNIX_DIAG_PEER (the other end's inode) and
 * the queued bytes; a dump (NLM_F_DUMP) for listeners lists the listener,
 * every message NLM_F_MULTI and in that state, and ends in NLMSG_DONE.
 */
// covers: socket sendto recvfrom
#include "check.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

/* A socket's answer: what the message said, -errno for NLMSG_ERROR. */
struct diag {
	int err, type, flags, len;
	struct unix_diag_msg m;
	int attrs[8];           /* the attribute types, in order */
	int nattrs;
	unsigned char name[16]; /* UNIX_DIAG_NAME */
	int namelen;
	unsigned peer, uid, rq[2], shutdown;
};

static long buf[65536 / sizeof(long)];

static void ask(int nl, unsigned ino, unsigned long long cookie, unsigned show, int flags, unsigned states)
{
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req udr;
	} req = {
		.nlh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			 .nlmsg_flags = NLM_F_REQUEST | flags, .nlmsg_seq = 42 },
		.udr = { .sdiag_family = AF_UNIX, .udiag_ino = ino, .udiag_states = states,
			 .udiag_show = show,
			 .udiag_cookie = { (unsigned)cookie, (unsigned)(cookie >> 32) } },
	};

	CHECK_EQ(send(nl, &req, sizeof(req), 0), sizeof(req));
}

static void parse(struct nlmsghdr *h, struct diag *d)
{
	struct rtattr *a;
	int len;

	memset(d, 0, sizeof(*d));
	d->type = h->nlmsg_type;
	d->flags = h->nlmsg_flags;
	d->len = h->nlmsg_len;
	CHECK_EQ(h->nlmsg_seq, 42);
	if (h->nlmsg_type == NLMSG_ERROR) {
		d->err = ((struct nlmsgerr *)NLMSG_DATA(h))->error;
		return;
	}
	if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
		return;
	memcpy(&d->m, NLMSG_DATA(h), sizeof(d->m));
	len = h->nlmsg_len - NLMSG_LENGTH(sizeof(d->m));
	for (a = (struct rtattr *)((char *)NLMSG_DATA(h) + sizeof(d->m)); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		int n = RTA_PAYLOAD(a);

		if (d->nattrs < 8)
			d->attrs[d->nattrs++] = a->rta_type;
		switch (a->rta_type) {
		case UNIX_DIAG_NAME:
			d->namelen = n < 16 ? n : 16;
			memcpy(d->name, RTA_DATA(a), d->namelen);
			break;
		case UNIX_DIAG_PEER:
			memcpy(&d->peer, RTA_DATA(a), 4);
			break;
		case UNIX_DIAG_UID:
			memcpy(&d->uid, RTA_DATA(a), 4);
			break;
		case UNIX_DIAG_RQLEN:
			memcpy(d->rq, RTA_DATA(a), 8);
			break;
		case UNIX_DIAG_SHUTDOWN:
			d->shutdown = *(unsigned char *)RTA_DATA(a);
			break;
		}
	}
}

/* one asks for one socket and reads the single answer. */
static void one(int nl, unsigned ino, unsigned long long cookie, unsigned show, struct diag *d)
{
	long n;
	struct nlmsghdr *h = (struct nlmsghdr *)buf;

	ask(nl, ino, cookie, show, 0, 0);
	n = recv(nl, buf, sizeof(buf), 0);
	CHECK(n > 0 && NLMSG_OK(h, n));
	if (n <= 0 || !NLMSG_OK(h, n)) {
		memset(d, 0, sizeof(*d));
		d->err = 1;
		return;
	}
	parse(h, d);
	CHECK(!NLMSG_OK(NLMSG_NEXT(h, n), n));
}

static unsigned ino_of(int fd)
{
	struct stat st;

	CHECK_OK(fstat(fd, &st));
	return st.st_ino;
}

static unsigned long long cookie_of(int fd)
{
	unsigned long long c = 0;
	socklen_t len = sizeof(c);

	CHECK_OK(getsockopt(fd, SOL_SOCKET, SO_COOKIE, &c, &len));
	return c;
}

int main(int argc, char **argv)
{
	int nl, u, l, c, sp[2], proto = -1, found = 0, done = 0, bad = 0;
	socklen_t len = sizeof(proto);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	socklen_t alen = offsetof(struct sockaddr_un, sun_path) + 1 + 20;
	struct diag d;

	check_init(argc, argv);
	nl = CHECK_OK(socket(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG));
	CHECK_OK(getsockopt(nl, SOL_SOCKET, SO_PROTOCOL, &proto, &len));
	CHECK_EQ(proto, NETLINK_SOCK_DIAG);

	u = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	one(nl, ino_of(u), cookie_of(u), UDIAG_SHOW_UID, &d);
	CHECK_EQ(d.err, 0);
	CHECK_EQ(d.type, SOCK_DIAG_BY_FAMILY);
	CHECK_EQ(d.flags, 0);
	CHECK_EQ(d.m.udiag_family, AF_UNIX);
	CHECK_EQ(d.m.udiag_type, SOCK_STREAM);
	CHECK_EQ(d.m.udiag_state, 7); /* TCP_CLOSE */
	CHECK_EQ(d.m.udiag_ino, ino_of(u));
	CHECK_EQ(d.m.udiag_cookie[0] | (unsigned long long)d.m.udiag_cookie[1] << 32, cookie_of(u));
	CHECK_EQ(d.nattrs, 2);
	CHECK_EQ(d.attrs[0], UNIX_DIAG_SHUTDOWN);
	CHECK_EQ(d.attrs[1], UNIX_DIAG_UID);
	CHECK_EQ(d.uid, getuid());
	CHECK_EQ(d.shutdown, 0);
	one(nl, ino_of(u), ~0ULL, 0, &d);
	CHECK_EQ(d.err, 0);
	CHECK_EQ(d.nattrs, 1);
	one(nl, ino_of(u), cookie_of(u) + 1, 0, &d);
	CHECK_EQ(d.type, NLMSG_ERROR);
	CHECK_EQ(d.err, -ESTALE);
	/* The error quotes the whole request (no NETLINK_CAP_ACK). */
	CHECK_EQ(d.len, NLMSG_LENGTH(sizeof(struct nlmsgerr)) + sizeof(struct unix_diag_req));
	close(u);
	one(nl, ino_of(nl) + 1000000, ~0ULL, 0, &d);
	CHECK_EQ(d.err, -ENOENT);

	/* A listener on an abstract name, one connection pending. */
	snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "moat-diag-%09d", (int)getpid());
	l = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	CHECK_OK(bind(l, (struct sockaddr *)&a, alen));
	CHECK_OK(listen(l, 3));
	c = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0));
	CHECK_OK(connect(c, (struct sockaddr *)&a, alen));
	one(nl, ino_of(l), ~0ULL, UDIAG_SHOW_NAME | UDIAG_SHOW_RQLEN, &d);
	CHECK_EQ(d.err, 0);
	CHECK_EQ(d.m.udiag_state, 10); /* TCP_LISTEN */
	CHECK_EQ(d.namelen, 16);
	CHECK_MEM(d.name, a.sun_path, 16);
	CHECK_EQ(d.rq[0], 1);
	CHECK_EQ(d.rq[1], 3);
	one(nl, ino_of(c), ~0ULL, UDIAG_SHOW_PEER, &d);
	CHECK_EQ(d.m.udiag_state, 1); /* TCP_ESTABLISHED */

	/* A datagram pair, three bytes queued on sp[1]. */
	CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, sp));
	CHECK_EQ(send(sp[0], "abc", 3, 0), 3);
	one(nl, ino_of(sp[1]), ~0ULL, UDIAG_SHOW_PEER | UDIAG_SHOW_RQLEN, &d);
	CHECK_EQ(d.m.udiag_type, SOCK_DGRAM);
	CHECK_EQ(d.m.udiag_state, 1);
	CHECK_EQ(d.peer, ino_of(sp[0]));
	CHECK_EQ(d.rq[0], 3);

	/* A dump of the listeners. */
	ask(nl, 0, 0, 0, NLM_F_DUMP, 1 << 10);
	while (!done) {
		long n = recv(nl, buf, sizeof(buf), 0);
		struct nlmsghdr *h;

		CHECK(n > 0);
		if (n <= 0)
			break;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			parse(h, &d);
			if (d.type != SOCK_DIAG_BY_FAMILY || !(d.flags & NLM_F_MULTI) || d.m.udiag_state != 10)
				bad++;
			if (d.m.udiag_ino == ino_of(l))
				found++;
		}
	}
	CHECK_EQ(done, 1);
	CHECK_EQ(bad, 0);
	CHECK_EQ(found, 1);
	close(sp[0]);
	close(sp[1]);
	close(c);
	close(l);
	close(nl);
	return check_finish();
}
