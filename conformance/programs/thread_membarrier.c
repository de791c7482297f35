/*
 * thread_membarrier: process-wide memory barriers (membarrier).
 *
 * Userspace RCU, the JVM's and .NET's garbage collectors and V8 make one
 * thread pay for a barrier that the others skip: membarrier must make every
 * other running thread of the process pass through a full barrier before it
 * returns, or their lock-free algorithms break.
 * Checks: MEMBARRIER_CMD_QUERY lists GLOBAL, GLOBAL_EXPEDITED, the
 * PRIVATE_EXPEDITED and SYNC_CORE commands with their registrations and
 * GET_REGISTRATIONS; PRIVATE_EXPEDITED (and SYNC_CORE) before its own
 * registration is EPERM, after it 0; GET_REGISTRATIONS lists what was
 * registered; GLOBAL and GLOBAL_EXPEDITED are 0 with or without
 * registration; EINVAL for a flag, an unknown command and two commands at
 * once; a forked child keeps the registrations; and the barrier is
 * real: in 3000 rounds of Dekker's test, where a spinning thread stores to
 * x and loads y with no fence of its own while the main thread stores to y,
 * calls PRIVATE_EXPEDITED and loads x, never do both loads miss the other
 * store (as x86 lets them without a barrier on both sides). A store buffer
 * drains within nanoseconds and a system call takes longer, so the rounds
 * pin the guarantee but would catch a missing barrier only by chance.
 */
// covers: membarrier
#include "check.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <stdatomic.h>

#ifndef MEMBARRIER_CMD_GET_REGISTRATIONS
#define MEMBARRIER_CMD_GET_REGISTRATIONS (1 << 9)
#endif

#define ROUNDS 3000

static long membarrier(int cmd, unsigned flags)
{
	return syscall(SYS_membarrier, cmd, flags, 0);
}

static atomic_int x, y, round_go, round_done;
static int seen_y[ROUNDS];

/* worker runs Dekker's test's other side, once a round: x = 1, then y. */
static void *worker(void *arg)
{
	int r;

	(void)arg;
	for (r = 1; r <= ROUNDS; r++) {
		while (atomic_load_explicit(&round_go, memory_order_acquire) != r)
			;
		atomic_store_explicit(&x, 1, memory_order_relaxed);
		atomic_signal_fence(memory_order_seq_cst);
		seen_y[r - 1] = atomic_load_explicit(&y, memory_order_relaxed);
		atomic_store_explicit(&round_done, r, memory_order_release);
	}
	return NULL;
}

static void test_dekker(void)
{
	pthread_t th;
	int r, misses = 0, seen_x;

	CHECK_EQ(pthread_create(&th, NULL, worker, NULL), 0);
	for (r = 1; r <= ROUNDS; r++) {
		atomic_store_explicit(&x, 0, memory_order_relaxed);
		atomic_store_explicit(&y, 0, memory_order_relaxed);
		atomic_store_explicit(&round_go, r, memory_order_release);
		atomic_store_explicit(&y, 1, memory_order_relaxed);
		if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0) != 0) {
			CHECK_OK(-1);
			break;
		}
		seen_x = atomic_load_explicit(&x, memory_order_relaxed);
		while (atomic_load_explicit(&round_done, memory_order_acquire) != r)
			;
		if (!seen_x && !seen_y[r - 1])
			misses++;
	}
	if (r <= ROUNDS) {
		/* Let the worker finish its rounds. */
		for (; r <= ROUNDS; r++)
			atomic_store_explicit(&round_go, r, memory_order_release);
		pthread_cancel(th);
	}
	pthread_join(th, NULL);
	CHECK_EQ(misses, 0);
}

int main(int argc, char **argv)
{
	const long want = MEMBARRIER_CMD_GLOBAL | MEMBARRIER_CMD_GLOBAL_EXPEDITED |
		MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED |
		MEMBARRIER_CMD_PRIVATE_EXPEDITED |
		MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED |
		MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE |
		MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE |
		MEMBARRIER_CMD_GET_REGISTRATIONS;
	long q;
	pid_t pid;

	check_init(argc, argv);
	q = membarrier(MEMBARRIER_CMD_QUERY, 0);
	CHECK_EQ(q & want, want);

	CHECK_ERR(membarrier(MEMBARRIER_CMD_QUERY, 1), EINVAL);
	CHECK_ERR(membarrier(MEMBARRIER_CMD_GLOBAL, 1), EINVAL);
	CHECK_ERR(membarrier(1 << 12, 0), EINVAL);
	CHECK_ERR(membarrier(MEMBARRIER_CMD_GLOBAL | MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0), EINVAL);
	CHECK_ERR(membarrier(-1, 0), EINVAL);

	CHECK_EQ(membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS, 0), 0);
	CHECK_ERR(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0), EPERM);
	CHECK_ERR(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0), EPERM);
	CHECK_EQ(membarrier(MEMBARRIER_CMD_GLOBAL, 0), 0);
	CHECK_EQ(membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0), 0);

	CHECK_EQ(membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0), 0);
	CHECK_EQ(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0), 0);
	/* The sync-core command has a registration of its own. */
	CHECK_ERR(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0), EPERM);
	CHECK_EQ(membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0), 0);
	CHECK_EQ(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0), 0);
	CHECK_EQ(membarrier(MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0), 0);
	CHECK_EQ(membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0), 0);
	CHECK_EQ(membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS, 0),
		 MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED |
		 MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE |
		 MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);

	pid = check_fork();
	if (pid == 0) {
		CHECK_EQ(membarrier(MEMBARRIER_CMD_GET_REGISTRATIONS, 0),
			 MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED |
			 MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE |
			 MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED);
		CHECK_EQ(membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0), 0);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	test_dekker();
	return check_finish();
}
