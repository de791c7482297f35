/*
 * time_vdso: the clocks a program reads without a system call.
 *
 * glibc reads the time through the vDSO the kernel maps into every process
 * (found through AT_SYSINFO_EHDR), so that a clock_gettime costs tens of
 * nanoseconds instead of a trap; language runtimes call it millions of
 * times. The vDSO's answers and the system call's must be one clock.
 * Checks: AT_SYSINFO_EHDR names an ELF image that /proc/self/maps calls
 * [vdso], with [vvar] just below it; [vvar] cannot be made writable
 * (EACCES); CLOCK_MONOTONIC read alternately
 * through the vDSO and through the system call never goes back, nor does
 * CLOCK_BOOTTIME; CLOCK_REALTIME, gettimeofday and time agree with the
 * system call's realtime; clock_getres gives 1 ns for the fine clocks and
 * the same answer through both paths; an unknown clock is EINVAL through
 * the vDSO too; the CPU clocks work through it; a forked child and an
 * exec'd program have a working vDSO of their own.
 */
// covers: clock_gettime clock_getres gettimeofday time getcpu
#include "check.h"

#include <elf.h>
#include <sched.h>
#include <stdint.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/time.h>

#define NS 1000000000LL

static long long ts_ns(const struct timespec *ts)
{
	return ts->tv_sec * NS + ts->tv_nsec;
}

/* sys_ns reads clock id through the system call, not the vDSO. */
static long long sys_ns(clockid_t id)
{
	struct timespec ts;

	if (syscall(SYS_clock_gettime, id, &ts) != 0)
		return -1;
	return ts_ns(&ts);
}

/* vdso_ns reads clock id through the C library, which uses the vDSO. */
static long long vdso_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return -1;
	return ts_ns(&ts);
}

/* find_map returns the start and end of the mapping /proc/self/maps names
 * name, or 0 if there is none. */
static int find_map(const char *name, uintptr_t *start, uintptr_t *end)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		size_t n = strlen(line), k = strlen(name);
		if (n >= k && strcmp(line + n - k, name) == 0)
			found = sscanf(line, "%lx-%lx", start, end) == 2;
	}
	fclose(f);
	return found;
}

static void check_image(void)
{
	uintptr_t vdso = getauxval(AT_SYSINFO_EHDR), vs, ve, ps, pe;

	CHECK(vdso != 0);
	if (!vdso)
		return;
	CHECK_MEM((void *)vdso, ELFMAG, SELFMAG);
	CHECK(find_map("[vdso]", &vs, &ve));
	CHECK_EQ(vs, vdso);
	CHECK(find_map("[vvar]", &ps, &pe));
	CHECK(pe <= vs && vs - pe <= 65536); /* Linux 6.13+ puts [vvar_vclock] between */
	CHECK_ERR(mprotect((void *)ps, pe - ps, PROT_READ | PROT_WRITE), EACCES);
}

/* check_monotonic reads clock id reads times, alternating the two paths,
 * and asserts that the time never goes back. Children read fewer, so that
 * they stay well inside check_fork's alarm on a loaded machine. */
#define PARENT_READS 200000
#define CHILD_READS 20000
static void check_monotonic(clockid_t id, int reads)
{
	long long prev = 0, t;
	int i, back = 0;

	for (i = 0; i < reads; i++) {
		t = i % 2 ? sys_ns(id) : vdso_ns(id);
		if (t < prev && back++ == 0)
			fprintf(stderr, "clock %d went back by %lld ns at %d\n",
				id, prev - t, i);
		prev = t;
	}
	CHECK_EQ(back, 0);
}

static void check_realtime(void)
{
	struct timeval tv;
	long long sys = sys_ns(CLOCK_REALTIME);
	long long lib = vdso_ns(CLOCK_REALTIME);
	time_t now;

	CHECK(lib >= sys && lib - sys < NS / 10);
	CHECK_OK(gettimeofday(&tv, NULL));
	CHECK(tv.tv_sec * 1000000LL + tv.tv_usec >= sys / 1000);
	CHECK(tv.tv_sec * 1000000LL + tv.tv_usec - sys / 1000 < 100000);
	now = time(NULL);
	CHECK(now >= sys / NS && now - sys / NS <= 1);
	CHECK_EQ(time(&now), now);
}

static void check_getres(void)
{
	clockid_t fine[] = { CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME,
			     CLOCK_MONOTONIC_RAW };
	clockid_t coarse[] = { CLOCK_REALTIME_COARSE, CLOCK_MONOTONIC_COARSE };
	struct timespec a, b;
	size_t i;

	for (i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
		CHECK_OK(clock_getres(fine[i], &a));
		CHECK_EQ(ts_ns(&a), 1);
	}
	for (i = 0; i < sizeof(coarse) / sizeof(coarse[0]); i++) {
		CHECK_OK(clock_getres(coarse[i], &a));
		CHECK_OK(syscall(SYS_clock_getres, coarse[i], &b));
		CHECK_EQ(ts_ns(&a), ts_ns(&b));
		CHECK(ts_ns(&a) > 1 && ts_ns(&a) <= NS / 100);
	}
	CHECK_ERR(clock_getres(1000, &a), EINVAL);
}

static void check_other_clocks(void)
{
	struct timespec ts;
	long long a, b;

	CHECK_ERR(clock_gettime(1000, &ts), EINVAL);
	CHECK_ERR(clock_gettime(-1000, &ts), EINVAL);
	a = vdso_ns(CLOCK_PROCESS_CPUTIME_ID);
	b = vdso_ns(CLOCK_THREAD_CPUTIME_ID);
	CHECK(a > 0 && b > 0);
	a = vdso_ns(CLOCK_MONOTONIC_COARSE);
	b = sys_ns(CLOCK_MONOTONIC);
	CHECK(a > 0 && a <= b && b - a < NS / 10);
	CHECK(sched_getcpu() >= 0);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[3], "--exec-child") == 0) {
		check_init(3, argv);
		check_image();
		check_monotonic(CLOCK_MONOTONIC, CHILD_READS);
		return check_finish();
	}
	check_init(argc, argv);
	check_image();
	check_monotonic(CLOCK_MONOTONIC, PARENT_READS);
	check_monotonic(CLOCK_BOOTTIME, PARENT_READS);
	check_realtime();
	check_getres();
	check_other_clocks();

	pid_t pid = check_fork();
	if (pid == 0) {
		check_monotonic(CLOCK_MONOTONIC, CHILD_READS);
		check_realtime();
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	pid = check_fork();
	if (pid == 0) {
		char *args[] = { argv[0], argv[1], argv[2], "--exec-child", NULL };
		execv("/proc/self/exe", args);
		_exit(127);
	}
	CHECK_CHILD(pid, "exited 0");
	return check_finish();
}
