/*
 * ipc_sem: System V semaphores.
 *
 * PostgreSQL, Apache's and many daemons' locks, and test suites use
 * semaphore sets, with SEM_UNDO so that a crashed process releases what it
 * held. Checks: semget (EINVAL for 0 or more than semmsl semaphores in a
 * new set, or more than an existing one has), IPC_STAT; GETALL, SETALL,
 * GETVAL, SETVAL (ERANGE past SEMVMX or below 0, EINVAL for a semaphore
 * past the set), GETPID; semop's operations are done together or not at
 * all (EAGAIN with IPC_NOWAIT, nothing changed), in order, so two on one
 * semaphore add up; ERANGE past SEMVMX; EFBIG for a semaphore past the
 * set, EINVAL for no operation, E2BIG for more than semopm; a waiter is
 * counted by GETNCNT or GETZCNT for the operation it waits on, and runs
 * once another process makes it possible; semtimedop times out with
 * EAGAIN (EINVAL for a bad time); a signal ends a wait with EINTR even
 * with SA_RESTART; IPC_RMID wakes waiters with EIDRM; SEM_UNDO's
 * adjustments are applied when the process ends (not when a thread of it
 * does), clamped at 0, and dropped by SETVAL; without CAP_IPC_OWNER the
 * mode binds the creator (EACCES); IPC_INFO and SEM_INFO give
 * /proc/sys/kernel/sem's limits and SEM_INFO the sets and semaphores in
 * use; SEM_STAT_ANY takes an index; /proc/sysvipc/sem lists the set.
 */
// covers: semget semop semtimedop semctl
#include "check.h"

#include <pthread.h>
#include <sys/ipc.h>
#include <sys/sem.h>

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
	struct seminfo *__buf;
};

static int val(int id, int num)
{
	return semctl(id, num, GETVAL);
}

static long op(int id, unsigned short num, short sem_op, short flg)
{
	struct sembuf sb = { num, sem_op, flg };

	return semop(id, &sb, 1);
}

static void wait_for_count(int id, int num, int cmd, int want)
{
	int i;

	for (i = 0; i < 2000 && semctl(id, num, cmd) != want; i++)
		check_sleep_ms(1);
	CHECK_EQ(semctl(id, num, cmd), want);
}

static void test_values(void)
{
	unsigned short all[3] = { 7, 7, 7 }, set[3] = { 1, 2, 3 };
	struct semid_ds ds;
	time_t now = time(NULL);
	int id;

	CHECK_ERR(semget(IPC_PRIVATE, 0, 0600), EINVAL);
	CHECK_ERR(semget(IPC_PRIVATE, 32001, 0600), EINVAL);
	CHECK_ERR(semget(IPC_PRIVATE, -1, 0600), EINVAL);
	id = CHECK_OK(semget(IPC_PRIVATE, 3, 0600));
	memset(&ds, 0, sizeof(ds));
	CHECK_OK(semctl(id, 0, IPC_STAT, (union semun){ .buf = &ds }));
	CHECK_EQ(ds.sem_nsems, 3);
	CHECK_EQ(ds.sem_perm.mode, 0600);
	CHECK_EQ(ds.sem_perm.cuid, geteuid());
	CHECK_EQ(ds.sem_otime, 0);
	CHECK(ds.sem_ctime >= now - 1);

	CHECK_OK(semctl(id, 0, GETALL, (union semun){ .array = all }));
	CHECK(all[0] == 0 && all[1] == 0 && all[2] == 0);
	CHECK_OK(semctl(id, 0, SETALL, (union semun){ .array = set }));
	CHECK_EQ(val(id, 2), 3);
	CHECK_EQ(semctl(id, 1, GETPID), getpid());
	CHECK_OK(semctl(id, 1, SETVAL, (union semun){ .val = 32767 }));
	CHECK_ERR(semctl(id, 1, SETVAL, (union semun){ .val = 32768 }), ERANGE);
	CHECK_ERR(semctl(id, 1, SETVAL, (union semun){ .val = -1 }), ERANGE);
	CHECK_ERR(semctl(id, 3, SETVAL, (union semun){ .val = 1 }), EINVAL);
	CHECK_ERR(semctl(id, 3, GETVAL), EINVAL);
	CHECK_ERR(semctl(id, 0, 999), EINVAL);
	CHECK_ERR(semctl(-1, 0, GETVAL), EINVAL);
	CHECK_ERR(semctl(id + 1000000, 0, GETVAL), EINVAL);
	CHECK_ERR(op(id, 1, 1, 0), ERANGE);
	CHECK_EQ(val(id, 1), 32767);

	/* All or nothing, in order. */
	CHECK_OK(semctl(id, 0, SETALL, (union semun){ .array = set }));
	{
		struct sembuf two[2] = { { 0, 1, 0 }, { 1, -5, IPC_NOWAIT } };
		CHECK_ERR(semop(id, two, 2), EAGAIN);
		CHECK_EQ(val(id, 0), 1);
		two[1].sem_op = -2;
		CHECK_OK(semop(id, two, 2));
		CHECK_EQ(val(id, 0), 2);
		CHECK_EQ(val(id, 1), 0);
	}
	{
		struct sembuf same[2] = { { 2, -2, IPC_NOWAIT }, { 2, -2, IPC_NOWAIT } };
		CHECK_ERR(semop(id, same, 2), EAGAIN); /* 3 - 2 - 2 < 0 */
		CHECK_EQ(val(id, 2), 3);
		same[1].sem_op = -1;
		CHECK_OK(semop(id, same, 2));
		CHECK_EQ(val(id, 2), 0);
	}
	CHECK(semctl(id, 0, IPC_STAT, (union semun){ .buf = &ds }) == 0 && ds.sem_otime >= now - 1);
	CHECK_ERR(op(id, 3, 1, 0), EFBIG);
	CHECK_ERR(semop(id, (struct sembuf[1]){ { 0, 1, 0 } }, 0), EINVAL);
	{
		static struct sembuf many[501];
		CHECK_ERR(semop(id, many, 501), E2BIG);
	}
	CHECK_OK(semctl(id, 0, IPC_RMID));
	CHECK_ERR(val(id, 0), EINVAL);
}

