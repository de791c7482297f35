/*
 * proc_pidfd: file descriptors that refer to processes.
 *
 * Checks: pidfd_open's pidfd (close-on-exec, O_RDWR, O_NONBLOCK with
 * PIDFD_NONBLOCK, "anon_inode:[pidfd]" in /proc/self/fd, the "Pid:" line
 * of its fdinfo), its EINVAL for unknown flags, a pid of 0 or below and a
 * thread that leads no process (ENOENT since Linux 6.9), ESRCH for no such process; read and write
 * on it fail with EINVAL; poll finds it readable once the process has
 * ended, not before; waitid(P_PIDFD) waits for that child alone (ECHILD
 * for a process that is not a child, EBADF for a descriptor that is no
 * pidfd, EAGAIN through a PIDFD_NONBLOCK pidfd without
 * WNOHANG while the child runs); pidfd_send_signal's signal (SI_USER from
 * the sender, or the caller's siginfo, whose SI_USER code another process
 * may not forge: EPERM; a signo that differs: EINVAL), EINVAL for flags,
 * EBADF for a descriptor that is not a pidfd, ESRCH once the process is
 * reaped, a zombie still signalled; pidfd_getfd's copy of a descriptor of
 * another process (the same open file, close-on-exec), EBADF for one the
 * process lacks, EINVAL for flags; clone's CLONE_PIDFD (the pidfd where
 * the parent's tid would go, EINVAL with CLONE_PARENT_SETTID) and
 * clone3's.
 */
// covers: pidfd_open pidfd_send_signal pidfd_getfd waitid clone clone3
#include "check.h"

#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>

#ifndef PIDFD_NONBLOCK
#define PIDFD_NONBLOCK O_NONBLOCK
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static int pidfd_open(pid_t pid, unsigned flags)
{
	return syscall(SYS_pidfd_open, pid, flags);
}

static int pidfd_send_signal(int fd, int sig, siginfo_t *info, unsigned flags)
{
	return syscall(SYS_pidfd_send_signal, fd, sig, info, flags);
}

static int pidfd_getfd(int fd, int target, unsigned flags)
{
	return syscall(SYS_pidfd_getfd, fd, target, flags);
}

/* readable is poll's verdict on fd, without waiting. */
static int readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	CHECK_OK(poll(&p, 1, 0));
	return p.revents;
}

/* paused_child forks a child that waits until its parent writes to it;
 * it exits with code. */
static pid_t paused_child(int *go, int code)
{
	int p[2];

	CHECK_OK(pipe(p));
	pid_t pid = check_fork();
	if (pid == 0) {
		char c;
		close(p[1]);
		read(p[0], &c, 1);
		_exit(code);
	}
	close(p[0]);
	*go = p[1];
	return pid;
}

static void *idle_thread(void *arg)
{
	int *tid = arg;

	*tid = syscall(SYS_gettid);
	for (;;)
		pause();
	return NULL;
}

static void test_open(void)
{
	char path[64], link[64], buf[512];
	int fd = CHECK_OK(pidfd_open(getpid(), 0));

	CHECK_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK), O_RDWR);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	long n = CHECK_OK(readlink(path, link, sizeof(link) - 1));
	link[n > 0 ? n : 0] = '\0';
	CHECK_STR(link, "anon_inode:[pidfd]");
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	int info = CHECK_OK(open(path, O_RDONLY));
	n = CHECK_OK(read(info, buf, sizeof(buf) - 1));
	buf[n > 0 ? n : 0] = '\0';
	close(info);
	char want[32];
	snprintf(want, sizeof(want), "\nPid:\t%d\n", getpid());
	CHECK(strstr(buf, want) != NULL);
	CHECK_ERR(read(fd, buf, 1), EINVAL);
	CHECK_ERR(write(fd, "x", 1), EINVAL);
	CHECK_EQ(readable(fd), 0);
	close(fd);

	fd = CHECK_OK(pidfd_open(getpid(), PIDFD_NONBLOCK));
	CHECK_EQ(fcntl(fd, F_GETFL) & (O_ACCMODE | O_NONBLOCK), O_RDWR | O_NONBLOCK);
	close(fd);

	CHECK_ERR(pidfd_open(getpid(), 1), EINVAL);
	CHECK_ERR(pidfd_open(0, 0), EINVAL);
	CHECK_ERR(pidfd_open(-1, 0), EINVAL);
	CHECK_ERR(pidfd_open(0x3ffffff0, 0), ESRCH);

	/* A thread that leads no process has no pidfd of its own: EINVAL
	 * until Linux 6.9 (moat's), ENOENT since. */
	pthread_t th;
	volatile int tid = 0;
	/* It blocks every signal: those sent to the process later are for
	 * the main thread. */
	sigset_t all, old;
	sigfillset(&all);
	CHECK_OK(pthread_sigmask(SIG_BLOCK, &all, &old));
	CHECK_OK(pthread_create(&th, NULL, idle_thread, (void *)&tid));
	CHECK_OK(pthread_sigmask(SIG_SETMASK, &old, NULL));
	while (tid == 0)
		check_sleep_ms(1);
	CHECK_EQ(pidfd_open(tid, 0), -1);
	CHECK(errno == EINVAL || errno == ENOENT);
}

