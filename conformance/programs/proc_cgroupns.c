/*
 * proc_cgroupns: cgroup namespaces, as bubblewrap's --unshare-cgroup-try
 * makes one whenever /proc/self/ns/cgroup exists.
 *
 * Checks, with CAP_SYS_ADMIN: unshare(CLONE_NEWCGROUP) gives the caller a
 * new ns/cgroup, whose root is the cgroup it is in: /proc/self/cgroup's
 * v2 line reads 0::/; setns back to the old namespace's file restores the old
 * ns/cgroup, and the file as CLONE_NEWUTS is EINVAL; a child of
 * clone(CLONE_NEWCGROUP) is in a namespace of its own, its parent's
 * unchanged.
 */
// covers: unshare setns clone
// capabilities: CAP_SYS_ADMIN
#include "check.h"

#include <sched.h>
#include <sys/wait.h>

/* v2_line is /proc/self/cgroup's cgroup v2 line ("0::PATH"), beside
 * whatever v1 hierarchies a host also mounts. */
static const char *v2_line(void)
{
	static char buf[4096];
	char *line, *end;
	long n;
	int fd = open("/proc/self/cgroup", O_RDONLY);

	if (fd < 0)
		return "(open failed)";
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	for (line = buf; *line; line = end + (*end == '\n')) {
		end = strchrnul(line, '\n');
		if (strncmp(line, "0::", 3) == 0) {
			*end = '\0';
			return line;
		}
	}
	return "(no 0:: line)";
}

int main(int argc, char **argv)
{
	char before[64];
	pid_t pid;

	check_init(argc, argv);
	if (!check_has_cap(CAP_SYS_ADMIN)) {
		fprintf(stderr, "proc_cgroupns: needs CAP_SYS_ADMIN\n");
		return 1;
	}
	snprintf(before, sizeof(before), "%s", check_readlink("/proc/self/ns/cgroup"));
	CHECK(strncmp(before, "cgroup:[", 8) == 0);

	pid = check_fork();
	if (pid == 0) {
		int old = CHECK_OK(open("/proc/self/ns/cgroup", O_RDONLY));
		CHECK_OK(unshare(CLONE_NEWCGROUP));
		CHECK(strcmp(check_readlink("/proc/self/ns/cgroup"), before) != 0);
		CHECK_STR(v2_line(), "0::/");
		CHECK_ERR(setns(old, CLONE_NEWUTS), EINVAL);
		CHECK_OK(setns(old, CLONE_NEWCGROUP));
		CHECK_STR(check_readlink("/proc/self/ns/cgroup"), before);
		close(old);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	{
		int fds[2];
		char got[64] = "";
		CHECK_OK(pipe(fds));
		pid = syscall(SYS_clone, CLONE_NEWCGROUP | SIGCHLD, 0, 0, 0, 0);
		if (pid == 0) {
			const char *l = check_readlink("/proc/self/ns/cgroup");
			write(fds[1], l, strlen(l) + 1);
			_exit(0);
		}
		CHECK(pid > 0);
		close(fds[1]);
		CHECK(read(fds[0], got, sizeof(got) - 1) > 0);
		CHECK(strncmp(got, "cgroup:[", 8) == 0);
		CHECK(strcmp(got, before) != 0);
		CHECK_CHILD(pid, "exited 0");
		CHECK_STR(check_readlink("/proc/self/ns/cgroup"), before);
	}
	return check_finish();
}
