/*
 * time_sleep: how late sleeping calls wake.
 *
 * Programs that measure their own timeouts (test harnesses, rate
 * limiters, event loops, benchmarks) expect a sleep of 1 ms to take
 * 1 ms and a little: Linux wakes a sleeper within its timer slack (50 us
 * unless PR_SET_TIMERSLACK says otherwise) plus the time to run it.
 * Checks, for nanosleep, clock_nanosleep (relative and absolute), poll,
 * ppoll, select, pselect6, epoll_wait, epoll_pwait2, futex (FUTEX_WAIT
 * and an absolute FUTEX_WAIT_BITSET) and rt_sigtimedwait with a timeout
 * of 1 ms: none wakes before its time; the soonest of its wakes is at
 * most 1 ms late (on a loaded machine some of them run late, but not
 * all: a runtime that rounds sleeps up to a tick or adds a fixed delay
 * fails here) and the median at most 5 ms (what the program prints is
 * the measure). With PR_SET_TIMERSLACK at 5 ms a sleep is still never
 * early, and the bounds grow by the slack; PR_GET_TIMERSLACK reads it
 * back, a thread and a child start with the creator's, and 0 sets the
 * default again (for a child, its parent's slack when it forked). stdout
 * gets each call's lateness: minimum, median, 90th percentile and
 * maximum, in microseconds.
 */
// covers: nanosleep clock_nanosleep poll ppoll select pselect6 epoll_wait epoll_pwait2 futex rt_sigtimedwait prctl
#include "check.h"

#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/select.h>

#define US 1000LL
#define MS 1000000LL
#define SAMPLES 40

static long long sleep_ns = MS;
static int epfd;
static uint32_t futex_word;

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static struct timespec ts_of(long long ns)
{
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };

	return ts;
}

static void do_nanosleep(void)
{
	struct timespec ts = ts_of(sleep_ns);

	nanosleep(&ts, NULL);
}

static void do_clock_nanosleep(void)
{
	struct timespec ts = ts_of(sleep_ns);

	clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

static void do_clock_nanosleep_abs(void)
{
	struct timespec ts = ts_of(check_now_ns() + sleep_ns);

	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

static void do_poll(void)
{
	poll(NULL, 0, (int)(sleep_ns / MS));
}

static void do_ppoll(void)
{
	struct timespec ts = ts_of(sleep_ns);

	ppoll(NULL, 0, &ts, NULL);
}

static void do_select(void)
{
	struct timeval tv = { 0, sleep_ns / US };

	select(0, NULL, NULL, NULL, &tv);
}

static void do_pselect(void)
{
	struct timespec ts = ts_of(sleep_ns);

	pselect(0, NULL, NULL, NULL, &ts, NULL);
}

static void do_epoll_wait(void)
{
	struct epoll_event ev;

	epoll_wait(epfd, &ev, 1, (int)(sleep_ns / MS));
}

static void do_epoll_pwait2(void)
{
	struct epoll_event ev;
	struct timespec ts = ts_of(sleep_ns);

	syscall(SYS_epoll_pwait2, epfd, &ev, 1, &ts, NULL, 8);
}

static void do_futex(void)
{
	struct timespec ts = ts_of(sleep_ns);

	syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
}

static void do_futex_abs(void)
{
	struct timespec ts = ts_of(check_now_ns() + sleep_ns);

	syscall(SYS_futex, &futex_word, FUTEX_WAIT_BITSET_PRIVATE, 0, &ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

static void do_sigtimedwait(void)
{
	struct timespec ts = ts_of(sleep_ns);
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigtimedwait(&s, NULL, &ts);
}

static const struct {
	const char *name;
	void (*fn)(void);
} calls[] = {
	{ "nanosleep", do_nanosleep },
	{ "clock_nanosleep", do_clock_nanosleep },
	{ "clock_nanosleep_abstime", do_clock_nanosleep_abs },
	{ "poll", do_poll },
	{ "ppoll", do_ppoll },
	{ "select", do_select },
	{ "pselect6", do_pselect },
	{ "epoll_wait", do_epoll_wait },
	{ "epoll_pwait2", do_epoll_pwait2 },
	{ "futex_wait", do_futex },
	{ "futex_wait_bitset_abs", do_futex_abs },
	{ "rt_sigtimedwait", do_sigtimedwait },
};

/* measure runs fn SAMPLES times, prints the lateness's distribution and
 * checks it: never early, the soonest wake at most slack + 1 ms late and
 * the median at most slack + 5 ms. */
static void measure(const char *name, void (*fn)(void), long long slack)
{
	long long late[SAMPLES], t0;
	int i;

	for (i = 0; i < SAMPLES; i++) {
		t0 = check_now_ns();
		fn();
		late[i] = check_now_ns() - t0 - sleep_ns;
	}
	qsort(late, SAMPLES, sizeof(late[0]), cmp);
	printf("%-24s slack %5lld us: late min %5lld us, p50 %5lld us, p90 %5lld us, max %6lld us\n", name,
	       (long long)prctl(PR_GET_TIMERSLACK) / US, late[0] / US, late[SAMPLES / 2] / US,
	       late[SAMPLES * 9 / 10] / US, late[SAMPLES - 1] / US);
	if (late[0] < 0)
		check_fail(__FILE__, __LINE__, "%s woke %lld ns early", name, -late[0]);
	if (late[0] > slack + MS)
		check_fail(__FILE__, __LINE__, "%s: soonest wake %lld us late, want at most %lld us", name,
			   late[0] / US, (slack + MS) / US);
	if (late[SAMPLES / 2] > slack + 5 * MS)
		check_fail(__FILE__, __LINE__, "%s: median lateness %lld us, want at most %lld us", name,
			   late[SAMPLES / 2] / US, (slack + 5 * MS) / US);
}

static void *thread_slack(void *arg)
{
	*(long *)arg = prctl(PR_GET_TIMERSLACK);
	return NULL;
}

static void test_slack(void)
{
	long in_thread = 0;
	pthread_t th;
	pid_t pid;

	CHECK_EQ(prctl(PR_GET_TIMERSLACK), 50000);
	CHECK_OK(prctl(PR_SET_TIMERSLACK, 5 * MS));
	CHECK_EQ(prctl(PR_GET_TIMERSLACK), 5 * MS);
	CHECK_EQ(pthread_create(&th, NULL, thread_slack, &in_thread), 0);
	pthread_join(th, NULL);
	CHECK_EQ(in_thread, 5 * MS);
	pid = check_fork();
	if (pid == 0) {
		CHECK_EQ(prctl(PR_GET_TIMERSLACK), 5 * MS);
		/* 0 is the default: for a child, what its parent had at fork. */
		CHECK_OK(prctl(PR_SET_TIMERSLACK, 0));
		CHECK_EQ(prctl(PR_GET_TIMERSLACK), 5 * MS);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	measure("nanosleep", do_nanosleep, 5 * MS);
	measure("epoll_wait", do_epoll_wait, 5 * MS);
	CHECK_OK(prctl(PR_SET_TIMERSLACK, 0));
	CHECK_EQ(prctl(PR_GET_TIMERSLACK), 50000);
}

int main(int argc, char **argv)
{
	sigset_t s;
	size_t i;

	check_init(argc, argv);
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	sigprocmask(SIG_BLOCK, &s, NULL);
	epfd = CHECK_OK(epoll_create1(0));
	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		measure(calls[i].name, calls[i].fn, 50 * US);
	test_slack();
	return check_finish();
}
