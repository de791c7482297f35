/*
 * timer_posix: POSIX timers and the CPU clocks.
 *
 * Runtimes, media players and test harnesses schedule work with
 * timer_create; profilers and benchmarks read other processes' and
 * threads' CPU clocks. Checks: timer_create on the wall clocks
 * (REALTIME, MONOTONIC, BOOTTIME, TAI) and the CPU clocks (the caller's
 * process and thread, clock_getcpuclockid's and pthread_getcpuclockid's),
 * EOPNOTSUPP for the raw and coarse clocks and a device's, EINVAL for an
 * unknown clock, notification or signal and for SIGEV_THREAD_ID naming a
 * thread of another process; ids count up from 0, and a timer refused
 * for its notification or its CPU clock (not for its kind of clock) uses
 * one up; each timer counts against RLIMIT_SIGPENDING (EAGAIN at 0);
 * without a sigevent the timer sends SIGALRM with its id as the value; a
 * one-shot timer's signal comes no earlier than its time, with SI_TIMER,
 * its id, its value and no overrun, and the timer then reads 0;
 * SIGEV_THREAD_ID sends it to the thread named; SIGEV_NONE sends nothing
 * and counts down (a periodic one moving to its next expiry); the C
 * library's SIGEV_THREAD runs the function; a periodic timer whose signal
 * is blocked is rearmed when the signal is taken, and si_overrun and
 * timer_getoverrun then count the expirations missed; an absolute time in
 * the past expires at once (and a periodic one counts every interval
 * since as overrun); timer_settime returns the old setting and takes back
 * a signal still pending, as does timer_delete; EINVAL for bad times, ids
 * and a missing setting; a child has none of its parent's timers. A
 * timer on the process's CPU clock expires after that much CPU time, one
 * on another thread's clock after that thread's; clock_nanosleep on the
 * process's or another thread's CPU clock waits for the CPU time that
 * thread uses (EINVAL on the caller's own thread's clock, EOPNOTSUPP on a
 * device's). A thread's id names no process's clock (EINVAL) but for
 * clock_gettime in that thread. clock_gettime and clock_getres on a
 * child's CPU clock (EINVAL once it is reaped).
 */
// covers: timer_create timer_settime timer_gettime timer_getoverrun timer_delete clock_gettime clock_getres clock_nanosleep
#include "check.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>

#define MS 1000000LL

/* A process's or thread's CPU clock (CPUCLOCK_SCHED) by its id, as
 * clock_getcpuclockid and pthread_getcpuclockid make them. */
#define PROCESS_CLOCK(pid) ((~(clockid_t)(pid) << 3) | 2)
#define THREAD_CLOCK(tid) ((~(clockid_t)(tid) << 3) | 4 | 2)
/* A device's clock (CLOCKFD), here file descriptor 0's. */
#define FD_CLOCK(fd) ((~(clockid_t)(fd) << 3) | 3)

static long long ts_ns(const struct timespec *ts)
{
	return ts->tv_sec * 1000000000LL + ts->tv_nsec;
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

/* mk makes a timer on clock with the raw call (the C library's timer_t
 * hides the kernel's id) and returns the id, or -1. */
static int mk(clockid_t clock, struct sigevent *ev)
{
	int id = -1;

	if (syscall(SYS_timer_create, clock, ev, &id) != 0)
		return -1;
	return id;
}

static long set(int id, int flags, long long value, long long interval, struct itimerspec *old)
{
	struct itimerspec t = its(value, interval);

	return syscall(SYS_timer_settime, id, flags, &t, old);
}

static struct itimerspec get(int id)
{
	struct itimerspec t;

	memset(&t, 0x5a, sizeof(t));
	CHECK_OK(syscall(SYS_timer_gettime, id, &t));
	return t;
}

/* left is the time a timer has to go. */
static long long left(int id)
{
	struct itimerspec t = get(id);

	return ts_ns(&t.it_value);
}

static struct sigevent sigev(int notify, int signo, int value)
{
	struct sigevent ev;

	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = notify;
	ev.sigev_signo = signo;
	ev.sigev_value.sival_int = value;
	return ev;
}

static sigset_t just(int sig)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, sig);
	return s;
}

