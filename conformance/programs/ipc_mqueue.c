/*
 * ipc_mqueue: POSIX message queues.
 *
 * Daemons, real-time code and test suites pass prioritised messages
 * through mq_send and mq_receive and wait for them with mq_notify.
 * Checks: /proc/sys/fs/mqueue's limits; mq_open makes a close-on-exec
 * descriptor (EEXIST with O_EXCL, ENOENT without O_CREAT, EINVAL for the
 * access mode 3, EACCES for a name with '/' or ".", ENAMETOOLONG; sizes of
 * zero, past msg_max without CAP_SYS_RESOURCE or past HARD_MSGMAX are
 * EINVAL, an existing queue opens whatever the sizes; the mode binds root
 * without CAP_DAC_OVERRIDE; RLIMIT_MSGQUEUE 0 is EMFILE; queues_max is
 * ENOSPC without CAP_SYS_RESOURCE); messages come out by priority, then in
 * order, with their priority; a priority of MQ_PRIO_MAX or a timeout that
 * is not a time is EINVAL, a message past msgsize or a buffer short of it
 * EMSGSIZE; a full queue is EAGAIN with O_NONBLOCK and ETIMEDOUT past an
 * absolute timeout, and a waiting sender or receiver is woken by another
 * process; mq_getsetattr reports the sizes and count and sets only
 * O_NONBLOCK (EINVAL otherwise); mq_notify: EINVAL for a bad sigevent,
 * EBUSY for a second registration, SIGEV_SIGNAL sends SI_MESGQ with the
 * sender's pid and the value when a message comes to an empty queue (not
 * otherwise), once; another process's mq_notify(NULL) leaves it, the
 * owner's removes it, and so does the owner's closing a descriptor;
 * glibc's SIGEV_THREAD runs the function, SIGEV_THREAD with a pipe is
 * ENOTSOCK; poll and epoll see a queue as readable or writable; the
 * mqueue file system (the container's /dev/mqueue, or natively one
 * mounted in a private mount namespace) lists the queues, reads each as
 * its QSIZE/NOTIFY/SIGNO/NOTIFY_PID line, refuses writes (EINVAL) and
 * mkdir (EPERM), makes a queue of the default sizes with open(O_CREAT)
 * and removes one with unlink; mq_unlink removes the name while open
 * descriptors go on working.
 */
// covers: mq_open mq_unlink mq_timedsend mq_timedreceive mq_notify mq_getsetattr
#include "check.h"

#include <limits.h>
#include <mqueue.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>

#ifndef MQ_PRIO_MAX
#define MQ_PRIO_MAX 32768 /* include/uapi/linux/mqueue.h */
#endif

/* qname names a queue of this run: raw calls take it as is, glibc's with
 * a leading '/'. */
static const char *qname(const char *tag)
{
	static char buf[4][64];
	static int next;
	char *b = buf[next++ % 4];

	snprintf(b, 64, "conf-mq-%d-%s", (int)getpid(), tag);
	return b;
}

