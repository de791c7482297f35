/*
 * file_xattrat: setxattrat, getxattrat, listxattrat and removexattrat,
 * the extended attribute calls that name their file as the *at calls do,
 * in a fresh directory under /tmp.
 *
 * Checks: user.* set through a struct xattr_args by dirfd and a relative
 * path, got back (size 0 answers the size, a short buffer ERANGE),
 * listed and removed (then ENODATA); XATTR_CREATE on an existing name
 * EEXIST; AT_EMPTY_PATH with an empty or NULL path works on the file open
 * at dirfd, EBADF for an O_PATH descriptor; an empty path without it
 * ENOENT; through a symlink the target's attributes, with
 * AT_SYMLINK_NOFOLLOW the link's (EPERM to set user.*, ENODATA to get);
 * struct sizes: below 16 EINVAL, 32 with zero tail taken, a non-zero tail
 * or over a page E2BIG; unknown at_flags and xattr flags EINVAL, getxattrat
 * flags EINVAL; an empty name ERANGE; EFAULT for the struct, the name and
 * the path outside the address space; EBADF for a bad dirfd.
 */
// covers: setxattrat getxattrat listxattrat removexattrat
// places: bind root
#include "check.h"

#include <stdint.h>
#include <sys/xattr.h>

#ifndef SYS_setxattrat
#define SYS_setxattrat 463
#define SYS_getxattrat 464
#define SYS_listxattrat 465
#define SYS_removexattrat 466
#endif

struct xattr_args {
	uint64_t value;
	uint32_t size, flags;
};

static long setat(int dfd, const char *path, unsigned at, const char *name,
		  const char *value, int flags)
{
	struct xattr_args a = { (uintptr_t)value, (uint32_t)strlen(value), (uint32_t)flags };

	return syscall(SYS_setxattrat, dfd, path, at, name, &a, sizeof(a));
}

static long getat(int dfd, const char *path, unsigned at, const char *name, char *buf, size_t size)
{
	struct xattr_args a = { (uintptr_t)buf, (uint32_t)size, 0 };

	return syscall(SYS_getxattrat, dfd, path, at, name, &a, sizeof(a));
}

