/*
 * proc_kcmp: comparing two tasks' kernel resources (kcmp).
 *
 * CRIU and debuggers ask whether two processes share a descriptor table,
 * an address space or an open file; the answer must be 0 for the same
 * object and an order (1 or 2) otherwise, the same whichever way round.
 * Checks: a thread shares its process's address space, descriptor table,
 * file-system context, signal handlers and undo list (0); a forked child
 * shares none of the first four (1 or 2, and the reverse call the other
 * one); KCMP_FILE is 0 for a descriptor and its dup and for one the child
 * inherited, an order otherwise, consistent over three files (a total
 * order), EBADF for a closed descriptor; KCMP_IO and KCMP_SYSVSEM of a
 * task with itself 0; KCMP_EPOLL_TFD finds a file registered in an epoll
 * instance (0 against itself, an order against another), ENOENT for a
 * descriptor not registered, EINVAL if the instance is not epoll, EBADF
 * for a bad one, EFAULT for a bad slot; EINVAL for an unknown type, ESRCH
 * for a pid that is not there, EPERM for a child that made itself
 * non-dumpable (the program drops CAP_SYS_PTRACE natively).
 */
// covers: kcmp
#include "check.h"

#include <linux/kcmp.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/prctl.h>

static long kcmp(pid_t a, pid_t b, int type, unsigned long i1, unsigned long i2)
{
	return syscall(SYS_kcmp, a, b, type, i1, i2);
}

static void drop_sys_ptrace(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	CHECK_OK(syscall(SYS_capget, &h, d));
	d[CAP_SYS_PTRACE / 32].effective &= ~(1u << (CAP_SYS_PTRACE % 32));
	CHECK_OK(syscall(SYS_capset, &h, d));
}

/* ordered asserts that kcmp of a and b is an order, the reverse of b and a's. */
static void ordered(pid_t a, pid_t b, int type, unsigned long i1, unsigned long i2, int line)
{
	long r = kcmp(a, b, type, i1, i2), s = kcmp(b, a, type, i2, i1);

	if (!((r == 1 && s == 2) || (r == 2 && s == 1)))
		check_fail(__FILE__, line, "kcmp type %d: %ld one way, %ld the other", type, r, s);
}

static pid_t thread_tid;
static int thread_go;