static void test_waiting(void)
{
	struct timespec ts = { 0, 50000000 };
	long long t0;
	int id, key = 0x6d6e0000 | (getpid() & 0xffff);
	pid_t pid;

	id = CHECK_OK(semget(key, 2, IPC_CREAT | 0600));
	CHECK_EQ(semget(key, 2, 0), id);
	CHECK_EQ(semget(key, 0, 0), id);
	CHECK_ERR(semget(key, 3, 0), EINVAL);

	/* A decrement waits for an increase from another process. */
	pid = check_fork();
	if (pid == 0) {
		CHECK_OK(op(id, 0, -2, 0));
		check_child_exit();
	}
	wait_for_count(id, 0, GETNCNT, 1);
	CHECK_EQ(semctl(id, 0, GETZCNT), 0);
	CHECK_EQ(semctl(id, 1, GETNCNT), 0);
	CHECK_OK(op(id, 0, 1, 0));
	check_sleep_ms(20);
	CHECK_EQ(semctl(id, 0, GETNCNT), 1); /* 1 is not yet 2 */
	CHECK_OK(op(id, 0, 1, 0));
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(val(id, 0), 0);
	CHECK_EQ(semctl(id, 0, GETPID), pid);

	/* A wait for zero. */
	CHECK_OK(semctl(id, 1, SETVAL, (union semun){ .val = 1 }));
	pid = check_fork();
	if (pid == 0) {
		CHECK_OK(op(id, 1, 0, 0));
		check_child_exit();
	}
	wait_for_count(id, 1, GETZCNT, 1);
	CHECK_OK(op(id, 1, -1, 0));
	CHECK_CHILD(pid, "exited 0");

	/* Timeouts. */
	t0 = check_now_ns();
	CHECK_ERR(semtimedop(id, (struct sembuf[1]){ { 0, -1, 0 } }, 1, &ts), EAGAIN);
	CHECK(check_now_ns() - t0 >= 50000000LL);
	ts.tv_nsec = 1000000000;
	CHECK_ERR(semtimedop(id, (struct sembuf[1]){ { 0, -1, 0 } }, 1, &ts), EINVAL);

	/* IPC_RMID wakes a waiter with EIDRM. */
	pid = check_fork();
	if (pid == 0) {
		CHECK_ERR(op(id, 0, -1, 0), EIDRM);
		check_child_exit();
	}
	wait_for_count(id, 0, GETNCNT, 1);
	CHECK_OK(semctl(id, 0, IPC_RMID));
	CHECK_CHILD(pid, "exited 0");
}

static void on_alarm(int sig)
{
	(void)sig;
}

static void test_signal(void)
{
	struct sigaction sa;
	int id;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	CHECK_OK(sigaction(SIGALRM, &sa, NULL));
	id = CHECK_OK(semget(IPC_PRIVATE, 1, 0600));
	ualarm(50000, 0);
	CHECK_ERR(op(id, 0, -1, 0), EINTR); /* never restarted */
	signal(SIGALRM, SIG_DFL);
	CHECK_OK(semctl(id, 0, IPC_RMID));
}

