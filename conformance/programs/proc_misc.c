/*
 * proc_misc: the smaller questions a process asks about itself and the
 * machine.
 *
 * Shells, C libraries and language runtimes ask these at start-up (groups,
 * job control ids, CPU count, memory size) and size things by the answers.
 * Checks: getgroups returns the count for size 0 and the list for a big
 * enough buffer, EINVAL for a too small or negative size, and in the sandbox
 * no groups at all (the config names none); where the process may set its
 * groups, the list it set, sorted; getpgrp, getpgid(0) and
 * getpgid(getpid()) agree, as do getsid(0) and getsid(getpid()) (0 natively
 * when the session leader is in an outer pid namespace), and in the
 * sandbox pid 1 leads its own group and session; ESRCH for a pid that does
 * not exist; sched_yield; sched_getaffinity returns the bytes it wrote
 * (whole longs, no more than asked), a mask with a CPU in it, EINVAL for a
 * size that is not a multiple of 8 or too small; getcpu names a CPU in that
 * mask; times' clock does not go back and the process times are sane;
 * getrusage for RUSAGE_SELF, RUSAGE_THREAD and RUSAGE_CHILDREN, EINVAL for
 * another who; sysinfo's uptime, memory and process count; the umask as
 * /proc/self/status reports it.
 */
// covers: getgroups getpgrp getpgid getsid sched_yield sched_getaffinity getcpu times getrusage sysinfo umask
#include "check.h"

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <sys/times.h>

#define NO_SUCH_PID 4194000 /* above the largest pid_max */

static void test_getgroups(void)
{
	gid_t list[256];
	long n, i;

	n = CHECK_OK(syscall(SYS_getgroups, 0, NULL));
	CHECK(n >= 0 && n <= 256);
	if (n < 0 || n > 256)
		return;
	/* The process is uid 0, gid 0 with no additional gids, and the
	 * rootfs's /etc/group lists no members. */
	if (!check_native)
		CHECK_EQ(n, 0);
	for (i = 0; i < 256; i++)
		list[i] = (gid_t)-2;
	CHECK_EQ(syscall(SYS_getgroups, 256, list), n);
	for (i = 0; i < n; i++)
		CHECK(list[i] != (gid_t)-2);
	CHECK_EQ(list[n], (gid_t)-2); /* nothing written past the count */
	/* A size of 0 asks for the count, so a short list needs two. */
	if (n > 1)
		CHECK_ERR(syscall(SYS_getgroups, n - 1, list), EINVAL);
	if (n > 0)
		CHECK_ERR(syscall(SYS_getgroups, n, (void *)1), EFAULT);
	CHECK_ERR(syscall(SYS_getgroups, -1, list), EINVAL);
}

/*
 * test_getgroups_set gives the process a known list of groups, where it may
 * (CAP_SETGID: natively as root; runc drops every capability), and reads it
 * back: the buffer-size checks above need a non-empty list.
 */
static void test_getgroups_set(void)
{
	gid_t want[3] = { 0, 7, 3 }, list[8], saved[256];
	long nsaved = syscall(SYS_getgroups, 256, saved);

	if (nsaved < 0 || syscall(SYS_setgroups, 3, want) != 0)
		return;
	memset(list, 0, sizeof(list));
	CHECK_EQ(syscall(SYS_getgroups, 0, NULL), 3);
	CHECK_EQ(syscall(SYS_getgroups, 8, list), 3);
	/* The kernel keeps the list sorted. */
	CHECK(list[0] == 0 && list[1] == 3 && list[2] == 7);
	CHECK_EQ(syscall(SYS_getgroups, 3, list), 3);
	CHECK_ERR(syscall(SYS_getgroups, 2, list), EINVAL);
	CHECK_ERR(syscall(SYS_getgroups, 1, list), EINVAL);
	CHECK_ERR(syscall(SYS_getgroups, 3, (void *)1), EFAULT);
	CHECK_OK(syscall(SYS_setgroups, nsaved, saved));
}

static void test_job_ids(void)
{
	long pid = syscall(SYS_getpid);
	long pgrp = syscall(SYS_getpgrp), sid;

	CHECK(pgrp > 0);
	CHECK_EQ(syscall(SYS_getpgid, 0), pgrp);
	CHECK_EQ(syscall(SYS_getpgid, pid), pgrp);
	/* 0 when the session's leader lives outside this pid namespace, as
	 * under a container runtime that did not call setsid. */
	sid = CHECK_OK(syscall(SYS_getsid, 0));
	CHECK_EQ(syscall(SYS_getsid, pid), sid);
	if (!check_native) {
		CHECK_EQ(pgrp, 1);
		CHECK_EQ(sid, 1);
	}
	CHECK_ERR(syscall(SYS_getpgid, NO_SUCH_PID), ESRCH);
	CHECK_ERR(syscall(SYS_getsid, NO_SUCH_PID), ESRCH);
	CHECK_ERR(syscall(SYS_getpgid, -1), ESRCH);
	CHECK_EQ(syscall(SYS_sched_yield), 0);
}

