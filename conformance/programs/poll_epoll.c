/*
 * poll_epoll: waiting for descriptors to become ready.
 *
 * Every event loop (libuv, Go's netpoller, nginx, Python's asyncio) sits in
 * poll, select or epoll_wait; the readiness bits, the timeouts, and epoll's
 * edge-triggered and one-shot rules decide whether such programs spin, hang
 * or miss an event.
 * Checks: poll reports POLLOUT on an empty pipe's write end, POLLIN when
 * data is there, POLLHUP once the writer is gone (with POLLIN while data
 * remains), POLLERR on the write end once the reader is gone, POLLNVAL for a
 * closed fd (counted in the result), ignores a negative fd; timeout 0 returns
 * at once, 50 ms times out after at least 50 ms; EINVAL for too many fds.
 * ppoll's timeout and its temporary signal mask (a pending signal it
 * unblocks interrupts it with EINTR, the mask comes back). select and
 * pselect6 keep only the ready fds in their sets, write the time left back
 * (all of it used when they time out), EBADF for a closed fd in a set,
 * EINVAL for a negative nfds. epoll_create1: EPOLL_CLOEXEC, EINVAL for other
 * flags; epoll_ctl: EEXIST, ENOENT, EBADF, EINVAL for the epoll fd itself
 * and for a bad op, EPERM for a regular file; epoll_wait and epoll_pwait:
 * data.u64 returned, level-triggered reports again and again, EPOLLET once
 * per new arrival, EPOLLONESHOT once until rearmed by EPOLL_CTL_MOD, EPOLLHUP
 * and EPOLLERR, a deleted fd is not reported, maxevents <= 0 is EINVAL, a
 * non-epoll fd is EINVAL, an epoll fd closed with its entries; epoll_pwait's
 * signal mask; epoll_pwait2's timespec timeout; the old epoll_create (size
 * must be positive, no close-on-exec); EPOLL_CTL_ADD and EPOLL_CTL_MOD of a
 * file that is ready already wake a thread waiting in epoll_wait (Go's
 * netpoller waits so while another thread adds a connected socket). eventfd2 (and the flagless eventfd): a read returns the counter and resets it,
 * EFD_SEMAPHORE reads 1 at a time, EFD_NONBLOCK gives EAGAIN at zero and at
 * the ceiling, 0xffffffffffffffff and short buffers are EINVAL, poll sees it.
 */
// covers: poll ppoll select pselect6 epoll_create epoll_create1 epoll_ctl epoll_wait epoll_pwait epoll_pwait2 eventfd eventfd2
#include "check.h"

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/select.h>
#include <sys/time.h>

static long long ms_since(long long t0)
{
	return (check_now_ns() - t0) / 1000000;
}

/* revents polls one fd with timeout 0 and returns its revents (or -1). */
static int revents(int fd, short events)
{
	struct pollfd p = { fd, events, 0 };
	int r = poll(&p, 1, 0);

	return r < 0 ? -1 : p.revents;
}

static volatile int usr1_count;

static void on_usr1(int sig)
{
	(void)sig;
	usr1_count++;
}

