/*
 * timer_basic: timers that fire later, and signals read as data.
 *
 * Event loops arm timerfds and read signalfds, older programs use alarm and
 * setitimer (sleep(1) in shells, timeouts in daemons), profilers use
 * ITIMER_PROF; all of them count on the expiration arriving once the time
 * has passed and not before, and on the remaining time being reported.
 * Checks: timerfd_create (CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME,
 * TFD_NONBLOCK, TFD_CLOEXEC; EINVAL for other clocks and flags); a one-shot
 * timerfd reads 1 after its time and is then disarmed, a periodic one reads
 * the number of periods passed; TFD_TIMER_ABSTIME, in the future and in the
 * past; timerfd_gettime's time left and interval, timerfd_settime's old
 * value; EAGAIN before expiry with TFD_NONBLOCK, poll readiness after; EINVAL
 * for short reads, bad flags, bad times and non-timerfd fds. setitimer
 * ITIMER_REAL delivers SIGALRM after its time (and periodically), getitimer
 * and the old value give the time left, ITIMER_VIRTUAL delivers SIGVTALRM
 * after user CPU time; EINVAL for a bad timer or time. alarm returns the
 * seconds left of the previous alarm, rounded (and at least 1), shares
 * ITIMER_REAL, alarm(0) cancels. clock_nanosleep: relative and absolute
 * sleeps last long enough, an absolute time in the past returns at once,
 * EOPNOTSUPP for a thread CPU clock, EINVAL for an unknown clock or a bad
 * time. times counts
 * this process's CPU ticks and, once reaped (not before), its children's.
 * signalfd4: a blocked signal is read as a signalfd_siginfo (ssi_signo,
 * ssi_code, ssi_pid, ssi_uid, ssi_int) and is then no longer pending; poll
 * sees it; several at once; the mask can be changed on the same fd;
 * EAGAIN when empty, EINVAL for short reads, bad flags and bad fds; the old
 * signalfd (no flags: blocking, no close-on-exec) reads the same.
 */
// covers: timerfd_create timerfd_settime timerfd_gettime setitimer getitimer alarm clock_nanosleep times signalfd signalfd4
#include "check.h"

#include <poll.h>
#include <stdint.h>
#include <sys/signalfd.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/times.h>

#define MS 1000000LL

static long long ts_ns(const struct timespec *ts)
{
	return ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static long long tv_us(const struct timeval *tv)
{
	return tv->tv_sec * 1000000LL + tv->tv_usec;
}

static struct itimerspec its(long long value_ns, long long interval_ns)
{
	struct itimerspec t;

	t.it_value.tv_sec = value_ns / 1000000000LL;
	t.it_value.tv_nsec = value_ns % 1000000000LL;
	t.it_interval.tv_sec = interval_ns / 1000000000LL;
	t.it_interval.tv_nsec = interval_ns % 1000000000LL;
	return t;
}

static int readable(int fd, int timeout_ms)
{
	struct pollfd p = { fd, POLLIN, 0 };

	return poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN);
}

