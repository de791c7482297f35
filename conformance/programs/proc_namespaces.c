/*
 * proc_namespaces: UTS and IPC namespaces, unshare and setns.
 *
 * Tools that sandbox themselves (unshare, bubblewrap, systemd's
 * PrivateIPC=) give a process its own host name and IPC objects.
 * Checks: /proc/self/ns's cgroup, ipc, net, pid, pid_for_children, time,
 * time_for_children, user and uts read "kind:[N]"; setns of one's own
 * user namespace is EINVAL, of one's own network namespace EPERM without
 * CAP_SYS_ADMIN and a no-op with it, of a file as another kind EINVAL;
 * unshare of an unknown flag is EINVAL, of CLONE_FILES, CLONE_FS and
 * CLONE_SYSVSEM always works, of CLONE_THREAD with a second thread is
 * EINVAL; setns of a file that is no namespace is EINVAL, of a uts file
 * as CLONE_NEWIPC EINVAL. Without CAP_SYS_ADMIN (the container):
 * unshare and clone of CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID and
 * CLONE_NEWNET, setns, sethostname (even of a name too long) and
 * setdomainname are EPERM. With it (natively): after unshare(CLONE_NEWUTS)
 * sethostname and setdomainname change uname and /proc/sys/kernel's
 * hostname and domainname for the process alone, its ns/uts differs from
 * its parent's, the parent joins it with setns on the child's ns/uts,
 * and a name past 64 bytes is EINVAL; after unshare(CLONE_NEWIPC) the old
 * namespace's message queues and System V queues are not found, and a
 * queue made there is not seen outside.
 */
// covers: unshare setns sethostname setdomainname
#include "check.h"

#include <mqueue.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/utsname.h>

static const char *nodename(void)
{
	static struct utsname u;

	if (uname(&u) != 0)
		return "(uname failed)";
	return u.nodename;
}

static const char *read_file(const char *path)
{
	static char buf[128];
	long n;
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		snprintf(buf, sizeof(buf), "(%s)", check_errname(errno));
		return buf;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static const char *ns_link(const char *path)
{
	static char buf[4][64];
	static int next;
	char *b = buf[next++ % 4];
	long n = readlink(path, b, 63);

	if (n < 0)
		snprintf(b, 64, "(%s)", check_errname(errno));
	else
		b[n] = '\0';
	return b;
}

static int pipe_fds[2];

static void *wait_on_pipe(void *arg)
{
	char c;

	(void)arg;
	if (read(pipe_fds[0], &c, 1) != 1)
		return NULL;
	return arg;
}

static void check_common(void)
{
	pthread_t th;
	int fd;

	static const char *const kinds[][2] = {
		{ "cgroup", "cgroup:[" }, { "ipc", "ipc:[" }, { "net", "net:[" }, { "pid", "pid:[" },
		{ "pid_for_children", "pid:[" }, { "time", "time:[" }, { "time_for_children", "time:[" },
		{ "user", "user:[" }, { "uts", "uts:[" },
	};
	char path[64];
	unsigned i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		snprintf(path, sizeof(path), "/proc/self/ns/%s", kinds[i][0]);
		if (strncmp(ns_link(path), kinds[i][1], strlen(kinds[i][1])) != 0)
			check_fail(__FILE__, __LINE__, "%s reads \"%s\", want %s...]", path, ns_link(path), kinds[i][1]);
	}
	/* The caller's own user namespace cannot be joined. */
	fd = CHECK_OK(open("/proc/self/ns/user", O_RDONLY));
	CHECK_ERR(setns(fd, 0), EINVAL);
	close(fd);
	fd = CHECK_OK(open("/proc/self/ns/net", O_RDONLY));
	CHECK_ERR(setns(fd, CLONE_NEWUTS), EINVAL);
	if (check_has_cap(CAP_SYS_ADMIN))
		CHECK_OK(setns(fd, CLONE_NEWNET));
	else
		CHECK_ERR(setns(fd, CLONE_NEWNET), EPERM);
	close(fd);
	CHECK_ERR(unshare(CLONE_PTRACE), EINVAL);
	CHECK_OK(unshare(CLONE_FILES | CLONE_FS | CLONE_SYSVSEM));
	CHECK_OK(pipe(pipe_fds));
	CHECK_EQ(pthread_create(&th, NULL, wait_on_pipe, NULL), 0);
	CHECK_ERR(unshare(CLONE_THREAD), EINVAL);
	CHECK_EQ(write(pipe_fds[1], "x", 1), 1);
	pthread_join(th, NULL);

	fd = CHECK_OK(open("/dev/null", O_RDONLY));
	CHECK_ERR(setns(fd, 0), EINVAL);
	close(fd);
	fd = CHECK_OK(open("/proc/self/ns/uts", O_RDONLY));
	CHECK_ERR(setns(fd, CLONE_NEWIPC), EINVAL);
	if (!check_has_cap(CAP_SYS_ADMIN))
		CHECK_ERR(setns(fd, CLONE_NEWUTS), EPERM);
	close(fd);
}

