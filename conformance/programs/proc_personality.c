/*
 * proc_personality: the process's execution domain.
 *
 * Checks: personality(0xffffffff) asks without changing (PER_LINUX at
 * first); a new persona is set and the old one returned; a forked child
 * has its parent's, and an exec keeps it; with ADDR_NO_RANDOMIZE two
 * execs of one program put their stack at the same address, as gdb relies
 * on to disable randomization for what it debugs.
 */
// covers: personality
#include "check.h"

#include <stdint.h>
#include <sys/personality.h>

static const char *self; /* this program, as the runner started it */

/* exec_report runs self --report in a child, which writes its persona
 * and the address of a local of its main to the pipe; it returns them. */
static void exec_report(unsigned long *persona, uintptr_t *stack)
{
	int p[2];

	CHECK_OK(pipe(p));
	pid_t pid = check_fork();
	if (pid == 0) {
		char fd[16];
		snprintf(fd, sizeof(fd), "%d", p[1]);
		char *args[] = { (char *)self, "--report", fd, NULL };
		char *envp[] = { NULL };
		execve(self, args, envp);
		_exit(99);
	}
	close(p[1]);
	unsigned long got[2] = { 0, 0 };
	CHECK_EQ(read(p[0], got, sizeof(got)), sizeof(got));
	close(p[0]);
	CHECK_CHILD(pid, "exited 0");
	*persona = got[0];
	*stack = got[1];
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--report") == 0) {
		int local = 0;
		unsigned long r[2] = { (unsigned long)personality(0xffffffff), (uintptr_t)&local };
		return write(atoi(argv[2]), r, sizeof(r)) == sizeof(r) ? 0 : 1;
	}
	check_init(argc, argv);
	self = argv[0];

	CHECK_EQ(personality(0xffffffff), PER_LINUX);
	CHECK_EQ(personality(0xffffffff), PER_LINUX);
	CHECK_EQ(personality(PER_LINUX | ADDR_NO_RANDOMIZE), PER_LINUX);
	CHECK_EQ(personality(0xffffffff), ADDR_NO_RANDOMIZE);

	pid_t pid = check_fork();
	if (pid == 0) {
		CHECK_EQ(personality(0xffffffff), ADDR_NO_RANDOMIZE);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	unsigned long persona;
	uintptr_t first, second;
	exec_report(&persona, &first);
	CHECK_EQ(persona, ADDR_NO_RANDOMIZE);
	exec_report(&persona, &second);
	CHECK_EQ(first, second);

	CHECK_EQ(personality(PER_LINUX), ADDR_NO_RANDOMIZE);
	exec_report(&persona, &first);
	CHECK_EQ(persona, PER_LINUX);
	return check_finish();
}
