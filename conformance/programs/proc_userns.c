/*
 * proc_userns: user namespaces made without privilege, as bubblewrap,
 * unshare -U -r and browsers' sandboxes make them.
 *
 * Checks, in a child that drops to uid and gid 1000 where it may (as root
 * natively; in a container it stays the uid it is, without capabilities):
 * unshare(CLONE_NEWUSER) gives a new ns/user where the ids read 65534
 * until mapped and every capability is held (in it); uid_map takes one
 * line mapping the caller's own euid, once (EPERM again), and no id it
 * does not hold (EPERM); gid_map needs setgroups "deny" first (EPERM
 * before), after which setgroups "allow" is EPERM and setgroups(2) EPERM;
 * root of the parent (a container's, uid 0) maps itself only if it had
 * CAP_SETFCAP (EPERM otherwise, and the rest needs a map);
 * mapped, the ids read 0 and /proc/self/uid_map shows the line. The
 * capabilities count only inside: a signal to the parent (outside, another
 * uid) is EPERM, sethostname is EPERM until a UTS namespace of its own,
 * mount is EPERM until a mount namespace of its own, where a tmpfs
 * mounts and a mount copied from the parent's cannot be unmounted (EINVAL:
 * locked), nor proc mounted without a pid namespace of its own, nor sysfs
 * at all (EPERM: the network namespace is outside). A file owned by an id
 * the namespace does not map reads as 65534 and cannot be chowned (EPERM),
 * and an unmapped id is no chown argument (EINVAL); sock_diag shows a
 * socket's owner through the namespace (UDIAG_SHOW_UID). The nsfs ioctls:
 * NS_GET_NSTYPE is CLONE_NEWUSER, NS_GET_OWNER_UID the creator's uid (0
 * once mapped), NS_GET_USERNS and NS_GET_PARENT of the caller's own
 * namespace EPERM (the parent is outside it); and namespaces nest 33 deep
 * (ENOSPC past: Linux since 4.9, the man page's EUSERS is older).
 */
// covers: unshare clone setns getuid setuid setgroups chown stat mount umount2 sethostname ioctl
#include "check.h"

#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sys/socket.h>

#define NS_GET_USERNS 0xb701
#define NS_GET_PARENT 0xb702
#define NS_GET_NSTYPE 0xb703
#define NS_GET_OWNER_UID 0xb704

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	long n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	int e = errno;
	close(fd);
	errno = e;
	return n == (long)strlen(text) ? 0 : -1;
}

static const char *read_file(const char *path)
{
	static char buf[256];
	int fd = open(path, O_RDONLY);
	long n;

	if (fd < 0)
		return "(open failed)";
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* maps_writer: in a new namespace, uid_map refuses what the caller does
 * not hold, whatever else it may write. */
static void maps_refused(uid_t euid)
{
	char line[64];

	CHECK_OK(unshare(CLONE_NEWUSER));
	snprintf(line, sizeof(line), "0 %u 2\n", (unsigned)euid);
	CHECK_ERR(write_file("/proc/self/uid_map", line), EPERM);
	snprintf(line, sizeof(line), "0 %u 1\n", (unsigned)(euid == 0 ? 1 : 0));
	CHECK_ERR(write_file("/proc/self/uid_map", line), EPERM);
	CHECK_ERR(write_file("/proc/self/uid_map", "0 x 1\n"), EINVAL);
	/* Without "deny", the caller's own gid is refused too. */
	snprintf(line, sizeof(line), "0 %u 1\n", (unsigned)getegid());
	CHECK_ERR(write_file("/proc/self/gid_map", line), EPERM);
}

/* diag_uid is the owner sock_diag reports of a new unix socket
 * (UDIAG_SHOW_UID), as the caller's namespace shows it; -1 on failure. */
static long diag_uid(void)
{
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	int nl = socket(AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG);
	struct stat st;
	struct {
		struct nlmsghdr nlh;
		struct unix_diag_req req;
	} q;
	char buf[1024];
	long n, uid = -1;

	if (s < 0 || nl < 0 || fstat(s, &st) != 0)
		return -1;
	memset(&q, 0, sizeof(q));
	q.nlh.nlmsg_len = sizeof(q);
	q.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.nlh.nlmsg_flags = NLM_F_REQUEST;
	q.req.sdiag_family = AF_UNIX;
	q.req.udiag_states = -1;
	q.req.udiag_ino = st.st_ino;
	q.req.udiag_show = UDIAG_SHOW_UID;
	q.req.udiag_cookie[0] = q.req.udiag_cookie[1] = -1;
	if (send(nl, &q, sizeof(q), 0) == sizeof(q) && (n = recv(nl, buf, sizeof(buf), 0)) > 0) {
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY) {
			struct rtattr *a = (struct rtattr *)((char *)NLMSG_DATA(h) + sizeof(struct unix_diag_msg));
			int len = h->nlmsg_len - NLMSG_LENGTH(sizeof(struct unix_diag_msg));
			for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
				if (a->rta_type == UNIX_DIAG_UID)
					uid = *(uid_t *)RTA_DATA(a);
		}
	}
	close(s);
	close(nl);
	return uid;
}

