/*
 * futex_ops: the wait queues under every mutex, condition variable, semaphore
 * and thread join.
 *
 * The C library, Go, Rust and the JVM build all their locks on futex; a
 * wrong return count, a missed wake or a wrong compare and threads hang or
 * run wild. pthread_join and robust mutexes rely on the kernel clearing the
 * tid word and walking the robust list when a thread dies.
 * Waiters here are first queued on a staging word and moved to the word under
 * test with FUTEX_REQUEUE, which counts them: so every wake below is known
 * to find its waiters already asleep, with no sleeps and guesses.
 * Checks: FUTEX_WAIT is EAGAIN when the word differs and ETIMEDOUT at a
 * relative timeout, FUTEX_WAIT_BITSET at an absolute CLOCK_MONOTONIC one;
 * EINVAL for a bad timeout, an unaligned word or a zero bitset, EFAULT for a
 * bad address, ENOSYS for an unknown operation; a wake between two threads;
 * FUTEX_WAKE returns the number woken (0 without waiters); FUTEX_REQUEUE and
 * FUTEX_CMP_REQUEUE move waiters and return woken plus moved, CMP_REQUEUE is
 * EAGAIN when the word differs; FUTEX_WAKE_BITSET wakes only waiters whose
 * bitset matches; FUTEX_WAKE_OP applies its operation (SET ADD OR ANDN XOR,
 * OPARG_SHIFT) and wakes the second word only when its comparison holds;
 * shared futexes between processes in a MAP_SHARED page, which a private
 * wake does not find; CLONE_PARENT_SETTID, CLONE_CHILD_SETTID and
 * CLONE_CHILD_CLEARTID on a raw clone thread: at exit the word is zeroed and
 * a waiter woken, and set_tid_address (which returns the tid) moves that
 * duty to another word; pthread_join; a thread or a process that dies
 * holding a robust mutex leaves FUTEX_OWNER_DIED in the word and the next
 * lock returns EOWNERDEAD.
 */
// covers: futex set_tid_address clone clone3 exit
#include "check.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>

static long futex(uint32_t *uaddr, int op, uint32_t val, const void *timeout,
		  uint32_t *uaddr2, uint32_t val3)
{
	return syscall(SYS_futex, uaddr, op, val, timeout, uaddr2, val3);
}

/* The val2 argument of the requeue and wake-op operations travels in the
 * timeout's place. */
#define VAL2(n) ((const void *)(uintptr_t)(n))

/* await_waiters moves n waiters from stage to word with FUTEX_REQUEUE
 * (priv: the private variant), so that on return they sleep on word. */
static void await_waiters(uint32_t *stage, uint32_t *word, int n, int priv)
{
	long moved = 0, r;
	int i;

	for (i = 0; i < 2000 && moved < n; i++) {
		r = futex(stage, FUTEX_REQUEUE | (priv ? FUTEX_PRIVATE_FLAG : 0),
			  0, VAL2(INT_MAX), word, 0);
		if (r < 0) {
			check_fail(__FILE__, __LINE__, "FUTEX_REQUEUE: %s",
				   check_errname(errno));
			return;
		}
		moved += r;
		if (moved < n)
			check_sleep_ms(1);
	}
	if (moved != n)
		check_fail(__FILE__, __LINE__, "%ld of %d waiters queued", moved, n);
}

/* A waiting thread: one futex call, its result kept. */
struct waiter {
	pthread_t thread;
	uint32_t *word;
	int op;
	uint32_t val, bitset;
	long result;
	int err;
};

static void *wait_thread(void *arg)
{
	struct waiter *w = arg;
	struct timespec ts;

	if ((w->op & FUTEX_CMD_MASK) == FUTEX_WAIT_BITSET) {
		/* Absolute, on CLOCK_MONOTONIC. */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 3;
	} else {
		ts.tv_sec = 3;
		ts.tv_nsec = 0;
	}
	w->result = futex(w->word, w->op, w->val, &ts, NULL, w->bitset);
	w->err = w->result == -1 ? errno : 0;
	return NULL;
}

static void start(struct waiter *w, uint32_t *word, int op, uint32_t bitset)
{
	w->word = word;
	w->op = op;
	w->val = *word;
	w->bitset = bitset;
	w->result = -2;
	w->err = 0;
	CHECK_EQ(pthread_create(&w->thread, NULL, wait_thread, w), 0);
}

