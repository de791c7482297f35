/*
 * fs_landlock_scope.c - what a Landlock domain forbids beyond file
 * access: changing the mount tree (mount, umount2, a bind mount: EPERM,
 * whatever the capabilities), and reaching with ptrace a process that is
 * less restricted (attach and PTRACE_TRACEME: EPERM), while a process may
 * trace one in its own domain or one made on it.
 */
// covers: landlock_create_ruleset landlock_add_rule landlock_restrict_self
// capabilities: CAP_SYS_ADMIN CAP_SYS_PTRACE
#include "check.h"
#include <linux/landlock.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>

/* restrict_read_file adds a layer that handles reading files and allows
 * it everywhere: a domain that changes no file access. */
static void restrict_read_file(void)
{
	struct landlock_ruleset_attr attr = { .handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE };
	struct landlock_path_beneath_attr rule = { .allowed_access = LANDLOCK_ACCESS_FS_READ_FILE };
	int fd = CHECK_OK(syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr), 0));

	rule.parent_fd = CHECK_OK(open("/", O_PATH));
	CHECK_OK(syscall(SYS_landlock_add_rule, fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0));
	CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK_OK(syscall(SYS_landlock_restrict_self, fd, 0));
	close(rule.parent_fd);
	close(fd);
}

static void mounts(void)
{
	const char *dir = "/tmp/landlock-mnt", *sub = "/tmp/landlock-mnt/sub";

	/* A mount namespace of its own, so the host's tree is left alone. */
	CHECK_OK(unshare(CLONE_NEWNS));
	CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	CHECK_OK(mkdir(dir, 0755));
	CHECK_OK(mount("t", dir, "tmpfs", 0, NULL));
	CHECK_OK(mkdir(sub, 0755));
	restrict_read_file();
	CHECK_ERR(mount("t", sub, "tmpfs", 0, NULL), EPERM);
	CHECK_ERR(mount(dir, sub, NULL, MS_BIND, NULL), EPERM);
	CHECK_ERR(mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL), EPERM);
	CHECK_ERR(umount2(dir, 0), EPERM);
	CHECK_ERR(umount2(sub, 0), EINVAL); /* not a mount: said first */
}

/* wait_stopped waits for pid to stop after an attach. */
static void wait_stopped(pid_t pid)
{
	int status = 0;

	CHECK_EQ(waitpid(pid, &status, __WALL), pid);
	CHECK(WIFSTOPPED(status));
}

static void ptraces(void)
{
	int ready[2], go[2];
	pid_t a = getpid(), b, f;
	char c = 0;

	restrict_read_file();
	CHECK_OK(pipe(ready));
	b = check_fork();
	if (b == 0) {
		/* B, in a domain made on A's, may not reach A. */
		restrict_read_file();
		CHECK_ERR(ptrace(PTRACE_ATTACH, a, 0, 0), EPERM);
		CHECK_EQ(write(ready[1], "x", 1), 1);
		pause();
		check_child_exit();
	}
	CHECK_EQ(read(ready[0], &c, 1), 1);
	/* A may reach B. */
	CHECK_OK(ptrace(PTRACE_ATTACH, b, 0, 0));
	wait_stopped(b);
	CHECK_OK(ptrace(PTRACE_DETACH, b, 0, 0));
	kill(b, SIGKILL);
	CHECK_CHILD(b, "killed by SIGKILL");

	/* A child whose parent became more restricted after the fork may
	 * not make it its tracer. */
	CHECK_OK(pipe(go));
	f = check_fork();
	if (f == 0) {
		CHECK_EQ(read(go[0], &c, 1), 1);
		CHECK_ERR(ptrace(PTRACE_TRACEME, 0, 0, 0), EPERM);
		check_child_exit();
	}
	restrict_read_file();
	CHECK_EQ(write(go[1], "x", 1), 1);
	CHECK_CHILD(f, "exited 0");
	/* One in the same domain may. */
	f = check_fork();
	if (f == 0) {
		CHECK_OK(ptrace(PTRACE_TRACEME, 0, 0, 0));
		check_child_exit();
	}
	CHECK_CHILD(f, "exited 0");
}

int main(int argc, char **argv)
{
	void (*cases[])(void) = { mounts, ptraces };
	pid_t pid;

	check_init(argc, argv);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		pid = check_fork();
		if (pid == 0) {
			cases[i]();
			check_child_exit();
		}
		CHECK_CHILD(pid, "exited 0");
	}
	rmdir("/tmp/landlock-mnt/sub");
	rmdir("/tmp/landlock-mnt");
	return check_finish();
}
