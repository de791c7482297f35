/*
 * thread_basic: threads, the way the C library and the kernel make them.
 *
 * Nearly every server, runtime and build tool is multithreaded; threads must
 * share memory and descriptors, run at the same time, have their own ids and
 * signal masks, and end on their own or all together as the call says.
 * Checks: 8 pthreads (clone3 in this C library) adding to a counter under a
 * mutex reach the exact total; every thread has its own gettid, the main
 * thread's is the pid, all share getpid; two threads waiting on each other's
 * flags (with sched_yield) both finish, and take turns 50 times; a
 * thread made with the raw clone flags (CLONE_VM|CLONE_FS|CLONE_FILES|
 * CLONE_SIGHAND|CLONE_THREAD|CLONE_SYSVSEM) shares memory and the descriptor
 * table; /proc/self/task lists exactly the live threads (when /proc is
 * there); a thread's exit(2) ends only that thread (pthread_join still
 * returns, the kernel cleared its tid); when the main thread exits first the
 * process lives on until the last thread, whose exit code is the process's
 * status (Linux 6.0 and later); exit_group from any thread ends them all with its status.
 * tgkill delivers to the thread named (its handler runs there), ESRCH for a
 * tid of another group or an ended thread; a process-directed signal goes to
 * the thread that does not block it. set_robust_list/get_robust_list per
 * thread, and at a thread's exit the kernel marks the futex words on its
 * robust list that hold its tid with FUTEX_OWNER_DIED, and no others.
 */
// covers: clone clone3 set_robust_list get_robust_list gettid exit exit_group tgkill
#include "check.h"

#include <dirent.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#define NTHREADS 8
#define ROUNDS 100000
#define PINGPONG 50

static long tid(void)
{
	return syscall(SYS_gettid);
}

/* gone reports whether thread t of this process has ended. Its tid is
 * cleared (and pthread_join returns) a moment before the task is gone, so
 * it asks again for up to a second. */
