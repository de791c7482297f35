/*
 * file_locks: advisory locks, as make's job server, sqlite, git, dpkg and
 * every "one instance at a time" daemon take them.
 *
 * Checks, on a file in a fresh directory under /tmp:
 * flock(2): shared locks coexist, an exclusive one conflicts (EWOULDBLOCK
 * with LOCK_NB) across opens of the same file but not across dup or fork of
 * one open; the last close of the open releases it; a conversion that fails
 * with LOCK_NB has dropped the old lock; a blocked LOCK_EX is woken by the
 * unlock, ends with EINTR when a handler without SA_RESTART runs and is
 * restarted when it has SA_RESTART; EINVAL for a bad operation (before
 * EBADF), EBADF for an O_PATH fd, LOCK_MAND ignored.
 * fcntl record locks: EAGAIN on conflict, read locks shared, a lock of the
 * other type splits the owner's lock and one of the same type merges (seen
 * through F_GETLK from a child), l_whence SEEK_CUR and SEEK_END, l_len 0 to
 * EOF and negative, EINVAL and EOVERFLOW ranges, EBADF for the wrong access
 * mode, F_GETLK's answer (F_UNLCK and the request untouched, or the first
 * conflicting lock with the holder's pid), locks not inherited by fork and
 * dropped by the close of any fd of the file, F_SETLKW woken by the unlock
 * and EDEADLK for the second of two processes that would wait for each
 * other. OFD locks: l_pid must be 0, they conflict with the same process's
 * POSIX locks, F_GETLK reports their pid as -1, a dup shares them, closing
 * another fd leaves them and the last close drops them. /proc/locks lists
 * a POSIX, an OFDLCK and a FLOCK lock in Linux's format.
 */
// covers: flock fcntl
// places: bind root
#include "check.h"

#include <sys/file.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <sys/stat.h>

#ifndef LOCK_MAND
#define LOCK_MAND 32
#endif

static char scratch[64], path[96];

static int open_file(int flags)
{
	return CHECK_OK(open(path, flags | O_CREAT, 0644));
}

static struct flock lk(short type, short whence, off_t start, off_t len)
{
	struct flock fl;

	memset(&fl, 0, sizeof(fl));
	fl.l_type = type;
	fl.l_whence = whence;
	fl.l_start = start;
	fl.l_len = len;
	return fl;
}

static int setlk(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = lk(type, SEEK_SET, start, len);

	return fcntl(fd, cmd, &fl);
}

/* getlk returns F_GETLK's answer for a lock of type over [start, +len). */
static struct flock getlk(int fd, int cmd, short type, off_t start, off_t len)
{
	struct flock fl = lk(type, SEEK_SET, start, len);

	if (fcntl(fd, cmd, &fl) != 0)
		check_fail(__FILE__, __LINE__, "F_GETLK: %s", check_errname(errno));
	return fl;
}

