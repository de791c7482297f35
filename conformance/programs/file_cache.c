/*
 * file_cache: the page-cache calls, readahead, sync_file_range and
 * cachestat, on a file in a fresh directory under /tmp, the data files,
 * pipes and directories.
 *
 * Checks: readahead of a regular file open for reading succeeds (a
 * negative offset too), EINVAL for a count past 2^63-1, a pipe, a
 * directory and /dev/null, EBADF for a file open only for writing, an
 * O_PATH descriptor and a bad fd; sync_file_range succeeds on a file and
 * a directory with any of its three flags, EINVAL for other flags (before
 * the file type is looked at), a negative offset or count and a range
 * that wraps, ESPIPE for a pipe and /dev/null, EBADF for O_PATH and a bad
 * fd; cachestat counts the two written pages of a synced file as cached
 * and none dirty, one for a one-byte range, none past the end, none for
 * a pipe or a directory, EINVAL for flags, EFAULT for either struct
 * outside the address space, EBADF for O_PATH and a bad fd.
 */
// covers: readahead sync_file_range cachestat
// places: bind root
#include "check.h"

#include <limits.h>
#include <stdint.h>

#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif

struct cstat_range {
	uint64_t off, len;
};

struct cstat {
	uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
};

static char scratch[64];

static long cachestat(int fd, uint64_t off, uint64_t len, struct cstat *cs)
{
	struct cstat_range r = { off, len };

	memset(cs, 0x55, sizeof(*cs));
	return syscall(SYS_cachestat, fd, &r, cs, 0);
}

static void test_readahead(int fd, int wo, int opath, int pipe_r, int dir, int null)
{
	CHECK_EQ(syscall(SYS_readahead, fd, 0L, 4096L), 0);
	CHECK_EQ(syscall(SYS_readahead, fd, -1L, 4096L), 0);
	CHECK_EQ(syscall(SYS_readahead, fd, 1L << 62, 0L), 0);
	CHECK_ERR(syscall(SYS_readahead, fd, 0L, -1L), EINVAL);
	CHECK_ERR(syscall(SYS_readahead, pipe_r, 0L, 4096L), EINVAL);
	CHECK_ERR(syscall(SYS_readahead, dir, 0L, 4096L), EINVAL);
	CHECK_ERR(syscall(SYS_readahead, null, 0L, 4096L), EINVAL);
	CHECK_ERR(syscall(SYS_readahead, wo, 0L, 4096L), EBADF);
	CHECK_ERR(syscall(SYS_readahead, opath, 0L, 4096L), EBADF);
	CHECK_ERR(syscall(SYS_readahead, -1, 0L, 4096L), EBADF);
}

static void test_sync_file_range(int fd, int wo, int opath, int pipe_r, int dir, int null)
{
	CHECK_EQ(syscall(SYS_sync_file_range, fd, 0L, 0L, 0), 0);
	CHECK_EQ(syscall(SYS_sync_file_range, fd, 0L, 4096L, SYNC_FILE_RANGE_WAIT_BEFORE |
			 SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER), 0);
	CHECK_EQ(syscall(SYS_sync_file_range, wo, 4096L, 1L, SYNC_FILE_RANGE_WRITE), 0);
	CHECK_EQ(syscall(SYS_sync_file_range, dir, 0L, 0L, 0), 0);
	CHECK_ERR(syscall(SYS_sync_file_range, fd, 0L, 0L, 8), EINVAL);
	CHECK_ERR(syscall(SYS_sync_file_range, pipe_r, 0L, 0L, 8), EINVAL);
	CHECK_ERR(syscall(SYS_sync_file_range, fd, -1L, 0L, 0), EINVAL);
	CHECK_ERR(syscall(SYS_sync_file_range, fd, 0L, -1L, 0), EINVAL);
	CHECK_ERR(syscall(SYS_sync_file_range, fd, 1L << 62, 1L << 62, 0), EINVAL);
	CHECK_ERR(syscall(SYS_sync_file_range, pipe_r, -1L, 0L, 0), EINVAL);
	CHECK_ERR(syscall(SYS_sync_file_range, pipe_r, 0L, 0L, 0), ESPIPE);
	CHECK_ERR(syscall(SYS_sync_file_range, null, 0L, 0L, 0), ESPIPE);
	CHECK_ERR(syscall(SYS_sync_file_range, opath, 0L, 0L, 0), EBADF);
	CHECK_ERR(syscall(SYS_sync_file_range, -1, 0L, 0L, 8), EBADF);
}

static void test_cachestat(int fd, int opath, int pipe_r, int dir)
{
	struct cstat cs;
	struct cstat_range r = { 0, 0 };

	CHECK_OK(fsync(fd));
	CHECK_EQ(cachestat(fd, 0, 0, &cs), 0);
	CHECK_EQ(cs.nr_cache, 2);
	CHECK_EQ(cs.nr_dirty, 0);
	CHECK_EQ(cs.nr_writeback, 0);
	CHECK_EQ(cs.nr_evicted, 0);
	CHECK_EQ(cs.nr_recently_evicted, 0);
	CHECK_EQ(cachestat(fd, 4096, 1, &cs), 0);
	CHECK_EQ(cs.nr_cache, 1);
	CHECK_EQ(cachestat(fd, 4095, 2, &cs), 0);
	CHECK_EQ(cs.nr_cache, 2);
	CHECK_EQ(cachestat(fd, 1 << 20, 0, &cs), 0);
	CHECK_EQ(cs.nr_cache, 0);
	CHECK_EQ(cachestat(pipe_r, 0, 0, &cs), 0);
	CHECK_EQ(cs.nr_cache, 0);
	CHECK_EQ(cs.nr_dirty, 0);
	CHECK_EQ(cachestat(dir, 0, 0, &cs), 0);
	CHECK_EQ(cs.nr_cache, 0);
	CHECK_ERR(syscall(SYS_cachestat, fd, &r, &cs, 1), EINVAL);
	CHECK_ERR(syscall(SYS_cachestat, fd, (void *)8, &cs, 0), EFAULT);
	CHECK_ERR(syscall(SYS_cachestat, fd, &r, (void *)8, 0), EFAULT);
	CHECK_ERR(syscall(SYS_cachestat, opath, &r, &cs, 0), EBADF);
	CHECK_ERR(syscall(SYS_cachestat, -1, &r, &cs, 0), EBADF);
}

int main(int argc, char **argv)
{
	char path[PATH_MAX], page[8192];
	int p[2];

	check_init(argc, argv);
	strcpy(scratch, "/tmp/moat-cache-XXXXXX");
	if (!mkdtemp(scratch)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	snprintf(path, sizeof(path), "%s/f", scratch);
	int fd = CHECK_OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));
	memset(page, 'x', sizeof(page));
	CHECK_EQ(write(fd, page, sizeof(page)), sizeof(page));
	int wo = CHECK_OK(open(path, O_WRONLY));
	int opath = CHECK_OK(open(path, O_PATH));
	int dir = CHECK_OK(open(scratch, O_RDONLY | O_DIRECTORY));
	int null = CHECK_OK(open("/dev/null", O_RDWR));
	CHECK_OK(pipe(p));

	test_readahead(fd, wo, opath, p[0], dir, null);
	test_sync_file_range(fd, wo, opath, p[0], dir, null);
	test_cachestat(fd, opath, p[0], dir);

	close(p[0]);
	close(p[1]);
	close(null);
	close(dir);
	close(opath);
	close(wo);
	close(fd);
	CHECK_OK(unlink(path));
	CHECK_OK(rmdir(scratch));
	return check_finish();
}