static void in_namespace(uid_t euid, gid_t egid, pid_t parent)
{
	char line[64];
	struct stat st;
	int ns, depth;
	uid_t owner = 12345;
	int setfcap = check_has_cap(CAP_SETFCAP);

	CHECK_OK(unshare(CLONE_NEWUSER));
	CHECK_EQ(getuid(), 65534);
	CHECK_EQ(getgid(), 65534);
	CHECK_EQ(prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN), 1);
	CHECK(check_has_cap(CAP_SYS_ADMIN));

	snprintf(line, sizeof(line), "0 %u 1\n", (unsigned)euid);
	if (euid == 0 && !setfcap) {
		/* Mapping root of the parent needs its creator to have had
		 * CAP_SETFCAP (a container's root without capabilities):
		 * nothing else is its own to map. */
		CHECK_ERR(write_file("/proc/self/uid_map", line), EPERM);
		return;
	}
	CHECK_OK(write_file("/proc/self/uid_map", line));
	CHECK_ERR(write_file("/proc/self/uid_map", line), EPERM);
	snprintf(line, sizeof(line), "0 %u 1\n", (unsigned)egid);
	CHECK_ERR(write_file("/proc/self/gid_map", line), EPERM);
	CHECK_OK(write_file("/proc/self/setgroups", "deny"));
	CHECK_STR(read_file("/proc/self/setgroups"), "deny\n");
	CHECK_OK(write_file("/proc/self/gid_map", line));
	CHECK_ERR(write_file("/proc/self/setgroups", "allow"), EPERM);
	CHECK_ERR(setgroups(0, NULL), EPERM);
	CHECK_EQ(getuid(), 0);
	CHECK_EQ(geteuid(), 0);
	CHECK_EQ(getgid(), 0);
	snprintf(line, sizeof(line), "%10u %10u %10u\n", 0, (unsigned)euid, 1);
	CHECK_STR(read_file("/proc/self/uid_map"), line);
	CHECK_ERR(setuid(1), EINVAL); /* not mapped */
	CHECK_EQ(diag_uid(), 0); /* a socket's owner, as this namespace shows it */

	/* The nsfs ioctls on the caller's own namespace. */
	ns = CHECK_OK(open("/proc/self/ns/user", O_RDONLY));
	CHECK_EQ(ioctl(ns, NS_GET_NSTYPE), CLONE_NEWUSER);
	CHECK_OK(ioctl(ns, NS_GET_OWNER_UID, &owner));
	CHECK_EQ(owner, 0);
	CHECK_ERR(ioctl(ns, NS_GET_USERNS), EPERM);
	CHECK_ERR(ioctl(ns, NS_GET_PARENT), EPERM);
	close(ns);

	/* Capabilities count inside alone. */
	if (euid != 0)
		CHECK_ERR(kill(parent, 0), EPERM);
	CHECK_ERR(sethostname("userns", 6), EPERM);
	CHECK_ERR(mount("none", "/tmp", "tmpfs", 0, NULL), EPERM);
	CHECK_OK(unshare(CLONE_NEWUTS));
	CHECK_OK(sethostname("userns", 6));
	CHECK_OK(unshare(CLONE_NEWNS));
	CHECK_ERR(umount2("/proc", MNT_DETACH), EINVAL); /* locked on its parent */
	CHECK_ERR(mount("proc", "/tmp", "proc", 0, NULL), EPERM);
	CHECK_ERR(mount("sysfs", "/tmp", "sysfs", 0, NULL), EPERM);
	CHECK_OK(mount("none", "/tmp", "tmpfs", 0, NULL));
	CHECK_OK(mkdir("/tmp/d", 0755));
	CHECK_OK(stat("/tmp/d", &st));
	CHECK_EQ(st.st_uid, 0);
	CHECK_ERR(chown("/tmp/d", 1, -1), EINVAL); /* 1 is not mapped */
	CHECK_OK(chown("/tmp/d", 0, 0));
	CHECK_OK(umount2("/tmp", 0));

	/* A file whose owner is not mapped. */
	CHECK_OK(stat("/", &st));
	if (euid != 0) {
		CHECK_EQ(st.st_uid, 65534);
		CHECK_ERR(chown("/", 0, 0), EPERM);
	}

	/* 33 levels of namespaces below the first (Linux makes one in a
	 * parent of level 32 at most); this is the first. Each
	 * maps its root to its parent's, where the next is made from. */
	for (depth = 1; depth < 40; depth++) {
		if (unshare(CLONE_NEWUSER) != 0)
			break;
		if (write_file("/proc/self/uid_map", "0 0 1") != 0 ||
		    write_file("/proc/self/setgroups", "deny") != 0 ||
		    write_file("/proc/self/gid_map", "0 0 1") != 0) {
			CHECK(!"mapping a nested namespace");
			break;
		}
	}
	CHECK_EQ(depth, 33);
	CHECK_EQ(errno, ENOSPC);
}

int main(int argc, char **argv)
{
	pid_t pid, parent = getpid();

	check_init(argc, argv);
	pid = check_fork();
	if (pid == 0) {
		if (check_has_cap(CAP_SETUID) && check_has_cap(CAP_SETGID)) {
			CHECK_OK(setgroups(0, NULL));
			CHECK_OK(setgid(1000));
			CHECK_OK(setuid(1000));
			/* The change of ids made it undumpable: its /proc
			 * files would be root's. */
			CHECK_OK(prctl(PR_SET_DUMPABLE, 1));
		}
		pid_t c = check_fork();
		if (c == 0) {
			maps_refused(geteuid());
			check_child_exit();
		}
		CHECK_CHILD(c, "exited 0");
		in_namespace(geteuid(), getegid(), parent);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	return check_finish();
}
