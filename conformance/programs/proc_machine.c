/*
 * proc_machine: the machine-wide files of /proc that programs read to size
 * themselves (nproc, free, top, psutil, language runtimes).
 *
 * Checks: /proc/cpuinfo has a "processor : N" entry for at least as many
 * CPUs as sched_getaffinity gives, numbered from 0, each with a flags line;
 * /proc/meminfo starts with MemTotal, MemFree and MemAvailable in kB, free
 * memory no more than the total, and has the swap lines; /proc/stat starts
 * with the "cpu  " line of ten counters, then a cpuN line per CPU (at least
 * the affinity's count), then intr, ctxt, btime (in the past), processes,
 * procs_running (at least 1, the reader) and procs_blocked; /proc/uptime
 * is two numbers with two decimals; /proc/loadavg is three averages,
 * running/total and the newest pid; /proc/version starts "Linux version ";
 * /proc/filesystems has proc and tmpfs as "nodev" types; boot_id is the
 * same at each read and uuid new, both version 4 UUIDs; /proc/sys's
 * osrelease is uname's release and ostype "Linux".
 */
// covers: openat read sched_getaffinity uname
#include "check.h"

#include <sched.h>
#include <sys/utsname.h>

static char buf[1 << 17];

static long read_file(const char *path)
{
	long len = 0, r;
	int fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);

	buf[0] = 0;
	if (fd < 0)
		return -1;
	while (len < (long)sizeof(buf) - 1 && (r = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += r;
	close(fd);
	buf[len] = 0;
	return len;
}

static int affinity_count(void)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return -1;
	return CPU_COUNT(&set);
}

static void test_cpuinfo(int ncpu)
{
	char *p = buf;
	int n = 0, flags = 0, num;

	CHECK(read_file("/proc/cpuinfo") > 0);
	while ((p = strstr(p, "processor\t: ")) != NULL) {
		if (p == buf || p[-1] == '\n') {
			CHECK(sscanf(p, "processor\t: %d", &num) == 1);
			CHECK_EQ(num, n);
			n++;
		}
		p++;
	}
	for (p = buf; (p = strstr(p, "\nflags\t\t: ")) != NULL; p++)
		flags++;
	CHECK(n >= ncpu);
	CHECK_EQ(flags, n);
}

static void test_meminfo(void)
{
	unsigned long total = 0, free = 0, avail = 0;

	CHECK(read_file("/proc/meminfo") > 0);
	CHECK_EQ(sscanf(buf, "MemTotal: %lu kB\nMemFree: %lu kB\nMemAvailable: %lu kB\n", &total, &free, &avail), 3);
	CHECK(total > 0);
	CHECK(free <= total);
	CHECK(avail <= total);
	CHECK(strstr(buf, "\nSwapTotal:") != NULL);
	CHECK(strstr(buf, "\nSwapFree:") != NULL);
}

static void test_stat(int ncpu)
{
	const char *keys[] = { "intr", "ctxt", "btime", "processes", "procs_running", "procs_blocked" };
	unsigned long long v[10];
	char *line, *save = NULL;
	int cpus = 0, first = 1, k = 0;
	long long btime = -1, running = -1;

	CHECK(read_file("/proc/stat") > 0);
	CHECK(strncmp(buf, "cpu  ", 5) == 0);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (first) {
			CHECK_EQ(sscanf(line, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1],
					&v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9]),
				 10);
			first = 0;
			continue;
		}
		if (strncmp(line, "cpu", 3) == 0) {
			int n = -1;

			CHECK(sscanf(line, "cpu%d", &n) == 1 && n == cpus);
			cpus++;
			continue;
		}
		if (k < 6 && strncmp(line, keys[k], strlen(keys[k])) == 0 && line[strlen(keys[k])] == ' ') {
			if (k == 2)
				btime = atoll(line + 6);
			if (k == 4)
				running = atoll(line + 14);
			k++;
		}
	}
	CHECK(cpus >= ncpu);
	CHECK_EQ(k, 6);
	CHECK(btime > 0 && btime <= (long long)time(NULL));
	CHECK(running >= 1);
}

static void test_small_files(void)
{
	double up = -1, idle = -1, a1, a2, a3;
	int running = -1, total = -1, last = -1;
	char c1[4] = "", c2[4] = "";

	CHECK(read_file("/proc/uptime") > 0);
	CHECK_EQ(sscanf(buf, "%lf %lf", &up, &idle), 2);
	CHECK(up > 0 && idle >= 0);
	/* Two decimals each: the text after each dot is two digits. */
	CHECK(sscanf(buf, "%*d.%2[0-9] %*d.%2[0-9]\n", c1, c2) == 2 && strlen(c1) == 2 && strlen(c2) == 2);
	CHECK(read_file("/proc/loadavg") > 0);
	CHECK_EQ(sscanf(buf, "%lf %lf %lf %d/%d %d", &a1, &a2, &a3, &running, &total, &last), 6);
	CHECK(running >= 1 && total >= running && last >= 1);
	CHECK(read_file("/proc/version") > 0);
	CHECK(strncmp(buf, "Linux version ", 14) == 0);
	CHECK(read_file("/proc/filesystems") > 0);
	CHECK(strstr(buf, "nodev\tproc\n") != NULL);
	CHECK(strstr(buf, "nodev\ttmpfs\n") != NULL);
}

static int is_uuid4(const char *s)
{
	int i;

	for (i = 0; i < 36; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;

		if (dash ? s[i] != '-' : !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return s[14] == '4' && strchr("89ab", s[19]) && s[36] == '\n' && s[37] == 0;
}

static void test_sysctls(void)
{
	char a[64], b[64];
	struct utsname u;

	CHECK(read_file("/proc/sys/kernel/random/boot_id") == 37);
	CHECK(is_uuid4(buf));
	strcpy(a, buf);
	read_file("/proc/sys/kernel/random/boot_id");
	CHECK_STR(buf, a);
	CHECK(read_file("/proc/sys/kernel/random/uuid") == 37);
	CHECK(is_uuid4(buf));
	strcpy(b, buf);
	read_file("/proc/sys/kernel/random/uuid");
	CHECK(strcmp(buf, b) != 0);
	CHECK_OK(uname(&u));
	read_file("/proc/sys/kernel/osrelease");
	CHECK(strncmp(buf, u.release, strlen(u.release)) == 0 && buf[strlen(u.release)] == '\n');
	read_file("/proc/sys/kernel/ostype");
	CHECK_STR(buf, "Linux\n");
}

int main(int argc, char **argv)
{
	int ncpu;

	check_init(argc, argv);
	ncpu = affinity_count();
	CHECK(ncpu >= 1);
	test_cpuinfo(ncpu);
	test_meminfo();
	test_stat(ncpu);
	test_small_files();
	test_sysctls();
	return check_finish();
}