static void test_flock(void)
{
	int a = open_file(O_RDWR), b = open_file(O_RDONLY), c = open_file(O_RDONLY);
	int d;
	pid_t pid;

	CHECK_OK(flock(a, LOCK_SH | LOCK_NB));
	CHECK_OK(flock(b, LOCK_SH | LOCK_NB));
	CHECK_ERR(flock(c, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	/* a's failed upgrade drops its shared lock: b alone can upgrade. */
	CHECK_ERR(flock(a, LOCK_EX | LOCK_NB), EWOULDBLOCK);
	CHECK_OK(flock(b, LOCK_EX | LOCK_NB));
	CHECK_ERR(flock(a, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	/* A dup and a forked child share the open's lock. */
	d = dup(b);
	CHECK_OK(flock(d, LOCK_EX | LOCK_NB));
	pid = check_fork();
	if (pid == 0) {
		CHECK_OK(flock(b, LOCK_EX | LOCK_NB));
		CHECK_ERR(flock(c, LOCK_SH | LOCK_NB), EWOULDBLOCK);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	close(b);
	CHECK_ERR(flock(c, LOCK_SH | LOCK_NB), EWOULDBLOCK);
	close(d); /* the open's last fd */
	CHECK_OK(flock(c, LOCK_SH | LOCK_NB));
	CHECK_OK(flock(c, LOCK_UN));
	CHECK_OK(flock(c, LOCK_UN)); /* nothing to drop */

	CHECK_ERR(flock(c, 0), EINVAL);
	CHECK_ERR(flock(c, LOCK_SH | LOCK_EX), EINVAL);
	CHECK_ERR(flock(-1, LOCK_NB), EINVAL);
	CHECK_ERR(flock(-1, LOCK_SH), EBADF);
	CHECK_EQ(flock(c, LOCK_MAND | LOCK_EX), 0);
	d = CHECK_OK(open(path, O_PATH));
	CHECK_ERR(flock(d, LOCK_SH), EBADF);
	CHECK_ERR(flock(d, LOCK_UN), EBADF);
	close(d);
	close(a);
	close(c);
}

static volatile sig_atomic_t handled;

static void on_alarm(int sig)
{
	(void)sig;
	handled++;
}

/* hold_lock forks a child that takes an exclusive flock on a fresh open
 * and keeps it for ms milliseconds (forever if ms is 0); it returns once
 * the lock is held. */
static pid_t hold_lock(long ms)
{
	int p[2];
	char x;
	pid_t pid;

	CHECK_OK(pipe(p));
	pid = check_fork();
	if (pid == 0) {
		int fd = open_file(O_RDWR);

		CHECK_OK(flock(fd, LOCK_EX));
		CHECK_EQ(write(p[1], "x", 1), 1);
		if (ms)
			check_sleep_ms(ms);
		else
			pause();
		check_child_exit();
	}
	CHECK_EQ(read(p[0], &x, 1), 1);
	close(p[0]);
	close(p[1]);
	return pid;
}

static void test_flock_wait(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 10000 }, { 0, 10000 } };
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	long long t0;
	int fd = open_file(O_RDWR);
	pid_t pid;

	/* Woken by the holder's exit. */
	pid = hold_lock(100);
	t0 = check_now_ns();
	CHECK_OK(flock(fd, LOCK_EX));
	CHECK(check_now_ns() - t0 >= 50000000LL);
	CHECK_OK(flock(fd, LOCK_UN));
	CHECK_CHILD(pid, "exited 0");

	/* EINTR with a plain handler. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	CHECK_OK(sigaction(SIGALRM, &sa, NULL));
	pid = hold_lock(0);
	handled = 0;
	CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
	CHECK_ERR(flock(fd, LOCK_EX), EINTR);
	setitimer(ITIMER_REAL, &off, NULL);
	CHECK(handled > 0);
	kill(pid, SIGKILL);
	CHECK_CHILD(pid, "killed by SIGKILL");

	/* Restarted with SA_RESTART, until the holder goes. */
	sa.sa_flags = SA_RESTART;
	CHECK_OK(sigaction(SIGALRM, &sa, NULL));
	pid = hold_lock(100);
	handled = 0;
	CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
	CHECK_OK(flock(fd, LOCK_EX));
	setitimer(ITIMER_REAL, &off, NULL);
	CHECK(handled > 0);
	CHECK_CHILD(pid, "exited 0");
	signal(SIGALRM, SIG_DFL);
	close(fd);
}

static void test_records(void)
{
	int fd = open_file(O_RDWR), ro = open_file(O_RDONLY), wo, other;
	struct flock fl;
	pid_t pid, me = getpid();

	CHECK_EQ(ftruncate(fd, 1000), 0);
	CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, 0, 100));
	CHECK_OK(setlk(fd, F_SETLK, F_RDLCK, 10, 10));
	/* The owner's own locks never conflict with it. */
	fl = getlk(fd, F_GETLK, F_WRLCK, 0, 0);
	CHECK_EQ(fl.l_type, F_UNLCK);
	CHECK_EQ(fl.l_whence, SEEK_SET);
	CHECK_EQ(fl.l_start, 0);
	CHECK_EQ(fl.l_len, 0);
	pid = check_fork();
	if (pid == 0) {
		/* Not inherited: the parent's locks conflict with the child. */
		fl = getlk(fd, F_GETLK, F_WRLCK, 0, 0);
		CHECK_EQ(fl.l_type, F_WRLCK);
		CHECK_EQ(fl.l_start, 0);
		CHECK_EQ(fl.l_len, 10); /* split by the read lock */
		CHECK_EQ(fl.l_pid, me);
		CHECK_EQ(fl.l_whence, SEEK_SET);
		fl = getlk(fd, F_GETLK, F_WRLCK, 10, 1);
		CHECK_EQ(fl.l_type, F_RDLCK);
		CHECK_EQ(fl.l_start, 10);
		CHECK_EQ(fl.l_len, 10);
		fl = getlk(fd, F_GETLK, F_RDLCK, 10, 10);
		CHECK_EQ(fl.l_type, F_UNLCK); /* readers share */
		CHECK_OK(setlk(fd, F_SETLK, F_RDLCK, 15, 1));
		fl = getlk(fd, F_GETLK, F_WRLCK, 20, 1);
		CHECK_EQ(fl.l_start, 20);
		CHECK_EQ(fl.l_len, 80);
		CHECK_ERR(setlk(fd, F_SETLK, F_RDLCK, 99, 1), EAGAIN);
		CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, 100, 1));
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	/* The same type again merges: [0, 100) in one piece. */
	CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, 10, 10));
	/* Adjacent locks of one type merge too. */
	CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, 100, 50));
	pid = check_fork();
	if (pid == 0) {
		fl = getlk(fd, F_GETLK, F_RDLCK, 0, 0);
		CHECK_EQ(fl.l_type, F_WRLCK);
		CHECK_EQ(fl.l_start, 0);
		CHECK_EQ(fl.l_len, 150);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_OK(setlk(fd, F_SETLK, F_UNLCK, 0, 0));

	/* SEEK_CUR, SEEK_END, to EOF and backwards. */
	CHECK_EQ(sys_lseek(fd, 500, SEEK_SET), 500);
	fl = lk(F_WRLCK, SEEK_CUR, -100, -50);
	CHECK_OK(fcntl(fd, F_SETLK, &fl));
	fl = lk(F_RDLCK, SEEK_END, 0, 0);
	CHECK_OK(fcntl(fd, F_SETLK, &fl));
	pid = check_fork();
	if (pid == 0) {
		fl = getlk(fd, F_GETLK, F_RDLCK, 0, 1000);
		CHECK_EQ(fl.l_type, F_WRLCK);
		CHECK_EQ(fl.l_start, 350);
		CHECK_EQ(fl.l_len, 50);
		fl = getlk(fd, F_GETLK, F_WRLCK, 600, 1 << 20);
		CHECK_EQ(fl.l_type, F_RDLCK);
		CHECK_EQ(fl.l_start, 1000);
		CHECK_EQ(fl.l_len, 0); /* to EOF */
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	/* Bad requests. */
	CHECK_ERR(setlk(fd, F_SETLK, F_RDLCK, 5, -6), EINVAL);
	CHECK_ERR(setlk(fd, F_SETLK, F_RDLCK, -1, 1), EINVAL);
	CHECK_ERR(setlk(fd, F_SETLK, F_RDLCK, 0x7fffffffffffffffLL, 2), EOVERFLOW);
	fl = lk(F_RDLCK, 3, 0, 0);
	CHECK_ERR(fcntl(fd, F_SETLK, &fl), EINVAL);
	CHECK_ERR(setlk(fd, F_SETLK, 7, 0, 1), EINVAL);
	fl = lk(F_UNLCK, SEEK_SET, 0, 1);
	CHECK_ERR(fcntl(fd, F_GETLK, &fl), EINVAL);
	CHECK_ERR(setlk(ro, F_SETLK, F_WRLCK, 0, 1), EBADF);
	wo = open_file(O_WRONLY);
	CHECK_ERR(setlk(wo, F_SETLK, F_RDLCK, 0, 1), EBADF);
	CHECK_OK(setlk(ro, F_SETLK, F_UNLCK, 0, 1));
	CHECK_ERR(fcntl(fd, F_SETLK, (struct flock *)8), EFAULT);
	other = CHECK_OK(open(path, O_PATH));
	CHECK_ERR(setlk(other, F_SETLK, F_UNLCK, 0, 1), EBADF);
	close(other);

	/* The close of any fd of the file drops the process's locks. */
	CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, 0, 0));
	close(wo);
	pid = check_fork();
	if (pid == 0) {
		CHECK_EQ(getlk(fd, F_GETLK, F_WRLCK, 0, 0).l_type, F_UNLCK);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	close(ro);
	close(fd);
}

