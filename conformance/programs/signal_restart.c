/*
 * signal_restart: what a handled signal does to the system call it
 * interrupts.
 *
 * A program with a SIGALRM, SIGCHLD or SIGWINCH handler is blocked in read
 * or write most of the time; whether the call comes back with EINTR or goes
 * on by itself decides whether the program notices, and every event loop is
 * written around it.
 * Checks, with an ITIMER_REAL alarm whose handler feeds or drains the pipe
 * the call is blocked on: with SA_RESTART a blocking read of an empty pipe
 * and a blocking write to a full pipe go on after the handler and complete
 * (with what the handler wrote, with the room it made); without SA_RESTART
 * they fail with EINTR (the data the handler wrote is still there, the
 * write wrote nothing). nanosleep interrupted by a handler fails with EINTR
 * whatever SA_RESTART says, with the time left in rem; an ignored signal
 * does not interrupt it. pipe2 with O_CLOEXEC.
 */
// covers: read write nanosleep rt_sigaction setitimer pipe2
#include "check.h"

#include <sys/ioctl.h>
#include <sys/time.h>

#define PIPE_SIZE 65536
#define ALARM_MS 10

static volatile int fired, fired_in_call, in_call;
static int feed_fd = -1, drain_fd = -1;
static int pipe_r, pipe_w;

static void on_alarm(int sig)
{
	static char buf[4096];

	(void)sig;
	fired++;
	fired_in_call = in_call;
	if (feed_fd >= 0 && write(feed_fd, "x", 1) != 1)
		fired = -1000;
	if (drain_fd >= 0 && read(drain_fd, buf, sizeof(buf)) != sizeof(buf))
		fired = -1000;
}

static void set_alarm_action(void (*h)(int), int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = flags;
	CHECK_OK(sigaction(SIGALRM, &sa, NULL));
}

static void arm(long ms)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = ms / 1000;
	it.it_value.tv_usec = ms % 1000 * 1000;
	CHECK_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
}

/*
 * interrupted runs op with the alarm armed to fire ALARM_MS later, while op
 * is blocked, and returns op's result with its errno in *err. If the alarm
 * fired before op began (a badly loaded machine), it tries again.
 */
static long interrupted(long (*op)(void), int *err)
{
	long r = -1;
	int tries;

	for (tries = 0; tries < 5; tries++) {
		fired = fired_in_call = 0;
		arm(ALARM_MS);
		in_call = 1;
		errno = 0;
		r = op();
		*err = errno;
		in_call = 0;
		if (fired_in_call)
			return r;
		/* Disarm an alarm that has not fired yet before retrying. */
		arm(0);
	}
	check_fail(__FILE__, __LINE__, "the alarm never interrupted the call");
	return r;
}

static char buf[PIPE_SIZE];

static long op_read(void)
{
	return read(pipe_r, buf, sizeof(buf));
}

static long op_write(void)
{
	return write(pipe_w, "y", 1);
}

static struct timespec rem;

static long op_nanosleep(void)
{
	struct timespec ts = { 1, 0 };

	rem.tv_sec = rem.tv_nsec = -1;
	return nanosleep(&ts, &rem);
}

static void fill_pipe(void)
{
	long n, total = 0;

	CHECK_OK(fcntl(pipe_w, F_SETFL, O_NONBLOCK));
	memset(buf, 'f', 4096);
	while ((n = write(pipe_w, buf, 4096)) > 0)
		total += n;
	CHECK_EQ(total, PIPE_SIZE);
	CHECK_OK(fcntl(pipe_w, F_SETFL, 0));
}

static void test_read(void)
{
	long long t0;
	int err, p[2];
	long r;

	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	CHECK_EQ(fcntl(p[0], F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(p[1], F_GETFD), FD_CLOEXEC);
	pipe_r = p[0];
	pipe_w = p[1];
	feed_fd = pipe_w;

	/* SA_RESTART: the read goes on and returns what the handler wrote. */
	set_alarm_action(on_alarm, SA_RESTART);
	t0 = check_now_ns();
	r = interrupted(op_read, &err);
	CHECK_EQ(r, 1);
	CHECK_EQ(buf[0], 'x');
	CHECK_EQ(fired, 1);
	CHECK(check_now_ns() - t0 >= ALARM_MS * 1000000LL);

	/* Without it: EINTR, and the byte is still in the pipe. */
	set_alarm_action(on_alarm, 0);
	r = interrupted(op_read, &err);
	CHECK_EQ(r, -1);
	CHECK_EQ(err, EINTR);
	CHECK_EQ(fired, 1);
	CHECK_EQ(read(pipe_r, buf, sizeof(buf)), 1);
	CHECK_EQ(buf[0], 'x');
	feed_fd = -1;
}

static void test_write(void)
{
	int err, n;
	long r;

	fill_pipe();
	drain_fd = pipe_r;

	/* SA_RESTART: the handler made room, the write completes. */
	set_alarm_action(on_alarm, SA_RESTART);
	r = interrupted(op_write, &err);
	CHECK_EQ(r, 1);
	CHECK_EQ(fired, 1);
	CHECK_OK(ioctl(pipe_r, FIONREAD, &n));
	CHECK_EQ(n, PIPE_SIZE - 4096 + 1);

	/* Fill it again: without SA_RESTART, EINTR and nothing written. */
	drain_fd = -1;
	CHECK_EQ(read(pipe_r, buf, sizeof(buf)), PIPE_SIZE - 4096 + 1);
	fill_pipe();
	drain_fd = pipe_r;
	set_alarm_action(on_alarm, 0);
	r = interrupted(op_write, &err);
	CHECK_EQ(r, -1);
	CHECK_EQ(err, EINTR);
	CHECK_EQ(fired, 1);
	CHECK_OK(ioctl(pipe_r, FIONREAD, &n));
	CHECK_EQ(n, PIPE_SIZE - 4096);
	drain_fd = -1;
	close(pipe_r);
	close(pipe_w);
}

static void test_nanosleep(void)
{
	struct timespec ts = { 0, 30 * 1000000 };
	long long t0;
	int err;
	long r;

	/* nanosleep is never restarted after a handler, SA_RESTART or not;
	 * rem says how much of the second was left. */
	set_alarm_action(on_alarm, SA_RESTART);
	t0 = check_now_ns();
	r = interrupted(op_nanosleep, &err);
	CHECK_EQ(r, -1);
	CHECK_EQ(err, EINTR);
	CHECK(check_now_ns() - t0 < 500000000LL);
	CHECK_EQ(rem.tv_sec, 0);
	CHECK(rem.tv_nsec > 500000000L && rem.tv_nsec < 1000000000L);

	set_alarm_action(on_alarm, 0);
	r = interrupted(op_nanosleep, &err);
	CHECK_EQ(r, -1);
	CHECK_EQ(err, EINTR);
	CHECK(rem.tv_nsec > 500000000L && rem.tv_nsec < 1000000000L);

	/* An ignored signal interrupts nothing. */
	set_alarm_action(SIG_IGN, 0);
	arm(ALARM_MS);
	t0 = check_now_ns();
	CHECK_EQ(nanosleep(&ts, NULL), 0);
	CHECK(check_now_ns() - t0 >= 30 * 1000000LL);
	set_alarm_action(SIG_DFL, 0);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_read();
	test_write();
	test_nanosleep();
	return check_finish();
}
