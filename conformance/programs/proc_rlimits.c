/*
 * proc_rlimits: resource limits, set, inherited and enforced.
 *
 * Shells (ulimit), init systems and container runtimes set limits, servers
 * raise RLIMIT_NOFILE at start-up, build systems cap memory with RLIMIT_AS;
 * a limit that reads back right but is not enforced, or not inherited, is
 * worse than none.
 * Checks: getrlimit, setrlimit and prlimit64 agree (old and new values in one
 * prlimit64 call); EINVAL for soft above hard and for an unknown resource,
 * EPERM for a hard RLIMIT_NOFILE above fs.nr_open, and for raising a hard
 * limit without CAP_SYS_RESOURCE; ESRCH for a missing pid, EFAULT for a bad
 * pointer. RLIMIT_NOFILE: open fails with EMFILE once every number below the
 * limit is taken, and lowering the limit below an open fd is allowed and
 * leaves that fd working. RLIMIT_AS (in a child): mmap past it is ENOMEM,
 * below it works. RLIMIT_FSIZE on a memfd: write and pwrite64 at the limit
 * fail with EFBIG and raise SIGXFSZ (which kills by default, can be handled
 * or ignored), a write that crosses it is cut short, ftruncate past it is
 * EFBIG. RLIMIT_STACK and RLIMIT_CORE are inherited by a child, which
 * prlimit64 reads and changes from its parent; a child whose stack grows past
 * RLIMIT_STACK dies of SIGSEGV. RLIMIT_NPROC does not stop root (uid 0) from
 * forking; a non-root process at its limit gets EAGAIN (only checked with
 * CAP_SETUID, to become non-root).
 */
// covers: getrlimit setrlimit prlimit64 open mmap clone write pwrite64 ftruncate
#include "check.h"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>

/* A pid that no process has: above the largest pid_max (4194304). */
#define NO_PID 0x3ffffff0

#define MIB (1024L * 1024)

static long sys_getrlimit(int res, struct rlimit *r)
{
	return syscall(SYS_getrlimit, res, r);
}

static long sys_setrlimit(int res, const struct rlimit *r)
{
	return syscall(SYS_setrlimit, res, r);
}

static long sys_prlimit(pid_t pid, int res, const struct rlimit *new,
			struct rlimit *old)
{
	return syscall(SYS_prlimit64, pid, res, new, old);
}

static long read_long(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	if (read(fd, buf, sizeof(buf) - 1) <= 0)
		buf[0] = '\0';
	close(fd);
	return buf[0] ? atol(buf) : -1;
}