static void test_timerfd(void)
{
	struct itimerspec t, got, old;
	uint64_t n = 0;
	struct timespec now;
	long long t0, el;
	int fd;

	fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, 0));
	CHECK_EQ(fcntl(fd, F_GETFD), 0);
	memset(&got, 0x5a, sizeof(got));
	CHECK_EQ(timerfd_gettime(fd, &got), 0);
	CHECK_EQ(ts_ns(&got.it_value), 0);
	CHECK_EQ(ts_ns(&got.it_interval), 0);

	/* One-shot: blocks until it fires, reads 1, then is disarmed. */
	t = its(10 * MS, 0);
	t0 = check_now_ns();
	CHECK_EQ(timerfd_settime(fd, 0, &t, NULL), 0);
	CHECK_EQ(timerfd_gettime(fd, &got), 0);
	CHECK(ts_ns(&got.it_value) > 0 && ts_ns(&got.it_value) <= 10 * MS);
	CHECK_EQ(ts_ns(&got.it_interval), 0);
	CHECK_EQ(read(fd, &n, sizeof(n)), 8);
	CHECK_EQ(n, 1);
	CHECK(check_now_ns() - t0 >= 10 * MS);
	CHECK_EQ(timerfd_gettime(fd, &got), 0);
	CHECK_EQ(ts_ns(&got.it_value), 0);
	CHECK_ERR(read(fd, &n, 4), EINVAL);

	/* Periodic: a read returns how many periods passed. */
	t = its(3 * MS, 3 * MS);
	t0 = check_now_ns();
	CHECK_EQ(timerfd_settime(fd, 0, &t, NULL), 0);
	check_sleep_ms(10);
	n = 0;
	CHECK_EQ(read(fd, &n, sizeof(n)), 8);
	el = check_now_ns() - t0;
	CHECK(n >= 3);
	CHECK((long long)n <= el / (3 * MS));
	CHECK_EQ(timerfd_gettime(fd, &got), 0);
	CHECK_EQ(ts_ns(&got.it_interval), 3 * MS);
	CHECK(ts_ns(&got.it_value) > 0 && ts_ns(&got.it_value) <= 3 * MS);
	/* Disarm; the old setting comes back. */
	t = its(0, 0);
	CHECK_EQ(timerfd_settime(fd, 0, &t, &old), 0);
	CHECK_EQ(ts_ns(&old.it_interval), 3 * MS);
	CHECK(ts_ns(&old.it_value) > 0 && ts_ns(&old.it_value) <= 3 * MS);
	CHECK_EQ(timerfd_gettime(fd, &got), 0);
	CHECK_EQ(ts_ns(&got.it_value), 0);
	close(fd);

	/* Non-blocking: EAGAIN before, readable after. */
	fd = CHECK_OK(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
	CHECK_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	CHECK_ERR(read(fd, &n, sizeof(n)), EAGAIN);
	/* Absolute, 10 ms from now. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	t = its(ts_ns(&now) + 10 * MS, 0);
	t0 = check_now_ns();
	CHECK_EQ(timerfd_settime(fd, TFD_TIMER_ABSTIME, &t, NULL), 0);
	CHECK_ERR(read(fd, &n, sizeof(n)), EAGAIN);
	CHECK(!readable(fd, 0));
	CHECK(readable(fd, 1000));
	CHECK(check_now_ns() - t0 >= 9 * MS);
	CHECK_EQ(read(fd, &n, sizeof(n)), 8);
	CHECK_EQ(n, 1);
	CHECK_ERR(read(fd, &n, sizeof(n)), EAGAIN);
	/* Absolute, in the past: expired at once. */
	t = its(ts_ns(&now) - 10 * MS, 0);
	CHECK_EQ(timerfd_settime(fd, TFD_TIMER_ABSTIME, &t, NULL), 0);
	CHECK(readable(fd, 0));
	CHECK_EQ(read(fd, &n, sizeof(n)), 8);
	CHECK_EQ(n, 1);

	/* Errors. */
	t = its(10 * MS, 0);
	CHECK_ERR(timerfd_settime(fd, 0x10, &t, NULL), EINVAL);
	t.it_value.tv_nsec = 1000000000;
	CHECK_ERR(timerfd_settime(fd, 0, &t, NULL), EINVAL);
	t = its(10 * MS, 0);
	t.it_interval.tv_nsec = -1;
	CHECK_ERR(timerfd_settime(fd, 0, &t, NULL), EINVAL);
	close(fd);
	fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	t = its(10 * MS, 0);
	CHECK_ERR(timerfd_settime(fd, 0, &t, NULL), EINVAL);
	CHECK_ERR(timerfd_gettime(fd, &got), EINVAL);
	close(fd);
	CHECK_ERR(timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0), EINVAL);
	CHECK_ERR(timerfd_create(1234, 0), EINVAL);
	CHECK_ERR(timerfd_create(CLOCK_MONOTONIC, 0x10), EINVAL);
	fd = CHECK_OK(timerfd_create(CLOCK_REALTIME, 0));
	close(fd);
	fd = CHECK_OK(timerfd_create(CLOCK_BOOTTIME, 0));
	close(fd);
}

static volatile int alarms, vtalarms;

static void on_alarm(int sig)
{
	if (sig == SIGALRM)
		alarms++;
	else
		vtalarms++;
}

/* wait_alarms waits, with SIGALRM unblocked only in sigsuspend, until n
 * alarms have come (at most 2 s). */
static void wait_alarms(int n)
{
	long long t0 = check_now_ns();
	sigset_t none;

	sigemptyset(&none);
	while (alarms < n && check_now_ns() - t0 < 2000 * MS)
		sigsuspend(&none);
	CHECK_EQ(alarms, n);
}

