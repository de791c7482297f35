/*
 * fd_close_range_unshare: close_range(2)'s CLOSE_RANGE_UNSHARE, in a child
 * that shares its parent's descriptor table (clone with CLONE_FILES).
 *
 * Checks: without the flag the child's close_range closes the parent's
 * descriptors too (one table); with CLOSE_RANGE_UNSHARE|CLOSE_RANGE_CLOEXEC
 * over 3..~0U the child keeps every descriptor, a low one and one far past
 * it (1000), each close-on-exec in its own table, dup2 of one gives a
 * descriptor without the flag, and closing them there leaves the parent's
 * open and not close-on-exec (the kernel's close_range_test
 * close_range_cloexec_unshare_syzbot); with CLOSE_RANGE_UNSHARE alone the
 * child's range is closed in its table only.
 */
// covers: close_range clone fcntl dup2
#include "check.h"

#include <linux/close_range.h>
#include <sched.h>

/* files_child starts a child sharing the descriptor table, as fork does
 * otherwise (its own copy of memory, SIGCHLD at exit). */
static pid_t files_child(void)
{
	fflush(NULL);
	pid_t pid = syscall(SYS_clone, CLONE_FILES | SIGCHLD, 0, NULL, NULL, 0);
	if (pid == 0) {
		check_failures = 0;
		alarm(CHECK_CHILD_TIMEOUT);
	}
	return pid;
}

int main(int argc, char **argv)
{
	check_init(argc, argv);

	int fd1 = open("/dev/null", O_RDWR);
	CHECK(fd1 > 2);
	CHECK_EQ(dup2(fd1, 1000), 1000);

	/* One table: the child's close is the parent's. */
	int spare = dup(fd1);
	CHECK(spare > fd1);
	pid_t pid = files_child();
	if (pid == 0) {
		CHECK_EQ(syscall(SYS_close_range, spare, spare, 0), 0);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_ERR(fcntl(spare, F_GETFD), EBADF);

	for (int round = 0; round < 5; round++) {
		pid = files_child();
		if (pid == 0) {
			CHECK_EQ(syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC), 0);
			CHECK_EQ(fcntl(fd1, F_GETFD), FD_CLOEXEC);
			CHECK_EQ(fcntl(1000, F_GETFD), FD_CLOEXEC);
			CHECK_EQ(dup2(fd1, 42), 42);
			CHECK_EQ(fcntl(42, F_GETFD), 0);
			CHECK_OK(close(fd1));
			CHECK_OK(close(1000));
			CHECK_OK(close(42));
			check_child_exit();
		}
		CHECK_CHILD(pid, "exited 0");
		CHECK_EQ(fcntl(fd1, F_GETFD), 0);
		CHECK_EQ(fcntl(1000, F_GETFD), 0);
		CHECK_ERR(fcntl(42, F_GETFD), EBADF);
	}

	pid = files_child();
	if (pid == 0) {
		CHECK_EQ(syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_UNSHARE), 0);
		CHECK_ERR(fcntl(fd1, F_GETFD), EBADF);
		CHECK_ERR(fcntl(1000, F_GETFD), EBADF);
		CHECK_EQ(fcntl(1, F_GETFD) >= 0, 1);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(fcntl(fd1, F_GETFD), 0);
	CHECK_EQ(fcntl(1000, F_GETFD), 0);

	return check_finish();
}