static void test_poll(void)
{
	struct pollfd fds[4];
	char buf[8];
	long long t0;
	int p[2], closed;

	CHECK_OK(pipe(p));
	/* Empty: the write end can be written, the read end has nothing. */
	CHECK_EQ(revents(p[1], POLLIN | POLLOUT), POLLOUT);
	CHECK_EQ(revents(p[0], POLLIN | POLLOUT), 0);
	t0 = check_now_ns();
	fds[0] = (struct pollfd){ p[0], POLLIN, 0x5a };
	CHECK_EQ(poll(fds, 1, 0), 0);
	CHECK_EQ(fds[0].revents, 0);
	CHECK(ms_since(t0) < 20);
	/* A real timeout. */
	t0 = check_now_ns();
	CHECK_EQ(poll(fds, 1, 50), 0);
	CHECK(ms_since(t0) >= 50);

	CHECK_EQ(write(p[1], "ab", 2), 2);
	CHECK_EQ(revents(p[0], POLLIN | POLLOUT), POLLIN);
	CHECK_EQ(poll(fds, 1, 1000), 1);
	CHECK_EQ(fds[0].revents, POLLIN);

	/* A closed fd is POLLNVAL and counts; a negative one is skipped. */
	closed = CHECK_OK(dup(p[0]));
	close(closed);
	fds[0] = (struct pollfd){ p[0], POLLIN, 0 };
	fds[1] = (struct pollfd){ closed, POLLIN, 0 };
	fds[2] = (struct pollfd){ -1, POLLIN, 0x5a };
	fds[3] = (struct pollfd){ p[1], POLLOUT, 0 };
	CHECK_EQ(poll(fds, 4, 0), 3);
	CHECK_EQ(fds[0].revents, POLLIN);
	CHECK_EQ(fds[1].revents, POLLNVAL);
	CHECK_EQ(fds[2].revents, 0);
	CHECK_EQ(fds[3].revents, POLLOUT);

	/* Writer gone: POLLHUP, with POLLIN while data is left. POLLHUP is
	 * reported even when not asked for. */
	close(p[1]);
	CHECK_EQ(revents(p[0], POLLIN), POLLIN | POLLHUP);
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 2);
	CHECK_EQ(revents(p[0], POLLIN), POLLHUP);
	CHECK_EQ(revents(p[0], 0), POLLHUP);
	close(p[0]);

	/* Reader gone: POLLERR on the write end. */
	CHECK_OK(pipe(p));
	close(p[0]);
	CHECK_EQ(revents(p[1], POLLOUT), POLLOUT | POLLERR);
	close(p[1]);

	CHECK_ERR(syscall(SYS_poll, fds, 0x7fffffff, 0), EINVAL);
	CHECK_ERR(syscall(SYS_poll, (void *)8, 1, 0), EFAULT);
}

static void test_ppoll(void)
{
	struct timespec ts = { 0, 10000000 };
	struct pollfd pfd;
	sigset_t block, none, got;
	long long t0;
	int p[2];

	CHECK_OK(pipe(p));
	pfd = (struct pollfd){ p[0], POLLIN, 0 };
	t0 = check_now_ns();
	CHECK_EQ(syscall(SYS_ppoll, &pfd, 1, &ts, NULL, 8), 0);
	CHECK(ms_since(t0) >= 10);
	/* ppoll writes back the time left: none. */
	CHECK_EQ(ts.tv_sec, 0);
	CHECK_EQ(ts.tv_nsec, 0);

	/* The mask ppoll installs lets a pending signal in: EINTR. */
	signal(SIGUSR1, on_usr1);
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	CHECK_OK(sigprocmask(SIG_BLOCK, &block, NULL));
	CHECK_OK(kill(getpid(), SIGUSR1));
	CHECK_EQ(usr1_count, 0);
	sigemptyset(&none);
	ts.tv_sec = 5;
	ts.tv_nsec = 0;
	t0 = check_now_ns();
	CHECK_ERR(syscall(SYS_ppoll, &pfd, 1, &ts, &none, 8), EINTR);
	CHECK(ms_since(t0) < 1000);
	CHECK_EQ(usr1_count, 1);
	CHECK_OK(sigprocmask(SIG_BLOCK, NULL, &got));
	CHECK(sigismember(&got, SIGUSR1));
	CHECK_ERR(syscall(SYS_ppoll, &pfd, 1, &ts, &none, 4), EINVAL);
	ts.tv_nsec = 1000000000;
	CHECK_ERR(syscall(SYS_ppoll, &pfd, 1, &ts, NULL, 8), EINVAL);
	CHECK_OK(sigprocmask(SIG_UNBLOCK, &block, NULL));
	signal(SIGUSR1, SIG_DFL);
	close(p[0]);
	close(p[1]);
}