static long sysctl(const char *name)
{
	char path[128], buf[32] = "";
	long n;
	int fd;

	snprintf(path, sizeof(path), "/proc/sys/fs/mqueue/%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? atol(buf) : -1;
}

static long mq_open_raw(const char *name, int flags, int mode, long maxmsg, long msgsize)
{
	struct mq_attr a = { 0, maxmsg, msgsize, 0 };

	return syscall(SYS_mq_open, name, flags, mode, maxmsg ? &a : NULL);
}

static long send_raw(int fd, const char *text, unsigned prio, const struct timespec *ts)
{
	return syscall(SYS_mq_timedsend, fd, text, strlen(text), prio, ts);
}

/* recv_str receives into a buffer of size bytes and returns "text/prio",
 * or "(errno name)". */
static const char *recv_str(int fd, size_t size, const struct timespec *ts)
{
	static char out[80];
	char buf[256];
	unsigned prio = 99;
	long n = syscall(SYS_mq_timedreceive, fd, buf, size, &prio, ts);

	if (n < 0)
		snprintf(out, sizeof(out), "(%s)", check_errname(errno));
	else
		snprintf(out, sizeof(out), "%.*s/%u", (int)n, buf, prio);
	return out;
}

static struct timespec in_ms(long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ms % 1000 * 1000000;
	ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	return ts;
}

static void check_open_rules(void)
{
	long msg_max = sysctl("msg_max"), msgsize_max = sysctl("msgsize_max");
	const char *n = qname("open");
	char longname[300];
	int fd, fd2;

	CHECK(msg_max > 0);
	CHECK(msgsize_max > 0);
	CHECK(sysctl("queues_max") > 0);
	CHECK(sysctl("msg_default") > 0 && sysctl("msg_default") <= msg_max);
	CHECK(sysctl("msgsize_default") > 0 && sysctl("msgsize_default") <= msgsize_max);
	if (!check_native) {
		/* A new IPC namespace's. */
		CHECK_EQ(msg_max, 10);
		CHECK_EQ(msgsize_max, 8192);
		CHECK_EQ(sysctl("queues_max"), 256);
	}

	fd = CHECK_OK(mq_open_raw(n, O_CREAT | O_EXCL | O_RDWR, 0600, 4, 16));
	CHECK_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(fd, F_GETFL), O_RDWR);
	CHECK_ERR(mq_open_raw(n, O_CREAT | O_EXCL | O_RDWR, 0600, 4, 16), EEXIST);
	CHECK_ERR(mq_open_raw(n, O_RDWR | O_WRONLY, 0, 0, 0), EINVAL);
	/* An existing queue opens whatever the sizes say. */
	fd2 = CHECK_OK(mq_open_raw(n, O_CREAT | O_RDONLY, 0600, 1 << 20, 1));
	close(fd2);
	close(fd);
	/* glibc's form: the name with its '/', which it takes off. */
	snprintf(longname, sizeof(longname), "/%s", n);
	fd = CHECK_OK(mq_open(longname, O_RDONLY));
	close(fd);
	CHECK_OK(syscall(SYS_mq_unlink, n));

	CHECK_ERR(mq_open_raw("a/b", O_CREAT | O_RDWR, 0600, 0, 0), EACCES);
	CHECK_ERR(mq_open_raw(".", O_CREAT | O_RDWR, 0600, 0, 0), EACCES);
	CHECK_ERR(mq_open_raw("", O_CREAT | O_RDWR, 0600, 0, 0), ENOENT);
	CHECK_ERR(mq_open_raw(n, O_RDWR, 0, 0, 0), ENOENT);
	memset(longname, 'n', 256);
	longname[256] = '\0';
	CHECK_ERR(mq_open_raw(longname, O_CREAT | O_RDWR, 0600, 0, 0), ENAMETOOLONG);
	CHECK_ERR(syscall(SYS_mq_unlink, n), ENOENT);
	CHECK_ERR(syscall(SYS_mq_unlink, "/x"), EACCES);

	CHECK_ERR(mq_open_raw(n, O_CREAT | O_RDWR, 0600, -1, 16), EINVAL);
	CHECK_ERR(mq_open_raw(n, O_CREAT | O_RDWR, 0600, 4, -1), EINVAL);
	CHECK_ERR(mq_open_raw(n, O_CREAT | O_RDWR, 0600, 65537, 16), EINVAL);
	if (check_has_cap(CAP_SYS_RESOURCE)) {
		fd = CHECK_OK(mq_open_raw(n, O_CREAT | O_RDWR, 0600, msg_max + 1, 16));
		close(fd);
		syscall(SYS_mq_unlink, n);
	} else {
		CHECK_ERR(mq_open_raw(n, O_CREAT | O_RDWR, 0600, msg_max + 1, 16), EINVAL);
		CHECK_ERR(mq_open_raw(n, O_CREAT | O_RDWR, 0600, 4, msgsize_max + 1), EINVAL);
	}

	/* Mode 0: root needs CAP_DAC_OVERRIDE to open it. */
	fd = CHECK_OK(mq_open_raw(n, O_CREAT | O_RDWR, 0, 4, 16));
	close(fd);
	if (check_has_cap(CAP_DAC_OVERRIDE)) {
		fd = CHECK_OK(mq_open_raw(n, O_RDONLY, 0, 0, 0));
		close(fd);
	} else {
		CHECK_ERR(mq_open_raw(n, O_RDONLY, 0, 0, 0), EACCES);
	}
	syscall(SYS_mq_unlink, n);
}