static void test_get_set(void)
{
	struct rlimit orig, r, old;
	long nr_open;
	pid_t pid;

	CHECK_EQ(sys_getrlimit(RLIMIT_NOFILE, &orig), 0);
	CHECK(orig.rlim_cur <= orig.rlim_max);
	CHECK_EQ(sys_prlimit(0, RLIMIT_NOFILE, NULL, &r), 0);
	CHECK_EQ(r.rlim_cur, orig.rlim_cur);
	CHECK_EQ(r.rlim_max, orig.rlim_max);
	CHECK_EQ(sys_prlimit(getpid(), RLIMIT_NOFILE, NULL, &r), 0);
	CHECK_EQ(r.rlim_cur, orig.rlim_cur);

	/* Set with setrlimit, read with prlimit64; swap with prlimit64. */
	r.rlim_cur = 100;
	r.rlim_max = orig.rlim_max;
	CHECK_EQ(sys_setrlimit(RLIMIT_NOFILE, &r), 0);
	r.rlim_cur = 200;
	memset(&old, 0, sizeof(old));
	CHECK_EQ(sys_prlimit(0, RLIMIT_NOFILE, &r, &old), 0);
	CHECK_EQ(old.rlim_cur, 100);
	CHECK_EQ(old.rlim_max, orig.rlim_max);
	CHECK_EQ(sys_getrlimit(RLIMIT_NOFILE, &r), 0);
	CHECK_EQ(r.rlim_cur, 200);

	/* Errors, which change nothing. */
	r.rlim_cur = orig.rlim_max;
	r.rlim_max = 100;
	CHECK_ERR(sys_setrlimit(RLIMIT_NOFILE, &r), EINVAL);
	CHECK_ERR(sys_prlimit(0, RLIMIT_NOFILE, &r, NULL), EINVAL);
	CHECK_ERR(sys_getrlimit(99, &r), EINVAL);
	CHECK_ERR(sys_setrlimit(99, &orig), EINVAL);
	CHECK_ERR(sys_prlimit(0, 99, NULL, &r), EINVAL);
	CHECK_ERR(sys_prlimit(NO_PID, RLIMIT_NOFILE, NULL, &r), ESRCH);
	CHECK_ERR(sys_getrlimit(RLIMIT_NOFILE, (void *)8), EFAULT);
	CHECK_ERR(sys_setrlimit(RLIMIT_NOFILE, (void *)8), EFAULT);
	nr_open = read_long("/proc/sys/fs/nr_open");
	if (nr_open > 0) {
		r.rlim_cur = r.rlim_max = nr_open + 1;
		CHECK_ERR(sys_setrlimit(RLIMIT_NOFILE, &r), EPERM);
	}
	CHECK_EQ(sys_setrlimit(RLIMIT_NOFILE, &orig), 0);

	/* Anyone may lower a hard limit; raising it takes CAP_SYS_RESOURCE
	 * (in a child: without it there is no way back). */
	pid = check_fork();
	if (pid == 0) {
		r.rlim_cur = r.rlim_max = orig.rlim_max - 1;
		CHECK_EQ(sys_setrlimit(RLIMIT_NOFILE, &r), 0);
		if (check_has_cap(CAP_SYS_RESOURCE))
			CHECK_EQ(sys_setrlimit(RLIMIT_NOFILE, &orig), 0);
		else
			CHECK_ERR(sys_setrlimit(RLIMIT_NOFILE, &orig), EPERM);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
}

static void test_nofile(void)
{
	struct rlimit orig, r;
	int fds[32], n = 0, used = 0, fd, high;
	char c;

	CHECK_EQ(sys_getrlimit(RLIMIT_NOFILE, &orig), 0);
	/* An fd above the limit to come. */
	fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	high = CHECK_OK(fcntl(fd, F_DUPFD, 40));
	close(fd);
	for (fd = 0; fd < 16; fd++)
		if (fcntl(fd, F_GETFD) != -1)
			used++;

	r.rlim_cur = 16;
	r.rlim_max = orig.rlim_max;
	CHECK_EQ(sys_setrlimit(RLIMIT_NOFILE, &r), 0);
	for (;;) {
		fd = open(HELLO_PATH, O_RDONLY);
		if (fd < 0 || n == 32)
			break;
		CHECK(fd < 16);
		fds[n++] = fd;
	}
	CHECK_EQ(fd, -1);
	CHECK_EQ(errno, EMFILE);
	CHECK_EQ(n, 16 - used);
	/* The fd above the limit still works. */
	CHECK_EQ(fcntl(high, F_GETFD), 0);
	CHECK_EQ(read(high, &c, 1), 1);
	CHECK_EQ(c, 'H');
	/* Freeing one makes room for one. */
	if (n > 0) {
		close(fds[--n]);
		fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
		fds[n++] = fd;
		CHECK_ERR(open(HELLO_PATH, O_RDONLY), EMFILE);
	}
	while (n > 0)
		close(fds[--n]);
	close(high);
	CHECK_EQ(sys_setrlimit(RLIMIT_NOFILE, &orig), 0);
}

static void test_as(void)
{
	pid_t pid = check_fork();

	if (pid == 0) {
		struct rlimit r = { 256 * MIB, RLIM_INFINITY };
		void *p;

		CHECK_EQ(sys_setrlimit(RLIMIT_AS, &r), 0);
		p = mmap(NULL, 512 * MIB, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		CHECK(p == MAP_FAILED);
		CHECK_EQ(errno, ENOMEM);
		p = mmap(NULL, 8 * MIB, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(p != MAP_FAILED);
		/* Raising the soft limit again lets it through. */
		r.rlim_cur = RLIM_INFINITY;
		CHECK_EQ(sys_setrlimit(RLIMIT_AS, &r), 0);
		p = mmap(NULL, 512 * MIB, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		CHECK(p != MAP_FAILED);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
}

static volatile int xfsz;

static void on_xfsz(int sig)
{
	(void)sig;
	xfsz++;
}

static void test_fsize(void)
{
	static char buf[8192];
	struct rlimit orig, r;
	int fd;
	pid_t pid;

	fd = CHECK_OK(syscall(SYS_memfd_create, "fsize", 0));
	CHECK_EQ(sys_getrlimit(RLIMIT_FSIZE, &orig), 0);

	/* SIGXFSZ's default action kills. */
	pid = check_fork();
	if (pid == 0) {
		r.rlim_cur = 4096;
		r.rlim_max = orig.rlim_max;
		prctl(PR_SET_DUMPABLE, 0);
		CHECK_EQ(sys_setrlimit(RLIMIT_FSIZE, &r), 0);
		CHECK_EQ(sys_pwrite64(fd, buf, 4096, 0), 4096);
		sys_pwrite64(fd, buf, 1, 4096);
		_exit(99);
	}
	CHECK_CHILD(pid, "killed by SIGXFSZ");

	r.rlim_cur = 4096;
	r.rlim_max = orig.rlim_max;
	CHECK_EQ(sys_setrlimit(RLIMIT_FSIZE, &r), 0);
	signal(SIGXFSZ, on_xfsz);
	CHECK_EQ(ftruncate(fd, 0), 0);
	/* Up to the limit: fine. At it: EFBIG and SIGXFSZ. */
	CHECK_EQ(write(fd, buf, 4000), 4000);
	CHECK_EQ(xfsz, 0);
	/* Across it: cut at the limit, no signal. */
	CHECK_EQ(write(fd, buf, 200), 96);
	CHECK_EQ(xfsz, 0);
	CHECK_ERR(write(fd, buf, 1), EFBIG);
	CHECK_EQ(xfsz, 1);
	CHECK_ERR(sys_pwrite64(fd, buf, 10, 5000), EFBIG);
	CHECK_EQ(xfsz, 2);
	CHECK_EQ(sys_pwrite64(fd, buf, 10, 100), 10);
	/* Growing by truncation counts too. */
	CHECK_ERR(ftruncate(fd, 8192), EFBIG);
	CHECK_EQ(xfsz, 3);
	CHECK_EQ(ftruncate(fd, 4096), 0);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_END), 4096);
	/* Ignored: only EFBIG. */
	signal(SIGXFSZ, SIG_IGN);
	CHECK_ERR(sys_pwrite64(fd, buf, 1, 4096), EFBIG);
	CHECK_EQ(xfsz, 3);
	signal(SIGXFSZ, SIG_DFL);
	CHECK_EQ(sys_setrlimit(RLIMIT_FSIZE, &orig), 0);
	CHECK_EQ(sys_pwrite64(fd, buf, 1, 8192), 1);
	close(fd);
}

/* grow_stack touches bytes of stack below the current frame, a page at a
 * time from the top, as a deep recursion would. */
static void __attribute__((noinline)) grow_stack(long bytes)
{
	volatile char *p = __builtin_alloca(bytes);
	long i;

	for (i = bytes - 1; i >= 0; i -= 4096)
		p[i] = 1;
	p[0] = 1;
}

static void test_inherit(void)
{
	struct rlimit orig_stack, orig_core, r, got;
	int go[2], ready[2];
	char c;
	pid_t pid;

	CHECK_EQ(sys_getrlimit(RLIMIT_STACK, &orig_stack), 0);
	CHECK_EQ(sys_getrlimit(RLIMIT_CORE, &orig_core), 0);
	r.rlim_cur = 4 * MIB;
	r.rlim_max = orig_stack.rlim_max;
	if (r.rlim_max != RLIM_INFINITY && r.rlim_max < r.rlim_cur)
		r.rlim_cur = r.rlim_max;
	CHECK_EQ(sys_setrlimit(RLIMIT_STACK, &r), 0);
	r.rlim_cur = 0;
	r.rlim_max = orig_core.rlim_max;
	CHECK_EQ(sys_setrlimit(RLIMIT_CORE, &r), 0);

	CHECK_OK(pipe2(go, O_CLOEXEC));
	CHECK_OK(pipe2(ready, O_CLOEXEC));
	pid = check_fork();
	if (pid == 0) {
		close(go[1]);
		close(ready[0]);
		CHECK_EQ(sys_getrlimit(RLIMIT_STACK, &got), 0);
		CHECK_EQ(got.rlim_cur, r.rlim_max != RLIM_INFINITY &&
					       r.rlim_max < 4 * MIB ?
				       r.rlim_max :
				       4 * MIB);
		CHECK_EQ(sys_getrlimit(RLIMIT_CORE, &got), 0);
		CHECK_EQ(got.rlim_cur, 0);
		/* Wait while the parent changes our limit. */
		close(ready[1]);
		if (read(go[0], &c, 1) != 0)
			_exit(100);
		CHECK_EQ(sys_getrlimit(RLIMIT_CORE, &got), 0);
		CHECK_EQ(got.rlim_cur, 4096);
		check_child_exit();
	}
	close(go[0]);
	close(ready[1]);
	CHECK_EQ(read(ready[0], &c, 1), 0);
	close(ready[0]);
	/* The parent sees and sets the child's limits. */
	CHECK_EQ(sys_prlimit(pid, RLIMIT_STACK, NULL, &got), 0);
	CHECK(got.rlim_cur <= 4 * MIB);
	r.rlim_cur = 4096;
	r.rlim_max = orig_core.rlim_max;
	memset(&got, 0x5a, sizeof(got));
	CHECK_EQ(sys_prlimit(pid, RLIMIT_CORE, &r, &got), 0);
	CHECK_EQ(got.rlim_cur, 0);
	close(go[1]);
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(sys_setrlimit(RLIMIT_STACK, &orig_stack), 0);
	CHECK_EQ(sys_setrlimit(RLIMIT_CORE, &orig_core), 0);

	/* The stack grows up to RLIMIT_STACK, not past it. */
	pid = check_fork();
	if (pid == 0) {
		struct rlimit small = { 512 * 1024, orig_stack.rlim_max };

		prctl(PR_SET_DUMPABLE, 0);
		CHECK_EQ(sys_setrlimit(RLIMIT_STACK, &small), 0);
		grow_stack(128 * 1024);
		if (check_failures)
			check_child_exit();
		grow_stack(2 * MIB);
		_exit(99);
	}
	CHECK_CHILD(pid, "killed by SIGSEGV");
}

static void test_nproc(void)
{
	pid_t pid;

	/* Root (uid 0) is not held to RLIMIT_NPROC. */
	pid = check_fork();
	if (pid == 0) {
		struct rlimit r = { 0, 0 };
		pid_t grandchild;

		CHECK_EQ(sys_setrlimit(RLIMIT_NPROC, &r), 0);
		if (getuid() == 0) {
			grandchild = fork();
			if (grandchild == 0)
				_exit(0);
			CHECK(grandchild > 0);
			CHECK_CHILD(grandchild, "exited 0");
		}
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	if (!check_has_cap(CAP_SETUID))
		return;
	/* Anyone else is. */
	pid = check_fork();
	if (pid == 0) {
		struct rlimit r = { 0, 0 };

		CHECK_EQ(syscall(SYS_setresuid, 65534, 65534, 65534), 0);
		CHECK_EQ(sys_setrlimit(RLIMIT_NPROC, &r), 0);
		CHECK_ERR(fork(), EAGAIN);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_get_set();
	test_nofile();
	test_as();
	test_fsize();
	test_inherit();
	test_nproc();
	return check_finish();
}
