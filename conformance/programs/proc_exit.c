/*
 * proc_exit.c - how a single-threaded process ends, and the robust futex
 * list every thread registers.
 *
 * set_robust_list takes only the size of struct robust_list_head (24 on
 * x86-64) and get_robust_list gives back what was set. The program then ends
 * with a raw exit(2), not exit_group: the process's only thread exiting ends
 * the process, with that thread's status. Had exit returned, the program would
 * go on to fail loudly, and the runner checks the status.
 */
// covers: exit set_robust_list get_robust_list
#include "check.h"

int main(int argc, char **argv)
{
	struct {
		void *next;
		long futex_offset;
		void *pending;
	} head = { &head, 0, NULL };
	void *got = NULL;
	size_t len = 0;

	check_init(argc, argv);

	CHECK_ERR(syscall(SYS_set_robust_list, &head, sizeof(head) + 1), EINVAL);
	CHECK_ERR(syscall(SYS_set_robust_list, &head, 0), EINVAL);
	CHECK_OK(syscall(SYS_set_robust_list, &head, sizeof(head)));
	CHECK_OK(syscall(SYS_get_robust_list, 0, &got, &len));
	CHECK(got == (void *)&head);
	CHECK_EQ((long)len, (long)sizeof(head));
	CHECK_OK(syscall(SYS_get_robust_list, getpid(), &got, &len));
	CHECK_ERR(syscall(SYS_get_robust_list, 0, (void *)1, &len), EFAULT);

	syscall(SYS_exit, check_finish());
	fprintf(stderr, "proc_exit.c: exit(2) returned\n");
	return 1;
}
