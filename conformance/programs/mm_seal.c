/*
 * mm_seal: sealed mappings (mseal).
 *
 * glibc and Chrome seal their read-only data and the mappings a sandboxed
 * process must never change; a sealed mapping that can still be unmapped
 * or made writable is no seal.
 * Checks: mseal of a mapped range succeeds, and of a length of 0 too;
 * EINVAL for a flag, an unaligned address or a range that wraps, ENOMEM
 * for a range that is not all mapped (nothing is sealed then: the mapped
 * part can still be unmapped); on a sealed range munmap, mprotect (even to
 * the same protection), mremap (shrink, grow, move), mmap MAP_FIXED over it
 * and madvise(MADV_DONTNEED) of read-only private memory answer EPERM and
 * leave the contents alone; mlock, madvise(MADV_DONTNEED) of writable
 * memory, reads and writes still work; a page next to a sealed one stays
 * free to unmap; sealing twice is fine; a forked child's copy stays sealed.
 */
// covers: mseal
#include "check.h"

#include <stdint.h>
#include <sys/mman.h>

#ifndef SYS_mseal
#define SYS_mseal 462
#endif

static long page;

static long mseal(void *p, size_t len, unsigned long flags)
{
	return syscall(SYS_mseal, p, len, flags);
}

static char *map(int n, int prot)
{
	return (char *)CHECK_OK(mmap(NULL, n * page, prot,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
}

static void test_errors(void)
{
	char *p = map(3, PROT_READ | PROT_WRITE);

	CHECK_ERR(mseal(p, page, 1), EINVAL);
	CHECK_ERR(mseal(p + 1, page, 0), EINVAL);
	CHECK_ERR(mseal(p, (size_t)-page, 0), EINVAL);
	CHECK_EQ(mseal(p, 0, 0), 0);
	CHECK_OK(munmap(p + page, page));
	CHECK_ERR(mseal(p, 3 * page, 0), ENOMEM);
	/* The failed call sealed nothing. */
	CHECK_EQ(munmap(p, page), 0);
	CHECK_EQ(munmap(p + 2 * page, page), 0);
}

static void test_sealed(void)
{
	char *p = map(4, PROT_READ | PROT_WRITE);
	char *ro = map(1, PROT_READ);
	char *other;
	pid_t pid;

	memset(p, 7, 4 * page);
	/* Seal the middle two pages; 1 byte is rounded up to a page. */
	CHECK_EQ(mseal(p + page, page + 1, 0), 0);
	CHECK_EQ(mseal(p + page, 2 * page, 0), 0);
	CHECK_ERR(munmap(p + page, page), EPERM);
	CHECK_ERR(munmap(p, 4 * page), EPERM);
	CHECK_ERR(mprotect(p + page, page, PROT_READ), EPERM);
	CHECK_ERR(mprotect(p + page, page, PROT_READ | PROT_WRITE), EPERM);
	CHECK_ERR((long)mremap(p + page, 2 * page, page, 0), EPERM);
	CHECK_ERR((long)mremap(p + page, page, 8 * page, MREMAP_MAYMOVE), EPERM);
	other = map(2, PROT_READ);
	CHECK_ERR((long)mremap(other, page, page, MREMAP_MAYMOVE | MREMAP_FIXED,
			       p + page), EPERM);
	CHECK_ERR((long)mmap(p + page, page, PROT_READ,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), EPERM);
	CHECK_EQ(p[page], 7);
	CHECK_EQ(p[2 * page + 5], 7);
	/* Writable private memory may still be discarded, and written. */
	CHECK_EQ(madvise(p + page, page, MADV_DONTNEED), 0);
	CHECK_EQ(p[page], 0);
	p[page] = 3;
	CHECK_EQ(p[page], 3);
	CHECK_EQ(mlock(p + page, page), 0);
	CHECK_EQ(munlock(p + page, page), 0);
	/* The neighbours are not sealed. */
	CHECK_EQ(munmap(p, page), 0);
	CHECK_EQ(mprotect(p + 3 * page, page, PROT_READ), 0);
	CHECK_EQ(munmap(p + 3 * page, page), 0);

	/* Read-only private memory is not discarded once sealed. */
	CHECK_EQ(mseal(ro, page, 0), 0);
	CHECK_ERR(madvise(ro, page, MADV_DONTNEED), EPERM);
	CHECK_ERR(munmap(ro, page), EPERM);

	pid = check_fork();
	if (pid == 0) {
		CHECK_ERR(munmap(p + page, page), EPERM);
		CHECK_ERR(mprotect(p + 2 * page, page, PROT_NONE), EPERM);
		CHECK_EQ(p[page], 3);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	munmap(other, 2 * page);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	page = sysconf(_SC_PAGESIZE);
	test_errors();
	test_sealed();
	return check_finish();
}