static void check_unprivileged(void)
{
	char longname[70];
	pid_t pid;

	CHECK_ERR(unshare(CLONE_NEWUTS), EPERM);
	CHECK_ERR(unshare(CLONE_NEWIPC), EPERM);
	CHECK_ERR(unshare(CLONE_NEWPID), EPERM);
	CHECK_ERR(unshare(CLONE_NEWNET), EPERM);
	CHECK_ERR(sethostname("x", 1), EPERM);
	memset(longname, 'h', sizeof(longname));
	CHECK_ERR(sethostname(longname, sizeof(longname)), EPERM);
	CHECK_ERR(setdomainname("x", 1), EPERM);
	pid = syscall(SYS_clone, CLONE_NEWUTS | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		_exit(3);
	CHECK_EQ(pid, -1);
	CHECK_EQ(errno, EPERM);
	if (!check_native)
		CHECK_STR(nodename(), check_hostname);
}

static void check_privileged(void)
{
	char want[80], longname[70];
	const char *outer_uts = ns_link("/proc/self/ns/uts");
	char outer_name[65], child_uts[64];
	int to_parent[2], to_child[2], fd, mq, id;
	char c = 0;
	pid_t pid;

	snprintf(outer_name, sizeof(outer_name), "%s", nodename());
	CHECK_OK(pipe(to_parent));
	CHECK_OK(pipe(to_child));
	pid = check_fork();
	if (pid == 0) {
		CHECK_OK(unshare(CLONE_NEWUTS));
		CHECK_STR(nodename(), outer_name);
		CHECK_OK(sethostname("conf-inner", 10));
		CHECK_OK(setdomainname("conf-domain", 11));
		CHECK_STR(nodename(), "conf-inner");
		CHECK_STR(read_file("/proc/sys/kernel/hostname"), "conf-inner\n");
		CHECK_STR(read_file("/proc/sys/kernel/domainname"), "conf-domain\n");
		memset(longname, 'h', sizeof(longname));
		CHECK_ERR(sethostname(longname, 65), EINVAL);
		CHECK(strcmp(ns_link("/proc/self/ns/uts"), outer_uts) != 0);
		CHECK_EQ(write(to_parent[1], "x", 1), 1);
		CHECK_EQ(read(to_child[0], &c, 1), 1);
		check_child_exit();
	}
	CHECK_EQ(read(to_parent[0], &c, 1), 1);
	CHECK_STR(nodename(), outer_name);
	snprintf(want, sizeof(want), "/proc/%d/ns/uts", (int)pid);
	snprintf(child_uts, sizeof(child_uts), "%s", ns_link(want));
	CHECK(strcmp(child_uts, outer_uts) != 0);

	/* The parent joins the child's namespace in a child of its own. */
	fd = CHECK_OK(open(want, O_RDONLY));
	{
		pid_t joiner = check_fork();

		if (joiner == 0) {
			CHECK_OK(setns(fd, CLONE_NEWUTS));
			CHECK_STR(nodename(), "conf-inner");
			CHECK_STR(ns_link("/proc/self/ns/uts"), child_uts);
			check_child_exit();
		}
		CHECK_CHILD(joiner, "exited 0");
	}
	close(fd);
	CHECK_EQ(write(to_child[1], "x", 1), 1);
	CHECK_CHILD(pid, "exited 0");

	/* A new IPC namespace finds none of the old one's objects. */
	snprintf(want, sizeof(want), "/conf-ns-%d", (int)getpid());
	mq = CHECK_OK(mq_open(want, O_CREAT | O_RDWR, 0600, NULL));
	id = CHECK_OK(msgget(0x6e5 + getpid(), IPC_CREAT | 0600));
	pid = check_fork();
	if (pid == 0) {
		char inner[96];

		CHECK_OK(unshare(CLONE_NEWIPC));
		CHECK_ERR(mq_open(want, O_RDWR), ENOENT);
		CHECK_ERR(msgget(0x6e5 + getppid(), 0), ENOENT);
		snprintf(inner, sizeof(inner), "%s-inner", want);
		CHECK_OK(mq_open(inner, O_CREAT | O_RDWR, 0600, NULL));
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	snprintf(want + strlen(want), sizeof(want) - strlen(want), "-inner");
	CHECK_ERR(mq_open(want, O_RDWR), ENOENT);
	want[strlen(want) - strlen("-inner")] = '\0';
	close(mq);
	mq_unlink(want);
	msgctl(id, IPC_RMID, NULL);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	check_common();
	if (check_has_cap(CAP_SYS_ADMIN))
		check_privileged();
	else
		check_unprivileged();
	return check_finish();
}