static void test_select(void)
{
	struct timeval tv;
	struct timespec ts;
	fd_set rd, wr;
	long long t0;
	int p[2], q[2], nfds, closed;
	struct {
		const sigset_t *ss;
		size_t len;
	} no_mask = { NULL, 8 };

	CHECK_OK(pipe(p));
	CHECK_OK(pipe(q));
	nfds = (p[0] > q[0] ? p[0] : q[0]) + 1;
	nfds = nfds > p[1] + 1 ? nfds : p[1] + 1;
	nfds = nfds > q[1] + 1 ? nfds : q[1] + 1;

	/* Only the ready fds stay in the sets; the time left comes back. */
	CHECK_EQ(write(q[1], "x", 1), 1);
	FD_ZERO(&rd);
	FD_ZERO(&wr);
	FD_SET(p[0], &rd);
	FD_SET(q[0], &rd);
	FD_SET(p[1], &wr);
	tv.tv_sec = 5;
	tv.tv_usec = 0;
	CHECK_EQ(syscall(SYS_select, nfds, &rd, &wr, NULL, &tv), 2);
	CHECK(!FD_ISSET(p[0], &rd));
	CHECK(FD_ISSET(q[0], &rd));
	CHECK(FD_ISSET(p[1], &wr));
	CHECK(tv.tv_sec == 4 || tv.tv_sec == 5);
	CHECK(tv.tv_sec * 1000000L + tv.tv_usec > 4000000L);

	/* A timeout: nothing set, no time left. */
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	tv.tv_sec = 0;
	tv.tv_usec = 10000;
	t0 = check_now_ns();
	CHECK_EQ(syscall(SYS_select, nfds, &rd, NULL, NULL, &tv), 0);
	CHECK(ms_since(t0) >= 10);
	CHECK(!FD_ISSET(p[0], &rd));
	CHECK_EQ(tv.tv_sec, 0);
	CHECK_EQ(tv.tv_usec, 0);
	/* No sets and a zero timeout: returns at once. */
	tv.tv_sec = tv.tv_usec = 0;
	CHECK_EQ(syscall(SYS_select, 0, NULL, NULL, NULL, &tv), 0);

	closed = CHECK_OK(dup(p[0]));
	close(closed);
	FD_ZERO(&rd);
	FD_SET(closed, &rd);
	CHECK_ERR(syscall(SYS_select, closed + 1, &rd, NULL, NULL, &tv), EBADF);
	CHECK_ERR(syscall(SYS_select, -1, NULL, NULL, NULL, &tv), EINVAL);
	tv.tv_usec = -1;
	CHECK_ERR(syscall(SYS_select, 0, NULL, NULL, NULL, &tv), EINVAL);

	/* pselect6: a timespec, and the same rules. */
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	FD_SET(q[0], &rd);
	ts.tv_sec = 5;
	ts.tv_nsec = 0;
	CHECK_EQ(syscall(SYS_pselect6, nfds, &rd, NULL, NULL, &ts, &no_mask), 1);
	CHECK(FD_ISSET(q[0], &rd));
	CHECK(!FD_ISSET(p[0], &rd));
	CHECK(ts.tv_sec == 4 || ts.tv_sec == 5);
	FD_ZERO(&rd);
	FD_SET(p[0], &rd);
	ts.tv_sec = 0;
	ts.tv_nsec = 10000000;
	t0 = check_now_ns();
	CHECK_EQ(syscall(SYS_pselect6, nfds, &rd, NULL, NULL, &ts, &no_mask), 0);
	CHECK(ms_since(t0) >= 10);
	CHECK_EQ(ts.tv_sec, 0);
	CHECK_EQ(ts.tv_nsec, 0);
	CHECK(!FD_ISSET(p[0], &rd));
	ts.tv_nsec = -1;
	CHECK_ERR(syscall(SYS_pselect6, nfds, &rd, NULL, NULL, &ts, &no_mask),
		  EINVAL);

	close(p[0]);
	close(p[1]);
	close(q[0]);
	close(q[1]);
}

/* wait1 waits (timeout 0) for at most 4 events; it returns their number and
 * the first one in *ev. */
static int wait1(int ep, struct epoll_event *ev)
{
	struct epoll_event evs[4];
	int n = epoll_wait(ep, evs, 4, 0);

	if (n > 0)
		*ev = evs[0];
	return n;
}