/* finish joins a waiter and asserts that a wake ended its wait. */
static void finish(struct waiter *w, int line)
{
	pthread_join(w->thread, NULL);
	if (w->result != 0)
		check_fail(__FILE__, line, "a waiter's futex returned %ld (%s)",
			   w->result, check_errname(w->err));
}

static void test_wait_errors(void)
{
	static uint32_t word[2] = { 1, 0 };
	struct timespec ts = { 0, 20000000 }, abs, bad = { 0, 1000000000 };
	long long t0;

	CHECK_ERR(futex(word, FUTEX_WAIT, 0, NULL, NULL, 0), EAGAIN);
	CHECK_ERR(futex(word, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0), EAGAIN);

	t0 = check_now_ns();
	CHECK_ERR(futex(word, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0), ETIMEDOUT);
	CHECK(check_now_ns() - t0 >= 20000000LL);

	/* FUTEX_WAIT_BITSET's timeout is an absolute time. */
	clock_gettime(CLOCK_MONOTONIC, &abs);
	abs.tv_nsec += 20000000;
	if (abs.tv_nsec >= 1000000000) {
		abs.tv_sec++;
		abs.tv_nsec -= 1000000000;
	}
	t0 = check_now_ns();
	CHECK_ERR(futex(word, FUTEX_WAIT_BITSET_PRIVATE, 1, &abs, NULL,
			FUTEX_BITSET_MATCH_ANY),
		  ETIMEDOUT);
	CHECK(check_now_ns() - t0 >= 15000000LL);
	/* In the past: at once. */
	CHECK_ERR(futex(word, FUTEX_WAIT_BITSET_PRIVATE, 1, &abs, NULL,
			FUTEX_BITSET_MATCH_ANY),
		  ETIMEDOUT);

	CHECK_ERR(futex(word, FUTEX_WAIT_PRIVATE, 1, &bad, NULL, 0), EINVAL);
	CHECK_ERR(futex(word, FUTEX_WAIT_BITSET_PRIVATE, 1, NULL, NULL, 0), EINVAL);
	CHECK_ERR(futex(word, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 0), EINVAL);
	CHECK_ERR(futex((uint32_t *)((char *)word + 1), FUTEX_WAIT_PRIVATE, 1,
			NULL, NULL, 0),
		  EINVAL);
	CHECK_ERR(futex(NULL, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0), EFAULT);
	CHECK_ERR(futex(word, 99, 0, NULL, NULL, 0), ENOSYS);
	/* Nobody waits: nobody woken. */
	CHECK_EQ(futex(word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);
	CHECK_EQ(futex(word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0), 0);
}

static void test_wake(void)
{
	static uint32_t word;
	struct waiter w;
	long r = 0;
	int i;

	/* The plainest use: wake until the waiter is found. */
	word = 0;
	start(&w, &word, FUTEX_WAIT_PRIVATE, 0);
	for (i = 0; i < 2000 && r == 0; i++) {
		r = futex(&word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		if (r == 0)
			check_sleep_ms(1);
	}
	CHECK_EQ(r, 1);
	finish(&w, __LINE__);
}

static void test_requeue(void)
{
	static uint32_t a, b, c;
	struct waiter w[3];
	int i;

	a = b = c = 0;
	for (i = 0; i < 3; i++)
		start(&w[i], &a, FUTEX_WAIT_PRIVATE, 0);
	await_waiters(&a, &b, 3, 1);
	/* They are on b now. */
	CHECK_EQ(futex(&a, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0), 0);
	CHECK_EQ(futex(&b, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 1);
	/* CMP_REQUEUE checks the word first. */
	CHECK_ERR(futex(&b, FUTEX_CMP_REQUEUE_PRIVATE, 0, VAL2(INT_MAX), &c, 1),
		  EAGAIN);
	/* Wake one, move the other: 2. */
	CHECK_EQ(futex(&b, FUTEX_CMP_REQUEUE_PRIVATE, 1, VAL2(INT_MAX), &c, 0), 2);
	CHECK_EQ(futex(&b, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0), 0);
	CHECK_EQ(futex(&c, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0), 1);
	for (i = 0; i < 3; i++)
		finish(&w[i], __LINE__);
	CHECK_ERR(futex(&b, FUTEX_CMP_REQUEUE_PRIVATE, 0, VAL2(-1), &c, 0), EINVAL);
}

static void test_bitset(void)
{
	static uint32_t stage, word;
	struct waiter w1, w2;

	stage = word = 0;
	start(&w1, &stage, FUTEX_WAIT_BITSET_PRIVATE, 0x1);
	start(&w2, &stage, FUTEX_WAIT_BITSET_PRIVATE, 0x6);
	await_waiters(&stage, &word, 2, 1);
	CHECK_EQ(futex(&word, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, NULL, NULL, 0x8),
		 0);
	CHECK_EQ(futex(&word, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, NULL, NULL, 0x1),
		 1);
	finish(&w1, __LINE__);
	CHECK_EQ(futex(&word, FUTEX_WAKE_BITSET_PRIVATE, INT_MAX, NULL, NULL, 0x1),
		 0);
	/* FUTEX_WAKE is a wake with every bit. */
	CHECK_EQ(futex(&word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0), 1);
	finish(&w2, __LINE__);
}

static void test_wake_op(void)
{
	static uint32_t stage, u1, u2;
	struct waiter x, y;

	stage = u1 = u2 = 0;
	start(&x, &stage, FUTEX_WAIT_PRIVATE, 0);
	await_waiters(&stage, &u1, 1, 1);
	start(&y, &stage, FUTEX_WAIT_PRIVATE, 0);
	await_waiters(&stage, &u2, 1, 1);
	/* u2 += 5; wake one on u1; the old u2 was 0, so wake one on u2. */
	CHECK_EQ(futex(&u1, FUTEX_WAKE_OP_PRIVATE, 1, VAL2(1), &u2,
		       FUTEX_OP(FUTEX_OP_ADD, 5, FUTEX_OP_CMP_EQ, 0)),
		 2);
	CHECK_EQ(u2, 5);
	finish(&x, __LINE__);
	finish(&y, __LINE__);

	/* The operations, without waiters. */
	CHECK_EQ(futex(&u1, FUTEX_WAKE_OP_PRIVATE, 1, VAL2(1), &u2,
		       FUTEX_OP(FUTEX_OP_SET, 3, FUTEX_OP_CMP_NE, 5)),
		 0);
	CHECK_EQ(u2, 3);
	CHECK_EQ(futex(&u1, FUTEX_WAKE_OP_PRIVATE, 1, VAL2(1), &u2,
		       FUTEX_OP((FUTEX_OP_OR | FUTEX_OP_OPARG_SHIFT), 4,
				FUTEX_OP_CMP_EQ, 3)),
		 0);
	CHECK_EQ(u2, 19);
	CHECK_EQ(futex(&u1, FUTEX_WAKE_OP_PRIVATE, 1, VAL2(1), &u2,
		       FUTEX_OP(FUTEX_OP_ANDN, 3, FUTEX_OP_CMP_GT, 100)),
		 0);
	CHECK_EQ(u2, 16);
	CHECK_EQ(futex(&u1, FUTEX_WAKE_OP_PRIVATE, 1, VAL2(1), &u2,
		       FUTEX_OP(FUTEX_OP_XOR, 0xff, FUTEX_OP_CMP_LT, 0)),
		 0);
	CHECK_EQ(u2, 0xef);
	/* An unknown operation changes nothing. */
	CHECK_ERR(futex(&u1, FUTEX_WAKE_OP_PRIVATE, 1, VAL2(1), &u2,
			FUTEX_OP(7, 1, FUTEX_OP_CMP_EQ, 0)),
		  ENOSYS);
	CHECK_EQ(u2, 0xef);
}

static void test_shared(void)
{
	uint32_t *page;
	pid_t pid;

	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		    -1, 0);
	CHECK(page != MAP_FAILED);
	if (page == MAP_FAILED)
		return;
	page[0] = page[1] = 0;
	pid = check_fork();
	if (pid == 0) {
		struct timespec ts = { 3, 0 };

		/* Not private: the wake comes from another process. */
		CHECK_EQ(futex(&page[0], FUTEX_WAIT, 0, &ts, NULL, 0), 0);
		page[2] = 1;
		check_child_exit();
	}
	await_waiters(&page[0], &page[1], 1, 0);
	/* A private wake looks in this process's memory only. */
	CHECK_EQ(futex(&page[1], FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0), 0);
	CHECK_EQ(futex(&page[1], FUTEX_WAKE, 1, NULL, NULL, 0), 1);
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(page[2], 1);
	munmap(page, 4096);
}

/*
 * A raw clone thread. It shares this thread's TLS (no CLONE_SETTLS), so it
 * calls nothing that could fail and write errno.
 */
static char raw_stack[65536] __attribute__((aligned(16)));
static uint32_t stage, ptid, ctid, other;
static volatile uint32_t ctid_seen, tid_seen;
static volatile long sta_ret;
static volatile int move_duty;

static int raw_thread(void *arg)
{
	uint32_t *target = &ctid;
	int i;

	(void)arg;
	tid_seen = syscall(SYS_gettid);
	ctid_seen = ctid; /* CLONE_CHILD_SETTID: set before we ran */
	if (move_duty) {
		other = tid_seen;
		sta_ret = syscall(SYS_set_tid_address, &other);
		target = &other;
	}
	/* Put the main thread to sleep on the word our exit clears: it
	 * waits on stage (not private: the exit's wake is not). */
	for (i = 0; i < 2000; i++) {
		if (futex(&stage, FUTEX_REQUEUE, 0, VAL2(1), target, 0) == 1)
			break;
		struct timespec ts = { 0, 1000000 };

		syscall(SYS_nanosleep, &ts, NULL);
	}
	return 0; /* the C library's clone ends the thread with exit(2) */
}

static void test_cleartid(int duty)
{
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
		    CLONE_THREAD | CLONE_SYSVSEM | CLONE_PARENT_SETTID |
		    CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID;
	struct timespec ts = { 3, 0 };
	long tid;

	stage = ptid = ctid = other = 0;
	ctid_seen = tid_seen = 0;
	sta_ret = 0;
	move_duty = duty;
	tid = clone(raw_thread, raw_stack + sizeof(raw_stack), flags, NULL, &ptid,
		    NULL, &ctid);
	CHECK(tid > 0);
	if (tid <= 0)
		return;
	/* CLONE_PARENT_SETTID: written before clone returned. */
	CHECK_EQ(ptid, tid);
	/* Woken by the thread's exit, after it was moved to that word. */
	CHECK_EQ(futex(&stage, FUTEX_WAIT, 0, &ts, NULL, 0), 0);
	CHECK_EQ(tid_seen, tid);
	CHECK_EQ(ctid_seen, tid);
	if (duty) {
		CHECK_EQ(sta_ret, tid);
		CHECK_EQ(other, 0);
		CHECK_EQ(ctid, tid); /* no longer the one to clear */
	} else {
		CHECK_EQ(ctid, 0);
	}
}

static pthread_mutex_t robust;

static void *die_holding(void *arg)
{
	(void)arg;
	CHECK_EQ(pthread_mutex_lock(&robust), 0);
	return NULL; /* without unlocking */
}

static void test_robust(void)
{
	pthread_mutexattr_t attr;
	pthread_mutex_t *shared;
	pthread_t t;
	pid_t pid;

	CHECK_EQ(pthread_mutexattr_init(&attr), 0);
	CHECK_EQ(pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST), 0);
	CHECK_EQ(pthread_mutex_init(&robust, &attr), 0);
	CHECK_EQ(pthread_create(&t, NULL, die_holding, NULL), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	/* The kernel walked the dead thread's robust list: no owner, and
	 * the owner-died bit. */
	CHECK_EQ(*(uint32_t *)&robust, FUTEX_OWNER_DIED);
	CHECK_EQ(pthread_mutex_lock(&robust), EOWNERDEAD);
	CHECK_EQ(pthread_mutex_consistent(&robust), 0);
	CHECK_EQ(pthread_mutex_unlock(&robust), 0);
	CHECK_EQ(pthread_mutex_lock(&robust), 0);
	CHECK_EQ(pthread_mutex_unlock(&robust), 0);

	/* The same across processes, in shared memory. */
	shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(shared != MAP_FAILED);
	if (shared == MAP_FAILED)
		return;
	CHECK_EQ(pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED), 0);
	CHECK_EQ(pthread_mutex_init(shared, &attr), 0);
	pid = check_fork();
	if (pid == 0) {
		CHECK_EQ(pthread_mutex_lock(shared), 0);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(*(uint32_t *)shared, FUTEX_OWNER_DIED);
	CHECK_EQ(pthread_mutex_lock(shared), EOWNERDEAD);
	CHECK_EQ(pthread_mutex_consistent(shared), 0);
	CHECK_EQ(pthread_mutex_unlock(shared), 0);
	munmap(shared, 4096);
	pthread_mutexattr_destroy(&attr);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_wait_errors();
	test_wake();
	test_requeue();
	test_bitset();
	test_wake_op();
	test_shared();
	test_cleartid(0);
	test_cleartid(1);
	test_robust();
	return check_finish();
}
