/*
 * proc_reread: an open /proc file read again from offset 0 (pread, or
 * lseek then read) shows the content as it is then, as Linux's seq_file
 * makes it anew at such a read; a read that goes on where the last ended
 * goes on in the same content.
 *
 * Checks: /proc/uptime reread with pread(fd, 0) in a loop (as the kernel's
 * proc-uptime-001 selftest does) advances by a second within two, and
 * neither its uptime nor its idle figure ever goes back; both figures have
 * two decimals; /proc/stat's cpu counters reread after lseek(0) never go
 * back; /proc/self/comm, opened before prctl(PR_SET_NAME) and read in two
 * pieces across it, gives the old name whole, then the new one at a
 * pread from 0 and at a read after lseek(0).
 */
// covers: pread64 lseek read prctl
#include "check.h"

#include <sys/prctl.h>

/* uptime parses "S.HH S.HH\n" into hundredths; 0 if malformed. */
static int uptime(int fd, unsigned long long *up, unsigned long long *idle)
{
	char buf[64] = {0};
	unsigned long long us, uh, is, ih;
	char nl;
	long n = sys_pread64(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	if (sscanf(buf, "%llu.%2llu %llu.%2llu%c", &us, &uh, &is, &ih, &nl) != 5 || nl != '\n')
		return 0;
	if (buf[strcspn(buf, ".") + 3] != ' ')
		return 0;
	*up = us * 100 + uh;
	*idle = is * 100 + ih;
	return 1;
}

/* cpu_line reads the first line of /proc/stat from offset 0 into v. */
static int cpu_line(int fd, unsigned long long v[10])
{
	char buf[512] = {0};

	if (sys_lseek(fd, 0, SEEK_SET) != 0 || read(fd, buf, sizeof(buf) - 1) <= 0)
		return 0;
	return sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		      &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]) == 10;
}

int main(int argc, char **argv)
{
	check_init(argc, argv);

	int fd = syscall(SYS_openat, AT_FDCWD, "/proc/uptime", O_RDONLY);
	CHECK(fd >= 0);
	unsigned long long start, u0, i0, u1, i1;
	CHECK(uptime(fd, &u0, &i0));
	start = u0;
	int back = 0, bad = 0;
	long long deadline = check_now_ns() + 2000000000LL;
	do {
		if (!uptime(fd, &u1, &i1)) {
			bad = 1;
			break;
		}
		if (u1 < u0 || i1 < i0)
			back = 1;
		u0 = u1;
		i0 = i1;
	} while (u1 - start < 100 && check_now_ns() < deadline);
	CHECK(!bad);
	CHECK(!back);
	CHECK(u1 - start >= 100);
	close(fd);

	fd = syscall(SYS_openat, AT_FDCWD, "/proc/stat", O_RDONLY);
	CHECK(fd >= 0);
	unsigned long long a[10], b[10];
	CHECK(cpu_line(fd, a));
	back = 0;
	for (int round = 0; round < 20; round++) {
		for (volatile long spin = 0; spin < 2000000; spin++)
			;
		CHECK(cpu_line(fd, b));
		for (int k = 0; k < 10; k++)
			if (b[k] < a[k])
				back = 1;
		memcpy(a, b, sizeof(a));
	}
	CHECK(!back);
	close(fd);

	CHECK_OK(prctl(PR_SET_NAME, "before", 0, 0, 0));
	fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/comm", O_RDONLY);
	CHECK(fd >= 0);
	char name[32] = {0};
	CHECK_EQ(read(fd, name, 3), 3);
	CHECK_OK(prctl(PR_SET_NAME, "after", 0, 0, 0));
	CHECK_EQ(read(fd, name + 3, sizeof(name) - 4), 4);
	CHECK_STR(name, "before\n");
	memset(name, 0, sizeof(name));
	CHECK_EQ(sys_pread64(fd, name, sizeof(name) - 1, 0), 6);
	CHECK_STR(name, "after\n");
	CHECK_OK(prctl(PR_SET_NAME, "again", 0, 0, 0));
	CHECK_EQ(sys_lseek(fd, 0, SEEK_SET), 0);
	memset(name, 0, sizeof(name));
	CHECK_EQ(read(fd, name, sizeof(name) - 1), 6);
	CHECK_STR(name, "again\n");
	close(fd);

	return check_finish();
}
