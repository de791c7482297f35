/*
 * mm_misc: flushing and locking memory.
 *
 * Databases msync their file mappings and latency-sensitive programs lock
 * their memory; the calls must accept what Linux accepts and refuse what it
 * refuses, even where a sandbox has nothing to flush or pin.
 * Checks: msync with MS_SYNC, MS_ASYNC and MS_INVALIDATE on anonymous and
 * shared file mappings and for a length of 0, EINVAL for MS_SYNC|MS_ASYNC,
 * an unknown flag or an unaligned address, ENOMEM for a range that is not
 * (all) mapped; mlock of one page makes it resident and shows in VmLck,
 * munlock undoes that, ENOMEM for unmapped memory; mlockall(MCL_CURRENT)
 * locks what is mapped, munlockall unlocks it; mlockall EINVAL for no flags,
 * an unknown flag and MCL_ONFAULT alone; mlock2 with no flags locks and
 * faults in as mlock does, with MLOCK_ONFAULT locks (VmLck counts the
 * range) and leaves untouched pages out of memory until touched; EINVAL
 * for an unknown mlock2 flag, ENOMEM for unmapped memory.
 *
 * Locking is limited by RLIMIT_MEMLOCK for processes without CAP_IPC_LOCK
 * (runc drops every capability), so the soft limit is raised to the hard one
 * first; a hard limit smaller than the program (about 1 MiB) would fail
 * mlockall here. Linux's default is 8 MiB.
 */
// covers: msync mlock mlock2 munlock mlockall munlockall mincore
#include "check.h"

#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>

static long page;

/* resident reports whether mincore counts the page at p as in memory (-1
 * if mincore fails, after saying why). */
static int resident(void *p)
{
	unsigned char vec = 0;

	if (CHECK_OK(syscall(SYS_mincore, p, page, &vec)) != 0)
		return -1;
	return vec & 1;
}

static void test_msync(void)
{
	int fd = CHECK_OK(open(BLOB_PATH, O_RDONLY));
	char *anon = (char *)CHECK_OK(mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
					   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	char *file = (char *)CHECK_OK(mmap(NULL, 2 * page, PROT_READ, MAP_SHARED,
					   fd, 0));

	anon[0] = 1;
	CHECK_EQ(syscall(SYS_msync, anon, 3 * page, MS_SYNC), 0);
	CHECK_EQ(syscall(SYS_msync, anon, 3 * page, MS_ASYNC), 0);
	CHECK_EQ(syscall(SYS_msync, anon, page, MS_INVALIDATE), 0);
	CHECK_EQ(syscall(SYS_msync, anon, 0, MS_SYNC), 0);
	/* The length is rounded up to whole pages. */
	CHECK_EQ(syscall(SYS_msync, anon + page, 1, MS_SYNC), 0);
	CHECK_EQ(syscall(SYS_msync, file, 2 * page, MS_SYNC), 0);
	CHECK_EQ(syscall(SYS_msync, file, 2 * page, MS_ASYNC | MS_INVALIDATE), 0);
	/* Invalidating a read-only shared mapping keeps its contents. */
	CHECK_EQ((unsigned char)file[page + 1], blob_byte(page + 1));
	CHECK_EQ(anon[0], 1);

	CHECK_ERR(syscall(SYS_msync, anon, page, MS_SYNC | MS_ASYNC), EINVAL);
	CHECK_ERR(syscall(SYS_msync, anon, page, 0x100), EINVAL);
	CHECK_ERR(syscall(SYS_msync, anon + 1, page, MS_SYNC), EINVAL);

	/* A hole makes the range partly unmapped: ENOMEM, as for a wholly
	 * unmapped one. */
	CHECK_OK(munmap(anon + page, page));
	CHECK_ERR(syscall(SYS_msync, anon + page, page, MS_SYNC), ENOMEM);
	CHECK_ERR(syscall(SYS_msync, anon, 3 * page, MS_ASYNC), ENOMEM);
	CHECK_EQ(syscall(SYS_msync, anon + 2 * page, page, MS_SYNC), 0);
	munmap(anon, 3 * page);
	munmap(file, 2 * page);
	close(fd);
}

static void test_mlock(void)
{
	char *p = (char *)CHECK_OK(mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));

	CHECK_STR(proc_status("VmLck"), "0 kB");
	/* mlock faults the page in; the length is rounded to pages. */
	CHECK_EQ(syscall(SYS_mlock, p, 1), 0);
	CHECK_EQ(resident(p), 1);
	CHECK_STR(proc_status("VmLck"), "4 kB");
	CHECK(all_zero(p, page));
	/* Locking it again counts it once. */
	CHECK_EQ(syscall(SYS_mlock, p, page), 0);
	CHECK_STR(proc_status("VmLck"), "4 kB");
	CHECK_EQ(syscall(SYS_mlock, p, 0), 0);
	CHECK_EQ(syscall(SYS_munlock, p, page), 0);
	CHECK_STR(proc_status("VmLck"), "0 kB");
	/* Unlocking memory that is not locked is fine. */
	CHECK_EQ(syscall(SYS_munlock, p, 2 * page), 0);

	CHECK_OK(munmap(p + page, page));
	CHECK_ERR(syscall(SYS_mlock, p + page, page), ENOMEM);
	CHECK_ERR(syscall(SYS_munlock, p + page, page), ENOMEM);
	CHECK_STR(proc_status("VmLck"), "0 kB");
	munmap(p, page);
}

