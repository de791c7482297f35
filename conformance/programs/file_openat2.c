/*
 * file_openat2: openat2 and its struct open_how, in a fresh directory
 * under /tmp holding d/f, d/sub/, outside, and in d the symlinks rel ->
 * f, subl -> sub, up -> ../outside and abs -> (the absolute path of d/f).
 *
 * Checks: the struct's size (below 24 EINVAL, a zero tail taken, a
 * non-zero one or over a page E2BIG, EFAULT outside the address space);
 * every field checked: unknown open or resolve flags, RESOLVE_BENEATH
 * with RESOLVE_IN_ROOT, a mode without O_CREAT or past 07777, O_DIRECTORY
 * with O_CREAT, O_TMPFILE read-only, O_PATH with other flags EINVAL;
 * RESOLVE_CACHED with O_CREAT or O_TRUNC EAGAIN. RESOLVE_NO_SYMLINKS:
 * ELOOP through any symlink, a final one opened with O_PATH|O_NOFOLLOW.
 * RESOLVE_NO_MAGICLINKS: /proc/self/fd/N ELOOP, plain symlinks followed.
 * RESOLVE_BENEATH: names below dirfd (through .. and relative symlinks
 * that stay) open, absolute paths, .. above dirfd and symlinks that
 * leave EXDEV. RESOLVE_IN_ROOT: / and .. stop at dirfd (an absolute
 * symlink resolves under it). RESOLVE_NO_XDEV: a step onto /proc or back
 * EXDEV. O_CREAT creates with the mode; EBADF for a bad dirfd, ENOENT.
 */
// covers: openat2
// places: bind root
#include "check.h"

#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

struct how {
	uint64_t flags, mode, resolve;
};

#define R_NO_XDEV 0x01
#define R_NO_MAGICLINKS 0x02
#define R_NO_SYMLINKS 0x04
#define R_BENEATH 0x08
#define R_IN_ROOT 0x10
#define R_CACHED 0x20

static long oa2(int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve)
{
	struct how h = { flags, mode, resolve };

	return syscall(SYS_openat2, dirfd, path, &h, sizeof(h));
}

/* opens reports whether the open succeeded, closing what it opened. */
static long opens(int dirfd, const char *path, uint64_t flags, uint64_t resolve)
{
	long fd = oa2(dirfd, path, flags, 0, resolve);

	if (fd >= 0) {
		close((int)fd);
		return 0;
	}
	return -1;
}

static char scratch[64];

static void test_struct(int d)
{
	char big[40] = { 0 };
	struct how h = { O_RDONLY, 0, 0 };

	memcpy(big, &h, sizeof(h));
	long fd = CHECK_OK(syscall(SYS_openat2, d, "f", &h, sizeof(h)));
	close((int)fd);
	fd = CHECK_OK(syscall(SYS_openat2, d, "f", big, 40L));
	close((int)fd);
	big[30] = 1;
	CHECK_ERR(syscall(SYS_openat2, d, "f", big, 40L), E2BIG);
	CHECK_ERR(syscall(SYS_openat2, d, "f", &h, 23L), EINVAL);
	CHECK_ERR(syscall(SYS_openat2, d, "f", &h, 0L), EINVAL);
	CHECK_ERR(syscall(SYS_openat2, d, "f", big, 4097L), E2BIG);
	CHECK_ERR(syscall(SYS_openat2, d, "f", (void *)8, 24L), EFAULT);
	CHECK_ERR(syscall(SYS_openat2, d, (char *)8, &h, 24L), EFAULT);
}