static void test_wait_and_poll(void)
{
	int go;
	pid_t pid = paused_child(&go, 7);
	int fd = CHECK_OK(pidfd_open(pid, 0));
	int nb = CHECK_OK(pidfd_open(pid, PIDFD_NONBLOCK));
	siginfo_t si;

	CHECK_EQ(readable(fd), 0);
	memset(&si, 0xff, sizeof(si));
	CHECK_OK(waitid(P_PIDFD, fd, &si, WEXITED | WNOHANG));
	CHECK_EQ(si.si_pid, 0);
	CHECK_ERR(waitid(P_PIDFD, nb, &si, WEXITED), EAGAIN);
	CHECK_ERR(waitid(P_PIDFD, 999, &si, WEXITED), EBADF);
	CHECK_ERR(waitid(P_PIDFD, 0, &si, WEXITED), EBADF); /* stdin */
	int self = CHECK_OK(pidfd_open(getpid(), 0));
	CHECK_ERR(waitid(P_PIDFD, self, &si, WEXITED), ECHILD);
	close(self);

	/* Another child ends first: waitid(P_PIDFD) is not its. */
	pid_t other = check_fork();
	if (other == 0)
		_exit(1);
	CHECK_OK(write(go, "x", 1));
	close(go);
	struct pollfd p = { .fd = fd, .events = POLLIN };
	CHECK_EQ(poll(&p, 1, 5000), 1);
	CHECK_EQ(p.revents, POLLIN);
	CHECK_OK(waitid(P_PIDFD, fd, &si, WEXITED | WNOWAIT));
	CHECK_EQ(si.si_pid, pid);
	CHECK_EQ(si.si_code, CLD_EXITED);
	CHECK_EQ(si.si_status, 7);
	CHECK_OK(waitid(P_PIDFD, nb, &si, WEXITED));
	CHECK_EQ(si.si_pid, pid);
	CHECK_EQ(si.si_status, 7);
	CHECK_ERR(waitid(P_PIDFD, fd, &si, WEXITED), ECHILD);
	CHECK(readable(fd) & POLLIN);
	CHECK_CHILD(other, "exited 1");
	close(fd);
	close(nb);
}

static volatile sig_atomic_t got_sig, got_code, got_pid, got_value;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	got_sig = sig;
	got_code = si->si_code;
	got_pid = si->si_pid;
	got_value = si->si_value.sival_int;
}

static void test_send_signal(void)
{
	struct sigaction sa;
	sigset_t usr1;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO;
	CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	CHECK_OK(sigprocmask(SIG_BLOCK, &usr1, NULL));

	/* The child reports each signal it takes on a pipe. */
	int rep[2];
	CHECK_OK(pipe(rep));
	pid_t parent = getpid();
	pid_t pid = check_fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		for (int i = 0; i < 2; i++) {
			got_sig = 0;
			while (got_sig == 0)
				sigsuspend(&none);
			int r[4] = { got_sig, got_code, got_pid, got_value };
			CHECK_EQ(write(rep[1], r, sizeof(r)), sizeof(r));
		}
		(void)parent;
		check_child_exit();
	}
	int fd = CHECK_OK(pidfd_open(pid, 0));
	int r[4];

	CHECK_OK(pidfd_send_signal(fd, 0, NULL, 0));
	CHECK_ERR(pidfd_send_signal(fd, SIGUSR1, NULL, 0x100), EINVAL); /* 1, 2, 4 since 6.9 */
	CHECK_ERR(pidfd_send_signal(0, SIGUSR1, NULL, 0), EBADF);
	CHECK_ERR(pidfd_send_signal(999, SIGUSR1, NULL, 0), EBADF);
	CHECK_ERR(pidfd_send_signal(fd, 99, NULL, 0), EINVAL);
	CHECK_OK(pidfd_send_signal(fd, SIGUSR1, NULL, 0));
	CHECK_EQ(read(rep[0], r, sizeof(r)), sizeof(r));
	CHECK_EQ(r[0], SIGUSR1);
	CHECK_EQ(r[1], SI_USER);
	CHECK_EQ(r[2], getpid());

	siginfo_t si;
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGUSR2;
	si.si_code = SI_QUEUE;
	CHECK_ERR(pidfd_send_signal(fd, SIGUSR1, &si, 0), EINVAL);
	si.si_signo = SIGUSR1;
	si.si_code = SI_USER;
	CHECK_ERR(pidfd_send_signal(fd, SIGUSR1, &si, 0), EPERM);
	si.si_code = SI_QUEUE;
	si.si_pid = 4242;
	si.si_value.sival_int = 77;
	CHECK_OK(pidfd_send_signal(fd, SIGUSR1, &si, 0));
	CHECK_EQ(read(rep[0], r, sizeof(r)), sizeof(r));
	CHECK_EQ(r[0], SIGUSR1);
	CHECK_EQ(r[1], SI_QUEUE);
	CHECK_EQ(r[2], 4242);
	CHECK_EQ(r[3], 77);

	/* A zombie is still signalled; a reaped process is gone. */
	siginfo_t w;
	CHECK_OK(waitid(P_PID, pid, &w, WEXITED | WNOWAIT));
	CHECK_OK(pidfd_send_signal(fd, SIGUSR1, NULL, 0));
	CHECK_CHILD(pid, "exited 0");
	CHECK_ERR(pidfd_send_signal(fd, SIGUSR1, NULL, 0), ESRCH);
	CHECK_ERR(pidfd_send_signal(fd, 0, NULL, 0), ESRCH);
	close(fd);
	close(rep[0]);
	close(rep[1]);
	CHECK_OK(sigprocmask(SIG_UNBLOCK, &usr1, NULL));

	/* A pidfd of itself: the caller may name its own siginfo. */
	fd = CHECK_OK(pidfd_open(getpid(), 0));
	CHECK_OK(sigprocmask(SIG_BLOCK, &usr1, NULL));
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGUSR1;
	si.si_code = SI_USER;
	si.si_pid = 99;
	got_sig = 0;
	CHECK_OK(pidfd_send_signal(fd, SIGUSR1, &si, 0));
	CHECK_OK(sigprocmask(SIG_UNBLOCK, &usr1, NULL));
	CHECK_EQ(got_sig, SIGUSR1);
	CHECK_EQ(got_code, SI_USER);
	CHECK_EQ(got_pid, 99);
	close(fd);
	signal(SIGUSR1, SIG_DFL);
}

