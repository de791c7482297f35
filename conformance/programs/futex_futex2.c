/*
 * futex_futex2: the futex2 calls (futex_wake, futex_wait, futex_requeue,
 * futex_waitv).
 *
 * Wine and Proton wait on many objects at once with futex_waitv, and the C
 * libraries are moving their locks to futex_wait and futex_wake; their flag
 * and size checks are stricter than futex(2)'s.
 * Checks: a 32-bit futex (FUTEX2_SIZE_U32) is the only size, an unknown
 * flag is EINVAL; futex_wake's mask must be non-zero and fit the futex,
 * a count of 0 wakes no one (but the address is still checked: EINVAL if
 * unaligned, EFAULT if unmapped and shared; a private futex is keyed by
 * its address alone, so an unmapped one has no waiters), with no waiters
 * it returns 0, a wake
 * whose mask misses the waiter's finds no one; futex_wait is EAGAIN when
 * the word differs, EINVAL for a value or mask wider than the futex, a
 * zero mask, a clock other than CLOCK_MONOTONIC and CLOCK_REALTIME or a bad
 * timespec, EFAULT for a bad timeout pointer or word, and its timeout is
 * absolute on either clock (in the past: ETIMEDOUT at once); futex_requeue
 * wakes and moves waiters from the first futex to the second and returns
 * both counts, is EAGAIN when the first word differs from its value, and
 * EINVAL for a flag, futexes of different kinds, a negative count or a
 * reserved field set; futex_waitv returns the index of the futex woken,
 * EAGAIN if any word differs, ETIMEDOUT at its timeout, EINVAL for 0 or
 * more than 128 futexes, a NULL list, a flag, a reserved field, a NUMA
 * futex or an unaligned word, EFAULT for a bad list or word; a FUTEX2_NUMA
 * futex's node word of FUTEX_NO_NODE is set to the caller's node (0, on one
 * node), another node is EINVAL, and the pair must be 8-byte aligned.
 */
// covers: futex_wake futex_wait futex_requeue futex_waitv
#include "check.h"

#include <pthread.h>
#include <stdint.h>

#ifndef SYS_futex_wake
#define SYS_futex_wake 454
#define SYS_futex_wait 455
#define SYS_futex_requeue 456
#endif
#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

#define U32 0x02	/* FUTEX2_SIZE_U32 */
#define NUMA 0x04	/* FUTEX2_NUMA */
#define PRIV 128	/* FUTEX2_PRIVATE */
#define ANY 0xffffffffUL

struct waitv {
	uint64_t val, uaddr;
	uint32_t flags, reserved;
};

static long wake(void *p, unsigned long mask, int n, unsigned flags)
{
	return syscall(SYS_futex_wake, p, mask, n, flags);
}

static long wait2(void *p, unsigned long val, unsigned long mask, unsigned flags,
		  const struct timespec *ts, int clock)
{
	return syscall(SYS_futex_wait, p, val, mask, flags, ts, clock);
}

static long requeue(struct waitv *v, unsigned flags, int nwake, int nmove)
{
	return syscall(SYS_futex_requeue, v, flags, nwake, nmove);
}

static long waitv(struct waitv *v, unsigned n, unsigned flags,
		  const struct timespec *ts, int clock)
{
	return syscall(SYS_futex_waitv, v, n, flags, ts, clock);
}

static struct timespec in_ms(int clock, long ms)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	return ts;
}

static struct waitv entry(uint32_t *p, uint64_t val, uint32_t flags)
{
	struct waitv v = { val, (uintptr_t)p, flags, 0 };

	return v;
}