static void *thread_undo(void *arg)
{
	int id = *(int *)arg;

	CHECK_OK(op(id, 0, 1, SEM_UNDO));
	return NULL;
}

static void test_undo(void)
{
	pthread_t th;
	pid_t pid;
	int id;

	id = CHECK_OK(semget(IPC_PRIVATE, 2, 0600));
	CHECK_OK(semctl(id, 0, SETVAL, (union semun){ .val = 5 }));
	pid = check_fork();
	if (pid == 0) {
		CHECK_OK(op(id, 0, -3, SEM_UNDO));
		CHECK_OK(op(id, 1, 4, SEM_UNDO));
		/* A thread shares the process's adjustments. */
		CHECK_EQ(pthread_create(&th, NULL, thread_undo, &id), 0);
		pthread_join(th, NULL);
		CHECK_EQ(val(id, 0), 3);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(val(id, 0), 5);
	CHECK_EQ(val(id, 1), 0);

	/* SETVAL drops the adjustments for the semaphore it sets. */
	pid = check_fork();
	if (pid == 0) {
		CHECK_OK(op(id, 1, 3, SEM_UNDO));
		CHECK_OK(semctl(id, 1, SETVAL, (union semun){ .val = 1 }));
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(val(id, 1), 1);

	/* An adjustment that would go below 0 stops there. */
	pid = check_fork();
	if (pid == 0) {
		CHECK_OK(op(id, 1, 3, SEM_UNDO));
		CHECK_OK(op(id, 1, -3, 0)); /* without undo: 1 is left */
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(val(id, 1), 0); /* 1 - 3, clamped */
	CHECK_OK(semctl(id, 0, IPC_RMID));
}

static void test_perms_info(void)
{
	struct semid_ds ds;
	struct seminfo si;
	char line[256];
	int id, maxidx, i, found = 0, msl, mns, opm, mni;
	FILE *f;

	id = CHECK_OK(semget(IPC_PRIVATE, 4, 0400));
	if (!check_has_cap(CAP_IPC_OWNER)) {
		CHECK_ERR(op(id, 0, 1, 0), EACCES);
		CHECK_ERR(semctl(id, 0, SETVAL, (union semun){ .val = 1 }), EACCES);
	}
	CHECK_EQ(op(id, 0, 0, 0), 0); /* reading is allowed */
	CHECK_EQ(val(id, 0), 0);

	f = fopen("/proc/sys/kernel/sem", "r");
	CHECK(f != NULL);
	if (f) {
		CHECK_EQ(fscanf(f, "%d %d %d %d", &msl, &mns, &opm, &mni), 4);
		fclose(f);
		maxidx = CHECK_OK(semctl(0, 0, IPC_INFO, (union semun){ .__buf = &si }));
		CHECK_EQ(si.semmsl, msl);
		CHECK_EQ(si.semmns, mns);
		CHECK_EQ(si.semopm, opm);
		CHECK_EQ(si.semmni, mni);
		CHECK_EQ(si.semvmx, 32767);
		CHECK_EQ(CHECK_OK(semctl(0, 0, SEM_INFO, (union semun){ .__buf = &si })), maxidx);
		CHECK(si.semusz >= 1);
		CHECK(si.semaem >= 4);
		for (i = 0; i <= maxidx; i++)
			if (semctl(i, 0, SEM_STAT_ANY, (union semun){ .buf = &ds }) == id) {
				found++;
				CHECK_EQ(ds.sem_nsems, 4);
			}
		CHECK_EQ(found, 1);
	}
	found = 0;
	f = fopen("/proc/sysvipc/sem", "r");
	CHECK(f != NULL);
	if (f) {
		CHECK(fgets(line, sizeof(line), f) && strstr(line, "semid") && strstr(line, "nsems"));
		while (fgets(line, sizeof(line), f)) {
			int key, sid, perms, nsems;
			if (sscanf(line, "%d %d %o %d", &key, &sid, &perms, &nsems) == 4 && sid == id) {
				found++;
				CHECK_EQ(perms, 0400);
				CHECK_EQ(nsems, 4);
			}
		}
		fclose(f);
	}
	CHECK_EQ(found, 1);
	CHECK_OK(semctl(id, 0, IPC_RMID));
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_values();
	test_waiting();
	test_signal();
	test_undo();
	test_perms_info();
	return check_finish();
}