static void test_mlock2(void)
{
	char *p = (char *)CHECK_OK(mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));

	CHECK_EQ(syscall(SYS_mlock2, p, page, 0), 0);
	CHECK_EQ(resident(p), 1);
	CHECK_STR(proc_status("VmLck"), "4 kB");
	/* On fault: locked, but not faulted in until touched. */
	CHECK_EQ(syscall(SYS_mlock2, p + page, 2 * page, MLOCK_ONFAULT), 0);
	CHECK_STR(proc_status("VmLck"), "12 kB");
	CHECK_EQ(resident(p + page), 0);
	p[page] = 1;
	CHECK_EQ(resident(p + page), 1);
	CHECK_EQ(resident(p + 2 * page), 0);
	CHECK_ERR(syscall(SYS_mlock2, p, page, 2), EINVAL);
	CHECK_ERR(syscall(SYS_mlock2, p, page, MLOCK_ONFAULT | 0x100), EINVAL);
	CHECK_EQ(syscall(SYS_munlock, p, 3 * page), 0);
	CHECK_STR(proc_status("VmLck"), "0 kB");
	CHECK_OK(munmap(p + 2 * page, page));
	CHECK_ERR(syscall(SYS_mlock2, p + 2 * page, page, 0), ENOMEM);
	CHECK_ERR(syscall(SYS_mlock2, p + 2 * page, page, MLOCK_ONFAULT), ENOMEM);
	munmap(p, 2 * page);
}

static void test_mlockall(void)
{
	const char *lck;

	CHECK_EQ(syscall(SYS_mlockall, MCL_CURRENT), 0);
	lck = proc_status("VmLck");
	if (lck[0] < '1' || lck[0] > '9')
		check_fail(__FILE__, __LINE__,
			   "expected VmLck above 0 kB after mlockall, got \"%s\"",
			   lck);
	CHECK_EQ(syscall(SYS_munlockall), 0);
	CHECK_STR(proc_status("VmLck"), "0 kB");

	CHECK_ERR(syscall(SYS_mlockall, 0), EINVAL);
	CHECK_ERR(syscall(SYS_mlockall, MCL_ONFAULT), EINVAL);
	CHECK_ERR(syscall(SYS_mlockall, MCL_CURRENT | 0x100), EINVAL);
	CHECK_STR(proc_status("VmLck"), "0 kB");
	CHECK_EQ(syscall(SYS_munlockall), 0);
}

int main(int argc, char **argv)
{
	struct rlimit rl;

	check_init(argc, argv);
	page = sysconf(_SC_PAGESIZE);
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_MEMLOCK, &rl);
	}
	test_msync();
	test_mlock();
	test_mlock2();
	test_mlockall();
	return check_finish();
}