static void test_flags(void)
{
	static uint32_t w[4] __attribute__((aligned(8)));
	struct timespec past = in_ms(CLOCK_MONOTONIC, 0), bad = { 0, 1000000000 };

	CHECK_ERR(wake(w, ANY, 1, 0), EINVAL);
	CHECK_ERR(wake(w, ANY, 1, 1), EINVAL);
	CHECK_ERR(wake(w, ANY, 1, 3), EINVAL);
	CHECK_ERR(wake(w, ANY, 1, U32 | 0x100), EINVAL);
	CHECK_EQ(wake(w, ANY, 1, U32), 0);
	CHECK_EQ(wake(w, ANY, 1, U32 | PRIV), 0);
	CHECK_EQ(wake(w, ANY, -1, U32 | PRIV), 0);
	CHECK_ERR(wake(w, 0, 1, U32), EINVAL);
	CHECK_ERR(wake(w, 0x100000000UL, 1, U32), EINVAL);
	CHECK_ERR(wake((char *)w + 1, ANY, 1, U32), EINVAL);
	CHECK_ERR(wake((char *)w + 2, ANY, 0, U32), EINVAL);
	CHECK_ERR(wake((void *)8, ANY, 1, U32), EFAULT);
	CHECK_ERR(wake((void *)8, ANY, 0, U32), EFAULT);
	CHECK_EQ(wake((void *)8, ANY, 1, U32 | PRIV), 0);

	w[0] = 7;
	CHECK_ERR(wait2(w, 6, ANY, U32 | PRIV, NULL, CLOCK_MONOTONIC), EAGAIN);
	CHECK_ERR(wait2(w, 7 | 0x100000000UL, ANY, U32, NULL, 0), EINVAL);
	CHECK_ERR(wait2(w, 7, 0, U32, NULL, 0), EINVAL);
	CHECK_ERR(wait2(w, 7, 0x100000000UL, U32, NULL, 0), EINVAL);
	CHECK_ERR(wait2(w, 7, ANY, 0, NULL, 0), EINVAL);
	CHECK_ERR(wait2(w, 7, ANY, U32, &past, CLOCK_BOOTTIME), EINVAL);
	CHECK_ERR(wait2(w, 7, ANY, U32, &past, CLOCK_MONOTONIC_RAW), EINVAL);
	CHECK_ERR(wait2(w, 7, ANY, U32, &bad, CLOCK_MONOTONIC), EINVAL);
	CHECK_ERR(wait2(w, 7, ANY, U32, (void *)8, CLOCK_MONOTONIC), EFAULT);
	CHECK_ERR(wait2((void *)8, 7, ANY, U32, &past, CLOCK_MONOTONIC), EFAULT);
	CHECK_ERR(wait2((char *)w + 1, 7, ANY, U32, &past, CLOCK_MONOTONIC), EINVAL);
	CHECK_ERR(wait2(w, 7, ANY, U32 | PRIV, &past, CLOCK_MONOTONIC), ETIMEDOUT);
}

static void test_timeouts(void)
{
	static uint32_t w;
	struct timespec ts;
	long long t0;

	ts = in_ms(CLOCK_MONOTONIC, 20);
	t0 = check_now_ns();
	CHECK_ERR(wait2(&w, 0, ANY, U32 | PRIV, &ts, CLOCK_MONOTONIC), ETIMEDOUT);
	CHECK(check_now_ns() - t0 >= 15000000LL);
	ts = in_ms(CLOCK_REALTIME, 20);
	t0 = check_now_ns();
	CHECK_ERR(wait2(&w, 0, ANY, U32, &ts, CLOCK_REALTIME), ETIMEDOUT);
	CHECK(check_now_ns() - t0 >= 15000000LL);
}

/* A thread in futex_wait or futex_waitv, its result kept. */
struct waiter {
	pthread_t thread;
	uint32_t *word;
	uint32_t mask;
	struct waitv *v;
	int n;
	long result;
	int err;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	struct timespec ts = in_ms(CLOCK_MONOTONIC, 4000);

	if (w->v)
		w->result = waitv(w->v, w->n, 0, &ts, CLOCK_MONOTONIC);
	else
		w->result = wait2(w->word, 0, w->mask, U32 | PRIV, &ts, CLOCK_MONOTONIC);
	w->err = w->result < 0 ? errno : 0;
	return NULL;
}

static void start(struct waiter *w, uint32_t *word, uint32_t mask)
{
	memset(w, 0, sizeof(*w));
	w->word = word;
	w->mask = mask;
	w->result = -2;
	CHECK_EQ(pthread_create(&w->thread, NULL, wait_thread, w), 0);
}

