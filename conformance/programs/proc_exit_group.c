/*
 * proc_exit_group.c - exit_group(2) ends the process at once, with the
 * status given: the program makes the raw call itself, and had it returned,
 * the program would print a failure and end with status 1. The runner checks
 * the status.
 */
// covers: exit_group
#include "check.h"

int main(int argc, char **argv)
{
	check_init(argc, argv);
	syscall(SYS_exit_group, check_finish());
	fprintf(stderr, "proc_exit_group.c: exit_group(2) returned\n");
	return 1;
}