static void test_itimer(void)
{
	struct itimerval t, got, old;
	struct sigaction sa;
	sigset_t block;
	long long t0;
	volatile unsigned long spin = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	CHECK_OK(sigaction(SIGALRM, &sa, NULL));
	CHECK_OK(sigaction(SIGVTALRM, &sa, NULL));
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	CHECK_OK(sigprocmask(SIG_BLOCK, &block, NULL));

	memset(&got, 0x5a, sizeof(got));
	CHECK_EQ(getitimer(ITIMER_REAL, &got), 0);
	CHECK_EQ(tv_us(&got.it_value), 0);

	/* One-shot. */
	memset(&t, 0, sizeof(t));
	t.it_value.tv_usec = 10000;
	alarms = 0;
	t0 = check_now_ns();
	CHECK_EQ(setitimer(ITIMER_REAL, &t, NULL), 0);
	CHECK_EQ(getitimer(ITIMER_REAL, &got), 0);
	CHECK(tv_us(&got.it_value) > 0 && tv_us(&got.it_value) <= 10000);
	CHECK_EQ(tv_us(&got.it_interval), 0);
	wait_alarms(1);
	CHECK(check_now_ns() - t0 >= 10 * MS);
	CHECK_EQ(getitimer(ITIMER_REAL, &got), 0);
	CHECK_EQ(tv_us(&got.it_value), 0);

	/* Periodic. */
	t.it_value.tv_usec = 3000;
	t.it_interval.tv_usec = 3000;
	alarms = 0;
	t0 = check_now_ns();
	CHECK_EQ(setitimer(ITIMER_REAL, &t, NULL), 0);
	wait_alarms(3);
	CHECK(check_now_ns() - t0 >= 9 * MS);
	memset(&t, 0, sizeof(t));
	CHECK_EQ(setitimer(ITIMER_REAL, &t, &old), 0);
	CHECK_EQ(tv_us(&old.it_interval), 3000);
	CHECK(tv_us(&old.it_value) > 0 && tv_us(&old.it_value) <= 3000);

	/* The old value of a long timer. */
	t.it_value.tv_sec = 10;
	CHECK_EQ(setitimer(ITIMER_REAL, &t, NULL), 0);
	t.it_value.tv_sec = 20;
	CHECK_EQ(setitimer(ITIMER_REAL, &t, &old), 0);
	CHECK(tv_us(&old.it_value) > 9000000 && tv_us(&old.it_value) <= 10000000);
	memset(&t, 0, sizeof(t));
	CHECK_EQ(setitimer(ITIMER_REAL, &t, NULL), 0);

	/* ITIMER_VIRTUAL counts this process's user CPU time (accounted by
	 * ticks, so no lower bound on the wall time). */
	t.it_value.tv_usec = 10000;
	vtalarms = 0;
	CHECK_EQ(setitimer(ITIMER_VIRTUAL, &t, NULL), 0);
	/* Linux adds a tick to a CPU itimer (so that it never fires early):
	 * at most 10 ms more at HZ >= 100. */
	CHECK_EQ(getitimer(ITIMER_VIRTUAL, &got), 0);
	CHECK(tv_us(&got.it_value) > 0 && tv_us(&got.it_value) <= 20000);
	t0 = check_now_ns();
	while (vtalarms == 0 && check_now_ns() - t0 < 1000 * MS)
		spin++;
	CHECK_EQ(vtalarms, 1);

	CHECK_ERR(setitimer(99, &t, NULL), EINVAL);
	CHECK_ERR(getitimer(99, &got), EINVAL);
	t.it_value.tv_usec = 1000000;
	CHECK_ERR(setitimer(ITIMER_REAL, &t, NULL), EINVAL);
	t.it_value.tv_usec = -1;
	CHECK_ERR(setitimer(ITIMER_REAL, &t, NULL), EINVAL);

	/* alarm shares ITIMER_REAL and rounds what it returns. */
	CHECK_EQ(alarm(5), 0);
	CHECK_EQ(alarm(3), 5);
	CHECK_EQ(getitimer(ITIMER_REAL, &got), 0);
	CHECK(tv_us(&got.it_value) > 2000000 && tv_us(&got.it_value) <= 3000000);
	CHECK_EQ(alarm(0), 3);
	CHECK_EQ(getitimer(ITIMER_REAL, &got), 0);
	CHECK_EQ(tv_us(&got.it_value), 0);
	CHECK_EQ(alarm(0), 0);
	memset(&t, 0, sizeof(t));
	t.it_value.tv_sec = 2;
	t.it_value.tv_usec = 600000;
	CHECK_EQ(setitimer(ITIMER_REAL, &t, NULL), 0);
	CHECK_EQ(alarm(0), 3); /* 2.6 s: rounded up */
	t.it_value.tv_sec = 2;
	t.it_value.tv_usec = 300000;
	CHECK_EQ(setitimer(ITIMER_REAL, &t, NULL), 0);
	CHECK_EQ(alarm(0), 2); /* 2.3 s: rounded down */
	t.it_value.tv_sec = 0;
	t.it_value.tv_usec = 300000;
	CHECK_EQ(setitimer(ITIMER_REAL, &t, NULL), 0);
	CHECK_EQ(alarm(0), 1); /* never 0 while time is left */

	CHECK_OK(sigprocmask(SIG_UNBLOCK, &block, NULL));
	signal(SIGALRM, SIG_DFL);
	signal(SIGVTALRM, SIG_DFL);
}

