/*
 * file_getdents: the old getdents, whose struct linux_dirent has no d_type
 * field but the type in each record's last byte, beside getdents64.
 *
 * Checks: getdents of the data directory lists exactly ".", "..", "a", "b"
 * and "sub", with the types (DT_DIR, DT_REG) in the last byte, records
 * aligned to 8 with room for the NUL and the type byte, the same inodes
 * and offsets as getdents64 lists; the end answers 0; a buffer that holds
 * one record gets one, one too small for any EINVAL; lseek to a record's
 * d_off resumes after it; EBADF for a bad fd, ENOTDIR for a regular file,
 * EFAULT for a buffer outside the address space.
 */
// covers: getdents getdents64
#include "check.h"

#include <dirent.h>
#include <stddef.h>

/* struct linux_dirent, as the kernel writes it. */
struct old_dirent {
	unsigned long d_ino;
	unsigned long d_off;
	unsigned short d_reclen;
	char d_name[];
};

struct entry {
	char name[256];
	unsigned long ino;
	long off;
	int type;
};

/* list_old reads the whole directory with getdents into out. */
static int list_old(int fd, struct entry *out, int max)
{
	char buf[4096];
	int n = 0;
	long got;

	while ((got = syscall(SYS_getdents, fd, buf, sizeof(buf))) > 0) {
		for (long pos = 0; pos < got;) {
			struct old_dirent *d = (struct old_dirent *)(buf + pos);

			CHECK_EQ(d->d_reclen % 8, 0);
			CHECK(d->d_reclen >= offsetof(struct old_dirent, d_name) + strlen(d->d_name) + 2);
			if (n < max) {
				snprintf(out[n].name, sizeof(out[n].name), "%s", d->d_name);
				out[n].ino = d->d_ino;
				out[n].off = (long)d->d_off;
				out[n].type = buf[pos + d->d_reclen - 1];
			}
			n++;
			pos += d->d_reclen;
		}
	}
	CHECK_EQ(got, 0);
	return n;
}

static int list_new(int fd, struct entry *out, int max)
{
	char buf[4096];
	int n = 0;
	long got;

	while ((got = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long pos = 0; pos < got;) {
			struct dirent64 *d = (struct dirent64 *)(buf + pos);

			if (n < max) {
				snprintf(out[n].name, sizeof(out[n].name), "%s", d->d_name);
				out[n].ino = d->d_ino;
				out[n].off = d->d_off;
				out[n].type = d->d_type;
			}
			n++;
			pos += d->d_reclen;
		}
	}
	CHECK_EQ(got, 0);
	return n;
}

static int type_of(const char *name)
{
	if (strcmp(name, "a") == 0 || strcmp(name, "b") == 0)
		return DT_REG;
	if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strcmp(name, "sub") == 0)
		return DT_DIR;
	return -1;
}

static void test_listing(void)
{
	struct entry old[8], new[8];
	int fd = CHECK_OK(open(LIST_DIR, O_RDONLY | O_DIRECTORY));
	int n = list_old(fd, old, 8);

	CHECK_EQ(n, 5);
	for (int i = 0; i < n && i < 8; i++)
		CHECK_EQ(old[i].type, type_of(old[i].name));
	/* At the end, it stays at the end. */
	char buf[256];
	CHECK_EQ(syscall(SYS_getdents, fd, buf, sizeof(buf)), 0);

	CHECK_EQ(sys_lseek(fd, 0, SEEK_SET), 0);
	CHECK_EQ(list_new(fd, new, 8), n);
	for (int i = 0; i < n && i < 8; i++) {
		CHECK_STR(old[i].name, new[i].name);
		CHECK_EQ(old[i].ino, new[i].ino);
		CHECK_EQ(old[i].off, new[i].off);
		CHECK_EQ(old[i].type, new[i].type);
	}

	/* Seeking to the first record's d_off resumes with the second. */
	if (n >= 2) {
		struct entry rest[8];

		CHECK_EQ(sys_lseek(fd, old[0].off, SEEK_SET), old[0].off);
		CHECK_EQ(list_old(fd, rest, 8), n - 1);
		CHECK_STR(rest[0].name, old[1].name);
	}
	close(fd);
}

static void test_small_buffers(void)
{
	char buf[256];
	int fd = CHECK_OK(open(LIST_DIR, O_RDONLY | O_DIRECTORY));
	long got = CHECK_OK(syscall(SYS_getdents, fd, buf, sizeof(buf)));
	unsigned short first = ((struct old_dirent *)buf)->d_reclen;

	CHECK(got > first);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_SET), 0);
	/* Exactly one record's room: one record. */
	CHECK_EQ(syscall(SYS_getdents, fd, buf, (size_t)first), first);
	/* No room for the next: EINVAL, and nothing is consumed. */
	CHECK_ERR(syscall(SYS_getdents, fd, buf, 8), EINVAL);
	CHECK_ERR(syscall(SYS_getdents, fd, buf, 0), EINVAL);
	got = CHECK_OK(syscall(SYS_getdents, fd, buf, sizeof(buf)));
	CHECK(got > 0);
	close(fd);
}

static void test_errors(void)
{
	char buf[256];
	int fd = CHECK_OK(open(LIST_DIR, O_RDONLY | O_DIRECTORY));
	int file = CHECK_OK(open(HELLO_PATH, O_RDONLY));

	CHECK_ERR(syscall(SYS_getdents, -1, buf, sizeof(buf)), EBADF);
	CHECK_ERR(syscall(SYS_getdents, 9999, buf, sizeof(buf)), EBADF);
	CHECK_ERR(syscall(SYS_getdents, file, buf, sizeof(buf)), ENOTDIR);
	CHECK_ERR(syscall(SYS_getdents, fd, (void *)-4096L, 256L), EFAULT);
	CHECK_ERR(syscall(SYS_getdents, fd, (void *)8, 256L), EFAULT);
	close(file);
	close(fd);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_listing();
	test_small_buffers();
	test_errors();
	return check_finish();
}