static void test_getfd(void)
{
	int p[2], ready[2];

	CHECK_OK(pipe(ready));
	pid_t pid = check_fork();
	if (pid == 0) {
		/* Its pipe's ends at known numbers, then it waits to be told. */
		CHECK_OK(pipe(p));
		CHECK_EQ(dup2(p[0], 40), 40);
		CHECK_EQ(dup2(p[1], 41), 41);
		CHECK_OK(write(ready[1], "r", 1));
		char c = 0;
		CHECK_EQ(read(40, &c, 1), 1);
		CHECK_EQ(c, 'g');
		check_child_exit();
	}
	char c;
	CHECK_EQ(read(ready[0], &c, 1), 1);
	int fd = CHECK_OK(pidfd_open(pid, 0));
	CHECK_ERR(pidfd_getfd(fd, 41, 1), EINVAL);
	CHECK_ERR(pidfd_getfd(fd, 77, 0), EBADF);
	CHECK_ERR(pidfd_getfd(0, 41, 0), EBADF);
	int w = CHECK_OK(pidfd_getfd(fd, 41, 0));
	CHECK_EQ(fcntl(w, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(w, F_GETFL) & O_ACCMODE, O_WRONLY);
	CHECK_EQ(write(w, "g", 1), 1); /* into the child's own pipe */
	close(w);
	CHECK_CHILD(pid, "exited 0");
	CHECK_ERR(pidfd_getfd(fd, 41, 0), ESRCH);
	close(fd);
	close(ready[0]);
	close(ready[1]);
}

static void test_clone(void)
{
	int pidfd = -1;

	fflush(NULL);
	long r = syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, NULL, &pidfd, NULL, 0);
	if (r == 0)
		syscall(SYS_exit_group, 3);
	CHECK(r > 0);
	CHECK(pidfd >= 0);
	CHECK_EQ(fcntl(pidfd, F_GETFD), FD_CLOEXEC);
	siginfo_t si;
	CHECK_OK(waitid(P_PIDFD, pidfd, &si, WEXITED));
	CHECK_EQ(si.si_pid, r);
	CHECK_EQ(si.si_status, 3);
	close(pidfd);

	CHECK_ERR(syscall(SYS_clone, CLONE_PIDFD | CLONE_PARENT_SETTID | SIGCHLD, NULL, &pidfd, NULL, 0), EINVAL);

	struct clone_args ca;
	int pidfd3 = -1;
	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_PIDFD;
	ca.pidfd = (unsigned long)&pidfd3;
	ca.exit_signal = SIGCHLD;
	fflush(NULL);
	r = syscall(SYS_clone3, &ca, sizeof(ca));
	if (r == 0)
		syscall(SYS_exit_group, 4);
	CHECK(r > 0);
	CHECK(pidfd3 >= 0);
	CHECK_OK(waitid(P_PIDFD, pidfd3, &si, WEXITED));
	CHECK_EQ(si.si_pid, r);
	CHECK_EQ(si.si_status, 4);
	close(pidfd3);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_open();
	test_wait_and_poll();
	test_send_signal();
	test_getfd();
	test_clone();
	return check_finish();
}