/* wake_found wakes word until a waiter is found: it returns 1 then. */
static long wake_found(uint32_t *word, unsigned long mask, unsigned flags)
{
	long r = 0;
	int i;

	for (i = 0; i < 2000 && r == 0; i++) {
		r = wake(word, mask, 1, flags);
		if (r == 0)
			check_sleep_ms(1);
	}
	return r;
}

static void test_wake_wait(void)
{
	static uint32_t word, stage, other;
	struct waitv rq[2];
	struct waiter a, b;
	long moved = 0;
	int i;

	/* Masks: a waits for bit 0, b for bit 1. Both are queued on stage
	 * first, then moved to word by futex_requeue, which counts them: once
	 * moved, they are asleep. */
	start(&a, &stage, 1);
	start(&b, &stage, 2);
	rq[0] = entry(&stage, 0, U32 | PRIV);
	rq[1] = entry(&word, 0, U32 | PRIV);
	for (i = 0; i < 2000 && moved < 2; i++) {
		long r = requeue(rq, 0, 0, 2);

		if (r < 0) {
			CHECK_OK(r);
			break;
		}
		moved += r;
		if (moved < 2)
			check_sleep_ms(1);
	}
	CHECK_EQ(moved, 2);
	CHECK_EQ(wake(&stage, ANY, 10, U32 | PRIV), 0);
	/* A count of 0 wakes no one; a mask that meets no waiter neither. */
	CHECK_EQ(wake(&word, ANY, 0, U32 | PRIV), 0);
	CHECK_EQ(wake(&word, 4, 10, U32 | PRIV), 0);
	CHECK_EQ(wake(&word, 2, 10, U32 | PRIV), 1);
	pthread_join(b.thread, NULL);
	CHECK_EQ(b.result, 0);
	/* Requeue with the word changed: EAGAIN; else wake one, move none. */
	rq[0] = entry(&word, 1, U32 | PRIV);
	rq[1] = entry(&other, 0, U32 | PRIV);
	CHECK_ERR(requeue(rq, 0, 1, 1), EAGAIN);
	rq[0].val = 0;
	CHECK_EQ(requeue(rq, 0, 1, 1), 1);
	pthread_join(a.thread, NULL);
	CHECK_EQ(a.result, 0);
	CHECK_EQ(requeue(rq, 0, 1, 1), 0);
}

static void test_requeue_errors(void)
{
	static uint32_t a, b;
	struct waitv v[2];

	v[0] = entry(&a, 0, U32 | PRIV);
	v[1] = entry(&b, 0, U32 | PRIV);
	CHECK_EQ(requeue(v, 0, 1, 1), 0);
	CHECK_ERR(requeue(v, 1, 1, 1), EINVAL);
	CHECK_ERR(requeue(v, 0, -1, 1), EINVAL);
	CHECK_ERR(requeue(v, 0, 1, -1), EINVAL);
	CHECK_ERR(requeue((void *)8, 0, 1, 1), EFAULT);
	v[1].flags = U32;
	CHECK_ERR(requeue(v, 0, 1, 1), EINVAL);
	v[1].flags = U32 | PRIV;
	v[1].reserved = 1;
	CHECK_ERR(requeue(v, 0, 1, 1), EINVAL);
	v[1].reserved = 0;
	v[1].val = 1ULL << 32;
	CHECK_ERR(requeue(v, 0, 1, 1), EINVAL);
	v[1].val = 0;
	/* A private futex's key is its address: unmapped, it is found empty;
	 * a shared one's is its page: EFAULT. */
	v[1].uaddr = 8;
	CHECK_EQ(requeue(v, 0, 1, 1), 0);
	v[0].flags = v[1].flags = U32;
	CHECK_ERR(requeue(v, 0, 1, 1), EFAULT);
}

