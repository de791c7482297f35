/*
 * time_cputime: CPU time is time spent computing, not time passed.
 *
 * Profilers, benchmarks and test harnesses (python's time.process_time,
 * `time` in shells, RLIMIT_CPU-style watchdogs, ITIMER_PROF sampling) read
 * the CPU clocks and expect them to stand still while the process sleeps
 * and to move while it computes.
 * Checks: CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID barely move
 * across a 100 ms sleep; they advance while the process computes, and by
 * no more than the time elapsed; getrusage(RUSAGE_SELF) and
 * getrusage(RUSAGE_THREAD) grow with them; a thread's clock counts only
 * that thread (a sleeping thread's stays still while another computes),
 * the process clock counts every thread; ITIMER_VIRTUAL and ITIMER_PROF do
 * not fire while the process sleeps past their value, and do fire once it
 * computes; a reaped child's CPU time reaches its parent through wait4's
 * rusage and getrusage(RUSAGE_CHILDREN). RLIMIT_CPU: SIGXCPU once the
 * process has used the soft limit, which then reads a second higher;
 * SIGKILL at the hard limit.
 */
// covers: clock_gettime getrusage setitimer getitimer wait4 setrlimit getrlimit
#include "check.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/time.h>

#define MS 1000000LL

static long long clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long rusage_ns(int who)
{
	struct rusage ru;

	if (getrusage(who, &ru) != 0)
		return -1;
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

/* compute spins until clock clk has advanced by ns, or 3 s have passed; it
 * returns the time elapsed. */
static long long compute(clockid_t clk, long long ns)
{
	long long t0 = check_now_ns(), c0 = clock_ns(clk);
	volatile unsigned long spin = 0;

	while (clock_ns(clk) - c0 < ns && check_now_ns() - t0 < 3000 * MS)
		spin++;
	return check_now_ns() - t0;
}

static void test_sleep_and_compute(void)
{
	long long p0, th0, ru0, wall, used;

	p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	th0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	check_sleep_ms(100);
	CHECK(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - p0 < 30 * MS);
	CHECK(clock_ns(CLOCK_THREAD_CPUTIME_ID) - th0 < 30 * MS);

	p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	ru0 = rusage_ns(RUSAGE_SELF);
	wall = compute(CLOCK_PROCESS_CPUTIME_ID, 50 * MS);
	used = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - p0;
	CHECK(used >= 50 * MS);
	/* A tick of slack for the clocks' granularity. */
	CHECK(used <= wall + 10 * MS);
	CHECK(rusage_ns(RUSAGE_SELF) - ru0 >= 40 * MS);
	CHECK(rusage_ns(RUSAGE_THREAD) >= 40 * MS);
}

static void *computer(void *arg)
{
	long long *thread_used = arg;
	long long th0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	compute(CLOCK_THREAD_CPUTIME_ID, 50 * MS);
	*thread_used = clock_ns(CLOCK_THREAD_CPUTIME_ID) - th0;
	return NULL;
}

static void test_threads(void)
{
	long long p0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	long long th0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	long long thread_used = 0;
	pthread_t t;

	CHECK_EQ(pthread_create(&t, NULL, computer, &thread_used), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	CHECK(thread_used >= 50 * MS);
	/* This thread waited in pthread_join. */
	CHECK(clock_ns(CLOCK_THREAD_CPUTIME_ID) - th0 < 30 * MS);
	/* The process clock counts the thread that has exited. */
	CHECK(clock_ns(CLOCK_PROCESS_CPUTIME_ID) - p0 >= 50 * MS);
}

static volatile sig_atomic_t fired;

static void on_timer(int sig)
{
	(void)sig;
	fired++;
}

static void test_cpu_timers(void)
{
	static const int timers[] = { ITIMER_VIRTUAL, ITIMER_PROF };
	static const int sigs[] = { SIGVTALRM, SIGPROF };

	for (int i = 0; i < 2; i++) {
		struct itimerval t = { { 0, 0 }, { 0, 50000 } }, got;
		long long t0;

		signal(sigs[i], on_timer);
		fired = 0;
		CHECK_EQ(setitimer(timers[i], &t, NULL), 0);
		check_sleep_ms(200);
		CHECK_EQ(fired, 0);
		CHECK_EQ(getitimer(timers[i], &got), 0);
		CHECK(got.it_value.tv_sec == 0 && got.it_value.tv_usec > 20000);
		t0 = check_now_ns();
		while (fired == 0 && check_now_ns() - t0 < 3000 * MS)
			;
		CHECK_EQ(fired, 1);
		signal(sigs[i], SIG_DFL);
	}
}

static void test_children(void)
{
	long long before = rusage_ns(RUSAGE_CHILDREN);
	struct rusage ru;
	int status = 0;
	pid_t pid;

	pid = check_fork();
	if (pid == 0) {
		compute(CLOCK_PROCESS_CPUTIME_ID, 50 * MS);
		_exit(0);
	}
	CHECK_EQ(wait4(pid, &status, 0, &ru), pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK((ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
		      (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL >=
	      40 * MS);
	CHECK(rusage_ns(RUSAGE_CHILDREN) - before >= 40 * MS);
}

static volatile sig_atomic_t xcpus;

static void on_xcpu(int sig)
{
	(void)sig;
	xcpus++;
}

/* RLIMIT_CPU, in a child it ends: SIGXCPU at the soft limit, which then
 * moves up a second; SIGKILL at the hard limit. */
static void test_rlimit_cpu(void)
{
	pid_t pid = check_fork();

	if (pid == 0) {
		struct rlimit r = { 1, 2 };
		long long t0 = check_now_ns();

		alarm(0); /* the limit ends this child, not check_fork's guard */
		signal(SIGXCPU, on_xcpu);
		CHECK_EQ(setrlimit(RLIMIT_CPU, &r), 0);
		while (xcpus == 0 && check_now_ns() - t0 < 20000 * MS)
			;
		CHECK_EQ(xcpus, 1);
		/* Linux samples the time by ticks: a little early is fine. */
		CHECK(clock_ns(CLOCK_PROCESS_CPUTIME_ID) >= 900 * MS);
		CHECK_EQ(getrlimit(RLIMIT_CPU, &r), 0);
		CHECK_EQ((long)r.rlim_cur, 2);
		if (check_failures)
			_exit(4);
		while (check_now_ns() - t0 < 20000 * MS)
			;
		_exit(3);
	}
	CHECK_CHILD(pid, "killed by SIGKILL");
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_sleep_and_compute();
	test_threads();
	test_cpu_timers();
	test_children();
	test_rlimit_cpu();
	return check_finish();
}