int main(int argc, char **argv)
{
	char scratch[64] = "/tmp/moat-xattrat-XXXXXX", buf[256];

	check_init(argc, argv);
	if (!mkdtemp(scratch)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	int dir = CHECK_OK(open(scratch, O_RDONLY | O_DIRECTORY));
	int fd = CHECK_OK(openat(dir, "f", O_RDWR | O_CREAT | O_EXCL, 0644));
	int opath = CHECK_OK(openat(dir, "f", O_PATH));
	CHECK_OK(symlinkat("f", dir, "l"));

	/* Set, get, list, remove by dirfd and path. */
	CHECK_EQ(setat(dir, "f", 0, "user.colour", "blue", 0), 0);
	memset(buf, 0, sizeof(buf));
	CHECK_EQ(getat(dir, "f", 0, "user.colour", buf, sizeof(buf)), 4);
	CHECK_STR(buf, "blue");
	CHECK_EQ(getat(dir, "f", 0, "user.colour", NULL, 0), 4);
	CHECK_ERR(getat(dir, "f", 0, "user.colour", buf, 2), ERANGE);
	CHECK_EQ(fgetxattr(fd, "user.colour", buf, sizeof(buf)), 4);
	CHECK_ERR(setat(dir, "f", 0, "user.colour", "red", XATTR_CREATE), EEXIST);
	CHECK_EQ(setat(dir, "f", 0, "user.colour", "red", XATTR_REPLACE), 0);
	CHECK_EQ(syscall(SYS_listxattrat, dir, "f", 0, buf, sizeof(buf)), 12);
	CHECK_STR(buf, "user.colour");
	CHECK_EQ(syscall(SYS_listxattrat, dir, "f", 0, NULL, 0), 12);
	CHECK_ERR(syscall(SYS_listxattrat, dir, "f", 0, buf, 3), ERANGE);

	/* AT_EMPTY_PATH: the file at dirfd. */
	CHECK_EQ(setat(fd, "", AT_EMPTY_PATH, "user.shape", "round", 0), 0);
	CHECK_EQ(setat(fd, NULL, AT_EMPTY_PATH, "user.shape", "square", 0), 0);
	CHECK_EQ(getat(fd, "", AT_EMPTY_PATH, "user.shape", buf, sizeof(buf)), 6);
	CHECK_EQ(syscall(SYS_listxattrat, fd, "", AT_EMPTY_PATH, buf, sizeof(buf)), 23);
	CHECK_ERR(setat(opath, "", AT_EMPTY_PATH, "user.shape", "x", 0), EBADF);
	CHECK_ERR(getat(opath, "", AT_EMPTY_PATH, "user.shape", buf, sizeof(buf)), EBADF);
	CHECK_ERR(setat(fd, "", 0, "user.shape", "x", 0), ENOENT);
	CHECK_EQ(syscall(SYS_removexattrat, fd, "", AT_EMPTY_PATH, "user.shape"), 0);
	CHECK_ERR(getat(dir, "f", 0, "user.shape", buf, sizeof(buf)), ENODATA);

	/* Through a symlink, or on it. */
	CHECK_EQ(getat(dir, "l", 0, "user.colour", buf, sizeof(buf)), 3);
	CHECK_ERR(getat(dir, "l", AT_SYMLINK_NOFOLLOW, "user.colour", buf, sizeof(buf)), ENODATA);
	CHECK_ERR(setat(dir, "l", AT_SYMLINK_NOFOLLOW, "user.colour", "x", 0), EPERM);

	/* The struct's size. */
	struct xattr_args a = { (uintptr_t)"v", 1, 0 };
	char big[32] = { 0 };
	memcpy(big, &a, sizeof(a));
	CHECK_ERR(syscall(SYS_setxattrat, dir, "f", 0, "user.v", &a, 15L), EINVAL);
	CHECK_EQ(syscall(SYS_setxattrat, dir, "f", 0, "user.v", big, 32L), 0);
	big[20] = 1;
	CHECK_ERR(syscall(SYS_setxattrat, dir, "f", 0, "user.v", big, 32L), E2BIG);
	CHECK_ERR(syscall(SYS_setxattrat, dir, "f", 0, "user.v", big, 4097L), E2BIG);
	CHECK_ERR(syscall(SYS_getxattrat, dir, "f", 0, "user.v", &a, 8L), EINVAL);
	CHECK_ERR(syscall(SYS_setxattrat, dir, "f", 0, "user.v", (void *)8, 16L), EFAULT);

	/* Flags and names. */
	CHECK_ERR(setat(dir, "f", AT_SYMLINK_FOLLOW, "user.v", "x", 0), EINVAL);
	CHECK_ERR(setat(dir, "f", 0, "user.v", "x", 4), EINVAL);
	struct xattr_args g = { (uintptr_t)buf, sizeof(buf), 1 };
	CHECK_ERR(syscall(SYS_getxattrat, dir, "f", 0, "user.v", &g, sizeof(g)), EINVAL);
	CHECK_ERR(syscall(SYS_listxattrat, dir, "f", 8, buf, sizeof(buf)), EINVAL);
	CHECK_ERR(syscall(SYS_removexattrat, dir, "f", 2, "user.v"), EINVAL);
	CHECK_ERR(syscall(SYS_removexattrat, dir, "f", 0, ""), ERANGE);
	CHECK_ERR(syscall(SYS_removexattrat, dir, "f", 0, (char *)8), EFAULT);
	CHECK_ERR(syscall(SYS_removexattrat, dir, (char *)8, 0, "user.v"), EFAULT);
	CHECK_ERR(setat(-1, "f", 0, "user.v", "x", 0), EBADF);
	CHECK_ERR(syscall(SYS_listxattrat, 9999, "", AT_EMPTY_PATH, buf, sizeof(buf)), EBADF);

	CHECK_EQ(syscall(SYS_removexattrat, dir, "f", 0, "user.v"), 0);
	CHECK_EQ(syscall(SYS_removexattrat, dir, "f", 0, "user.colour"), 0);
	CHECK_ERR(syscall(SYS_removexattrat, dir, "f", 0, "user.colour"), ENODATA);
	CHECK_EQ(syscall(SYS_listxattrat, dir, "f", 0, buf, sizeof(buf)), 0);

	close(opath);
	close(fd);
	CHECK_OK(unlinkat(dir, "l", 0));
	CHECK_OK(unlinkat(dir, "f", 0));
	close(dir);
	CHECK_OK(rmdir(scratch));
	return check_finish();
}