static void *thread_main(void *arg)
{
	(void)arg;
	__atomic_store_n(&thread_tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	while (!__atomic_load_n(&thread_go, __ATOMIC_SEQ_CST))
		check_sleep_ms(1);
	return NULL;
}

int main(int argc, char **argv)
{
	pid_t me, pid;
	pthread_t th;
	int fd1, fd2, fd3, dup1, ep, go[2], ready[2], type;
	long r12, r23, r13;
	char byte = 0;
	struct kcmp_epoll_slot slot;
	struct epoll_event ev = { .events = EPOLLIN };

	check_init(argc, argv);
	drop_sys_ptrace();
	me = getpid();

	CHECK_EQ(pthread_create(&th, NULL, thread_main, NULL), 0);
	while (!__atomic_load_n(&thread_tid, __ATOMIC_SEQ_CST))
		check_sleep_ms(1);
	for (type = KCMP_VM; type <= KCMP_SYSVSEM; type++)
		CHECK_EQ(kcmp(me, thread_tid, type, 0, 0), 0);
	__atomic_store_n(&thread_go, 1, __ATOMIC_SEQ_CST);
	pthread_join(th, NULL);
	CHECK_EQ(kcmp(me, me, KCMP_IO, 0, 0), 0);
	CHECK_EQ(kcmp(me, me, KCMP_SYSVSEM, 0, 0), 0);

	{
		int p[2], q[2];

		CHECK_OK(pipe(p));
		CHECK_OK(pipe(q));
		fd1 = p[0];
		fd2 = p[1];
		fd3 = q[0];
	}
	dup1 = CHECK_OK(dup(fd1));
	CHECK_EQ(kcmp(me, me, KCMP_FILE, fd1, dup1), 0);
	ordered(me, me, KCMP_FILE, fd1, fd2, __LINE__);
	ordered(me, me, KCMP_FILE, fd2, fd3, __LINE__);
	/* A total order: no cycle among three files. */
	r12 = kcmp(me, me, KCMP_FILE, fd1, fd2);
	r23 = kcmp(me, me, KCMP_FILE, fd2, fd3);
	r13 = kcmp(me, me, KCMP_FILE, fd1, fd3);
	CHECK(r13 == 1 || r13 == 2);
	if (r12 == r23)
		CHECK_EQ(r13, r12);
	CHECK_ERR(kcmp(me, me, KCMP_FILE, fd1, 999), EBADF);
	CHECK_ERR(kcmp(me, me, KCMP_FILE, 999, fd1), EBADF);

	ep = CHECK_OK(epoll_create1(0));
	ev.data.fd = fd1;
	CHECK_OK(epoll_ctl(ep, EPOLL_CTL_ADD, fd1, &ev));
	slot.efd = ep;
	slot.tfd = fd1;
	slot.toff = 0;
	CHECK_EQ(kcmp(me, me, KCMP_EPOLL_TFD, fd1, (uintptr_t)&slot), 0);
	CHECK_EQ(kcmp(me, me, KCMP_EPOLL_TFD, dup1, (uintptr_t)&slot), 0);
	{
		long r = kcmp(me, me, KCMP_EPOLL_TFD, fd2, (uintptr_t)&slot);

		CHECK(r == 1 || r == 2);
	}
	slot.toff = 1;
	CHECK_ERR(kcmp(me, me, KCMP_EPOLL_TFD, fd1, (uintptr_t)&slot), ENOENT);
	slot.toff = 0;
	slot.tfd = fd2;
	CHECK_ERR(kcmp(me, me, KCMP_EPOLL_TFD, fd1, (uintptr_t)&slot), ENOENT);
	slot.efd = fd3;
	CHECK_ERR(kcmp(me, me, KCMP_EPOLL_TFD, fd1, (uintptr_t)&slot), EINVAL);
	slot.efd = 999;
	CHECK_ERR(kcmp(me, me, KCMP_EPOLL_TFD, fd1, (uintptr_t)&slot), EBADF);
	CHECK_ERR(kcmp(me, me, KCMP_EPOLL_TFD, fd1, 8), EFAULT);
	CHECK_ERR(kcmp(me, me, KCMP_EPOLL_TFD, 999, (uintptr_t)&slot), EBADF);

	CHECK_ERR(kcmp(me, me, 99, 0, 0), EINVAL);
	CHECK_ERR(kcmp(me, me, -1, 0, 0), EINVAL);
	CHECK_ERR(kcmp(me, 999999, KCMP_VM, 0, 0), ESRCH);
	CHECK_ERR(kcmp(999999, me, KCMP_VM, 0, 0), ESRCH);

	CHECK_OK(pipe(go));
	CHECK_OK(pipe(ready));
	pid = check_fork();
	if (pid == 0) {
		CHECK_EQ(write(ready[1], &byte, 1), 1);
		CHECK_EQ(read(go[0], &byte, 1), 1);
		CHECK_OK(prctl(PR_SET_DUMPABLE, 0));
		CHECK_EQ(write(ready[1], &byte, 1), 1);
		CHECK_EQ(read(go[0], &byte, 1), 1);
		check_child_exit();
	}
	CHECK_EQ(read(ready[0], &byte, 1), 1);
	ordered(me, pid, KCMP_VM, 0, 0, __LINE__);
	ordered(me, pid, KCMP_FILES, 0, 0, __LINE__);
	ordered(me, pid, KCMP_FS, 0, 0, __LINE__);
	ordered(me, pid, KCMP_SIGHAND, 0, 0, __LINE__);
	/* The child's copy of a descriptor is the same open file. */
	CHECK_EQ(kcmp(me, pid, KCMP_FILE, fd1, fd1), 0);
	CHECK_EQ(kcmp(me, pid, KCMP_FILE, fd1, dup1), 0);
	ordered(me, pid, KCMP_FILE, fd1, fd3, __LINE__);
	CHECK_EQ(write(go[1], &byte, 1), 1);
	CHECK_EQ(read(ready[0], &byte, 1), 1);
	CHECK_ERR(kcmp(me, pid, KCMP_VM, 0, 0), EPERM);
	CHECK_ERR(kcmp(pid, me, KCMP_FILES, 0, 0), EPERM);
	CHECK_EQ(write(go[1], &byte, 1), 1);
	CHECK_CHILD(pid, "exited 0");
	return check_finish();
}
