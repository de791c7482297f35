/*
 * proc_writes: the /proc files a process may write about itself, and what
 * it gets for the rest.
 *
 * Checks: a write to /proc/self/comm names the process with the bytes
 * written, a newline kept, cut at 15 bytes and at a NUL, returning the
 * whole count; prctl(PR_GET_NAME) agrees; a thread's task/TID/comm names
 * that thread alone; a child's write to its parent's comm fails with
 * EINVAL. oom_score_adj takes numbers in [-1000, 1000] with blanks around
 * them and a 0x prefix, EINVAL for others and ERANGE past an int; going
 * below 0 needs CAP_SYS_RESOURCE (EACCES without); a child inherits the
 * value; oom_adj shows 15 at 1000; oom_score is 0 at -1000 and at least
 * 1000 at 1000. A process's read-only files (stat) open for writing only
 * where the mode bits let the caller (EACCES otherwise) and then fail the
 * write with EINVAL; a read-only sysctl cannot be opened for writing even
 * by root (EACCES).
 */
// covers: openat write read prctl clone
#include "check.h"

#include <pthread.h>
#include <sys/prctl.h>

static long write_file(const char *path, const char *data, size_t len)
{
	long r;
	int e, fd = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY);

	if (fd < 0)
		return -1;
	r = write(fd, data, len);
	e = errno;
	close(fd);
	errno = e;
	return r;
}

static const char *read_file(const char *path)
{
	static char buf[256];
	long n;
	int fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);

	if (fd < 0) {
		snprintf(buf, sizeof(buf), "(%s: %s)", path, check_errname(errno));
		return buf;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	close(fd);
	return buf;
}

#define WRITE_STR(path, s) write_file(path, s, strlen(s))

static void test_comm(void)
{
	char name[32];
	char parent[64];
	pid_t pid;

	CHECK_EQ(WRITE_STR("/proc/self/comm", "hello\n"), 6);
	CHECK_STR(read_file("/proc/self/comm"), "hello\n\n");
	CHECK_EQ(WRITE_STR("/proc/self/comm", "abcdefghijklmnopqrstuvwxyz"), 26);
	CHECK_STR(read_file("/proc/self/comm"), "abcdefghijklmno\n");
	CHECK_OK(prctl(PR_GET_NAME, name));
	CHECK_STR(name, "abcdefghijklmno");
	CHECK_EQ(write_file("/proc/self/comm", "ab\0cd", 5), 5);
	CHECK_STR(read_file("/proc/self/comm"), "ab\n");
	CHECK_EQ(WRITE_STR("/proc/self/comm", "parent"), 6);

	snprintf(parent, sizeof(parent), "/proc/%d/comm", getpid());
	pid = check_fork();
	if (pid == 0) {
		CHECK_ERR(WRITE_STR(parent, "child"), EINVAL);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_STR(read_file("/proc/self/comm"), "parent\n");
}

static int go_fds[2], ready_fds[2];

/* thread_main tells its tid, then waits to be let go. */
static void *thread_main(void *arg)
{
	pid_t tid = gettid();
	char c;

	(void)arg;
	write(ready_fds[1], &tid, sizeof(tid));
	read(go_fds[0], &c, 1);
	return NULL;
}

static void test_thread_comm(void)
{
	pthread_t th;
	char path[64];
	pid_t tid = -1;

	CHECK_OK(pipe(go_fds));
	CHECK_OK(pipe(ready_fds));
	CHECK_EQ(pthread_create(&th, NULL, thread_main, NULL), 0);
	CHECK_EQ(read(ready_fds[0], &tid, sizeof(tid)), sizeof(tid));
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	CHECK_STR(read_file(path), "parent\n");
	CHECK_EQ(WRITE_STR(path, "worker"), 6);
	CHECK_STR(read_file(path), "worker\n");
	CHECK_STR(read_file("/proc/self/comm"), "parent\n");
	write(go_fds[1], "x", 1);
	pthread_join(th, NULL);
}

static void test_oom_score_adj(void)
{
	const char *adj = "/proc/self/oom_score_adj";
	pid_t pid;

	CHECK_EQ(WRITE_STR(adj, "500"), 3);
	CHECK_STR(read_file(adj), "500\n");
	CHECK_EQ(WRITE_STR(adj, " 300 \n"), 6);
	CHECK_STR(read_file(adj), "300\n");
	CHECK_EQ(WRITE_STR(adj, "0x10"), 4);
	CHECK_STR(read_file(adj), "16\n");
	CHECK_ERR(WRITE_STR(adj, "1001"), EINVAL);
	CHECK_ERR(WRITE_STR(adj, "-1001"), EINVAL);
	CHECK_ERR(WRITE_STR(adj, "abc"), EINVAL);
	CHECK_ERR(WRITE_STR(adj, "12345678901234"), ERANGE);
	CHECK_STR(read_file(adj), "16\n");

	CHECK_EQ(WRITE_STR(adj, "1000"), 4);
	CHECK_STR(read_file("/proc/self/oom_adj"), "15\n");
	CHECK(atoi(read_file("/proc/self/oom_score")) >= 1000);
	pid = check_fork();
	if (pid == 0) {
		CHECK_STR(read_file(adj), "1000\n");
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	CHECK_EQ(WRITE_STR(adj, "0"), 1);
	if (check_has_cap(CAP_SYS_RESOURCE)) {
		CHECK_EQ(WRITE_STR(adj, "-1000"), 5);
		CHECK_STR(read_file("/proc/self/oom_score"), "0\n");
		CHECK_EQ(WRITE_STR(adj, "0"), 1);
	} else {
		CHECK_ERR(WRITE_STR(adj, "-1"), EACCES);
		CHECK_STR(read_file(adj), "0\n");
	}
}

static void test_unwritable(void)
{
	int fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/stat", O_WRONLY);

	if (fd < 0) {
		CHECK_EQ(errno, EACCES);
		CHECK(!check_has_cap(CAP_DAC_OVERRIDE));
	} else {
		CHECK_ERR(write(fd, "x", 1), EINVAL);
		close(fd);
	}
	CHECK_ERR(syscall(SYS_openat, AT_FDCWD, "/proc/sys/kernel/osrelease", O_WRONLY), EACCES);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_comm();
	test_thread_comm();
	test_oom_score_adj();
	test_unwritable();
	return check_finish();
}
