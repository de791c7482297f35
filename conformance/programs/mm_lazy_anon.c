/*
 * mm_lazy_anon: private anonymous mappings far larger than memory.
 *
 * Linux commits anonymous memory at the first touch: a mapping only
 * reserves address space. ASan's shadow, Go's runtime and the JVM reserve
 * terabytes this way and touch a little of it. Checks: mmap of 64 TiB
 * MAP_PRIVATE|MAP_ANONYMOUS|MAP_NORESERVE read-write succeeds at once;
 * writes at both ends and in the middle read back, untouched pages read
 * zeros; VmRSS stays far below the mapping's size; mincore tells a written
 * page from an untouched one; a forked child's writes stay its own, and it
 * sees the parent's; MADV_DONTNEED gives zeros back; mremap grows a 1 GiB
 * mapping to 8 TiB (MAP_NORESERVE); 64 TiB with PROT_NONE succeeds without
 * MAP_NORESERVE. Under the default overcommit heuristic
 * (vm.overcommit_memory 0), 64 TiB writable without MAP_NORESERVE is
 * ENOMEM: longer than any machine's RAM and swap. munmap frees the range.
 */
// covers: mmap munmap mremap mincore madvise
#define _GNU_SOURCE
#include "check.h"

#include <sys/mman.h>

#define HUGE (64L << 40)

static int overcommit_mode(void)
{
	char buf[8] = "";
	int fd = open("/proc/sys/vm/overcommit_memory", O_RDONLY);
	if (fd < 0)
		return -1;
	long n = read(fd, buf, sizeof buf - 1);
	close(fd);
	return n > 0 ? atoi(buf) : -1;
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	long page = sysconf(_SC_PAGESIZE);
	unsigned char vec[2];

	long long t0 = check_now_ns();
	char *m = mmap(NULL, HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	long long took = check_now_ns() - t0;
	CHECK(m != MAP_FAILED);
	if (m == MAP_FAILED)
		return check_finish();
	CHECK(took < 1000000000LL);

	memcpy(m, "first", 5);
	memcpy(m + HUGE / 2 + 4321, "middle", 6);
	memcpy(m + HUGE - 4, "last", 4);
	CHECK_MEM(m, "first", 5);
	CHECK_MEM(m + HUGE / 2 + 4321, "middle", 6);
	CHECK_MEM(m + HUGE - 4, "last", 4);
	CHECK(all_zero(m + HUGE / 4, page));
	CHECK(all_zero(m + HUGE - 5 * page, page));

	CHECK_OK(mincore(m, 2 * page, vec));
	CHECK_EQ(vec[0] & 1, 1);
	CHECK_EQ(vec[1] & 1, 0);

	long rss_kb = atol(proc_status("VmRSS"));
	CHECK(rss_kb > 0 && rss_kb < 256 * 1024);

	pid_t pid = check_fork();
	if (pid == 0) {
		if (memcmp(m + HUGE / 2 + 4321, "middle", 6) != 0)
			_exit(2);
		memcpy(m + HUGE / 2 + 4321, "child!", 6);
		memcpy(m + HUGE / 8, "child", 5);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_MEM(m + HUGE / 2 + 4321, "middle", 6);
	CHECK(all_zero(m + HUGE / 8, page));

	CHECK_OK(madvise(m + HUGE / 2, 2 * page, MADV_DONTNEED));
	CHECK(all_zero(m + HUGE / 2, 2 * page));
	CHECK_MEM(m + HUGE - 4, "last", 4);

	CHECK_OK(munmap(m, HUGE));
	CHECK_ERR(mincore(m, page, vec), ENOMEM);

	char *g = mmap(NULL, 1L << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(g != MAP_FAILED);
	if (g != MAP_FAILED) {
		memcpy(g, "grow", 4);
		char *h = mremap(g, 1L << 30, 8L << 40, MREMAP_MAYMOVE);
		CHECK(h != MAP_FAILED);
		if (h != MAP_FAILED) {
			CHECK_MEM(h, "grow", 4);
			memcpy(h + (8L << 40) - 4, "end!", 4);
			CHECK_MEM(h + (8L << 40) - 4, "end!", 4);
			CHECK_OK(munmap(h, 8L << 40));
		}
	}

	char *n = mmap(NULL, HUGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(n != MAP_FAILED);
	if (n != MAP_FAILED)
		CHECK_OK(munmap(n, HUGE));

	if (overcommit_mode() == 0) {
		char *w = mmap(NULL, HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CHECK(w == MAP_FAILED && errno == ENOMEM);
		if (w != MAP_FAILED)
			munmap(w, HUGE);
	}
	return check_finish();
}
