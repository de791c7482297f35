/*
 * mm_remap: remap_file_pages, which Linux emulates with mmap since 4.0,
 * on a shared mapping of a three-page memfd whose pages hold 'A', 'B'
 * and 'C'.
 *
 * Checks: remapping the first page to file page 2 shows 'C' there and
 * leaves the others; a write through it reaches file page 2; the middle
 * page to file page 0; an unaligned start and size are rounded down;
 * remapping back restores the order; EINVAL for prot other than 0, a
 * private mapping, an unmapped address, size 0, a wrapping page offset,
 * and a range that runs past the mapping into unmapped memory.
 */
// covers: remap_file_pages
#include "check.h"

#include <sys/mman.h>

#define PG 4096L

static long remap(void *start, long size, long prot, long pgoff, long flags)
{
	return syscall(SYS_remap_file_pages, start, size, prot, pgoff, flags);
}

int main(int argc, char **argv)
{
	char c;

	check_init(argc, argv);
	int fd = CHECK_OK(memfd_create("remap", 0));
	CHECK_OK(ftruncate(fd, 3 * PG));
	for (int i = 0; i < 3; i++) {
		char page[PG];

		memset(page, 'A' + i, sizeof(page));
		CHECK_EQ(sys_pwrite64(fd, page, PG, i * PG), PG);
	}
	/* Four pages reserved, the last left unmapped. */
	char *res = mmap(NULL, 4 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(res != MAP_FAILED);
	char *p = mmap(res, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	CHECK(p == res);
	CHECK_OK(munmap(res + 3 * PG, PG));

	CHECK_EQ(remap(p, PG, 0, 2, 0), 0);
	CHECK_EQ(p[0], 'C');
	CHECK_EQ(p[PG - 1], 'C');
	CHECK_EQ(p[PG], 'B');
	CHECK_EQ(p[2 * PG], 'C');
	p[10] = 'z';
	CHECK_EQ(sys_pread64(fd, &c, 1, 2 * PG + 10), 1);
	CHECK_EQ(c, 'z');
	CHECK_EQ(p[2 * PG + 10], 'z');

	/* Unaligned: start and size are rounded down. */
	CHECK_EQ(remap(p + PG + 100, PG + 200, 0, 0, 0), 0);
	CHECK_EQ(p[PG], 'A');
	CHECK_EQ(p[2 * PG], 'C');

	CHECK_EQ(remap(p, 3 * PG, 0, 0, 0), 0);
	CHECK_EQ(p[0], 'A');
	CHECK_EQ(p[PG], 'B');
	CHECK_EQ(p[2 * PG + 10], 'z');

	CHECK_ERR(remap(p, PG, PROT_READ, 1, 0), EINVAL);
	CHECK_ERR(remap(p, 0, 0, 1, 0), EINVAL);
	CHECK_ERR(remap(p, 100, 0, 1, 0), EINVAL);
	CHECK_ERR(remap(p, PG, 0, -1L, 0), EINVAL);
	CHECK_ERR(remap(p, 4 * PG, 0, 0, 0), EINVAL);
	CHECK_ERR(remap(res + 3 * PG, PG, 0, 0, 0), EINVAL);
	char *priv = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(priv != MAP_FAILED);
	CHECK_ERR(remap(priv, PG, 0, 1, 0), EINVAL);
	CHECK_EQ(priv[0], 'A');

	CHECK_OK(munmap(priv, PG));
	CHECK_OK(munmap(p, 3 * PG));
	close(fd);
	return check_finish();
}