static void check_messages(void)
{
	const char *n = qname("msgs");
	struct timespec bad = { 0, -1 }, past = { 1, 0 }, soon;
	struct mq_attr a, nb = { O_NONBLOCK, 0, 0, 0 }, ap = { O_APPEND, 0, 0, 0 }, blk = { 0, 0, 0, 0 };
	long long t0;
	int fd, i;
	pid_t pid;

	fd = CHECK_OK(mq_open_raw(n, O_CREAT | O_RDWR, 0600, 4, 16));
	CHECK_ERR(send_raw(fd, "x", MQ_PRIO_MAX, NULL), EINVAL);
	CHECK_ERR(send_raw(fd, "x", 0, &bad), EINVAL);
	CHECK_ERR(send_raw(fd, "seventeen bytes!!", 0, NULL), EMSGSIZE);
	CHECK_OK(send_raw(fd, "a", 1, NULL));
	CHECK_OK(send_raw(fd, "b", 5, NULL));
	CHECK_OK(send_raw(fd, "c", 1, NULL));
	CHECK_OK(send_raw(fd, "d", 0, NULL));
	CHECK_OK(syscall(SYS_mq_getsetattr, fd, NULL, &a));
	CHECK_EQ(a.mq_flags, 0);
	CHECK_EQ(a.mq_maxmsg, 4);
	CHECK_EQ(a.mq_msgsize, 16);
	CHECK_EQ(a.mq_curmsgs, 4);
	CHECK_STR(recv_str(fd, 15, NULL), "(EMSGSIZE)");
	CHECK_STR(recv_str(fd, 16, NULL), "b/5");
	CHECK_STR(recv_str(fd, 16, NULL), "a/1");
	CHECK_STR(recv_str(fd, 16, NULL), "c/1");
	CHECK_STR(recv_str(fd, 256, NULL), "d/0");
	CHECK_STR(recv_str(fd, 16, &past), "(ETIMEDOUT)");
	soon = in_ms(50);
	t0 = check_now_ns();
	CHECK_STR(recv_str(fd, 16, &soon), "(ETIMEDOUT)");
	CHECK(check_now_ns() - t0 >= 40 * 1000000LL);

	for (i = 0; i < 4; i++)
		CHECK_OK(send_raw(fd, "full", 0, NULL));
	CHECK_ERR(send_raw(fd, "x", 0, &past), ETIMEDOUT);
	CHECK_ERR(syscall(SYS_mq_getsetattr, fd, &ap, NULL), EINVAL);
	CHECK_OK(syscall(SYS_mq_getsetattr, fd, &nb, &a));
	CHECK_EQ(a.mq_flags, 0);
	CHECK(fcntl(fd, F_GETFL) & O_NONBLOCK);
	CHECK_ERR(send_raw(fd, "x", 0, NULL), EAGAIN);
	CHECK_OK(syscall(SYS_mq_getsetattr, fd, &blk, &a));
	CHECK_EQ(a.mq_flags, O_NONBLOCK);

	/* A sender waiting for room, woken by a receiver in another process. */
	pid = check_fork();
	if (pid == 0) {
		check_sleep_ms(20);
		CHECK_STR(recv_str(fd, 16, NULL), "full/0");
		check_child_exit();
	}
	CHECK_OK(send_raw(fd, "late", 2, NULL));
	CHECK_CHILD(pid, "exited 0");
	CHECK_STR(recv_str(fd, 16, NULL), "late/2");
	for (i = 0; i < 3; i++)
		CHECK_STR(recv_str(fd, 16, NULL), "full/0");

	/* A receiver waiting for a message, woken by a sender. */
	pid = check_fork();
	if (pid == 0) {
		check_sleep_ms(20);
		CHECK_OK(send_raw(fd, "hello", 3, NULL));
		check_child_exit();
	}
	soon = in_ms(5000);
	CHECK_STR(recv_str(fd, 16, &soon), "hello/3");
	CHECK_CHILD(pid, "exited 0");

	/* Unlinked, the queue lives on in its descriptors. */
	CHECK_OK(syscall(SYS_mq_unlink, n));
	CHECK_ERR(mq_open_raw(n, O_RDWR, 0, 0, 0), ENOENT);
	CHECK_OK(send_raw(fd, "still", 0, NULL));
	CHECK_STR(recv_str(fd, 16, NULL), "still/0");
	close(fd);

	/* Read-only and write-only descriptors. */
	fd = CHECK_OK(mq_open_raw(n, O_CREAT | O_WRONLY, 0600, 4, 16));
	CHECK_STR(recv_str(fd, 16, NULL), "(EBADF)");
	close(fd);
	fd = CHECK_OK(mq_open_raw(n, O_RDONLY, 0, 0, 0));
	CHECK_ERR(send_raw(fd, "x", 0, NULL), EBADF);
	close(fd);
	syscall(SYS_mq_unlink, n);
	fd = CHECK_OK(open("/dev/null", O_WRONLY));
	CHECK_ERR(send_raw(fd, "x", 0, NULL), EBADF);
	close(fd);
}

