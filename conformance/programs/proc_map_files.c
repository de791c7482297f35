/*
 * proc_map_files: /proc/self/map_files, a link per mapping of a file.
 *
 * Checks: a private mapping of /dev/zero (which Linux keeps the file of)
 * and one of a regular file each have a link named by their address
 * range in lower-case hex without leading zeros ("%lx-%lx"), reading as
 * the file's path; names with a leading zero, a space or a range that is
 * not a mapping's are ENOENT, as is an anonymous mapping's range; the
 * directory lists the file mapping's name; /proc/self/maps names
 * /dev/zero for the private mapping.
 */
// covers: readlink mmap
#include "check.h"

#include <dirent.h>
#include <sys/mman.h>

static const char *link_of(const char *fmt, unsigned long a, unsigned long b)
{
	static char buf[256];
	char name[128];
	snprintf(name, sizeof name, fmt, a, b);
	long n = readlink(name, buf, sizeof buf - 1);
	if (n < 0)
		return check_errname(errno);
	buf[n] = 0;
	return buf;
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	long page = sysconf(_SC_PAGESIZE);
	int zero = CHECK_OK(open("/dev/zero", O_RDONLY));
	char *z = mmap(NULL, page, PROT_NONE, MAP_PRIVATE, zero, 0);
	CHECK(z != MAP_FAILED);
	unsigned long a = (unsigned long)z, b = a + page;
	CHECK_STR(link_of("/proc/self/map_files/%lx-%lx", a, b), "/dev/zero");
	CHECK_STR(link_of("/proc/self/map_files/0%lx-%lx", a, b), "ENOENT");
	CHECK_STR(link_of("/proc/self/map_files/%lx-0%lx", a, b), "ENOENT");
	CHECK_STR(link_of("/proc/self/map_files/%lx -%lx", a, b), "ENOENT");
	CHECK_STR(link_of("/proc/self/map_files/%lx-%lx ", a, b), "ENOENT");
	CHECK_STR(link_of("/proc/self/map_files/%lx-%lx", a, b + page), "ENOENT");

	char line[512];
	int named = 0;
	FILE *f = fopen("/proc/self/maps", "r");
	CHECK(f != NULL);
	while (f && fgets(line, sizeof line, f))
		if (strtoul(line, NULL, 16) == a && strstr(line, "/dev/zero"))
			named = 1;
	if (f)
		fclose(f);
	CHECK(named);

	char *anon = mmap(NULL, page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(anon != MAP_FAILED);
	CHECK_STR(link_of("/proc/self/map_files/%lx-%lx", (unsigned long)anon, (unsigned long)anon + page), "ENOENT");

	int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	char *h = mmap(NULL, page, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(h != MAP_FAILED);
	char want[64];
	snprintf(want, sizeof want, "%lx-%lx", (unsigned long)h, (unsigned long)h + page);
	const char *target = link_of("/proc/self/map_files/%lx-%lx", (unsigned long)h, (unsigned long)h + page);
	CHECK(strstr(target, HELLO_PATH + (HELLO_PATH[0] == '.' ? 1 : 0)) != NULL);
	int listed = 0;
	DIR *d = opendir("/proc/self/map_files");
	CHECK(d != NULL);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, want) == 0)
			listed = 1;
	if (d)
		closedir(d);
	CHECK(listed);
	return check_finish();
}