static void test_waitv(void)
{
	static uint32_t w[3];
	struct waitv v[3];
	struct waiter x;
	struct timespec past = in_ms(CLOCK_MONOTONIC, 0), bad = { 0, 1000000000 };
	int i;

	for (i = 0; i < 3; i++)
		v[i] = entry(&w[i], 0, U32 | PRIV);
	v[1].flags = U32; /* kinds may differ in a list */

	CHECK_ERR(waitv(v, 3, 0, &past, CLOCK_MONOTONIC), ETIMEDOUT);
	CHECK_ERR(waitv(v, 0, 0, NULL, CLOCK_MONOTONIC), EINVAL);
	CHECK_ERR(waitv(v, 129, 0, NULL, CLOCK_MONOTONIC), EINVAL);
	CHECK_ERR(waitv(NULL, 1, 0, NULL, CLOCK_MONOTONIC), EINVAL);
	CHECK_ERR(waitv(v, 3, 1, NULL, CLOCK_MONOTONIC), EINVAL);
	CHECK_ERR(waitv(v, 3, 0, &past, CLOCK_BOOTTIME), EINVAL);
	CHECK_ERR(waitv(v, 3, 0, &bad, CLOCK_MONOTONIC), EINVAL);
	CHECK_ERR(waitv(v, 3, 0, (void *)8, CLOCK_MONOTONIC), EFAULT);
	CHECK_ERR(waitv((void *)8, 3, 0, &past, CLOCK_MONOTONIC), EFAULT);
	w[2] = 1;
	CHECK_ERR(waitv(v, 3, 0, &past, CLOCK_MONOTONIC), EAGAIN);
	w[2] = 0;
	v[1].reserved = 1;
	CHECK_ERR(waitv(v, 3, 0, &past, CLOCK_MONOTONIC), EINVAL);
	v[1].reserved = 0;
	v[1].flags = 3;
	CHECK_ERR(waitv(v, 3, 0, &past, CLOCK_MONOTONIC), EINVAL);
	v[1].flags = U32 | NUMA;
	CHECK_ERR(waitv(v, 3, 0, &past, CLOCK_MONOTONIC), EINVAL);
	v[1].flags = U32;
	v[1].val = 1ULL << 32;
	CHECK_ERR(waitv(v, 3, 0, &past, CLOCK_MONOTONIC), EINVAL);
	v[1].val = 0;
	v[1].uaddr = 8;
	CHECK_ERR(waitv(v, 3, 0, &past, CLOCK_MONOTONIC), EFAULT);
	v[1].uaddr = (uintptr_t)w + 1;
	CHECK_ERR(waitv(v, 3, 0, &past, CLOCK_MONOTONIC), EINVAL);
	v[1].uaddr = (uintptr_t)&w[1];

	/* A wake of the third futex ends the wait with its index. */
	memset(&x, 0, sizeof(x));
	x.v = v;
	x.n = 3;
	x.result = -2;
	CHECK_EQ(pthread_create(&x.thread, NULL, wait_thread, &x), 0);
	CHECK_EQ(wake_found(&w[2], ANY, U32 | PRIV), 1);
	pthread_join(x.thread, NULL);
	CHECK_EQ(x.result, 2);
	/* It was taken off the other futexes' queues. */
	CHECK_EQ(wake(&w[0], ANY, 10, U32 | PRIV), 0);
	CHECK_EQ(wake(&w[1], ANY, 10, U32), 0);
	/* Again through the second, a shared futex. */
	x.result = -2;
	CHECK_EQ(pthread_create(&x.thread, NULL, wait_thread, &x), 0);
	CHECK_EQ(wake_found(&w[1], ANY, U32), 1);
	pthread_join(x.thread, NULL);
	CHECK_EQ(x.result, 1);
}

static void test_numa(void)
{
	static uint32_t w[4] __attribute__((aligned(8)));

	w[1] = 0xffffffff; /* FUTEX_NO_NODE */
	CHECK_EQ(wake(w, ANY, 1, U32 | NUMA | PRIV), 0);
	CHECK_EQ(w[1], 0);
	CHECK_EQ(wake(w, ANY, 1, U32 | NUMA), 0);
	w[3] = 5000;
	CHECK_ERR(wake(&w[2], ANY, 1, U32 | NUMA), EINVAL);
	CHECK_ERR(wake(&w[1], ANY, 1, U32 | NUMA), EINVAL);
	w[1] = 0xffffffff;
	CHECK_ERR(wait2(w, 1, ANY, U32 | NUMA | PRIV, NULL, 0), EAGAIN);
	CHECK_EQ(w[1], 0);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_flags();
	test_timeouts();
	test_wake_wait();
	test_requeue_errors();
	test_waitv();
	test_numa();
	return check_finish();
}
