/*
 * mm_huge_shared: a MAP_SHARED mapping of a 256 GiB memfd.
 *
 * Only touched pages cost on Linux, so a program may size a memfd far past
 * the machine's memory and map it whole (allocators and databases reserve
 * this way). Checks: ftruncate to 256 GiB and mmap of all of it succeed,
 * at once; writes through the mapping at both ends and in the middle are
 * what pread reads there, and pwrite there is what the mapping reads; the
 * untouched pages read as zeros; a forked child writes through the shared
 * mapping and the parent sees it; mincore tells a page pwrite filled from
 * one never touched, over two pages and over the whole mapping; VmRSS
 * stays far below the mapping's size; after ftruncate shrinks the file to
 * 1 GiB, an untouched page past the new end raises SIGBUS while one below
 * it still reads; munmap succeeds and the range is unmapped (mincore
 * ENOMEM); mremap grows a one-page mapping of the file to 1 GiB of it.
 */
// covers: memfd_create ftruncate mmap munmap mremap mincore pread64 pwrite64
#include "check.h"

#include <sys/mman.h>

#define HUGE (256L << 30)

int main(int argc, char **argv)
{
	check_init(argc, argv);
	long page = sysconf(_SC_PAGESIZE);
	char buf[16];
	unsigned char vec[2];

	int fd = CHECK_OK(memfd_create("huge", 0));
	CHECK_OK(ftruncate(fd, HUGE));
	long long t0 = check_now_ns();
	char *m = mmap(NULL, HUGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	long long took = check_now_ns() - t0;
	CHECK(m != MAP_FAILED);
	if (m == MAP_FAILED)
		return check_finish();
	/* Linux takes microseconds; a second means the size is paid for. */
	CHECK(took < 1000000000LL);

	memcpy(m, "first", 5);
	memcpy(m + HUGE / 2 + 4321, "middle", 6);
	memcpy(m + HUGE - 4, "last", 4);
	CHECK_EQ(sys_pread64(fd, buf, 5, 0), 5);
	CHECK_MEM(buf, "first", 5);
	CHECK_EQ(sys_pread64(fd, buf, 6, HUGE / 2 + 4321), 6);
	CHECK_MEM(buf, "middle", 6);
	CHECK_EQ(sys_pread64(fd, buf, 4, HUGE - 4), 4);
	CHECK_MEM(buf, "last", 4);

	CHECK_EQ(sys_pwrite64(fd, "written", 7, HUGE - 3 * page), 7);
	CHECK_MEM(m + HUGE - 3 * page, "written", 7);
	CHECK(all_zero(m + HUGE / 4, page));
	CHECK(all_zero(m + HUGE - 5 * page, page));

	pid_t pid = check_fork();
	if (pid == 0) {
		memcpy(m + HUGE / 8, "child", 5);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_MEM(m + HUGE / 8, "child", 5);

	/* The page pwrite filled is in memory; the one after it never was. */
	CHECK_OK(mincore(m + HUGE - 3 * page, 2 * page, vec));
	CHECK_EQ(vec[0] & 1, 1);
	CHECK_EQ(vec[1] & 1, 0);

	long rss_kb = atol(proc_status("VmRSS"));
	CHECK(rss_kb > 0 && rss_kb < 256 * 1024);

	/* mincore of all of it: a byte a page, 64 MiB. */
	unsigned char *all = mmap(NULL, HUGE / page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(all != MAP_FAILED);
	if (all != MAP_FAILED) {
		CHECK_OK(mincore(m, HUGE, all));
		CHECK_EQ(all[0] & 1, 1);
		CHECK_EQ(all[HUGE / page / 3] & 1, 0);
		CHECK_EQ(all[HUGE / page - 3] & 1, 1);
		CHECK_EQ(all[HUGE / page - 1] & 1, 1);
		CHECK_OK(munmap(all, HUGE / page));
	}

	CHECK_OK(ftruncate(fd, 1L << 30));
	CHECK_EQ(check_sigbus(m + (2L << 30)), 1);
	CHECK_EQ(check_sigbus(m + (1L << 30) - page), 0);
	CHECK_MEM(m, "first", 5);

	CHECK_OK(munmap(m, HUGE));
	CHECK_ERR(mincore(m, page, vec), ENOMEM);

	/* mremap grows a mapping of the file on into the file, moved or in
	 * place. */
	char *s = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(s != MAP_FAILED);
	if (s != MAP_FAILED) {
		CHECK_EQ(sys_pwrite64(fd, "grown", 5, (1L << 30) - page), 5);
		char *g = mremap(s, page, 1L << 30, MREMAP_MAYMOVE);
		CHECK(g != MAP_FAILED);
		if (g != MAP_FAILED) {
			CHECK_MEM(g, "first", 5);
			CHECK_MEM(g + (1L << 30) - page, "grown", 5);
			g[(1L << 30) - 1] = 'z';
			CHECK_EQ(sys_pread64(fd, buf, 1, (1L << 30) - 1), 1);
			CHECK_EQ(buf[0], 'z');
			CHECK_OK(munmap(g, 1L << 30));
		}
	}
	close(fd);
	return check_finish();
}
