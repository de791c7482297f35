/*
 * fs_legacy: the old file-system queries ustat and sysfs.
 *
 * Checks: ustat of the device of / and of /proc (by st_dev in the old
 * 32-bit encoding) succeeds, fills 32 bytes (the names empty) and gives
 * /proc's free blocks and inodes as statfs does (none); EINVAL for a
 * device no mount has, EFAULT for a buffer outside the address space.
 * sysfs: option 3 counts the types /proc/filesystems lists, option 2 names
 * each by index in that order and option 1 gives the index back; proc and
 * tmpfs among them; EINVAL for an unknown name, an index past the end and
 * options 0 and 4, EFAULT for a name or buffer outside the address space.
 */
// covers: ustat sysfs
#include "check.h"

#include <stdint.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

/* The kernel's struct ustat on x86-64. */
struct kustat {
	int32_t f_tfree;
	uint64_t f_tinode;
	char f_fname[6];
	char f_fpack[6];
};

/* old_dev is st_dev in the 32-bit encoding ustat takes. */
static unsigned old_dev(const char *path)
{
	struct stat st;

	CHECK_OK(stat(path, &st));
	unsigned ma = major(st.st_dev), mi = minor(st.st_dev);
	return (mi & 0xff) | (ma << 8) | ((mi & ~0xffu) << 12);
}

static void test_ustat(void)
{
	unsigned char buf[64];
	struct kustat *u = (struct kustat *)buf;
	struct statfs sf;

	memset(buf, 0x55, sizeof(buf));
	CHECK_EQ(syscall(SYS_ustat, old_dev("/"), buf), 0);
	CHECK(all_zero(u->f_fname, 12));
	CHECK(all_zero(buf + 4, 4));
	CHECK_EQ(buf[32], 0x55);

	memset(buf, 0x55, sizeof(buf));
	CHECK_EQ(syscall(SYS_ustat, old_dev("/proc"), buf), 0);
	CHECK_OK(statfs("/proc", &sf));
	CHECK_EQ(u->f_tfree, (int32_t)sf.f_bfree);
	CHECK_EQ(u->f_tinode, sf.f_ffree);

	CHECK_ERR(syscall(SYS_ustat, (unsigned)makedev(250, 250), buf), EINVAL);
	CHECK_ERR(syscall(SYS_ustat, old_dev("/"), (void *)8), EFAULT);
}

static void test_sysfs(void)
{
	char listed[64][32], name[64];
	int n = 0;
	FILE *f = fopen("/proc/filesystems", "r");
	char line[128];

	CHECK(f != NULL);
	while (f && n < 64 && fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t');

		if (!tab)
			continue;
		tab[strcspn(tab, "\n")] = 0;
		snprintf(listed[n++], sizeof(listed[0]), "%s", tab + 1);
	}
	if (f)
		fclose(f);

	CHECK_EQ(syscall(SYS_sysfs, 3), n);
	int have_proc = 0, have_tmpfs = 0;
	for (int i = 0; i < n; i++) {
		memset(name, 0x55, sizeof(name));
		CHECK_EQ(syscall(SYS_sysfs, 2, (unsigned long)i, name), 0);
		CHECK_STR(name, listed[i]);
		CHECK_EQ(syscall(SYS_sysfs, 1, listed[i]), i);
		have_proc |= strcmp(listed[i], "proc") == 0;
		have_tmpfs |= strcmp(listed[i], "tmpfs") == 0;
	}
	CHECK(have_proc && have_tmpfs);
	CHECK_ERR(syscall(SYS_sysfs, 1, "no-such-fs"), EINVAL);
	CHECK_ERR(syscall(SYS_sysfs, 1, (void *)8), EFAULT);
	CHECK_ERR(syscall(SYS_sysfs, 2, (unsigned long)n, name), EINVAL);
	CHECK_ERR(syscall(SYS_sysfs, 2, 0UL, (void *)8), EFAULT);
	CHECK_ERR(syscall(SYS_sysfs, 0), EINVAL);
	CHECK_ERR(syscall(SYS_sysfs, 4), EINVAL);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_ustat();
	test_sysfs();
	return check_finish();
}
