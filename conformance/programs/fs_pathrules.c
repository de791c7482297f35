/*
 * fs_pathrules: the config's linux.maskedPaths and linux.readonlyPaths, as
 * runc applies them after the mounts (and every container engine sets
 * them: /proc/kcore, /proc/sys, ...).
 *
 * Checks, in the sandbox: a masked file is /dev/null bound over it (a
 * character device, empty to read, writes vanish); a masked directory is
 * an empty read-only tmpfs (no entries, ENOENT for what was there, EROFS
 * to create); /proc/kcore, masked, is either absent or such a device; a
 * masked path that does not exist is skipped (the container runs); under a
 * read-only path writes fail with EROFS: /proc/sys (even root's open of
 * hostname for writing) and /tmp, a tmpfs mount made read-only by a bind
 * on itself; mountinfo shows both read-only; the rest of /proc stays
 * writable (comm). Natively the same paths are plain: the file reads its
 * text and the directory lists its entries.
 */
// covers: openat read write getdents64 mkdirat newfstatat
// masked-paths: /proc/kcore /conformance/data/hello.txt /conformance/data/dir /no/such/path
// readonly-paths: /proc/sys /tmp
#include "check.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

static void test_masked(void)
{
	char buf[64];
	struct stat st;
	int fd;

	fd = syscall(SYS_openat, AT_FDCWD, HELLO_PATH, O_RDONLY);
	CHECK(fd >= 0);
	if (fd >= 0) {
		long n = read(fd, buf, sizeof(buf));

		if (check_native) {
			CHECK_EQ(n, HELLO_LEN);
		} else {
			CHECK_EQ(n, 0);
			CHECK_OK(fstat(fd, &st));
			CHECK(S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3);
		}
		close(fd);
	}
	if (check_native) {
		CHECK_EQ(entries(LIST_DIR), 3);
		return;
	}
	/* /dev/null over a file of a read-only root: writes go nowhere. */
	fd = syscall(SYS_openat, AT_FDCWD, HELLO_PATH, O_WRONLY);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK_EQ(write(fd, "x", 1), 1);
		close(fd);
	}
	CHECK_EQ(entries(LIST_DIR), 0);
	CHECK_ERR(syscall(SYS_openat, AT_FDCWD, LIST_DIR "/a", O_RDONLY), ENOENT);
	CHECK_ERR(syscall(SYS_mkdirat, AT_FDCWD, LIST_DIR "/new", 0755), EROFS);
	if (stat("/proc/kcore", &st) == 0) {
		CHECK(S_ISCHR(st.st_mode));
		CHECK_EQ(st.st_size, 0);
	} else {
		CHECK_EQ(errno, ENOENT);
	}
}

/* mount_options returns the options of the topmost mount at point. */
static const char *mount_options(const char *point)
{
	static char text[1 << 16], opts[256];
	char *line, *save = NULL;
	long len = 0, r;
	int fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/mountinfo", O_RDONLY);

	strcpy(opts, "(not mounted)");
	if (fd < 0)
		return opts;
	while (len < (long)sizeof(text) - 1 && (r = read(fd, text + len, sizeof(text) - 1 - len)) > 0)
		len += r;
	close(fd);
	text[len] = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char p[512], o[256];

		if (sscanf(line, "%*d %*d %*u:%*u %*s %511s %255s", p, o) == 2 && strcmp(p, point) == 0)
			strcpy(opts, o);
	}
	return opts;
}

static void test_readonly(void)
{
	int fd;

	fd = syscall(SYS_openat, AT_FDCWD, "/proc/sys/kernel/ostype", O_RDONLY);
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	if (check_native)
		return;
	CHECK_ERR(syscall(SYS_openat, AT_FDCWD, "/proc/sys/kernel/hostname", O_WRONLY), EROFS);
	CHECK_ERR(syscall(SYS_openat, AT_FDCWD, "/tmp/new", O_WRONLY | O_CREAT, 0644), EROFS);
	CHECK_ERR(syscall(SYS_mkdirat, AT_FDCWD, "/tmp/dir", 0755), EROFS);
	CHECK(strncmp(mount_options("/proc/sys"), "ro", 2) == 0);
	CHECK(strncmp(mount_options("/tmp"), "ro", 2) == 0);
	fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/comm", O_WRONLY);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK_EQ(write(fd, "pathrules", 9), 9);
		close(fd);
	}
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_masked();
	test_readonly();
	return check_finish();
}