static void test_record_wait(void)
{
	int fd = open_file(O_RDWR), p[2], status, parent_dead, child_dead;
	long long t0;
	char x;
	pid_t pid;

	/* F_SETLKW is woken by the holder's unlock. */
	CHECK_OK(pipe(p));
	pid = check_fork();
	if (pid == 0) {
		CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, 0, 1));
		CHECK_EQ(write(p[1], "x", 1), 1);
		check_sleep_ms(100);
		CHECK_OK(setlk(fd, F_SETLK, F_UNLCK, 0, 1));
		check_sleep_ms(1000);
		check_child_exit();
	}
	CHECK_EQ(read(p[0], &x, 1), 1);
	t0 = check_now_ns();
	CHECK_OK(setlk(fd, F_SETLKW, F_WRLCK, 0, 1));
	CHECK(check_now_ns() - t0 >= 50000000LL);
	CHECK(check_now_ns() - t0 < 900000000LL);
	CHECK_OK(setlk(fd, F_SETLK, F_UNLCK, 0, 1));
	CHECK_CHILD(pid, "exited 0");

	/* Two processes each waiting for the other's lock: the second to
	 * wait gets EDEADLK, the first its lock when the second lets go. */
	CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, 0, 1));
	pid = check_fork();
	if (pid == 0) {
		int r;

		CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, 1, 1));
		CHECK_EQ(write(p[1], "x", 1), 1);
		r = setlk(fd, F_SETLKW, F_WRLCK, 0, 1);
		_exit(r == 0 ? 0 : errno == EDEADLK ? 2 : 1);
	}
	CHECK_EQ(read(p[0], &x, 1), 1);
	errno = 0;
	parent_dead = setlk(fd, F_SETLKW, F_WRLCK, 1, 1) != 0 && errno == EDEADLK;
	if (parent_dead)
		CHECK_OK(setlk(fd, F_SETLK, F_UNLCK, 0, 1));
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	child_dead = WIFEXITED(status) && WEXITSTATUS(status) == 2;
	CHECK_EQ(parent_dead + child_dead, 1);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) != 1);
	close(p[0]);
	close(p[1]);
	close(fd);
}