/* take takes a pending sig without waiting, or returns -1. */
static int take(int sig, siginfo_t *si)
{
	sigset_t s = just(sig);
	struct timespec zero = { 0, 0 };

	memset(si, 0, sizeof(*si));
	return sigtimedwait(&s, si, &zero);
}

static void test_create(void)
{
	struct sigevent ev = sigev(SIGEV_SIGNAL, SIGUSR1, 1);
	clockid_t ok[] = { CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_TAI,
			   CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID };
	clockid_t pclock, tclock;
	int a, b, i, id;

	a = CHECK_OK(mk(CLOCK_MONOTONIC, &ev));
	b = CHECK_OK(mk(CLOCK_MONOTONIC, NULL));
	CHECK_EQ(a, 0); /* the process's first */
	CHECK(b > a);
	for (i = 0; i < (int)(sizeof(ok) / sizeof(ok[0])); i++) {
		id = mk(ok[i], &ev);
		CHECK(id > b);
		if (id >= 0)
			CHECK_OK(syscall(SYS_timer_delete, id));
	}
	CHECK_OK(clock_getcpuclockid(getpid(), &pclock));
	CHECK_EQ(pthread_getcpuclockid(pthread_self(), &tclock), 0);
	CHECK_OK(syscall(SYS_timer_delete, CHECK_OK(mk(pclock, &ev))));
	CHECK_OK(syscall(SYS_timer_delete, CHECK_OK(mk(tclock, &ev))));
	CHECK_ERR(mk(CLOCK_MONOTONIC_RAW, &ev), EOPNOTSUPP);
	CHECK_ERR(mk(CLOCK_REALTIME_COARSE, &ev), EOPNOTSUPP);
	CHECK_ERR(mk(CLOCK_MONOTONIC_COARSE, &ev), EOPNOTSUPP);
	CHECK_ERR(mk(12, &ev), EINVAL);

	ev = sigev(3, SIGUSR1, 0);
	CHECK_ERR(mk(CLOCK_MONOTONIC, &ev), EINVAL);
	ev = sigev(SIGEV_SIGNAL, 0, 0);
	CHECK_ERR(mk(CLOCK_MONOTONIC, &ev), EINVAL);
	ev = sigev(SIGEV_SIGNAL, 65, 0);
	CHECK_ERR(mk(CLOCK_MONOTONIC, &ev), EINVAL);
	ev = sigev(SIGEV_THREAD_ID, SIGUSR1, 0);
	ev._sigev_un._tid = getppid() > 0 ? getppid() : 999999;
	CHECK_ERR(mk(CLOCK_MONOTONIC, &ev), EINVAL);
	CHECK_ERR(syscall(SYS_timer_create, CLOCK_MONOTONIC, NULL, NULL), EFAULT);

	CHECK_OK(syscall(SYS_timer_delete, a));
	CHECK_OK(syscall(SYS_timer_delete, b));
	CHECK_ERR(syscall(SYS_timer_delete, a), EINVAL);
	CHECK_ERR(syscall(SYS_timer_getoverrun, a), EINVAL);
	CHECK_ERR(set(a, 0, MS, 0, NULL), EINVAL);
	CHECK_ERR(syscall(SYS_timer_gettime, 12345, &(struct itimerspec){ 0 }), EINVAL);
}