static volatile int thread_ran;
static int thread_pipe[2];

static void on_message(union sigval v)
{
	char c = (char)v.sival_int;

	thread_ran = 1;
	if (write(thread_pipe[1], &c, 1) != 1)
		thread_ran = 2;
}

static void check_notify(void)
{
	const char *n = qname("notify");
	struct sigevent ev;
	sigset_t set;
	siginfo_t si;
	struct timespec wait = { 5, 0 }, none = { 0, 0 };
	struct pollfd pfd;
	char c = 0;
	int fd, dup_fd, p[2];
	pid_t pid;

	fd = CHECK_OK(mq_open_raw(n, O_CREAT | O_RDWR, 0600, 4, 16));
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = 7;
	CHECK_ERR(syscall(SYS_mq_notify, fd, &ev), EINVAL);
	ev.sigev_notify = SIGEV_THREAD_ID;
	CHECK_ERR(syscall(SYS_mq_notify, fd, &ev), EINVAL);
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = 65;
	CHECK_ERR(syscall(SYS_mq_notify, fd, &ev), EINVAL);
	dup_fd = CHECK_OK(open("/dev/null", O_RDONLY));
	CHECK_ERR(syscall(SYS_mq_notify, dup_fd, NULL), EBADF);
	close(dup_fd);
	CHECK_OK(pipe(p));
	ev.sigev_notify = SIGEV_THREAD;
	ev.sigev_signo = p[0];
	ev.sigev_value.sival_ptr = &ev;
	CHECK_ERR(syscall(SYS_mq_notify, fd, &ev), ENOTSOCK);

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGUSR1;
	ev.sigev_value.sival_int = 4321;
	CHECK_OK(syscall(SYS_mq_notify, fd, &ev));
	CHECK_ERR(syscall(SYS_mq_notify, fd, &ev), EBUSY);
	pid = check_fork();
	if (pid == 0) {
		/* Not this process's registration: it stays. */
		CHECK_OK(syscall(SYS_mq_notify, fd, NULL));
		CHECK_ERR(syscall(SYS_mq_notify, fd, &ev), EBUSY);
		CHECK_OK(send_raw(fd, "wake", 1, NULL));
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(sigtimedwait(&set, &si, &wait), SIGUSR1);
	CHECK_EQ(si.si_code, SI_MESGQ);
	CHECK_EQ(si.si_pid, pid);
	CHECK_EQ(si.si_value.sival_int, 4321);
	/* It fired and went; a message to a queue that is not empty sets
	 * nothing off. */
	CHECK_OK(syscall(SYS_mq_notify, fd, &ev));
	CHECK_OK(send_raw(fd, "more", 1, NULL));
	CHECK_ERR(sigtimedwait(&set, &si, &none), EAGAIN);
	CHECK_STR(recv_str(fd, 16, NULL), "wake/1");
	CHECK_STR(recv_str(fd, 16, NULL), "more/1");
	/* The owner's mq_notify(NULL) removes it. */
	CHECK_OK(syscall(SYS_mq_notify, fd, NULL));
	CHECK_OK(syscall(SYS_mq_notify, fd, &ev));
	/* So does the owner's closing any descriptor of the queue. */
	dup_fd = dup(fd);
	close(dup_fd);
	ev.sigev_notify = SIGEV_NONE;
	CHECK_OK(syscall(SYS_mq_notify, fd, &ev));
	CHECK_OK(send_raw(fd, "quiet", 1, NULL));
	CHECK_ERR(sigtimedwait(&set, &si, &none), EAGAIN);
	CHECK_STR(recv_str(fd, 16, NULL), "quiet/1");
	CHECK_OK(syscall(SYS_mq_notify, fd, &ev));
	CHECK_OK(syscall(SYS_mq_notify, fd, NULL));

	/* glibc's SIGEV_THREAD: its helper thread runs the function. */
	CHECK_OK(pipe(thread_pipe));
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD;
	ev.sigev_notify_function = on_message;
	ev.sigev_value.sival_int = 'T';
	CHECK_OK(mq_notify(fd, &ev));
	CHECK_ERR(mq_notify(fd, &ev), EBUSY);
	CHECK_OK(send_raw(fd, "thread", 1, NULL));
	pfd.fd = thread_pipe[0];
	pfd.events = POLLIN;
	CHECK_EQ(poll(&pfd, 1, 5000), 1);
	CHECK_EQ(read(thread_pipe[0], &c, 1), 1);
	CHECK_EQ(c, 'T');
	CHECK_EQ(thread_ran, 1);
	CHECK_STR(recv_str(fd, 16, NULL), "thread/1");
	close(fd);
	syscall(SYS_mq_unlink, n);
}

static void check_poll(void)
{
	const char *n = qname("poll");
	struct pollfd pfd;
	struct epoll_event e = { EPOLLIN, { 0 } }, got;
	int fd, ep;

	fd = CHECK_OK(mq_open_raw(n, O_CREAT | O_RDWR, 0600, 1, 16));
	pfd.fd = fd;
	pfd.events = POLLIN | POLLOUT;
	CHECK_EQ(poll(&pfd, 1, 0), 1);
	CHECK_EQ(pfd.revents, POLLOUT);
	ep = CHECK_OK(epoll_create1(EPOLL_CLOEXEC));
	CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e));
	CHECK_EQ(epoll_wait(ep, &got, 1, 0), 0);
	CHECK_OK(send_raw(fd, "x", 0, NULL));
	CHECK_EQ(epoll_wait(ep, &got, 1, 1000), 1);
	CHECK_EQ(got.events, EPOLLIN);
	CHECK_EQ(poll(&pfd, 1, 0), 1);
	CHECK_EQ(pfd.revents, POLLIN);
	close(ep);
	close(fd);
	syscall(SYS_mq_unlink, n);
}