static void test_fields(int d)
{
	CHECK_ERR(oa2(d, "f", 1ULL << 32, 0, 0), EINVAL);
	CHECK_ERR(oa2(d, "f", 040000000000, 0, 0), EINVAL);
	CHECK_ERR(oa2(d, "f", O_RDONLY, 0, 0x40), EINVAL);
	CHECK_ERR(oa2(d, "f", O_RDONLY, 0, R_BENEATH | R_IN_ROOT), EINVAL);
	CHECK_ERR(oa2(d, "f", O_RDONLY, 0644, 0), EINVAL);
	CHECK_ERR(oa2(d, "new", O_CREAT | O_WRONLY, 010644, 0), EINVAL);
	CHECK_ERR(oa2(d, "new", O_CREAT | O_DIRECTORY, 0644, 0), EINVAL);
	CHECK_ERR(oa2(d, ".", O_TMPFILE | O_RDONLY, 0600, 0), EINVAL);
	CHECK_ERR(oa2(d, "f", O_PATH | O_RDWR, 0, 0), EINVAL);
	CHECK_ERR(oa2(d, "f", O_PATH | O_APPEND, 0, 0), EINVAL);
	CHECK_ERR(oa2(d, "f", O_PATH | O_CLOEXEC | O_NOFOLLOW | 0100000 /* the kernel's O_LARGEFILE */, 0, 0), EINVAL);
	CHECK_EQ(opens(d, "f", O_PATH | O_CLOEXEC | O_NOFOLLOW, 0), 0);
	CHECK_ERR(oa2(d, "f", O_RDWR | O_TRUNC, 0, R_CACHED), EAGAIN);
	CHECK_ERR(oa2(d, "new", O_CREAT | O_WRONLY, 0644, R_CACHED), EAGAIN);
	CHECK_ERR(oa2(-1, "f", O_RDONLY, 0, 0), EBADF);
	CHECK_ERR(oa2(d, "missing", O_RDONLY, 0, 0), ENOENT);
	CHECK_ERR(oa2(d, "", O_RDONLY, 0, 0), ENOENT);

	long fd = CHECK_OK(oa2(d, "new", O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0640, 0));
	struct stat st;
	CHECK_OK(fstat((int)fd, &st));
	CHECK_EQ(st.st_mode & 0777, 0640 & ~umask(022));
	CHECK_EQ(fcntl((int)fd, F_GETFD), FD_CLOEXEC);
	close((int)fd);
	CHECK_OK(unlinkat(d, "new", 0));
}

static void test_symlinks(int d)
{
	char magic[64];
	int fd = CHECK_OK(openat(d, "f", O_RDONLY));

	CHECK_EQ(opens(d, "rel", O_RDONLY, 0), 0);
	CHECK_ERR(oa2(d, "rel", O_RDONLY, 0, R_NO_SYMLINKS), ELOOP);
	CHECK_ERR(oa2(d, "subl/.", O_RDONLY, 0, R_NO_SYMLINKS), ELOOP);
	CHECK_EQ(opens(d, "rel", O_PATH | O_NOFOLLOW, R_NO_SYMLINKS), 0);
	CHECK_EQ(opens(d, "sub/..", O_RDONLY, R_NO_SYMLINKS), 0);

	snprintf(magic, sizeof(magic), "/proc/self/fd/%d", fd);
	CHECK_EQ(opens(AT_FDCWD, magic, O_RDONLY, 0), 0);
	CHECK_ERR(oa2(AT_FDCWD, magic, O_RDONLY, 0, R_NO_MAGICLINKS), ELOOP);
	CHECK_EQ(opens(AT_FDCWD, magic, O_PATH | O_NOFOLLOW, R_NO_MAGICLINKS), 0);
	CHECK_ERR(oa2(AT_FDCWD, magic, O_RDONLY, 0, R_NO_SYMLINKS), ELOOP);
	CHECK_EQ(opens(d, "rel", O_RDONLY, R_NO_MAGICLINKS), 0);
	close(fd);
}