static int gone(long t)
{
	int i;

	for (i = 0; i < 1000; i++) {
		if (syscall(SYS_tgkill, getpid(), t, 0) == -1 && errno == ESRCH)
			return 1;
		check_sleep_ms(1);
	}
	return 0;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static long tids[NTHREADS], pids[NTHREADS];

static void *add(void *arg)
{
	long i, me = (long)arg;

	tids[me] = tid();
	pids[me] = getpid();
	for (i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(&lock);
		counter++;
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

static void test_counter(void)
{
	pthread_t t[NTHREADS];
	long i, j;

	CHECK_EQ(tid(), getpid());
	for (i = 0; i < NTHREADS; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, add, (void *)i), 0);
	for (i = 0; i < NTHREADS; i++)
		CHECK_EQ(pthread_join(t[i], NULL), 0);
	CHECK_EQ(counter, NTHREADS * ROUNDS);
	for (i = 0; i < NTHREADS; i++) {
		CHECK_EQ(pids[i], getpid());
		CHECK(tids[i] > 0 && tids[i] != getpid());
		for (j = 0; j < i; j++)
			CHECK(tids[i] != tids[j]);
	}
}

/* Two threads that cannot finish unless both run. */
static volatile int flag[2], turn;
static volatile long rounds_done;

static void *meet(void *arg)
{
	long me = (long)arg, i;
	long long t0 = check_now_ns();

	flag[me] = 1;
	while (!flag[!me] && check_now_ns() - t0 < 2000000000LL)
		sched_yield();
	if (!flag[!me])
		return (void *)1;
	/* Ping-pong: take turns, 50 times (each turn may cost a time slice
	 * on a busy machine). */
	for (i = 0; i < PINGPONG; i++) {
		while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) != me &&
		       check_now_ns() - t0 < 2000000000LL)
			sched_yield();
		if (turn != me)
			return (void *)2;
		if (me == 1)
			rounds_done++;
		__atomic_store_n(&turn, !me, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void test_concurrency(void)
{
	pthread_t a, b;
	void *ra = (void *)-1, *rb = (void *)-1;

	CHECK_EQ(pthread_create(&a, NULL, meet, (void *)0L), 0);
	CHECK_EQ(pthread_create(&b, NULL, meet, (void *)1L), 0);
	pthread_join(a, &ra);
	pthread_join(b, &rb);
	CHECK(ra == NULL);
	CHECK(rb == NULL);
	CHECK_EQ(rounds_done, PINGPONG);
}

/* A thread made with clone directly. It shares this thread's TLS (no
 * CLONE_SETTLS), so it only makes calls that cannot fail (errno). */
static char raw_stack[65536] __attribute__((aligned(16)));
static volatile long raw_tid, raw_pid, raw_fd = -1, raw_seen;
static uint32_t raw_ctid;

static int raw_thread(void *arg)
{
	raw_tid = syscall(SYS_gettid);
	raw_pid = syscall(SYS_getpid);
	raw_seen = *(long *)arg; /* the parent's memory */
	raw_fd = syscall(SYS_openat, AT_FDCWD, HELLO_PATH, O_RDONLY);
	return 0;
}

static void test_raw_clone(void)
{
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND |
		    CLONE_THREAD | CLONE_SYSVSEM | CLONE_CHILD_SETTID |
		    CLONE_CHILD_CLEARTID;
	static long secret = 4242;
	struct timespec ts = { 2, 0 };
	uint32_t v;
	long t;

	raw_ctid = 0xffffffff;
	t = clone(raw_thread, raw_stack + sizeof(raw_stack), flags, &secret, NULL,
		  NULL, &raw_ctid);
	CHECK(t > 0);
	if (t <= 0)
		return;
	/* Wait for its exit: the kernel clears raw_ctid and wakes us. */
	while ((v = __atomic_load_n(&raw_ctid, __ATOMIC_ACQUIRE)) != 0) {
		if (syscall(SYS_futex, &raw_ctid, FUTEX_WAIT, v, &ts, NULL, 0) == -1 &&
		    errno == ETIMEDOUT) {
			check_fail(__FILE__, __LINE__, "the clone thread never ended");
			return;
		}
	}
	CHECK_EQ(raw_tid, t);
	CHECK_EQ(raw_pid, getpid());
	CHECK_EQ(raw_seen, 4242);
	/* The descriptor it opened is in our table. */
	CHECK(raw_fd >= 0);
	CHECK_EQ(fcntl(raw_fd, F_GETFD), 0);
	close(raw_fd);
	/* Ended: no such thread any more (tgkill: ESRCH). */
	CHECK(gone(t));
}

/* Threads parked until released, for /proc/self/task. */
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_cond = PTHREAD_COND_INITIALIZER;
static int parked, released;
static long park_tids[3];

static void *park(void *arg)
{
	pthread_mutex_lock(&park_lock);
	park_tids[(long)arg] = tid();
	parked++;
	pthread_cond_broadcast(&park_cond);
	while (!released)
		pthread_cond_wait(&park_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);
	return NULL;
}

static void test_task_dir(void)
{
	pthread_t t[3];
	struct dirent *e;
	int n = 0, found = 0;
	long i, id;
	DIR *d;

	for (i = 0; i < 3; i++)
		CHECK_EQ(pthread_create(&t[i], NULL, park, (void *)i), 0);
	pthread_mutex_lock(&park_lock);
	while (parked < 3)
		pthread_cond_wait(&park_cond, &park_lock);
	pthread_mutex_unlock(&park_lock);

	d = opendir("/proc/self/task");
	if (d) {
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			n++;
			id = atol(e->d_name);
			if (id == getpid())
				found++;
			for (i = 0; i < 3; i++)
				if (id == park_tids[i])
					found++;
		}
		closedir(d);
		CHECK_EQ(n, 4);
		CHECK_EQ(found, 4);
	}
	pthread_mutex_lock(&park_lock);
	released = 1;
	pthread_cond_broadcast(&park_cond);
	pthread_mutex_unlock(&park_lock);
	for (i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}

static void *raw_exit(void *arg)
{
	(void)arg;
	syscall(SYS_exit, 0);
	return (void *)1;
}

static volatile int exit_group_ready;

static void *do_exit_group(void *arg)
{
	(void)arg;
	while (!exit_group_ready)
		sched_yield();
	syscall(SYS_exit_group, 7);
	return NULL;
}

/* The main thread's clear-tid word, for the main-exits-first test. */
static uint32_t main_word;
static int report_fd;

static void *outlive_main(void *arg)
{
	struct timespec ts = { 2, 0 };
	uint32_t v;

	(void)arg;
	/* Until the main thread has exited. */
	while ((v = __atomic_load_n(&main_word, __ATOMIC_ACQUIRE)) != 0)
		if (syscall(SYS_futex, &main_word, FUTEX_WAIT, v, &ts, NULL, 0) ==
			    -1 &&
		    errno == ETIMEDOUT)
			syscall(SYS_exit, 100);
	if (write(report_fd, "!", 1) != 1)
		syscall(SYS_exit, 101);
	syscall(SYS_exit, 9);
	return NULL;
}

static void test_exits(void)
{
	pthread_t t;
	void *r = NULL;
	pid_t pid;
	int p[2];
	char c;

	/* exit(2) in a thread ends that thread alone. */
	CHECK_EQ(pthread_create(&t, NULL, raw_exit, NULL), 0);
	CHECK_EQ(pthread_join(t, &r), 0);
	CHECK_EQ(getpid(), tid());

	/* exit_group from a thread ends the process, whatever the main
	 * thread is doing. */
	pid = check_fork();
	if (pid == 0) {
		CHECK_EQ(pthread_create(&t, NULL, do_exit_group, NULL), 0);
		exit_group_ready = 1;
		for (;;)
			pause();
	}
	CHECK_CHILD(pid, "exited 7");

	/* The main thread exits first: the other thread goes on, and the
	 * process's status is that of the last thread to exit (since Linux
	 * 6.0 the last thread out sets the group's exit code; before, the
	 * main thread's code was reported). */
	CHECK_OK(pipe2(p, O_CLOEXEC));
	pid = check_fork();
	if (pid == 0) {
		close(p[0]);
		report_fd = p[1];
		main_word = tid();
		CHECK_EQ(syscall(SYS_set_tid_address, &main_word), tid());
		CHECK_EQ(pthread_create(&t, NULL, outlive_main, NULL), 0);
		syscall(SYS_exit, check_failures ? 1 : 5);
	}
	close(p[1]);
	CHECK_EQ(read(p[0], &c, 1), 1);
	CHECK_EQ(c, '!');
	CHECK_CHILD(pid, "exited 9");
	close(p[0]);
}

/* Signals to threads. */
static volatile long handled_by;
static volatile int handled;

static void on_signal(int sig)
{
	(void)sig;
	handled_by = tid();
	handled = 1;
}

static volatile long receiver_tid;
static volatile int receiver_ready;

static void *receiver(void *arg)
{
	sigset_t none;

	(void)arg;
	receiver_tid = tid();
	sigemptyset(&none);
	receiver_ready = 1;
	/* SIGUSR1 and SIGUSR2 are blocked (inherited): let them in only
	 * while suspended. */
	while (!handled)
		sigsuspend(&none);
	return NULL;
}

static void test_signals(void)
{
	sigset_t set;
	pthread_t t;
	int which;

	signal(SIGUSR1, on_signal);
	signal(SIGUSR2, on_signal);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	CHECK_OK(sigprocmask(SIG_BLOCK, &set, NULL));

	for (which = 0; which < 2; which++) {
		handled = 0;
		handled_by = 0;
		receiver_ready = 0;
		CHECK_EQ(pthread_create(&t, NULL, receiver, NULL), 0);
		while (!receiver_ready)
			sched_yield();
		if (which == 0) {
			/* Directed at the thread. */
			CHECK_ERR(syscall(SYS_tgkill, receiver_tid, receiver_tid,
					  SIGUSR1),
				  ESRCH);
			CHECK_EQ(syscall(SYS_tgkill, getpid(), receiver_tid, SIGUSR1),
				 0);
		} else {
			/* Directed at the process: only that thread can
			 * take it. */
			CHECK_EQ(kill(getpid(), SIGUSR2), 0);
		}
		CHECK_EQ(pthread_join(t, NULL), 0);
		CHECK_EQ(handled, 1);
		CHECK_EQ(handled_by, receiver_tid);
		CHECK(gone(receiver_tid));
	}
	CHECK_OK(sigprocmask(SIG_UNBLOCK, &set, NULL));
	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);
}

/* The kernel's robust list, by hand. */
struct robust_entry {
	struct robust_entry *next;
	uint32_t futex;
};

struct robust_head {
	struct robust_entry *next;
	long futex_offset;
	void *pending;
};

static struct robust_head head;
static struct robust_entry mine, theirs;
static void *thread_head, *main_head;

static void *robust_thread(void *arg)
{
	struct robust_head *got = NULL;
	size_t len = 0;

	(void)arg;
	/* The C library registered a list for this thread already. */
	CHECK_EQ(syscall(SYS_get_robust_list, 0, &got, &len), 0);
	CHECK(got != NULL && (void *)got != main_head);
	CHECK_EQ(len, sizeof(struct robust_head));
	thread_head = got;

	/* Our own: one word held by this thread, one by nobody alive. */
	mine.futex = tid();
	theirs.futex = 0x3fffff00;
	head.next = &mine;
	mine.next = &theirs;
	theirs.next = (struct robust_entry *)&head;
	head.futex_offset = offsetof(struct robust_entry, futex);
	head.pending = NULL;
	CHECK_EQ(syscall(SYS_set_robust_list, &head, sizeof(head)), 0);
	CHECK_EQ(syscall(SYS_get_robust_list, 0, &got, &len), 0);
	CHECK(got == &head);
	return NULL;
}

static void test_robust(void)
{
	size_t len = 0;
	pthread_t t;

	CHECK_EQ(syscall(SYS_get_robust_list, 0, &main_head, &len), 0);
	CHECK(main_head != NULL);
	CHECK_EQ(pthread_create(&t, NULL, robust_thread, NULL), 0);
	CHECK_EQ(pthread_join(t, NULL), 0);
	/* The thread's own word: owner gone. The other: untouched. */
	CHECK_EQ(mine.futex, FUTEX_OWNER_DIED);
	CHECK_EQ(theirs.futex, 0x3fffff00);
	CHECK_ERR(syscall(SYS_set_robust_list, &head, sizeof(head) - 1), EINVAL);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_counter();
	test_concurrency();
	test_raw_clone();
	test_task_dir();
	test_exits();
	test_signals();
	test_robust();
	return check_finish();
}