static void test_epoll_ctl(void)
{
	struct epoll_event ev = { EPOLLIN, { .u64 = 1 } };
	int ep, ep2, p[2], file, closed;

	ep = CHECK_OK(epoll_create1(0));
	CHECK_EQ(fcntl(ep, F_GETFD), 0);
	ep2 = CHECK_OK(epoll_create1(EPOLL_CLOEXEC));
	CHECK_EQ(fcntl(ep2, F_GETFD), FD_CLOEXEC);
	CHECK_ERR(epoll_create1(1), EINVAL);
	CHECK_ERR(syscall(SYS_epoll_create1, O_NONBLOCK), EINVAL);
	/* The old call: the size is only checked to be positive. */
	closed = CHECK_OK(syscall(SYS_epoll_create, 1));
	CHECK_EQ(fcntl(closed, F_GETFD), 0);
	close(closed);
	CHECK_ERR(syscall(SYS_epoll_create, 0), EINVAL);
	CHECK_ERR(syscall(SYS_epoll_create, -1), EINVAL);

	CHECK_OK(pipe(p));
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), EEXIST);
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_MOD, p[1], &ev), ENOENT);
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_DEL, p[1], &ev), ENOENT);
	closed = CHECK_OK(dup(p[1]));
	close(closed);
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, closed, &ev), EBADF);
	CHECK_ERR(epoll_ctl(closed, EPOLL_CTL_ADD, p[0], &ev), EBADF);
	/* Not itself, and not through something that is no epoll fd. */
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev), EINVAL);
	CHECK_ERR(epoll_ctl(p[1], EPOLL_CTL_ADD, p[0], &ev), EINVAL);
	CHECK_ERR(epoll_ctl(ep, 42, p[0], &ev), EINVAL);
	/* A regular file is always ready: epoll refuses it. */
	file = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, file, &ev), EPERM);
	close(file);
	/* An epoll fd inside another one is fine. */
	CHECK_EQ(epoll_ctl(ep2, EPOLL_CTL_ADD, ep, &ev), 0);
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), 0);
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), ENOENT);

	CHECK_ERR(epoll_wait(ep, &ev, 0, 0), EINVAL);
	CHECK_ERR(syscall(SYS_epoll_wait, ep, &ev, -1, 0), EINVAL);
	CHECK_ERR(epoll_wait(p[0], &ev, 1, 0), EINVAL);
	CHECK_ERR(epoll_wait(closed, &ev, 1, 0), EBADF);
	close(ep);
	close(ep2);
	close(p[0]);
	close(p[1]);
}

static void test_epoll_wait(void)
{
	struct epoll_event ev, got;
	char buf[16];
	long long t0;
	int ep, p[2];

	ep = CHECK_OK(epoll_create1(EPOLL_CLOEXEC));
	CHECK_OK(pipe(p));
	ev.events = EPOLLIN;
	ev.data.u64 = 0x1122334455667788ULL;
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);

	CHECK_EQ(wait1(ep, &got), 0);
	t0 = check_now_ns();
	CHECK_EQ(epoll_wait(ep, &got, 1, 10), 0);
	CHECK(ms_since(t0) >= 10);

	/* Level-triggered: reported as long as data is there. */
	CHECK_EQ(write(p[1], "abc", 3), 3);
	memset(&got, 0, sizeof(got));
	CHECK_EQ(wait1(ep, &got), 1);
	CHECK_EQ(got.events, EPOLLIN);
	CHECK_EQ(got.data.u64, 0x1122334455667788ULL);
	CHECK_EQ(wait1(ep, &got), 1);
	CHECK_EQ(epoll_wait(ep, &got, 1, -1), 1);

	/* Edge-triggered: once, then again only for new data. */
	ev.events = EPOLLIN | EPOLLET;
	ev.data.u64 = 2;
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), 0);
	CHECK_EQ(wait1(ep, &got), 1);
	CHECK_EQ(got.data.u64, 2);
	CHECK_EQ(wait1(ep, &got), 0);
	CHECK_EQ(write(p[1], "d", 1), 1);
	CHECK_EQ(wait1(ep, &got), 1);
	CHECK_EQ(wait1(ep, &got), 0);
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 4);

	/* One-shot: once, then nothing until EPOLL_CTL_MOD rearms it. */
	ev.events = EPOLLIN | EPOLLONESHOT;
	ev.data.u64 = 3;
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), 0);
	CHECK_EQ(write(p[1], "e", 1), 1);
	CHECK_EQ(wait1(ep, &got), 1);
	CHECK_EQ(got.data.u64, 3);
	CHECK_EQ(wait1(ep, &got), 0);
	CHECK_EQ(write(p[1], "f", 1), 1);
	CHECK_EQ(wait1(ep, &got), 0);
	/* Disarmed, but still registered. */
	CHECK_ERR(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), EEXIST);
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), 0);
	CHECK_EQ(wait1(ep, &got), 1);
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 2);

	/* EPOLLHUP (never asked for) when the writer goes. */
	ev.events = EPOLLIN;
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev), 0);
	close(p[1]);
	CHECK_EQ(wait1(ep, &got), 1);
	CHECK_EQ(got.events, EPOLLHUP);

	/* A deleted fd is not reported. */
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_DEL, p[0], NULL), 0);
	CHECK_EQ(wait1(ep, &got), 0);
	close(p[0]);

	/* EPOLLERR on a write end without a reader; several events at once. */
	CHECK_OK(pipe(p));
	ev.events = EPOLLOUT;
	ev.data.u64 = 4;
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &ev), 0);
	CHECK_EQ(wait1(ep, &got), 1);
	CHECK_EQ(got.events, EPOLLOUT);
	close(p[0]);
	CHECK_EQ(wait1(ep, &got), 1);
	CHECK_EQ(got.events, EPOLLOUT | EPOLLERR);
	/* Closing the last descriptor of a file drops its registration. */
	close(p[1]);
	CHECK_EQ(wait1(ep, &got), 0);
	close(ep);
}

