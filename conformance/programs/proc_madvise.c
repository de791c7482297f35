/*
 * proc_madvise: advice on another process's memory (process_madvise) and
 * reaping a dying one's (process_mrelease).
 *
 * Android's and systemd's out-of-memory daemons mark a background
 * process's memory cold and reap a killed one's at once; they give up on
 * a call that answers ENOSYS.
 * Checks: process_madvise through a pidfd of the caller takes MADV_COLD,
 * MADV_PAGEOUT, MADV_WILLNEED and MADV_DONTNEED (which zeroes the pages)
 * and returns the bytes advised; with the second of two ranges unmapped it
 * returns the first's length, with the first unmapped ENOMEM; EINVAL for an
 * unknown advice, a flag, more than 1024 ranges or an unaligned range;
 * EBADF for a descriptor that is no pidfd; EFAULT for a bad vector; an
 * empty vector or range is 0; on a child (with CAP_SYS_NICE) the hints
 * work and MADV_DONTNEED is EINVAL; once the child is reaped, ESRCH.
 * process_mrelease is EINVAL for a living process and a flag, EBADF for a
 * descriptor that is no pidfd, 0 (or ESRCH, once its tasks are gone) for a
 * process killed by SIGKILL, ESRCH for a zombie.
 */
// covers: process_madvise process_mrelease
// capabilities: CAP_SYS_NICE
#include "check.h"

#include <sys/mman.h>
#include <sys/uio.h>

static long page;

static long pmadvise(int fd, struct iovec *v, size_t n, int advice, unsigned flags)
{
	return syscall(SYS_process_madvise, fd, v, n, advice, flags);
}

static long pidfd(pid_t pid)
{
	return syscall(SYS_pidfd_open, pid, 0);
}

static void test_self(void)
{
	int me = CHECK_OK(pidfd(getpid()));
	char *m = (char *)CHECK_OK(mmap(NULL, 4 * page, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	struct iovec v[2] = { { m, page }, { m + 2 * page, 2 * page } };
	struct iovec u = { m + 1, page }, z = { m, 0 };

	m[0] = 1;
	CHECK_EQ(pmadvise(me, v, 2, MADV_COLD, 0), 3 * page);
	CHECK_EQ(pmadvise(me, v, 2, MADV_PAGEOUT, 0), 3 * page);
	CHECK_EQ(pmadvise(me, v, 2, MADV_WILLNEED, 0), 3 * page);
	CHECK_EQ(m[0], 1);
	CHECK_EQ(pmadvise(me, v, 2, MADV_DONTNEED, 0), 3 * page);
	CHECK_EQ(m[0], 0);
	CHECK_ERR(pmadvise(me, v, 2, 999, 0), EINVAL);
	CHECK_ERR(pmadvise(me, v, 2, MADV_COLD, 1), EINVAL);
	CHECK_ERR(pmadvise(me, v, 1025, MADV_COLD, 0), EINVAL);
	CHECK_ERR(pmadvise(me, &u, 1, MADV_COLD, 0), EINVAL);
	CHECK_EQ(pmadvise(me, &z, 1, MADV_COLD, 0), 0);
	CHECK_EQ(pmadvise(me, v, 0, MADV_COLD, 0), 0);
	CHECK_ERR(pmadvise(me, (void *)8, 2, MADV_COLD, 0), EFAULT);
	CHECK_ERR(pmadvise(0, v, 2, MADV_COLD, 0), EBADF);
	CHECK_ERR(pmadvise(999, v, 2, MADV_COLD, 0), EBADF);

	CHECK_OK(munmap(m + 2 * page, page));
	CHECK_EQ(pmadvise(me, v, 2, MADV_COLD, 0), page);
	CHECK_ERR(pmadvise(me, v + 1, 1, MADV_COLD, 0), ENOMEM);

	CHECK_ERR(syscall(SYS_process_mrelease, me, 0), EINVAL);
	CHECK_ERR(syscall(SYS_process_mrelease, me, 1), EINVAL);
	CHECK_ERR(syscall(SYS_process_mrelease, 0, 0), EBADF);
	munmap(m, 4 * page);
	close(me);
}

static void test_child(void)
{
	struct iovec v = { NULL, 0 };
	char *m = (char *)CHECK_OK(mmap(NULL, page, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	pid_t pid;
	int fd;
	long r;

	v.iov_base = m;
	v.iov_len = page;
	pid = check_fork();
	if (pid == 0) {
		pause();
		_exit(0);
	}
	fd = CHECK_OK(pidfd(pid));
	CHECK_EQ(pmadvise(fd, &v, 1, MADV_COLD, 0), page);
	CHECK_EQ(pmadvise(fd, &v, 1, MADV_WILLNEED, 0), page);
	CHECK_ERR(pmadvise(fd, &v, 1, MADV_DONTNEED, 0), EINVAL);
	CHECK_ERR(syscall(SYS_process_mrelease, fd, 0), EINVAL);
	CHECK_OK(kill(pid, SIGKILL));
	r = syscall(SYS_process_mrelease, fd, 0);
	if (r != 0 && !(r == -1 && errno == ESRCH))
		check_fail(__FILE__, __LINE__, "process_mrelease of a killed process: %ld (%s)",
			   r, check_errname(errno));
	/* A zombie's memory is gone. */
	{
		siginfo_t si;

		CHECK_OK(waitid(P_PID, pid, &si, WEXITED | WNOWAIT));
	}
	CHECK_ERR(syscall(SYS_process_mrelease, fd, 0), ESRCH);
	CHECK_ERR(pmadvise(fd, &v, 1, MADV_COLD, 0), ESRCH);
	CHECK_CHILD(pid, "killed by SIGKILL");
	CHECK_ERR(pmadvise(fd, &v, 1, MADV_COLD, 0), ESRCH);
	CHECK_ERR(syscall(SYS_process_mrelease, fd, 0), ESRCH);
	close(fd);
	munmap(m, page);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	page = sysconf(_SC_PAGESIZE);
	test_self();
	test_child();
	return check_finish();
}