static void test_scopes(int d)
{
	/* RESOLVE_BENEATH: stay below d. */
	CHECK_EQ(opens(d, "f", O_RDONLY, R_BENEATH), 0);
	CHECK_EQ(opens(d, "sub/../f", O_RDONLY, R_BENEATH), 0);
	CHECK_EQ(opens(d, "rel", O_RDONLY, R_BENEATH), 0);
	CHECK_ERR(oa2(d, "../outside", O_RDONLY, 0, R_BENEATH), EXDEV);
	CHECK_ERR(oa2(d, "..", O_RDONLY, 0, R_BENEATH), EXDEV);
	CHECK_ERR(oa2(d, "up", O_RDONLY, 0, R_BENEATH), EXDEV);
	CHECK_ERR(oa2(d, "abs", O_RDONLY, 0, R_BENEATH), EXDEV);
	CHECK_ERR(oa2(d, "/tmp", O_RDONLY, 0, R_BENEATH), EXDEV);
	CHECK_ERR(oa2(-1, "/tmp", O_RDONLY, 0, R_BENEATH), EXDEV);

	/* RESOLVE_IN_ROOT: d is /. */
	CHECK_EQ(opens(d, "/f", O_RDONLY, R_IN_ROOT), 0);
	CHECK_EQ(opens(d, "../../f", O_RDONLY, R_IN_ROOT), 0);
	CHECK_EQ(opens(d, "/sub/../../f", O_RDONLY, R_IN_ROOT), 0);
	CHECK_ERR(oa2(d, "up", O_RDONLY, 0, R_IN_ROOT), ENOENT);
	CHECK_ERR(oa2(d, "abs", O_RDONLY, 0, R_IN_ROOT), ENOENT);
	CHECK_ERR(oa2(d, "/outside", O_RDONLY, 0, R_IN_ROOT), ENOENT);

	/* RESOLVE_NO_XDEV: /proc is another mount. */
	int root = CHECK_OK(open("/", O_PATH | O_DIRECTORY));
	int proc = CHECK_OK(open("/proc", O_PATH | O_DIRECTORY));
	CHECK_EQ(opens(d, "f", O_RDONLY, R_NO_XDEV), 0);
	CHECK_ERR(oa2(root, "proc/self", O_PATH, 0, R_NO_XDEV), EXDEV);
	CHECK_ERR(oa2(proc, "..", O_PATH, 0, R_NO_XDEV), EXDEV);
	CHECK_EQ(opens(proc, "self", O_PATH | O_NOFOLLOW, R_NO_XDEV), 0);
	close(proc);
	close(root);
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];

	check_init(argc, argv);
	strcpy(scratch, "/tmp/moat-openat2-XXXXXX");
	if (!mkdtemp(scratch)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	int top = CHECK_OK(open(scratch, O_RDONLY | O_DIRECTORY));
	CHECK_OK(mkdirat(top, "d", 0755));
	CHECK_OK(close(CHECK_OK(openat(top, "outside", O_CREAT | O_WRONLY, 0644))));
	int d = CHECK_OK(openat(top, "d", O_RDONLY | O_DIRECTORY));
	CHECK_OK(close(CHECK_OK(openat(d, "f", O_CREAT | O_WRONLY, 0644))));
	CHECK_OK(mkdirat(d, "sub", 0755));
	CHECK_OK(symlinkat("f", d, "rel"));
	CHECK_OK(symlinkat("sub", d, "subl"));
	CHECK_OK(symlinkat("../outside", d, "up"));
	snprintf(path, sizeof(path), "%s/d/f", scratch);
	CHECK_OK(symlinkat(path, d, "abs"));

	test_struct(d);
	test_fields(d);
	test_symlinks(d);
	test_scopes(d);

	for (const char *const *n = (const char *const[]){ "f", "rel", "subl", "up", "abs", NULL }; *n; n++)
		CHECK_OK(unlinkat(d, *n, 0));
	CHECK_OK(unlinkat(d, "sub", AT_REMOVEDIR));
	close(d);
	CHECK_OK(unlinkat(top, "d", AT_REMOVEDIR));
	CHECK_OK(unlinkat(top, "outside", 0));
	close(top);
	CHECK_OK(rmdir(scratch));
	return check_finish();
}