static void test_ofd(void)
{
	int fd = open_file(O_RDWR), other = open_file(O_RDWR), d;
	struct flock fl = lk(F_WRLCK, SEEK_SET, 0, 10);

	fl.l_pid = 1;
	CHECK_ERR(fcntl(fd, F_OFD_SETLK, &fl), EINVAL);
	CHECK_ERR(fcntl(fd, F_OFD_GETLK, &fl), EINVAL);
	CHECK_OK(setlk(fd, F_OFD_SETLK, F_WRLCK, 0, 10));
	/* The process's own POSIX lock is another owner's. */
	CHECK_ERR(setlk(other, F_SETLK, F_RDLCK, 5, 1), EAGAIN);
	CHECK_ERR(setlk(other, F_OFD_SETLK, F_RDLCK, 5, 1), EAGAIN);
	fl = getlk(other, F_GETLK, F_RDLCK, 0, 0);
	CHECK_EQ(fl.l_type, F_WRLCK);
	CHECK_EQ(fl.l_pid, -1);
	CHECK_EQ(fl.l_len, 10);
	fl = getlk(other, F_OFD_GETLK, F_RDLCK, 0, 0);
	CHECK_EQ(fl.l_pid, -1);
	CHECK_EQ(getlk(fd, F_OFD_GETLK, F_WRLCK, 0, 0).l_type, F_UNLCK);
	CHECK_OK(setlk(other, F_SETLK, F_RDLCK, 20, 1));
	CHECK_ERR(setlk(fd, F_OFD_SETLK, F_WRLCK, 20, 1), EAGAIN);

	/* A dup shares the lock; closing another fd leaves it; the last
	 * close drops it. */
	d = dup(fd);
	close(other);
	other = open_file(O_RDWR);
	CHECK_ERR(setlk(other, F_OFD_SETLK, F_RDLCK, 5, 1), EAGAIN);
	close(fd);
	CHECK_ERR(setlk(other, F_OFD_SETLK, F_RDLCK, 5, 1), EAGAIN);
	close(d);
	CHECK_OK(setlk(other, F_OFD_SETLK, F_RDLCK, 5, 1));
	close(other);
}