static void test_epoll_pwait(void)
{
	struct epoll_event ev = { EPOLLIN, { .u64 = 9 } }, got;
	sigset_t block, none, cur;
	struct timespec ts;
	long long t0;
	int ep, p[2];

	ep = CHECK_OK(epoll_create1(0));
	CHECK_OK(pipe(p));
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
	CHECK_EQ(write(p[1], "x", 1), 1);
	CHECK_EQ(syscall(SYS_epoll_pwait, ep, &got, 1, 0, NULL, 8), 1);
	CHECK_EQ(got.data.u64, 9);
	CHECK_EQ(read(p[0], &got, 1), 1);

	signal(SIGUSR1, on_usr1);
	usr1_count = 0;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR1);
	CHECK_OK(sigprocmask(SIG_BLOCK, &block, NULL));
	CHECK_OK(kill(getpid(), SIGUSR1));
	sigemptyset(&none);
	CHECK_ERR(syscall(SYS_epoll_pwait, ep, &got, 1, 5000, &none, 8), EINTR);
	CHECK_EQ(usr1_count, 1);
	CHECK_OK(sigprocmask(SIG_BLOCK, NULL, &cur));
	CHECK(sigismember(&cur, SIGUSR1));
	CHECK_ERR(syscall(SYS_epoll_pwait, ep, &got, 1, 0, &none, 4), EINVAL);
	CHECK_OK(sigprocmask(SIG_UNBLOCK, &block, NULL));

	/* epoll_pwait2: a timespec for the timeout (NULL: forever). */
	ts.tv_sec = 0;
	ts.tv_nsec = 10000000;
	t0 = check_now_ns();
	CHECK_EQ(syscall(SYS_epoll_pwait2, ep, &got, 1, &ts, NULL, 8), 0);
	CHECK(ms_since(t0) >= 10);
	CHECK_EQ(write(p[1], "y", 1), 1);
	memset(&got, 0, sizeof(got));
	CHECK_EQ(syscall(SYS_epoll_pwait2, ep, &got, 1, NULL, NULL, 8), 1);
	CHECK_EQ(got.data.u64, 9);
	ts.tv_nsec = 1000000000;
	CHECK_ERR(syscall(SYS_epoll_pwait2, ep, &got, 1, &ts, NULL, 8), EINVAL);
	signal(SIGUSR1, SIG_DFL);
	close(ep);
	close(p[0]);
	close(p[1]);
}

struct ready_waiter {
	int ep, n;
	long long ms;
	struct epoll_event ev;
};

static void *wait_thread(void *arg)
{
	struct ready_waiter *w = arg;
	long long t0 = check_now_ns();

	w->n = epoll_wait(w->ep, &w->ev, 1, 3000);
	w->ms = ms_since(t0);
	return NULL;
}

/* A thread sleeps in epoll_wait; another adds (or modifies to) an item
 * whose file is ready already: the sleeper wakes at once with it. */