static long sys_clock_nanosleep(clockid_t clk, int flags,
				const struct timespec *ts, struct timespec *rem)
{
	return syscall(SYS_clock_nanosleep, clk, flags, ts, rem);
}

static void test_clock_nanosleep(void)
{
	struct timespec ts = { 0, 10 * MS }, now;
	long long t0;

	t0 = check_now_ns();
	CHECK_EQ(sys_clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL), 0);
	CHECK(check_now_ns() - t0 >= 10 * MS);

	clock_gettime(CLOCK_MONOTONIC, &now);
	now.tv_nsec += 10 * MS;
	if (now.tv_nsec >= 1000000000) {
		now.tv_sec++;
		now.tv_nsec -= 1000000000;
	}
	CHECK_EQ(sys_clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &now, NULL), 0);
	CHECK(check_now_ns() >= ts_ns(&now));
	/* In the past: at once. */
	t0 = check_now_ns();
	now.tv_sec -= 1;
	CHECK_EQ(sys_clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &now, NULL), 0);
	CHECK(check_now_ns() - t0 < 5 * MS);
	clock_gettime(CLOCK_REALTIME, &now);
	now.tv_sec -= 10;
	CHECK_EQ(sys_clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &now, NULL), 0);

	/* A thread's CPU clock cannot be slept on (clock_nanosleep(2) says
	 * EINVAL; Linux answers EOPNOTSUPP, as for any clock without a
	 * sleep). */
	CHECK_ERR(sys_clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &ts, NULL),
		  EOPNOTSUPP);
	CHECK_ERR(sys_clock_nanosleep(1234, 0, &ts, NULL), EINVAL);
	ts.tv_nsec = 1000000000;
	CHECK_ERR(sys_clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL), EINVAL);
	ts.tv_nsec = 0;
	ts.tv_sec = -1;
	CHECK_ERR(sys_clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL), EINVAL);
}

/* burn spins until this process has used ticks more clock ticks of CPU. */
static void burn(long ticks)
{
	struct tms t;
	clock_t start;
	long long t0 = check_now_ns();
	volatile unsigned long spin = 0;

	times(&t);
	start = t.tms_utime + t.tms_stime;
	do {
		spin++;
		times(&t);
	} while (t.tms_utime + t.tms_stime - start < ticks &&
		 check_now_ns() - t0 < 1000 * MS);
}

static void test_times(void)
{
	struct tms before, after, done;
	siginfo_t si;
	clock_t r0, r1;
	pid_t pid;

	memset(&before, 0x5a, sizeof(before));
	r0 = syscall(SYS_times, &before);
	CHECK(r0 != (clock_t)-1);
	burn(1);
	r1 = syscall(SYS_times, &after);
	CHECK(after.tms_utime + after.tms_stime >=
	      before.tms_utime + before.tms_stime + 1);
	/* The return value counts elapsed ticks: it does not go back. */
	CHECK(r1 >= r0);
	CHECK_EQ(after.tms_cutime, before.tms_cutime);

	pid = check_fork();
	if (pid == 0) {
		burn(1);
		_exit(0);
	}
	/* Exited but not reaped: not counted yet. */
	CHECK_EQ(waitid(P_PID, pid, &si, WEXITED | WNOWAIT), 0);
	CHECK(syscall(SYS_times, &after) != -1);
	CHECK_EQ(after.tms_cutime + after.tms_cstime,
		 before.tms_cutime + before.tms_cstime);
	CHECK_CHILD(pid, "exited 0");
	CHECK(syscall(SYS_times, &done) != -1);
	CHECK(done.tms_cutime + done.tms_cstime >=
	      before.tms_cutime + before.tms_cstime + 1);
	/* A NULL buffer is allowed. */
	CHECK(syscall(SYS_times, NULL) != -1);
}