/* has_line reports whether /proc/locks has a line whose fields after the
 * number are want ("POSIX  ADVISORY  WRITE 12 00:2a:123 0 EOF"). */
static int has_line(const char *want)
{
	static char buf[16384];
	char *line, *end;
	long n;
	int fd = open("/proc/locks", O_RDONLY);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return 0;
	buf[n] = '\0';
	for (line = buf; *line; line = end + (*end == '\n')) {
		char *p = strchr(line, ':');

		end = strchrnul(line, '\n');
		if (p && p < end && strncmp(p + 2, want, strlen(want)) == 0 &&
		    p + 2 + strlen(want) == end)
			return 1;
	}
	return 0;
}

static void test_proc_locks(void)
{
	int fd = open_file(O_RDWR), ofd = open_file(O_RDWR), fl = open_file(O_RDONLY);
	char want[160], dev[64];
	struct stat st;

	CHECK_OK(fstat(fd, &st));
	snprintf(dev, sizeof(dev), "%02x:%02x:%lu", major(st.st_dev),
		 minor(st.st_dev), (unsigned long)st.st_ino);
	CHECK_OK(setlk(fd, F_SETLK, F_WRLCK, 0, 0));
	CHECK_OK(flock(fl, LOCK_SH));
	snprintf(want, sizeof(want), "POSIX  ADVISORY  WRITE %d %s 0 EOF", getpid(), dev);
	if (!has_line(want))
		check_fail(__FILE__, __LINE__, "no \"%s\" in /proc/locks", want);
	CHECK_OK(setlk(fd, F_SETLK, F_UNLCK, 0, 0));
	CHECK_OK(setlk(ofd, F_OFD_SETLK, F_RDLCK, 10, 5));
	snprintf(want, sizeof(want), "OFDLCK ADVISORY  READ -1 %s 10 14", dev);
	if (!has_line(want))
		check_fail(__FILE__, __LINE__, "no \"%s\" in /proc/locks", want);
	snprintf(want, sizeof(want), "FLOCK  ADVISORY  READ %d %s 0 EOF", getpid(), dev);
	if (!has_line(want))
		check_fail(__FILE__, __LINE__, "no \"%s\" in /proc/locks", want);
	close(fd);
	close(ofd);
	close(fl);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	strcpy(scratch, "/tmp/moat-locks-XXXXXX");
	if (!mkdtemp(scratch)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	snprintf(path, sizeof(path), "%s/file", scratch);

	test_flock();
	test_flock_wait();
	test_records();
	test_record_wait();
	test_ofd();
	test_proc_locks();

	unlink(path);
	rmdir(scratch);
	return check_finish();
}
