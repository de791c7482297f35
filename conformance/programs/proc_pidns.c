/*
 * proc_pidns: nested pid namespaces (pid_namespaces(7)).
 *
 * Tools that sandbox themselves (unshare -p -f, bubblewrap --unshare-pid)
 * give a process tree its own pids, with its first process as pid 1.
 * Checks, with CAP_SYS_ADMIN: unshare(CLONE_NEWPID) leaves the caller's
 * pid alone, makes pid_for_children a new namespace (ENOENT to readlink
 * until its first process exists, then the child's ns/pid, which differs
 * from the caller's), and a second one before a child is EINVAL, as is a
 * thread then or CLONE_NEWPID with CLONE_THREAD; the first child is pid 1
 * with parent 0, its children count on from 2 with parent 1, fork returns
 * the pid as the namespace numbers it, and init may not clone a sibling
 * (CLONE_PARENT is EINVAL); wait in the parent gives the pid fork gave it.
 * The namespace's init ignores SIGKILL, SIGSTOP and SIGTERM from inside
 * while it has no handler; a signal it handles arrives with si_pid the
 * sender's pid in the namespace, or 0 from the parent's namespace; orphans
 * become init's children (getppid 1); SCM_CREDENTIALS sent from init reach
 * the parent with init's pid there, those the parent sends reach init with
 * pid 0, as does SO_PEERCRED of a socketpair the parent made; F_GETLK
 * names a lock's holder the same way, and shmctl(IPC_STAT) a segment's
 * maker and last attacher. A proc mounted in the namespace (after
 * unshare(CLONE_NEWNS)) lists only its processes: self is 1, status shows
 * Pid 1 and NSpid 1, while the parent's /proc shows the child's NSpid as
 * its pid there and 1, as does a pidfd's fdinfo. setns to the child's
 * ns/pid makes the caller's next child a member with parent 0, of its own
 * pid nothing changes; setns of a pid namespace file as CLONE_NEWUTS is
 * EINVAL, of an ancestor's namespace (from inside) EINVAL. From the
 * parent's namespace SIGTERM is ignored by the init without a handler,
 * SIGSTOP stops it and SIGKILL ends it; the end of init kills the rest of
 * its namespace (a member's pipe end closes), whose reaping comes before
 * init's end is reported, and a fork into the namespace then is ENOMEM.
 * clone(CLONE_NEWPID) makes pid 1 at once.
 */
// covers: unshare setns clone getpid getppid
// capabilities: CAP_SYS_ADMIN
#include "check.h"

#include <sched.h>
#include <signal.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/wait.h>

/* status_of returns the value of line name of /proc/PID/status (pid 0:
 * self), tabs as they are; a description of what went wrong otherwise. */
static const char *status_of(int pid, const char *name)
{
	static char buf[8192], value[128];
	char path[64], *line, *end;
	size_t n = strlen(name);
	long len;
	int fd;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		snprintf(value, sizeof(value), "(%s: %s)", path, check_errname(errno));
		return value;
	}
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[len > 0 ? len : 0] = '\0';
	for (line = buf; *line; line = end + (*end == '\n')) {
		end = strchrnul(line, '\n');
		if (strncmp(line, name, n) == 0 && line[n] == ':') {
			line += n + 1;
			line += strspn(line, "\t");
			snprintf(value, sizeof(value), "%.*s", (int)(end - line), line);
			return value;
		}
	}
	snprintf(value, sizeof(value), "(no %s in %s)", name, path);
	return value;
}

/* proc_pids lists the numeric entries of /proc, space-separated. */
static const char *proc_pids(void)
{
	static char out[256];
	char buf[4096];
	long n, off;
	size_t len = 0;
	int fd = open("/proc", O_RDONLY | O_DIRECTORY);

	out[0] = '\0';
	if (fd < 0)
		return "(open /proc failed)";
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n;) {
			struct {
				unsigned long long ino;
				long long off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			if (d->name[0] >= '0' && d->name[0] <= '9' && len < sizeof(out) - 16)
				len += snprintf(out + len, sizeof(out) - len, "%s%s", len ? " " : "", d->name);
			off += d->reclen;
		}
	}
	close(fd);
	return out;
}

static volatile sig_atomic_t usr1_pid = -1;
static int cred_sock[2] = { -1, -1 }; /* a socketpair the parent made */
static int lock_fd = -1;               /* a memfd the parent locks byte 10 of */
static int shm_id = -1;                /* a System V segment the parent made */