static void test_epoll_ctl_wakes_waiter(void)
{
	static const int ops[] = { EPOLL_CTL_ADD, EPOLL_CTL_MOD };
	unsigned i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		int op = ops[i];
		struct ready_waiter w = { .ep = CHECK_OK(epoll_create1(0)) };
		struct epoll_event ev = { .events = EPOLLOUT, .data.u64 = 9 };
		pthread_t t;
		int p[2];

		CHECK_OK(pipe(p));
		CHECK_EQ(write(p[1], "x", 1), 1);
		if (op == EPOLL_CTL_MOD) /* a read end is never writable */
			CHECK_OK(epoll_ctl(w.ep, EPOLL_CTL_ADD, p[0], &ev));
		CHECK_EQ(pthread_create(&t, NULL, wait_thread, &w), 0);
		usleep(100000); /* let it go to sleep */
		ev.events = EPOLLIN;
		CHECK_OK(epoll_ctl(w.ep, op, p[0], &ev));
		CHECK_EQ(pthread_join(t, NULL), 0);
		CHECK_EQ(w.n, 1);
		CHECK_EQ(w.ev.data.u64, 9);
		CHECK(w.ms < 1000);
		close(p[0]);
		close(p[1]);
		close(w.ep);
	}
}

static void test_eventfd(void)
{
	uint64_t v;
	int fd, ep;
	struct epoll_event ev = { EPOLLIN, { .u64 = 5 } }, got;

	fd = CHECK_OK(syscall(SYS_eventfd2, 3, EFD_NONBLOCK | EFD_CLOEXEC));
	CHECK_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	CHECK_EQ(revents(fd, POLLIN | POLLOUT), POLLIN | POLLOUT);
	v = 4;
	CHECK_EQ(write(fd, &v, 8), 8);
	/* A read takes the whole count and leaves zero. */
	v = 0;
	CHECK_EQ(read(fd, &v, 8), 8);
	CHECK_EQ(v, 7);
	CHECK_ERR(read(fd, &v, 8), EAGAIN);
	CHECK_EQ(revents(fd, POLLIN | POLLOUT), POLLOUT);
	/* Short buffers, the forbidden value. */
	CHECK_ERR(read(fd, &v, 4), EINVAL);
	CHECK_ERR(write(fd, &v, 4), EINVAL);
	v = 0xffffffffffffffffULL;
	CHECK_ERR(write(fd, &v, 8), EINVAL);
	/* The ceiling is 0xfffffffffffffffe: beyond it a write would block. */
	v = 0xfffffffffffffffeULL;
	CHECK_EQ(write(fd, &v, 8), 8);
	CHECK_EQ(revents(fd, POLLIN | POLLOUT), POLLIN);
	v = 1;
	CHECK_ERR(write(fd, &v, 8), EAGAIN);
	v = 0;
	CHECK_EQ(write(fd, &v, 8), 8);
	CHECK_EQ(read(fd, &v, 8), 8);
	CHECK_EQ(v, 0xfffffffffffffffeULL);

	/* Through epoll. */
	ep = CHECK_OK(epoll_create1(0));
	CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	CHECK_EQ(wait1(ep, &got), 0);
	v = 1;
	CHECK_EQ(write(fd, &v, 8), 8);
	CHECK_EQ(wait1(ep, &got), 1);
	CHECK_EQ(got.data.u64, 5);
	close(ep);
	close(fd);

	/* EFD_SEMAPHORE: one at a time. */
	fd = CHECK_OK(syscall(SYS_eventfd2, 2, EFD_SEMAPHORE | EFD_NONBLOCK));
	CHECK_EQ(fcntl(fd, F_GETFD), 0);
	CHECK_EQ(read(fd, &v, 8), 8);
	CHECK_EQ(v, 1);
	CHECK_EQ(read(fd, &v, 8), 8);
	CHECK_EQ(v, 1);
	CHECK_ERR(read(fd, &v, 8), EAGAIN);
	close(fd);

	CHECK_ERR(syscall(SYS_eventfd2, 0, 2), EINVAL);

	/* The old eventfd: no flags, so blocking and kept across exec. */
	fd = CHECK_OK(syscall(SYS_eventfd, 5));
	CHECK_EQ(fcntl(fd, F_GETFD), 0);
	CHECK_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
	CHECK_EQ(revents(fd, POLLIN), POLLIN);
	CHECK_EQ(read(fd, &v, 8), 8);
	CHECK_EQ(v, 5);
	CHECK_EQ(revents(fd, POLLIN), 0);
	close(fd);
	CHECK_ERR(syscall(SYS_eventfd2, 0, O_APPEND), EINVAL);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_poll();
	test_ppoll();
	test_select();
	test_epoll_ctl();
	test_epoll_wait();
	test_epoll_pwait();
	test_epoll_ctl_wakes_waiter();
	test_eventfd();
	return check_finish();
}
