/*
 * mm_populate: faulting mappings in ahead of use, and what smaps and maps
 * tell of them.
 *
 * Checks: MAP_POPULATE of a private writable file mapping gives the
 * mapping its own copy at once, so a later write through a shared mapping
 * of the file no longer shows through (it does without MAP_POPULATE);
 * MADV_POPULATE_READ and MADV_POPULATE_WRITE succeed where the mapping
 * allows the access, are EINVAL where it does not (read of PROT_WRITE,
 * write of PROT_READ, either of PROT_NONE) and ENOMEM over a hole (but
 * EINVAL when a mapping before the hole refuses the access); after
 * MADV_POPULATE_WRITE smaps' Rss is the mapping's Size. /proc/self/smaps
 * has a block per mapping of maps: its Size, Rss, Locked and a VmFlags
 * line naming "lo" when mlock'ed; MAP_LOCKED and mlock make Rss the whole
 * mapping, mlock2(MLOCK_ONFAULT) flags a mapping of its own. maps
 * shows one line for a mapping grown in place by mremap, three after
 * munlock of its middle page and one again after munlock of all of it.
 */
// covers: mmap madvise mremap mlock mlock2 munlock
#define _GNU_SOURCE
#include "check.h"

#include <sys/mman.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

/* smaps_value: field name (with the colon) of the smaps block starting
 * at addr, in kB, or -1; flag_set: whether VmFlags holds flag. */
static long smaps_block(void *addr, const char *name, const char *flag)
{
	char head[32], line[512];
	snprintf(head, sizeof head, "%08lx-", (unsigned long)addr);
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -2;
	long v = -1;
	int in = 0;
	while (fgets(line, sizeof line, f)) {
		if (strchr(line, '-') && strchr(line, ' ') && strchr(line, '-') < strchr(line, ' ')) {
			if (in)
				break;
			in = strncmp(line, head, strlen(head)) == 0;
			continue;
		}
		if (!in)
			continue;
		if (name && strncmp(line, name, strlen(name)) == 0)
			v = atol(line + strlen(name));
		if (flag && strncmp(line, "VmFlags:", 8) == 0) {
			char want[8];
			snprintf(want, sizeof want, " %s ", flag);
			v = strstr(line + 7, want) != NULL;
		}
	}
	fclose(f);
	return v;
}

static int maps_lines_in(void *lo, void *hi)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return -1;
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long s, e;
		if (sscanf(line, "%lx-%lx", &s, &e) == 2 && s < (unsigned long)hi && e > (unsigned long)lo)
			n++;
	}
	fclose(f);
	return n;
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	long page = sysconf(_SC_PAGESIZE);

	/* MAP_POPULATE breaks copy-on-write of a private file mapping. */
	int fd = CHECK_OK(memfd_create("populate", 0));
	CHECK_OK(ftruncate(fd, page));
	unsigned *shared = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	CHECK(shared != MAP_FAILED);
	*shared = 0xdeadbabe;
	unsigned *pop = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	unsigned *lazy = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(pop != MAP_FAILED && lazy != MAP_FAILED);
	CHECK_EQ(*pop, 0xdeadbabe);
	*shared = 0x22222bad;
	CHECK_EQ(*pop, 0xdeadbabe);
	CHECK_EQ(*lazy, 0x22222bad);

	/* MADV_POPULATE_*: permissions and holes. */
	char *r = mmap(NULL, 4 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *w = mmap(NULL, 4 * page, PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *n = mmap(NULL, 4 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(r != MAP_FAILED && w != MAP_FAILED && n != MAP_FAILED);
	CHECK_OK(madvise(r, 4 * page, MADV_POPULATE_READ));
	CHECK_ERR(madvise(r, 4 * page, MADV_POPULATE_WRITE), EINVAL);
	CHECK_ERR(madvise(w, 4 * page, MADV_POPULATE_READ), EINVAL);
	CHECK_OK(madvise(w, 4 * page, MADV_POPULATE_WRITE));
	CHECK_ERR(madvise(n, page, MADV_POPULATE_READ), EINVAL);
	CHECK_ERR(madvise(n, page, MADV_POPULATE_WRITE), EINVAL);
	CHECK_EQ(smaps_block(w, "Size:", NULL), 4 * page / 1024);
	CHECK_EQ(smaps_block(w, "Rss:", NULL), 4 * page / 1024);
	/* Mapping by mapping: a hole is ENOMEM, unless a mapping before it
	 * refused the access. */
	char *h = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(h != MAP_FAILED);
	CHECK_OK(munmap(h + page, page));
	CHECK_ERR(madvise(h, 4 * page, MADV_POPULATE_READ), ENOMEM);
	CHECK_ERR(madvise(h, 2 * page, MADV_POPULATE_WRITE), ENOMEM);
	CHECK_ERR(madvise(h + page, page, MADV_POPULATE_READ), ENOMEM);
	CHECK_OK(munmap(r + page, page));
	CHECK_ERR(madvise(r, 2 * page, MADV_POPULATE_WRITE), EINVAL);

	/* Locks: populated and flagged, or on fault. */
	char *l = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED, -1, 0);
	CHECK(l != MAP_FAILED);
	CHECK_EQ(smaps_block(l, NULL, "lo"), 1);
	CHECK_EQ(smaps_block(l, "Rss:", NULL), 4 * page / 1024);
	CHECK_EQ(smaps_block(l, "Locked:", NULL), 4 * page / 1024);
	char *o = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(o != MAP_FAILED);
	CHECK_EQ(smaps_block(o, NULL, "lo"), 0);
	CHECK_OK(syscall(SYS_mlock2, o, 4 * page, MLOCK_ONFAULT));
	*o = 1;
	CHECK_EQ(smaps_block(o, NULL, "lo"), 1);
	CHECK_EQ(smaps_block(o, "Size:", NULL), 4 * page / 1024);

	/* maps: one line for what Linux holds as one vma. */
	char *m = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	CHECK_OK(munmap(m + page, 2 * page));
	CHECK(mremap(m, page, 3 * page, 0) == m);
	CHECK_EQ(maps_lines_in(m, m + 3 * page), 1);
	CHECK_OK(mlock(m, 3 * page));
	CHECK_OK(munlock(m + page, page));
	CHECK_EQ(maps_lines_in(m, m + 3 * page), 3);
	CHECK_OK(munlock(m, 3 * page));
	CHECK_EQ(maps_lines_in(m, m + 3 * page), 1);
	return check_finish();
}