/* shm_pids returns "cpid lpid" of shm_id's IPC_STAT. */
static const char *shm_pids(void)
{
	static char buf[64];
	struct shmid_ds ds;

	if (shmctl(shm_id, IPC_STAT, &ds) != 0)
		snprintf(buf, sizeof(buf), "(%s)", check_errname(errno));
	else
		snprintf(buf, sizeof(buf), "%d %d", ds.shm_cpid, ds.shm_lpid);
	return buf;
}

/* lock_pid is F_GETLK's l_pid for a write lock of byte at of lock_fd, -1
 * when none holds it. */
static pid_t lock_pid(off_t at)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = at, .l_len = 1 };

	if (fcntl(lock_fd, F_GETLK, &fl) != 0)
		return -2;
	return fl.l_type == F_UNLCK ? -1 : fl.l_pid;
}
static int outer_ns_fd = -1; /* the parent's ns/pid, inherited by init */

static void on_usr1(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	usr1_pid = si->si_pid;
}

static int thread_fn(void *arg)
{
	(void)arg;
	return 0;
}

/* send_creds sends one byte with SCM_CREDENTIALS naming pid. */
static void send_creds(int fd, pid_t pid)
{
	struct ucred u = { .pid = pid, .uid = getuid(), .gid = getgid() };
	char cbuf[CMSG_SPACE(sizeof(u))], b = 'c';
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_CREDENTIALS;
	c->cmsg_len = CMSG_LEN(sizeof(u));
	memcpy(CMSG_DATA(c), &u, sizeof(u));
	CHECK_EQ(sendmsg(fd, &m, 0), 1);
}

/* recv_creds_pid receives one byte and returns the pid of its
 * SCM_CREDENTIALS, -1 if it carried none. */
static pid_t recv_creds_pid(int fd)
{
	struct ucred u;
	char cbuf[CMSG_SPACE(sizeof(u))], b;
	struct iovec iov = { &b, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c;

	if (recvmsg(fd, &m, 0) != 1)
		return -1;
	for (c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS) {
			memcpy(&u, CMSG_DATA(c), sizeof(u));
			return u.pid;
		}
	return -1;
}

/* wait_usr1 waits up to 2 s for SIGUSR1's handler to have run. */
static void wait_usr1(void)
{
	for (int i = 0; i < 200 && usr1_pid == -1; i++)
		check_sleep_ms(10);
}

/* init_body is the namespace's pid 1: it reports over to, then waits
 * for a byte on from before it ends. */
static void init_body(int to, int from)
{
	struct sigaction sa = { .sa_sigaction = on_usr1, .sa_flags = SA_SIGINFO | SA_RESTART };
	pid_t pid, member;
	int orphan_pipe[2], st = -1;
	char c;

	CHECK_EQ(getpid(), 1);
	CHECK_EQ(getppid(), 0);
	CHECK_EQ(syscall(SYS_gettid), 1);
	CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
	/* No sibling for init: its parent is outside, no reaper here. */
	CHECK_ERR(syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0), EINVAL);

	/* Its children are numbered on from 2, with parent 1. */
	member = check_fork();
	if (member == 0) {
		CHECK_EQ(getpid(), 2);
		CHECK_EQ(getppid(), 1);
		/* No handler: SIGKILL, SIGSTOP and SIGTERM from inside are
		 * ignored (a stopped init would never reap this child). */
		CHECK_OK(kill(1, SIGKILL));
		CHECK_OK(kill(1, SIGSTOP));
		CHECK_OK(kill(1, SIGTERM));
		CHECK_OK(kill(1, SIGUSR1));
		check_child_exit();
	}
	CHECK_EQ(member, 2);
	CHECK_CHILD(member, "exited 0");
	wait_usr1();
	CHECK_EQ(usr1_pid, 2);

	/* An orphan becomes init's child. */
	CHECK_OK(pipe(orphan_pipe));
	pid = check_fork();
	if (pid == 0) {
		if (check_fork() == 0) {
			char b;
			close(orphan_pipe[1]);
			read(orphan_pipe[0], &b, 1); /* until its parent has gone */
			CHECK_EQ(getppid(), 1);
			check_child_exit();
		}
		check_child_exit();
	}
	close(orphan_pipe[0]);
	CHECK_CHILD(pid, "exited 0");
	close(orphan_pipe[1]);
	CHECK(waitpid(-1, &st, 0) > 2);
	CHECK_STR(check_status_str(st), "exited 0");

	/* A proc of its own: only the namespace's processes. */
	CHECK_OK(unshare(CLONE_NEWNS));
	CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	CHECK_OK(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL));
	CHECK_STR(proc_pids(), "1");
	CHECK_STR(check_readlink("/proc/self"), "1");
	CHECK_STR(status_of(0, "Pid"), "1");
	CHECK_STR(status_of(0, "PPid"), "0");
	CHECK_STR(status_of(0, "NSpid"), "1");
	CHECK_STR(status_of(1, "NStgid"), "1");

	/* Credentials cross the namespace's edge translated: the parent
	 * receives its pid in its namespace; what the parent sends, and the
	 * socketpair's SO_PEERCRED (its maker's), read 0 here. */
	{
		struct ucred peer;
		socklen_t len = sizeof(peer);
		send_creds(cred_sock[1], 1);
		CHECK_EQ(recv_creds_pid(cred_sock[1]), 0);
		CHECK_OK(getsockopt(cred_sock[1], SOL_SOCKET, SO_PEERCRED, &peer, &len));
		CHECK_EQ(peer.pid, 0);
	}

	/* A lock's holder outside the namespace shows as pid 0; this one's
	 * shows to the parent as its pid there. */
	{
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1 };
		CHECK_EQ(lock_pid(10), 0);
		CHECK_OK(fcntl(lock_fd, F_SETLK, &fl));
	}

	/* So does a System V segment's maker; its last attacher, this one,
	 * shows to the parent. */
	{
		void *p;
		CHECK_STR(shm_pids(), "0 0");
		p = shmat(shm_id, NULL, 0);
		CHECK(p != (void *)-1);
		CHECK_STR(shm_pids(), "0 1");
	}

	/* From inside, the parent's namespace cannot be joined; its own
	 * can. */
	{
		int fd = open("/proc/self/ns/pid", O_RDONLY);
		CHECK(fd >= 0);
		CHECK_ERR(setns(fd, CLONE_NEWUTS), EINVAL);
		CHECK_OK(setns(fd, CLONE_NEWPID));
		close(fd);
		CHECK_ERR(setns(outer_ns_fd, CLONE_NEWPID), EINVAL);
	}

	usr1_pid = -1;
	c = 'r';
	CHECK_EQ(write(to, &c, 1), 1);
	CHECK_EQ(read(from, &c, 1), 1); /* the parent has sent SIGUSR1 */
	wait_usr1();
	CHECK_EQ(usr1_pid, 0);
	/* init ends by SIGKILL: it reports its checks before. */
	c = check_failures ? 'F' : 'd';
	CHECK_EQ(write(to, &c, 1), 1);
	alarm(0);
	for (;;)
		pause(); /* until the parent's SIGKILL */
}

