/*
 * fs_landlock_scope.c - what a Landlock domain forbids beyond file
 * access: changing the mount tree (mount, umount2, a bind mount: EPERM,
 * whatever the capabilities), and reaching with ptrace a process that is
 * less restricted (attach and PTRACE_TRACEME: EPERM), while a process may
 * trace one in its own domain or one made on it; and with ABI 6's scopes,
 * signalling such a process (EPERM; a thread of the caller's own process
 * always) and reaching its abstract unix sockets (EPERM; sockets named in
 * the file system are not scoped).
 */
// covers: landlock_create_ruleset landlock_add_rule landlock_restrict_self kill tgkill connect sendto
// capabilities: CAP_SYS_ADMIN CAP_SYS_PTRACE
#include "check.h"
#include <linux/landlock.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>

/* restrict_read_file adds a layer that handles reading files and allows
 * it everywhere: a domain that changes no file access. */
static void restrict_read_file(void)
{
	struct landlock_ruleset_attr attr = { .handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE };
	struct landlock_path_beneath_attr rule = { .allowed_access = LANDLOCK_ACCESS_FS_READ_FILE };
	int fd = CHECK_OK(syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0));

	rule.parent_fd = CHECK_OK(open("/", O_PATH));
	CHECK_OK(syscall(SYS_landlock_add_rule, fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0));
	CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK_OK(syscall(SYS_landlock_restrict_self, fd, 0));
	close(rule.parent_fd);
	close(fd);
}

/* The C library's headers may predate ABI 6. */
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/* restrict_scoped adds a layer that only scopes. */
static void restrict_scoped(uint64_t scoped)
{
	uint64_t attr[3] = { 0, 0, scoped };
	int fd = CHECK_OK(syscall(SYS_landlock_create_ruleset, attr, sizeof(attr), 0));

	CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK_OK(syscall(SYS_landlock_restrict_self, fd, 0));
	close(fd);
}

static pid_t main_tid;

/* scoped_thread restricts its own thread alone, then signals the main
 * thread of its process: allowed (Landlock's erratum 2). */
static void *scoped_thread(void *arg)
{
	(void)arg;
	restrict_scoped(LANDLOCK_SCOPE_SIGNAL);
	CHECK_OK(syscall(SYS_tgkill, getpid(), main_tid, 0));
	CHECK_ERR(kill(getppid(), 0), EPERM);
	return NULL;
}

static void signals(void)
{
	pid_t parent = getppid(), b;
	pthread_t th;
	int ready[2];
	char c;

	/* A domain that does not scope signals does not stop them. */
	restrict_read_file();
	CHECK_OK(kill(parent, 0));
	main_tid = syscall(SYS_gettid);
	CHECK_EQ(pthread_create(&th, NULL, scoped_thread, NULL), 0);
	CHECK_EQ(pthread_join(th, NULL), 0);
	CHECK_OK(kill(parent, 0)); /* the thread's domain was its own */

	restrict_scoped(LANDLOCK_SCOPE_SIGNAL);
	CHECK_ERR(kill(parent, 0), EPERM);
	CHECK_ERR(kill(parent, SIGCONT), EPERM);
	CHECK_OK(kill(getpid(), 0));
	CHECK_OK(pipe(ready));
	b = check_fork();
	if (b == 0) {
		/* B, in a domain made on A's, may not signal A. */
		restrict_scoped(LANDLOCK_SCOPE_SIGNAL);
		CHECK_ERR(kill(getppid(), 0), EPERM);
		CHECK_EQ(write(ready[1], "x", 1), 1);
		pause();
		check_child_exit();
	}
	CHECK_EQ(read(ready[0], &c, 1), 1);
	CHECK_OK(kill(b, 0)); /* A may signal B */
	CHECK_OK(kill(b, SIGKILL));
	CHECK_CHILD(b, "killed by SIGKILL");
}

/* abstract_addr names an abstract socket after what and the pid. */
static socklen_t abstract_addr(struct sockaddr_un *sun, const char *what, pid_t pid)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	return offsetof(struct sockaddr_un, sun_path) + 1 +
	       snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1, "landlock-%s-%d", what, (int)pid);
}

static int bound(int type, const struct sockaddr_un *sun, socklen_t len)
{
	int fd = CHECK_OK(socket(AF_UNIX, type, 0));

	CHECK_OK(bind(fd, (const struct sockaddr *)sun, len));
	if (type == SOCK_STREAM)
		CHECK_OK(listen(fd, 4));
	return fd;
}

static int connects(int type, const struct sockaddr_un *sun, socklen_t len)
{
	int fd = CHECK_OK(socket(AF_UNIX, type, 0)), r;

	r = connect(fd, (const struct sockaddr *)sun, len);
	close(fd);
	return r < 0 ? errno : 0;
}

