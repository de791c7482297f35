/*
 * mm_mmap: the address space, as far as it shows without signal delivery.
 *
 * A fault would kill the program, so protections are observed through system
 * calls instead: the kernel reports EFAULT when it cannot read or write guest
 * memory (openat reads a path, a read from /dev/zero writes a buffer).
 * Checks: anonymous mappings are page-aligned and zero-filled; MAP_FIXED
 * replaces what was there, MAP_FIXED_NOREPLACE refuses to; munmap and mapping
 * the same address again; the EINVAL/EBADF/EACCES/ENOMEM cases of mmap,
 * munmap and mprotect; mprotect removing and restoring access; madvise
 * MADV_DONTNEED zeroing private anonymous memory, a forked child's view
 * only; mremap shrinking in place
 * and growing with the contents kept and the new part zero; brk growth,
 * shrink and zeroed regrowth; a private file mapping showing the file, zeros
 * past its end, and copy-on-write that never reaches the file; a private
 * mapping of /dev/zero.
 */
// covers: mmap munmap mprotect madvise mremap brk
#include "check.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>

static long page;

static char *map_anon(size_t len)
{
	return (char *)CHECK_OK(mmap(NULL, len, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
}

/* kernel_can_write reports whether the kernel can store n bytes at p, by
 * reading them from /dev/zero (which also zeroes them). */
static int kernel_can_write(void *p, size_t n)
{
	int fd = open("/dev/zero", O_RDONLY);
	long r = syscall(SYS_read, fd, p, n);

	close(fd);
	return r == (long)n;
}

/* kernel_can_read_path reports whether the kernel can read the path string
 * at p. */
static int kernel_can_read_path(const char *p)
{
	int fd = syscall(SYS_openat, AT_FDCWD, p, O_RDONLY);

	if (fd < 0)
		return errno != EFAULT;
	close(fd);
	return 1;
}

static void test_anonymous(void)
{
	char *p = map_anon(3 * page), *q;

	CHECK_EQ((uintptr_t)p % page, 0);
	CHECK(all_zero(p, 3 * page));
	memset(p, 0x5a, 3 * page);

	/* Unmap the middle page: the kernel can no longer write there. */
	CHECK_EQ(syscall(SYS_munmap, p + page, page), 0);
	CHECK(!kernel_can_write(p + page, 1));
	CHECK(kernel_can_write(p, 1));
	/* Map it again at the same address: fresh zero memory. */
	q = (char *)CHECK_OK(mmap(p + page, page, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	CHECK(q == p + page);
	CHECK(all_zero(q, page));
	CHECK_EQ(p[2 * page], 0x5a);

	/* MAP_FIXED over a live mapping replaces it. */
	q = (char *)CHECK_OK(mmap(p + 2 * page, page, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	CHECK(q == p + 2 * page);
	CHECK(all_zero(q, page));
	/* MAP_FIXED_NOREPLACE does not. */
	CHECK_ERR(mmap(p, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
		       MAP_FIXED_NOREPLACE, -1, 0), EEXIST);

	/* Unmapping a range with holes, or nothing at all, succeeds. */
	CHECK_EQ(syscall(SYS_munmap, p + page, page), 0);
	CHECK_EQ(syscall(SYS_munmap, p, 3 * page), 0);
	CHECK_EQ(syscall(SYS_munmap, p, 3 * page), 0);
}

static void test_errors(void)
{
	char *p = map_anon(page);
	int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));

	CHECK_ERR(mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
		  EINVAL);
	CHECK_ERR(mmap(p + 1, page, PROT_READ,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0), EINVAL);
	/* Exactly one of MAP_PRIVATE and MAP_SHARED. */
	CHECK_ERR(mmap(NULL, page, PROT_READ, MAP_ANONYMOUS, -1, 0), EINVAL);
	CHECK_ERR(mmap(NULL, page, PROT_READ, MAP_PRIVATE, 9999, 0), EBADF);
	CHECK_ERR(mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 1), EINVAL);
	/* A shared writable mapping needs a writable descriptor. */
	CHECK_ERR(mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0),
		  EACCES);
	/* More than the whole address space. */
	CHECK_ERR(mmap(NULL, 1UL << 62, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0), ENOMEM);
	CHECK_ERR(syscall(SYS_munmap, p + 1, page), EINVAL);
	CHECK_ERR(syscall(SYS_munmap, p, 0), EINVAL);
	CHECK_ERR(syscall(SYS_mprotect, p + 1, page, PROT_READ), EINVAL);
	CHECK_ERR(syscall(SYS_mprotect, p, page, 0x1000), EINVAL);
	CHECK_EQ(syscall(SYS_munmap, p, page), 0);
	/* mprotect of a range that is not mapped. */
	CHECK_ERR(syscall(SYS_mprotect, p, page, PROT_READ), ENOMEM);
	close(fd);
}

static void test_mprotect(void)
{
	char *p = map_anon(page);

	strcpy(p, HELLO_PATH);
	CHECK_EQ(syscall(SYS_mprotect, p, page, PROT_READ), 0);
	CHECK(!kernel_can_write(p, 8));
	CHECK(kernel_can_read_path(p));
	CHECK_EQ(syscall(SYS_mprotect, p, page, PROT_NONE), 0);
	CHECK(!kernel_can_read_path(p));
	CHECK_EQ(syscall(SYS_mprotect, p, page, PROT_READ | PROT_WRITE), 0);
	/* The contents survived the protection changes. */
	CHECK_STR(p, HELLO_PATH);
	CHECK(kernel_can_write(p, 8));
	munmap(p, page);
}

static void test_madvise(void)
{
	char *p = map_anon(2 * page);

	memset(p, 0x33, 2 * page);
	CHECK_EQ(syscall(SYS_madvise, p, page, MADV_DONTNEED), 0);
	/* Private anonymous memory reads as zero after MADV_DONTNEED. */
	CHECK(all_zero(p, page));
	CHECK_EQ(p[page], 0x33);
	CHECK_ERR(syscall(SYS_madvise, p + 1, page, MADV_DONTNEED), EINVAL);
	munmap(p, 2 * page);

	/* After a fork the pages are shared copy-on-write: the child's
	 * MADV_DONTNEED zeroes its own view only. */
	p = map_anon(page);
	memset(p, 0x55, page);
	pid_t pid = check_fork();
	if (pid == 0) {
		CHECK_EQ(syscall(SYS_madvise, p, page, MADV_DONTNEED), 0);
		CHECK(all_zero(p, page));
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(p[0], 0x55);
	munmap(p, page);
}

static void test_mremap(void)
{
	char *p = map_anon(2 * page), *q;

	memset(p, 0x44, 2 * page);
	/* Shrinking stays in place. */
	q = (char *)CHECK_OK(mremap(p, 2 * page, page, 0));
	CHECK(q == p);
	CHECK(!kernel_can_write(p + page, 1));
	/* Growing may move; the contents come along and the new part is zero. */
	q = (char *)CHECK_OK(mremap(p, page, 4 * page, MREMAP_MAYMOVE));
	if (q != MAP_FAILED) {
		CHECK_EQ(q[0], 0x44);
		CHECK_EQ(q[page - 1], 0x44);
		CHECK(all_zero(q + page, 3 * page));
		munmap(q, 4 * page);
	}
	CHECK_ERR(mremap(p + 1, page, page, 0), EINVAL);
	CHECK_ERR(mremap(p, page, 0, 0), EINVAL);
}

static void test_brk(void)
{
	uintptr_t cur = syscall(SYS_brk, 0UL), base;
	char *b;

	CHECK(cur != 0);
	/* The C library may have moved the break off a page boundary. */
	base = (cur + page - 1) & ~(uintptr_t)(page - 1);
	b = (char *)base;
	/* The break is returned exactly as asked for, unaligned too. */
	CHECK_EQ(syscall(SYS_brk, base + 2 * page + 10), base + 2 * page + 10);
	CHECK(kernel_can_write(b, 2 * page + 10));
	memset(b, 0x77, 2 * page + 10);
	CHECK_EQ(syscall(SYS_brk, base), base);
	CHECK(!kernel_can_write(b, 1));
	/* Memory given back and taken again is zero. */
	CHECK_EQ(syscall(SYS_brk, base + page), base + page);
	CHECK(all_zero(b, page));
	/* A break below the start of the heap is refused: the old one stays. */
	CHECK_EQ(syscall(SYS_brk, 4096UL), base + page);
	CHECK_EQ(syscall(SYS_brk, cur), cur);
}

static void test_file_mapping(void)
{
	int fd = CHECK_OK(open(BLOB_PATH, O_RDONLY));
	long len = 4 * page, i, bad = -1;
	char *p, *q, c;

	/* The file is three pages and 100 bytes; the fourth page is partial. */
	p = (char *)CHECK_OK(mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE,
				  fd, 0));
	if (p == MAP_FAILED)
		return;
	for (i = 0; i < BLOB_LEN && bad < 0; i++)
		if ((unsigned char)p[i] != blob_byte(i))
			bad = i;
	CHECK_EQ(bad, -1);
	CHECK(all_zero(p + BLOB_LEN, len - BLOB_LEN));

	/* Writing to a private mapping changes neither the file nor another
	 * mapping of it. */
	p[0] = ~blob_byte(0);
	p[page + 1] = ~blob_byte(page + 1);
	CHECK_EQ(sys_pread64(fd, &c, 1, 0), 1);
	CHECK_EQ((unsigned char)c, blob_byte(0));
	q = (char *)CHECK_OK(mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, page));
	CHECK_EQ((unsigned char)q[0], blob_byte(page));
	CHECK_EQ((unsigned char)q[1], blob_byte(page + 1));
	munmap(q, page);
	munmap(p, len);
	close(fd);
}

static void test_dev_zero(void)
{
	int fd = CHECK_OK(open("/dev/zero", O_RDWR));
	char *p = (char *)CHECK_OK(mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
					MAP_PRIVATE, fd, 0));

	close(fd);
	if (p == MAP_FAILED)
		return;
	CHECK(all_zero(p, 2 * page));
	memset(p, 1, 2 * page);
	CHECK_EQ(p[2 * page - 1], 1);
	munmap(p, 2 * page);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	page = sysconf(_SC_PAGESIZE);
	CHECK_EQ(page, 4096);
	test_anonymous();
	test_errors();
	test_mprotect();
	test_madvise();
	test_mremap();
	test_brk();
	test_file_mapping();
	test_dev_zero();
	return check_finish();
}