static void check_unshare_and_fork(void)
{
	char self_pid[64], before_children[64], c;
	int to[2], from[2], held[2];
	pid_t child, member;

	snprintf(self_pid, sizeof(self_pid), "%s", check_readlink("/proc/self/ns/pid"));
	snprintf(before_children, sizeof(before_children), "%s", check_readlink("/proc/self/ns/pid_for_children"));
	CHECK_STR(before_children, self_pid);
	pid_t mypid = getpid();

	CHECK_OK(unshare(CLONE_NEWPID));
	CHECK_EQ(getpid(), mypid);
	CHECK_STR(check_readlink("/proc/self/ns/pid"), self_pid);
	CHECK_STR(check_readlink("/proc/self/ns/pid_for_children"), "(ENOENT)");
	CHECK_ERR(unshare(CLONE_NEWPID), EINVAL);
	{
		static char stack[65536];
		CHECK_ERR(clone(thread_fn, stack + sizeof(stack),
				CLONE_THREAD | CLONE_SIGHAND | CLONE_VM, NULL),
			  EINVAL);
	}

	CHECK_OK(pipe(to));
	CHECK_OK(pipe(from));
	outer_ns_fd = open("/proc/self/ns/pid", O_RDONLY);
	CHECK(outer_ns_fd >= 0);
	CHECK_OK(socketpair(AF_UNIX, SOCK_DGRAM, 0, cred_sock));
	lock_fd = CHECK_OK(memfd_create("pidns-locks", 0));
	shm_id = CHECK_OK(shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600));
	CHECK_OK(ftruncate(lock_fd, 64));
	{
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 10, .l_len = 1 };
		CHECK_OK(fcntl(lock_fd, F_SETLK, &fl));
	}
	{
		int on = 1;
		CHECK_OK(setsockopt(cred_sock[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)));
		CHECK_OK(setsockopt(cred_sock[1], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)));
	}
	child = check_fork();
	if (child == 0) {
		close(to[0]);
		close(from[1]);
		init_body(to[1], from[0]);
	}
	close(to[1]);
	close(from[0]);
	CHECK(child > 1);
	CHECK_EQ(recv_creds_pid(cred_sock[0]), child);
	send_creds(cred_sock[0], mypid);
	CHECK_EQ(read(to[0], &c, 1), 1); /* the child has checked itself */
	CHECK_EQ(lock_pid(0), child);
	{
		char want[64];
		snprintf(want, sizeof(want), "%d %d", mypid, child);
		CHECK_STR(shm_pids(), want);
		CHECK_OK(shmctl(shm_id, IPC_RMID, NULL));
	}

	char child_ns[64], path[64];
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", child);
	snprintf(child_ns, sizeof(child_ns), "%s", check_readlink(path));
	CHECK(strcmp(child_ns, self_pid) != 0);
	CHECK_STR(check_readlink("/proc/self/ns/pid_for_children"), child_ns);
	{
		char want[64], fdinfo[64], buf[512];
		int pfd = CHECK_OK(syscall(SYS_pidfd_open, child, 0));
		long n;
		snprintf(want, sizeof(want), "%d\t1", child);
		CHECK_STR(status_of(child, "NSpid"), want);
		/* A pidfd's fdinfo too: its pid here, then in its own. */
		snprintf(fdinfo, sizeof(fdinfo), "/proc/self/fdinfo/%d", pfd);
		int fd = CHECK_OK(open(fdinfo, O_RDONLY));
		n = read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		close(fd);
		close(pfd);
		snprintf(want, sizeof(want), "\nPid:\t%d\nNSpid:\t%d\t1\n", child, child);
		CHECK(strstr(buf, want) != NULL);
	}

	/* A signal from the parent's namespace: si_pid 0. */
	CHECK_OK(kill(child, SIGUSR1));
	CHECK_EQ(write(from[1], "u", 1), 1);
	CHECK_EQ(read(to[0], &c, 1), 1);
	CHECK_EQ(c, 'd'); /* init's checks passed */

	/* SIGTERM without a handler is ignored from here too; SIGSTOP from
	 * here is forced. */
	CHECK_OK(kill(child, SIGTERM));
	{
		int st = -1;
		CHECK_OK(kill(child, SIGSTOP));
		CHECK_EQ(waitpid(child, &st, WUNTRACED), child);
		CHECK_STR(check_status_str(st), "stopped by SIGSTOP");
		CHECK_OK(kill(child, SIGCONT));
	}

	/* setns to the child's namespace: the next child is a member, its
	 * parent outside (0); a member of its own holds a pipe's write end,
	 * which closes only when init's end kills it. */
	{
		int fd = open(path, O_RDONLY);
		CHECK(fd >= 0);
		CHECK_ERR(setns(fd, CLONE_NEWUTS), EINVAL);
		CHECK_OK(setns(fd, CLONE_NEWPID));
		close(fd);
	}
	CHECK_EQ(getpid(), mypid);
	CHECK_OK(pipe(held));
	member = check_fork();
	if (member == 0) {
		close(held[0]);
		CHECK(getpid() > 1);
		CHECK_EQ(getppid(), 0);
		if (check_failures)
			check_child_exit();
		alarm(0);
		pause();
		_exit(0);
	}
	close(held[1]);
	CHECK(member > 0);

	/* SIGKILL from the parent's namespace ends init, which kills the
	 * member (its pipe end closes); init's end is reported only once
	 * the member has been reaped too. */
	check_sleep_ms(50);
	CHECK_OK(kill(child, SIGKILL));
	CHECK_EQ(read(held[0], &c, 1), 0);
	CHECK_CHILD(member, "killed by SIGKILL");
	CHECK_CHILD(child, "killed by SIGKILL");
	/* The namespace takes no process now. */
	CHECK_ERR(fork(), ENOMEM);
	close(held[0]);
	close(to[0]);
	close(from[1]);
}

static int clone_child(void *arg)
{
	(void)arg;
	return getpid() == 1 && getppid() == 0 ? 7 : 1;
}

int main(int argc, char **argv)
{
	static char stack[65536];
	pid_t pid;

	check_init(argc, argv);
	if (!check_has_cap(CAP_SYS_ADMIN)) {
		fprintf(stderr, "proc_pidns: needs CAP_SYS_ADMIN\n");
		return 1;
	}

	/* clone(CLONE_NEWPID): pid 1 at once; never with CLONE_THREAD. */
	pid = clone(clone_child, stack + sizeof(stack), CLONE_NEWPID | SIGCHLD, NULL);
	CHECK(pid > 0);
	CHECK_CHILD(pid, "exited 7");
	CHECK_ERR(clone(clone_child, stack + sizeof(stack),
			CLONE_NEWPID | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM, NULL),
		  EINVAL);

	/* The rest in a child, whose pid_for_children it changes. */
	pid = check_fork();
	if (pid == 0) {
		alarm(10);
		check_unshare_and_fork();
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	return check_finish();
}