static void test_affinity(void)
{
	unsigned char mask[128];
	long n, i, cpus = 0;
	unsigned cpu = ~0U;

	/* The kernel writes min(size, its own mask size) bytes, whole
	 * longs, and returns that count; the rest is left alone. */
	memset(mask, 0xa5, sizeof(mask));
	n = CHECK_OK(syscall(SYS_sched_getaffinity, 0, 8, mask));
	CHECK_EQ(n, 8);
	memset(mask, 0xa5, sizeof(mask));
	n = CHECK_OK(syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask));
	CHECK(n >= 8 && n <= (long)sizeof(mask) && n % 8 == 0);
	if (n < 8 || n > (long)sizeof(mask))
		return;
	for (i = n; i < (long)sizeof(mask); i++)
		if (mask[i] != 0xa5)
			break;
	CHECK_EQ(i, sizeof(mask));
	for (i = 0; i < n * 8; i++)
		cpus += (mask[i / 8] >> (i % 8)) & 1;
	CHECK(cpus >= 1);
	CHECK_EQ(syscall(SYS_sched_getaffinity, syscall(SYS_getpid), 8, mask), 8);

	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, 0, mask), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, 1, mask), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, 12, mask), EINVAL);
	CHECK_ERR(syscall(SYS_sched_getaffinity, 0, 8, (void *)1), EFAULT);
	CHECK_ERR(syscall(SYS_sched_getaffinity, NO_SUCH_PID, 8, mask), ESRCH);

	/* The CPU the process runs on is one it may run on. */
	memset(mask, 0, sizeof(mask));
	syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
	CHECK_EQ(syscall(SYS_getcpu, &cpu, NULL, NULL), 0);
	CHECK(cpu < (unsigned)n * 8);
	if (cpu < (unsigned)n * 8)
		CHECK((mask[cpu / 8] >> (cpu % 8)) & 1);
	CHECK_ERR(syscall(SYS_getcpu, (void *)1, NULL, NULL), EFAULT);
}

static void test_times(void)
{
	struct tms a, b;
	long t1, t2;
	volatile unsigned long spin = 0;
	long i;

	t1 = syscall(SYS_times, &a);
	CHECK(t1 != -1);
	for (i = 0; i < 1000000; i++)
		spin += i;
	t2 = syscall(SYS_times, &b);
	CHECK(t2 != -1);
	/* The clock is unsigned and counts up from an arbitrary start. */
	CHECK((unsigned long)t2 >= (unsigned long)t1);
	CHECK(a.tms_utime >= 0 && a.tms_stime >= 0);
	CHECK(b.tms_utime >= a.tms_utime);
	CHECK(b.tms_stime >= a.tms_stime);
	/* Nothing has been waited for. */
	CHECK_EQ(b.tms_cutime, 0);
	CHECK_EQ(b.tms_cstime, 0);
	/* The buffer is optional. */
	t1 = syscall(SYS_times, NULL);
	CHECK((unsigned long)t1 >= (unsigned long)t2);
	CHECK_ERR(syscall(SYS_times, (void *)1), EFAULT);
}

static void test_getrusage(void)
{
	struct rusage self, thread, children;

	CHECK_EQ(syscall(SYS_getrusage, RUSAGE_SELF, &self), 0);
	CHECK(self.ru_utime.tv_usec >= 0 && self.ru_utime.tv_usec < 1000000);
	CHECK(self.ru_stime.tv_usec >= 0 && self.ru_stime.tv_usec < 1000000);
	CHECK(self.ru_maxrss > 0);
	CHECK_EQ(syscall(SYS_getrusage, RUSAGE_THREAD, &thread), 0);
	CHECK(thread.ru_maxrss > 0);
	/* No child has ever run. */
	memset(&children, 0xff, sizeof(children));
	CHECK_EQ(syscall(SYS_getrusage, RUSAGE_CHILDREN, &children), 0);
	CHECK_EQ(children.ru_utime.tv_sec, 0);
	CHECK_EQ(children.ru_utime.tv_usec, 0);
	CHECK_EQ(children.ru_stime.tv_sec, 0);
	CHECK_EQ(children.ru_stime.tv_usec, 0);
	CHECK_ERR(syscall(SYS_getrusage, 99, &self), EINVAL);
	CHECK_ERR(syscall(SYS_getrusage, RUSAGE_SELF, (void *)1), EFAULT);
}

static void test_sysinfo(void)
{
	struct sysinfo si;

	memset(&si, 0, sizeof(si));
	CHECK_EQ(syscall(SYS_sysinfo, &si), 0);
	CHECK(si.uptime > 0);
	CHECK(si.totalram > 0);
	CHECK(si.freeram <= si.totalram);
	CHECK(si.mem_unit >= 1);
	CHECK(si.procs >= 1);
	CHECK_ERR(syscall(SYS_sysinfo, (void *)1), EFAULT);
}

static void test_umask(void)
{
	long old = syscall(SYS_umask, 027);

	CHECK_STR(proc_status("Umask"), "0027");
	syscall(SYS_umask, 0);
	CHECK_STR(proc_status("Umask"), "0000");
	syscall(SYS_umask, old);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_getgroups();
	test_getgroups_set();
	test_job_ids();
	test_affinity();
	test_times();
	test_getrusage();
	test_sysinfo();
	test_umask();
	return check_finish();
}
