/*
 * dev_nodes: the character devices every OCI container must have.
 *
 * Checks, for /dev/null, /dev/zero, /dev/full, /dev/random and /dev/urandom:
 * that each is a character device with mode 0666 and the Linux device number
 * (1,3 1,5 1,7 1,8 1,9); that /dev/null reads as end of file and swallows
 * writes; that /dev/zero reads zeros and swallows writes; that /dev/full reads
 * zeros and refuses writes with ENOSPC; that the random devices fill whole
 * buffers and two reads differ; and that seeking any of them succeeds.
 */
// covers: openat read write lseek fstat newfstatat
#include "check.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

struct device {
	const char *path;
	unsigned int major, minor;
};

static const struct device devices[] = {
	{ "/dev/null", 1, 3 },   { "/dev/zero", 1, 5 },
	{ "/dev/full", 1, 7 },   { "/dev/random", 1, 8 },
	{ "/dev/urandom", 1, 9 },
};

static void test_node(const struct device *d)
{
	struct stat st, fst;
	int fd;

	if (syscall(SYS_newfstatat, AT_FDCWD, d->path, &st, 0) != 0) {
		check_fail(__FILE__, __LINE__, "expected stat(%s) to succeed, got %s",
			   d->path, check_errname(errno));
		return;
	}
	if (!S_ISCHR(st.st_mode) || (st.st_mode & 07777) != 0666 ||
	    major(st.st_rdev) != d->major || minor(st.st_rdev) != d->minor)
		check_fail(__FILE__, __LINE__,
			   "expected %s to be crw-rw-rw- %u,%u, got mode 0%o %u,%u",
			   d->path, d->major, d->minor, st.st_mode,
			   major(st.st_rdev), minor(st.st_rdev));
	fd = CHECK_OK(open(d->path, O_RDWR));
	CHECK_OK(syscall(SYS_fstat, fd, &fst));
	CHECK_EQ(fst.st_rdev, st.st_rdev);
	CHECK_EQ(fst.st_ino, st.st_ino);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_SET), 0);
	close(fd);
}

static void test_null(void)
{
	char buf[64];
	int fd = CHECK_OK(open("/dev/null", O_RDWR));

	CHECK_EQ(syscall(SYS_read, fd, buf, sizeof(buf)), 0);
	CHECK_EQ(syscall(SYS_write, fd, "abc", 3), 3);
	CHECK_EQ(syscall(SYS_read, fd, buf, sizeof(buf)), 0);
	close(fd);
}

/* test_zero_and_full checks /dev/zero, or /dev/full when full is set. */
static void test_zero_and_full(const char *path, int full)
{
	static char buf[10000];
	int fd = CHECK_OK(open(path, O_RDWR));

	memset(buf, 'x', sizeof(buf));
	/* Reads fill the whole buffer, however large, with zeros. */
	CHECK_EQ(syscall(SYS_read, fd, buf, sizeof(buf)), sizeof(buf));
	if (!all_zero(buf, sizeof(buf)))
		check_fail(__FILE__, __LINE__, "expected %s to read zeros", path);
	if (full)
		CHECK_ERR(syscall(SYS_write, fd, "abc", 3), ENOSPC);
	else
		CHECK_EQ(syscall(SYS_write, fd, "abc", 3), 3);
	close(fd);
}

static void test_random(const char *path)
{
	char a[32], b[32];
	int fd = CHECK_OK(open(path, O_RDONLY));

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	CHECK_EQ(syscall(SYS_read, fd, a, sizeof(a)), sizeof(a));
	CHECK_EQ(syscall(SYS_read, fd, b, sizeof(b)), sizeof(b));
	/* 256 random bits repeating, or staying all zero, does not happen. */
	if (memcmp(a, b, sizeof(a)) == 0 || all_zero(a, sizeof(a)))
		check_fail(__FILE__, __LINE__,
			   "expected two reads of %s to give different bytes", path);
	close(fd);
}

int main(int argc, char **argv)
{
	size_t i;

	check_init(argc, argv);
	for (i = 0; i < sizeof(devices) / sizeof(devices[0]); i++)
		test_node(&devices[i]);
	test_null();
	test_zero_and_full("/dev/zero", 0);
	test_zero_and_full("/dev/full", 1);
	test_random("/dev/random");
	test_random("/dev/urandom");
	return check_finish();
}