static void abstract_sockets(void)
{
	struct sockaddr_un stream, dgram, own, named = { .sun_family = AF_UNIX };
	socklen_t slen = abstract_addr(&stream, "s", getpid()), dlen = abstract_addr(&dgram, "d", getpid());
	socklen_t olen = abstract_addr(&own, "own", getpid());
	int ls, ld, ln, lo, fd;
	pid_t a;

	snprintf(named.sun_path, sizeof(named.sun_path), "/tmp/landlock-sock-%d", (int)getpid());
	ls = bound(SOCK_STREAM, &stream, slen);
	ld = bound(SOCK_DGRAM, &dgram, dlen);
	ln = bound(SOCK_STREAM, &named, sizeof(named));
	a = check_fork();
	if (a == 0) {
		restrict_scoped(LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET);
		CHECK_EQ(connects(SOCK_STREAM, &stream, slen), EPERM);
		CHECK_EQ(connects(SOCK_DGRAM, &dgram, dlen), EPERM);
		fd = CHECK_OK(socket(AF_UNIX, SOCK_DGRAM, 0));
		CHECK_ERR(sendto(fd, "x", 1, 0, (struct sockaddr *)&dgram, dlen), EPERM);
		close(fd);
		CHECK_EQ(connects(SOCK_STREAM, &named, sizeof(named)), 0); /* not scoped */
		/* Its own abstract socket, and one of a child's. */
		lo = bound(SOCK_STREAM, &own, olen);
		CHECK_EQ(connects(SOCK_STREAM, &own, olen), 0);
		close(lo);
		check_child_exit();
	}
	CHECK_CHILD(a, "exited 0");
	/* A free process reaches them all. */
	CHECK_EQ(connects(SOCK_STREAM, &stream, slen), 0);
	CHECK_EQ(connects(SOCK_DGRAM, &dgram, dlen), 0);
	close(ls);
	close(ld);
	close(ln);
	unlink(named.sun_path);
}

static void mounts(void)
{
	const char *dir = "/tmp/landlock-mnt", *sub = "/tmp/landlock-mnt/sub";

	/* A mount namespace of its own, so the host's tree is left alone. */
	CHECK_OK(unshare(CLONE_NEWNS));
	CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	CHECK_OK(mkdir(dir, 0755));
	CHECK_OK(mount("t", dir, "tmpfs", 0, NULL));
	CHECK_OK(mkdir(sub, 0755));
	restrict_read_file();
	CHECK_ERR(mount("t", sub, "tmpfs", 0, NULL), EPERM);
	CHECK_ERR(mount(dir, sub, NULL, MS_BIND, NULL), EPERM);
	CHECK_ERR(mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL), EPERM);
	CHECK_ERR(umount2(dir, 0), EPERM);
	CHECK_ERR(umount2(sub, 0), EINVAL); /* not a mount: said first */
}

/* wait_stopped waits for pid to stop after an attach. */
static void wait_stopped(pid_t pid)
{
	int status = 0;

	CHECK_EQ(waitpid(pid, &status, __WALL), pid);
	CHECK(WIFSTOPPED(status));
}

static void ptraces(void)
{
	int ready[2], go[2];
	pid_t a = getpid(), b, f;
	char c = 0;

	restrict_read_file();
	CHECK_OK(pipe(ready));
	b = check_fork();
	if (b == 0) {
		/* B, in a domain made on A's, may not reach A. */
		restrict_read_file();
		CHECK_ERR(ptrace(PTRACE_ATTACH, a, 0, 0), EPERM);
		CHECK_EQ(write(ready[1], "x", 1), 1);
		pause();
		check_child_exit();
	}
	CHECK_EQ(read(ready[0], &c, 1), 1);
	/* A may reach B. */
	CHECK_OK(ptrace(PTRACE_ATTACH, b, 0, 0));
	wait_stopped(b);
	CHECK_OK(ptrace(PTRACE_DETACH, b, 0, 0));
	kill(b, SIGKILL);
	CHECK_CHILD(b, "killed by SIGKILL");

	/* A child whose parent became more restricted after the fork may
	 * not make it its tracer. */
	CHECK_OK(pipe(go));
	f = check_fork();
	if (f == 0) {
		CHECK_EQ(read(go[0], &c, 1), 1);
		CHECK_ERR(ptrace(PTRACE_TRACEME, 0, 0, 0), EPERM);
		check_child_exit();
	}
	restrict_read_file();
	CHECK_EQ(write(go[1], "x", 1), 1);
	CHECK_CHILD(f, "exited 0");
	/* One in the same domain may. */
	f = check_fork();
	if (f == 0) {
		CHECK_OK(ptrace(PTRACE_TRACEME, 0, 0, 0));
		check_child_exit();
	}
	CHECK_CHILD(f, "exited 0");
}

int main(int argc, char **argv)
{
	void (*cases[])(void) = { mounts, ptraces, signals, abstract_sockets };
	int abi;
	pid_t pid;

	check_init(argc, argv);
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (abi < 6 && (cases[i] == signals || cases[i] == abstract_sockets))
			continue;
		pid = check_fork();
		if (pid == 0) {
			cases[i]();
			check_child_exit();
		}
		CHECK_CHILD(pid, "exited 0");
	}
	rmdir("/tmp/landlock-mnt/sub");
	rmdir("/tmp/landlock-mnt");
	return check_finish();
}