static void test_ids_and_limits(void)
{
	struct sigevent bad = sigev(SIGEV_SIGNAL, 0, 0);
	int a, b;
	pid_t pid;

	/* A timer refused for its notification or its CPU clock used up an
	 * id; one refused for the kind of its clock did not. */
	a = CHECK_OK(mk(CLOCK_MONOTONIC, NULL));
	CHECK_ERR(mk(CLOCK_MONOTONIC, &bad), EINVAL);
	CHECK_ERR(mk(PROCESS_CLOCK(999999), NULL), EINVAL);
	CHECK_ERR(mk(CLOCK_MONOTONIC_RAW, NULL), EOPNOTSUPP);
	CHECK_ERR(mk(FD_CLOCK(0), NULL), EOPNOTSUPP);
	CHECK_ERR(mk(12, NULL), EINVAL);
	b = CHECK_OK(mk(CLOCK_MONOTONIC, NULL));
	CHECK_EQ(b, a + 3);
	CHECK_OK(syscall(SYS_timer_delete, a));
	CHECK_OK(syscall(SYS_timer_delete, b));

	/* A timer counts against its user's RLIMIT_SIGPENDING. */
	pid = check_fork();
	if (pid == 0) {
		struct rlimit none = { 0, 0 };

		CHECK_OK(setrlimit(RLIMIT_SIGPENDING, &none));
		CHECK_ERR(mk(CLOCK_MONOTONIC, NULL), EAGAIN);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
}

static void test_oneshot(void)
{
	struct sigevent ev = sigev(SIGEV_SIGNAL, SIGUSR1, 42);
	sigset_t s = just(SIGUSR1), all = just(SIGALRM);
	struct itimerspec cur, old;
	long long t0;
	siginfo_t si;
	int id, alrm;

	sigaddset(&all, SIGUSR1);
	CHECK_OK(sigprocmask(SIG_BLOCK, &all, NULL));
	id = CHECK_OK(mk(CLOCK_MONOTONIC, &ev));
	CHECK_OK(set(id, 0, 30 * MS, 0, NULL));
	cur = get(id);
	CHECK(ts_ns(&cur.it_value) > 0 && ts_ns(&cur.it_value) <= 30 * MS);
	CHECK_EQ(ts_ns(&cur.it_interval), 0);
	t0 = check_now_ns();
	CHECK_EQ(sigwaitinfo(&s, &si), SIGUSR1);
	CHECK(check_now_ns() - t0 >= 25 * MS);
	CHECK_EQ(si.si_code, SI_TIMER);
	CHECK_EQ(si.si_timerid, id);
	CHECK_EQ(si.si_value.sival_int, 42);
	CHECK_EQ(si.si_overrun, 0);
	CHECK_EQ(syscall(SYS_timer_getoverrun, id), 0);
	cur = get(id);
	CHECK_EQ(ts_ns(&cur.it_value), 0);

	/* The old setting; a re-set takes back a signal still pending. */
	CHECK_OK(set(id, 0, 5 * MS, 0, NULL));
	check_sleep_ms(20);
	CHECK_OK(set(id, 0, 10000 * MS, 0, &old));
	CHECK_EQ(ts_ns(&old.it_value), 0);
	CHECK_EQ(take(SIGUSR1, &si), -1);
	CHECK_OK(set(id, 0, 0, 0, &old));
	CHECK(ts_ns(&old.it_value) > 9000 * MS);
	CHECK_EQ(left(id), 0);
	/* So does timer_delete. */
	CHECK_OK(set(id, 0, MS, 0, NULL));
	check_sleep_ms(10);
	CHECK_OK(syscall(SYS_timer_delete, id));
	CHECK_EQ(take(SIGUSR1, &si), -1);

	/* Without a sigevent: SIGALRM, with the timer's id as the value. */
	alrm = CHECK_OK(mk(CLOCK_REALTIME, NULL));
	CHECK_OK(set(alrm, 0, MS, 0, NULL));
	s = just(SIGALRM);
	CHECK_EQ(sigwaitinfo(&s, &si), SIGALRM);
	CHECK_EQ(si.si_code, SI_TIMER);
	CHECK_EQ(si.si_value.sival_int, alrm);
	CHECK_OK(syscall(SYS_timer_delete, alrm));

	/* Bad settings. */
	id = CHECK_OK(mk(CLOCK_MONOTONIC, &ev));
	{
		struct itimerspec bad = its(0, 0);
		bad.it_value.tv_nsec = 1000000000;
		CHECK_ERR(syscall(SYS_timer_settime, id, 0, &bad, NULL), EINVAL);
		bad = its(MS, 0);
		bad.it_interval.tv_sec = -1;
		CHECK_ERR(syscall(SYS_timer_settime, id, 0, &bad, NULL), EINVAL);
		CHECK_ERR(syscall(SYS_timer_settime, id, 0, NULL, NULL), EINVAL);
	}
	CHECK_OK(syscall(SYS_timer_delete, id));
	CHECK_OK(sigprocmask(SIG_UNBLOCK, &all, NULL));
}

static void test_periodic_overrun(void)
{
	struct sigevent ev = sigev(SIGEV_SIGNAL, SIGUSR1, 0);
	sigset_t s = just(SIGUSR1);
	struct itimerspec cur;
	struct timespec now;
	siginfo_t si;
	int id, n;

	CHECK_OK(sigprocmask(SIG_BLOCK, &s, NULL));
	id = CHECK_OK(mk(CLOCK_MONOTONIC, &ev));
	CHECK_OK(set(id, 0, 10 * MS, 10 * MS, NULL));
	check_sleep_ms(55);
	/* Expired and waiting for its signal to be taken: the next expiry. */
	cur = get(id);
	CHECK(ts_ns(&cur.it_value) > 0 && ts_ns(&cur.it_value) <= 10 * MS);
	CHECK_EQ(ts_ns(&cur.it_interval), 10 * MS);
	CHECK_EQ(take(SIGUSR1, &si), SIGUSR1);
	CHECK(si.si_overrun >= 3 && si.si_overrun <= 8);
	CHECK_EQ(syscall(SYS_timer_getoverrun, id), si.si_overrun);
	/* One signal only, and the timer goes on once it was taken. */
	CHECK_EQ(take(SIGUSR1, &si), -1);
	CHECK_EQ(sigwaitinfo(&s, &si), SIGUSR1);
	CHECK(si.si_overrun <= 2);

	/* An absolute time a second ago: every interval since is overrun. */
	clock_gettime(CLOCK_MONOTONIC, &now);
	now.tv_sec -= 1;
	{
		struct itimerspec past = { { 0, 10 * MS }, now };
		CHECK_OK(syscall(SYS_timer_settime, id, TIMER_ABSTIME, &past, NULL));
	}
	CHECK_EQ(sigwaitinfo(&s, &si), SIGUSR1);
	CHECK(si.si_overrun >= 95 && si.si_overrun <= 110);
	n = syscall(SYS_timer_getoverrun, id);
	CHECK_EQ(n, si.si_overrun);
	CHECK_OK(syscall(SYS_timer_delete, id));

	/* SIGEV_NONE: no signal, and a periodic one moves on by itself. */
	ev = sigev(SIGEV_NONE, 0, 0);
	id = CHECK_OK(mk(CLOCK_MONOTONIC, &ev));
	CHECK_OK(set(id, 0, 10 * MS, 25 * MS, NULL));
	check_sleep_ms(30);
	cur = get(id);
	CHECK(ts_ns(&cur.it_value) > 0 && ts_ns(&cur.it_value) <= 25 * MS);
	CHECK_EQ(take(SIGUSR1, &si), -1);
	CHECK_OK(set(id, 0, MS, 0, NULL));
	check_sleep_ms(5);
	CHECK_EQ(left(id), 0);
	CHECK_OK(syscall(SYS_timer_delete, id));
	CHECK_OK(sigprocmask(SIG_UNBLOCK, &s, NULL));
}

static atomic_int got_tid;

static void on_usr2(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	atomic_store(&got_tid, (int)gettid());
}

static atomic_int thread_tid, thread_stop;

static void *idle_thread(void *arg)
{
	(void)arg;
	atomic_store(&thread_tid, (int)gettid());
	while (!atomic_load(&thread_stop))
		check_sleep_ms(1);
	return NULL;
}

static atomic_int callback_runs;

static void callback(union sigval v)
{
	atomic_fetch_add(&callback_runs, v.sival_int);
}

static void test_thread_notifications(void)
{
	struct sigaction sa;
	struct sigevent ev;
	pthread_t th;
	timer_t libc_timer;
	int id, i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr2;
	sa.sa_flags = SA_SIGINFO;
	CHECK_OK(sigaction(SIGUSR2, &sa, NULL));
	CHECK_EQ(pthread_create(&th, NULL, idle_thread, NULL), 0);
	while (!atomic_load(&thread_tid))
		check_sleep_ms(1);
	ev = sigev(SIGEV_THREAD_ID, SIGUSR2, 0);
	ev._sigev_un._tid = atomic_load(&thread_tid);
	id = CHECK_OK(mk(CLOCK_MONOTONIC, &ev));
	CHECK_OK(set(id, 0, 5 * MS, 0, NULL));
	for (i = 0; i < 1000 && !atomic_load(&got_tid); i++)
		check_sleep_ms(1);
	CHECK_EQ(atomic_load(&got_tid), atomic_load(&thread_tid));
	CHECK_OK(syscall(SYS_timer_delete, id));
	atomic_store(&thread_stop, 1);
	pthread_join(th, NULL);
	signal(SIGUSR2, SIG_DFL);

	/* The C library's SIGEV_THREAD runs the function on a thread. */
	memset(&ev, 0, sizeof(ev));
	ev.sigev_notify = SIGEV_THREAD;
	ev.sigev_notify_function = callback;
	ev.sigev_value.sival_int = 1;
	CHECK_OK(timer_create(CLOCK_MONOTONIC, &ev, &libc_timer));
	{
		struct itimerspec t = its(5 * MS, 5 * MS);
		CHECK_OK(timer_settime(libc_timer, 0, &t, NULL));
	}
	for (i = 0; i < 2000 && atomic_load(&callback_runs) < 3; i++)
		check_sleep_ms(1);
	CHECK(atomic_load(&callback_runs) >= 3);
	CHECK_OK(timer_delete(libc_timer));
}

static void test_fork_has_none(void)
{
	struct sigevent ev = sigev(SIGEV_NONE, 0, 0);
	int id = CHECK_OK(mk(CLOCK_MONOTONIC, &ev));
	pid_t pid;

	CHECK_OK(set(id, 0, 1000 * MS, 0, NULL));
	pid = check_fork();
	if (pid == 0) {
		CHECK_ERR(syscall(SYS_timer_gettime, id, &(struct itimerspec){ 0 }), EINVAL);
		CHECK_EQ(mk(CLOCK_MONOTONIC, &ev), 0); /* ids start again */
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_OK(syscall(SYS_timer_delete, id));
}

static long long clock_ns(clockid_t c)
{
	struct timespec ts;

	if (clock_gettime(c, &ts) != 0)
		return -1;
	return ts_ns(&ts);
}

static atomic_int spin_stop;

/* burn runs user code for a while between the clock reads of a loop that
 * waits for CPU time, so that the loop's time is mostly its own code's
 * rather than the system calls'. */
static void burn(void)
{
	volatile unsigned n = 0;

	while (n < 200000)
		n++;
}

static atomic_int spinner_tid, spinner_own_clock = -2;

static void *spinner(void *arg)
{
	struct timespec ts;

	(void)arg;
	atomic_store(&spinner_own_clock, (int)syscall(SYS_clock_gettime, PROCESS_CLOCK(gettid()), &ts));
	atomic_store(&spinner_tid, (int)gettid());
	while (!atomic_load(&spin_stop))
		;
	return NULL;
}

static void test_cpu_clocks(void)
{
	struct sigevent ev = sigev(SIGEV_SIGNAL, SIGUSR1, 0);
	sigset_t s = just(SIGUSR1);
	struct timespec res, ts = { 0, 50 * MS };
	long long c0, w0;
	clockid_t child_clock, thread_clock;
	siginfo_t si;
	pthread_t th;
	pid_t pid;
	int id, fds[2], go[2];
	char c;

	/* A timer on the process's CPU clock: after that much CPU time. */
	CHECK_OK(sigprocmask(SIG_BLOCK, &s, NULL));
	id = CHECK_OK(mk(CLOCK_PROCESS_CPUTIME_ID, &ev));
	c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	CHECK_OK(set(id, 0, 40 * MS, 0, NULL));
	while (take(SIGUSR1, &si) != SIGUSR1 && clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0 < 2000 * MS)
		burn();
	CHECK_EQ(si.si_code, SI_TIMER);
	CHECK(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0 >= 40 * MS);
	CHECK_OK(syscall(SYS_timer_delete, id));

	/* A sleep on the process's CPU clock lasts while another thread uses
	 * that much. */
	atomic_store(&spin_stop, 0);
	CHECK_EQ(pthread_create(&th, NULL, spinner, NULL), 0);
	c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	w0 = check_now_ns();
	CHECK_EQ(clock_nanosleep(CLOCK_PROCESS_CPUTIME_ID, 0, &ts, NULL), 0);
	CHECK(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0 >= 50 * MS);
	CHECK(check_now_ns() - w0 < 5000 * MS);

	/* The spinning thread's clock: a timer on it expires after that
	 * thread's CPU time, and a sleep on it waits for it; a thread cannot
	 * sleep on its own clock. A thread's id is no process's clock, but
	 * for clock_gettime in that thread itself. */
	while (!atomic_load(&spinner_tid))
		check_sleep_ms(1);
	CHECK_EQ(pthread_getcpuclockid(th, &thread_clock), 0);
	CHECK_EQ(thread_clock, THREAD_CLOCK(atomic_load(&spinner_tid)));
	id = CHECK_OK(mk(thread_clock, &ev));
	c0 = clock_ns(thread_clock);
	CHECK_OK(set(id, 0, 30 * MS, 0, NULL));
	CHECK_EQ(sigwaitinfo(&s, &si), SIGUSR1);
	CHECK(clock_ns(thread_clock) - c0 >= 30 * MS);
	CHECK_OK(syscall(SYS_timer_delete, id));
	c0 = clock_ns(thread_clock);
	CHECK_EQ(clock_nanosleep(thread_clock, 0, &ts, NULL), 0);
	CHECK(clock_ns(thread_clock) - c0 >= 50 * MS);
	CHECK_EQ(clock_nanosleep(THREAD_CLOCK(gettid()), 0, &ts, NULL), EINVAL);
	CHECK_EQ(clock_nanosleep(FD_CLOCK(0), 0, &ts, NULL), EOPNOTSUPP);
	CHECK_ERR(syscall(SYS_clock_gettime, PROCESS_CLOCK(atomic_load(&spinner_tid)), &res), EINVAL);
	CHECK_EQ(atomic_load(&spinner_own_clock), 0);
	CHECK_ERR(mk(PROCESS_CLOCK(atomic_load(&spinner_tid)), &ev), EINVAL);
	CHECK_ERR(syscall(SYS_clock_gettime, FD_CLOCK(0), &res), EINVAL);
	atomic_store(&spin_stop, 1);
	pthread_join(th, NULL);
	CHECK_OK(sigprocmask(SIG_UNBLOCK, &s, NULL));

	/* Another process's CPU clock: the child uses 30 ms once told to. */
	CHECK_OK(pipe(fds));
	CHECK_OK(pipe(go));
	pid = check_fork();
	if (pid == 0) {
		long long start;

		close(fds[1]);
		close(go[1]);
		CHECK_EQ(read(go[0], &c, 1), 1);
		start = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
		while (clock_ns(CLOCK_PROCESS_CPUTIME_ID) - start < 30 * MS)
			burn();
		CHECK_EQ(read(fds[0], &c, 1), 0);
		check_child_exit();
	}
	close(fds[0]);
	close(go[0]);
	CHECK_OK(clock_getcpuclockid(pid, &child_clock));
	CHECK_OK(clock_getres(child_clock, &res));
	c0 = clock_ns(child_clock);
	CHECK(c0 >= 0);
	CHECK_EQ(write(go[1], "g", 1), 1);
	w0 = check_now_ns();
	while (clock_ns(child_clock) - c0 < 30 * MS && check_now_ns() - w0 < 5000 * MS)
		check_sleep_ms(5);
	CHECK(clock_ns(child_clock) - c0 >= 30 * MS);
	close(fds[1]);
	close(go[1]);
	CHECK_CHILD(pid, "exited 0");
	CHECK_ERR(syscall(SYS_clock_gettime, child_clock, &res), EINVAL);
	CHECK_ERR(syscall(SYS_clock_getres, child_clock, &res), EINVAL);
	CHECK_EQ(clock_getcpuclockid(pid, &child_clock), ESRCH);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_create();
	test_ids_and_limits();
	test_oneshot();
	test_periodic_overrun();
	test_thread_notifications();
	test_fork_has_none();
	test_cpu_clocks();
	return check_finish();
}