static void test_signalfd(void)
{
	struct signalfd_siginfo ssi[2];
	struct itimerval it;
	siginfo_t si;
	sigset_t mask, pend;
	int fd, fd2, file;

	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGALRM);
	CHECK_OK(sigprocmask(SIG_BLOCK, &mask, NULL));

	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	fd = CHECK_OK(signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC));
	CHECK_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	CHECK_ERR(read(fd, ssi, sizeof(ssi)), EAGAIN);
	CHECK(!readable(fd, 0));

	CHECK_OK(kill(getpid(), SIGUSR1));
	CHECK(readable(fd, 0));
	memset(ssi, 0, sizeof(ssi));
	CHECK_EQ(read(fd, ssi, sizeof(ssi)), sizeof(ssi[0]));
	CHECK_EQ(ssi[0].ssi_signo, SIGUSR1);
	CHECK_EQ(ssi[0].ssi_code, SI_USER);
	CHECK_EQ(ssi[0].ssi_pid, getpid());
	CHECK_EQ(ssi[0].ssi_uid, getuid());
	/* Read, it is no longer pending. */
	CHECK_OK(sigpending(&pend));
	CHECK(!sigismember(&pend, SIGUSR1));
	CHECK(!readable(fd, 0));

	/* A queued value; and a signal outside the mask is not read. */
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGUSR1;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_int = 77;
	CHECK_EQ(syscall(SYS_rt_sigqueueinfo, getpid(), SIGUSR1, &si), 0);
	CHECK_OK(kill(getpid(), SIGALRM));
	CHECK_EQ(read(fd, ssi, sizeof(ssi)), sizeof(ssi[0]));
	CHECK_EQ(ssi[0].ssi_code, SI_QUEUE);
	CHECK_EQ(ssi[0].ssi_int, 77);
	CHECK_ERR(read(fd, ssi, sizeof(ssi)), EAGAIN);

	/* The mask changes on the same fd: the SIGALRM sent before is read
	 * now. */
	sigaddset(&mask, SIGALRM);
	CHECK_EQ(signalfd(fd, &mask, 0), fd);
	CHECK_EQ(read(fd, ssi, sizeof(ssi)), sizeof(ssi[0]));
	CHECK_EQ(ssi[0].ssi_signo, SIGALRM);
	CHECK_EQ(ssi[0].ssi_code, SI_USER);

	/* Two at once, lowest first; an itimer's SIGALRM comes from the
	 * kernel (SI_KERNEL, no pid). */
	memset(&it, 0, sizeof(it));
	it.it_value.tv_usec = 5000;
	CHECK_OK(setitimer(ITIMER_REAL, &it, NULL));
	{
		long long t0 = check_now_ns();

		do
			sigpending(&pend);
		while (!sigismember(&pend, SIGALRM) &&
		       check_now_ns() - t0 < 1000 * MS);
	}
	CHECK_OK(kill(getpid(), SIGUSR1));
	memset(ssi, 0, sizeof(ssi));
	CHECK_EQ(read(fd, ssi, sizeof(ssi)), 2 * sizeof(ssi[0]));
	CHECK_EQ(ssi[0].ssi_signo, SIGUSR1);
	CHECK_EQ(ssi[1].ssi_signo, SIGALRM);
	CHECK_EQ(ssi[1].ssi_code, SI_KERNEL);
	CHECK_EQ(ssi[1].ssi_pid, 0);
	CHECK(!readable(fd, 0));

	CHECK_ERR(read(fd, ssi, sizeof(ssi[0]) - 1), EINVAL);
	CHECK_ERR(signalfd(fd, &mask, 0x10), EINVAL);
	CHECK_ERR(syscall(SYS_signalfd4, -1, &mask, 4, 0), EINVAL);
	file = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	CHECK_ERR(signalfd(file, &mask, 0), EINVAL);
	close(file);
	fd2 = CHECK_OK(dup(fd));
	close(fd);
	close(fd2);

	/* The old signalfd, without flags. */
	fd = CHECK_OK(syscall(SYS_signalfd, -1, &mask, 8));
	CHECK_EQ(fcntl(fd, F_GETFD), 0);
	CHECK_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	CHECK_OK(kill(getpid(), SIGUSR1));
	memset(ssi, 0, sizeof(ssi));
	CHECK_EQ(read(fd, ssi, sizeof(ssi)), sizeof(ssi[0]));
	CHECK_EQ(ssi[0].ssi_signo, SIGUSR1);
	CHECK_EQ(ssi[0].ssi_code, SI_USER);
	CHECK_ERR(syscall(SYS_signalfd, -1, &mask, 4), EINVAL);
	close(fd);

	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGALRM);
	CHECK_OK(sigprocmask(SIG_UNBLOCK, &mask, NULL));
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_timerfd();
	test_itimer();
	test_clock_nanosleep();
	test_times();
	test_signalfd();
	return check_finish();
}