static void check_limits(void)
{
	const char *n = qname("limits");
	struct rlimit zero = { 0, 0 };
	long queues_max = sysctl("queues_max"), i;
	char name[80];
	pid_t pid;

	pid = check_fork();
	if (pid == 0) {
		CHECK_OK(setrlimit(RLIMIT_MSGQUEUE, &zero));
		CHECK_ERR(mq_open_raw(n, O_CREAT | O_RDWR, 0600, 1, 1), EMFILE);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	/* queues_max holds without CAP_SYS_RESOURCE; in a container's own
	 * IPC namespace nothing else has queues. */
	if (check_native || check_has_cap(CAP_SYS_RESOURCE) || queues_max > 1024)
		return;
	for (i = 0; i < queues_max; i++) {
		snprintf(name, sizeof(name), "%s-%ld", n, i);
		long fd = CHECK_OK(mq_open_raw(name, O_CREAT | O_RDWR, 0600, 1, 1));
		close(fd);
	}
	CHECK_ERR(mq_open_raw(n, O_CREAT | O_RDWR, 0600, 1, 1), ENOSPC);
	for (i = 0; i < queues_max; i++) {
		snprintf(name, sizeof(name), "%s-%ld", n, i);
		syscall(SYS_mq_unlink, name);
	}
}

/* check_fs checks the mqueue file system mounted at dir. */
static void check_fs(const char *dir)
{
	const char *n = qname("fs");
	char path[256], want[128], buf[256];
	struct sigevent ev;
	struct stat st;
	struct mq_attr a;
	long len;
	int fd, f;

	fd = CHECK_OK(mq_open_raw(n, O_CREAT | O_RDWR, 0640, 4, 16));
	CHECK_OK(send_raw(fd, "hello", 1, NULL));
	CHECK_OK(send_raw(fd, "hi", 2, NULL));
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGUSR2;
	CHECK_OK(syscall(SYS_mq_notify, fd, &ev));
	snprintf(path, sizeof(path), "%s/%s", dir, n);
	f = CHECK_OK(open(path, O_RDWR));
	memset(buf, 0, sizeof(buf));
	len = read(f, buf, sizeof(buf) - 1);
	snprintf(want, sizeof(want), "QSIZE:%-10lu NOTIFY:%-5d SIGNO:%-5d NOTIFY_PID:%-6d\n", 7UL, 0, SIGUSR2,
		 (int)getpid());
	CHECK_EQ(len, (long)strlen(want));
	CHECK_STR(buf, want);
	CHECK_ERR(write(f, "x", 1), EINVAL);
	CHECK_OK(fstat(f, &st));
	CHECK_EQ(st.st_mode, S_IFREG | 0640);
	CHECK_EQ(st.st_size, 80);
	/* The file is the queue: mq_ calls work on it. */
	CHECK_STR(recv_str(f, 16, NULL), "hi/2");
	close(f);
	CHECK_OK(stat(dir, &st));
	CHECK_EQ(st.st_mode, S_IFDIR | S_ISVTX | 0777);
	snprintf(path, sizeof(path), "%s/%s-dir", dir, n);
	CHECK_ERR(mkdir(path, 0755), EPERM);

	/* open(O_CREAT) makes a queue of the default sizes; unlink removes it. */
	snprintf(path, sizeof(path), "%s/%s-made", dir, n);
	f = CHECK_OK(open(path, O_CREAT | O_RDWR, 0600));
	CHECK_OK(syscall(SYS_mq_getsetattr, f, NULL, &a));
	CHECK_EQ(a.mq_maxmsg, sysctl("msg_default"));
	CHECK_EQ(a.mq_msgsize, sysctl("msgsize_default"));
	close(f);
	f = CHECK_OK(mq_open_raw(qname("fs-made"), O_RDWR, 0, 0, 0));
	close(f);
	CHECK_OK(unlink(path));
	CHECK_ERR(mq_open_raw(qname("fs-made"), O_RDWR, 0, 0, 0), ENOENT);
	close(fd);
	CHECK_OK(syscall(SYS_mq_unlink, n));
	snprintf(path, sizeof(path), "%s/%s", dir, n);
	CHECK_ERR(open(path, O_RDONLY), ENOENT);
}

int main(int argc, char **argv)
{
	pid_t pid;

	check_init(argc, argv);
	check_open_rules();
	check_messages();
	check_notify();
	check_poll();
	check_limits();
	if (access("/dev/mqueue", F_OK) == 0) {
		check_fs("/dev/mqueue");
	} else if (check_native) {
		/* No mqueue mount on the host: one in a mount namespace of a
		 * child's own, gone with it. */
		pid = check_fork();
		if (pid == 0) {
			CHECK_OK(unshare(CLONE_NEWNS));
			CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
			CHECK_OK(mount("mqueue", "/tmp", "mqueue", 0, NULL));
			check_fs("/tmp");
			check_child_exit();
		}
		CHECK_CHILD(pid, "exited 0");
	} else {
		CHECK(!"the container has /dev/mqueue");
	}
	return check_finish();
}
