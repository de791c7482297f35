/*
 * file_fileattr: file_getattr and file_setattr, the struct file_attr
 * (FS_IOC_FSGETXATTR's fsxattr) by path, in a fresh directory under /tmp.
 *
 * Checks: a new file and a directory report no flags, hints or project
 * (the struct's bytes past 24 zeroed), through a symlink the target's, an
 * O_RDWR descriptor's file with AT_EMPTY_PATH (a NULL path too);
 * file_setattr of nothing succeeds (FS_XFLAG_HASATTR, read-only, ignored,
 * fa_nextents too); EOPNOTSUPP for a symlink with AT_SYMLINK_NOFOLLOW, a
 * pipe, /dev/null, /proc files and a project id; EINVAL for unknown at
 * flags, unknown xflags, FS_XFLAG_EXTSZINHERIT on a file and a size below
 * 24; E2BIG over a page and for a set with a non-zero tail; EFAULT for
 * the struct and the path outside the address space; EBADF for an O_PATH
 * descriptor with AT_EMPTY_PATH and a bad dirfd; ENOENT.
 */
// covers: file_getattr file_setattr
// places: bind root
#include "check.h"

#include <stdint.h>
#include <sys/stat.h>

#ifndef SYS_file_getattr
#define SYS_file_getattr 468
#define SYS_file_setattr 469
#endif

struct file_attr {
	uint64_t fa_xflags;
	uint32_t fa_extsize, fa_nextents, fa_projid, fa_cowextsize;
};

static long fget(int dfd, const char *path, void *fa, size_t size, unsigned flags)
{
	return syscall(SYS_file_getattr, dfd, path, fa, size, flags);
}

static long fset(int dfd, const char *path, const void *fa, size_t size, unsigned flags)
{
	return syscall(SYS_file_setattr, dfd, path, fa, size, flags);
}

int main(int argc, char **argv)
{
	char scratch[64] = "/tmp/moat-fileattr-XXXXXX";
	unsigned char big[64];
	struct file_attr fa, none = { 0 };
	int p[2];

	check_init(argc, argv);
	if (!mkdtemp(scratch)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	int dir = CHECK_OK(open(scratch, O_RDONLY | O_DIRECTORY));
	int fd = CHECK_OK(openat(dir, "f", O_RDWR | O_CREAT | O_EXCL, 0644));
	int opath = CHECK_OK(openat(dir, "f", O_PATH));
	CHECK_OK(mkdirat(dir, "d", 0755));
	CHECK_OK(symlinkat("f", dir, "l"));
	CHECK_OK(pipe(p));

	memset(&fa, 0x55, sizeof(fa));
	CHECK_EQ(fget(dir, "f", &fa, sizeof(fa), 0), 0);
	CHECK_MEM(&fa, &none, sizeof(fa));
	memset(&fa, 0x55, sizeof(fa));
	CHECK_EQ(fget(dir, "d", &fa, sizeof(fa), 0), 0);
	CHECK_MEM(&fa, &none, sizeof(fa));
	memset(big, 0x55, sizeof(big));
	CHECK_EQ(fget(dir, "f", big, sizeof(big), 0), 0);
	CHECK(all_zero(big, sizeof(big)));
	CHECK_EQ(fget(dir, "l", &fa, sizeof(fa), 0), 0);
	CHECK_EQ(fget(fd, "", &fa, sizeof(fa), AT_EMPTY_PATH), 0);
	CHECK_EQ(fget(fd, NULL, &fa, sizeof(fa), AT_EMPTY_PATH), 0);

	CHECK_ERR(fget(dir, "l", &fa, sizeof(fa), AT_SYMLINK_NOFOLLOW), EOPNOTSUPP);
	CHECK_ERR(fget(p[0], "", &fa, sizeof(fa), AT_EMPTY_PATH), EOPNOTSUPP);
	CHECK_ERR(fget(AT_FDCWD, "/dev/null", &fa, sizeof(fa), 0), EOPNOTSUPP);
	CHECK_ERR(fget(AT_FDCWD, "/proc/self/status", &fa, sizeof(fa), 0), EOPNOTSUPP);
	CHECK_ERR(fget(AT_FDCWD, "/proc", &fa, sizeof(fa), 0), EOPNOTSUPP);
	CHECK_ERR(fget(dir, "f", &fa, 23, 0), EINVAL);
	CHECK_ERR(fget(dir, "f", &fa, 4097, 0), E2BIG);
	CHECK_ERR(fget(dir, "f", &fa, sizeof(fa), 2), EINVAL);
	CHECK_ERR(fget(dir, "f", (void *)8, sizeof(fa), 0), EFAULT);
	CHECK_ERR(fget(dir, (char *)8, &fa, sizeof(fa), 0), EFAULT);
	CHECK_ERR(fget(dir, "missing", &fa, sizeof(fa), 0), ENOENT);
	CHECK_ERR(fget(-1, "f", &fa, sizeof(fa), 0), EBADF);
	CHECK_ERR(fget(opath, "", &fa, sizeof(fa), AT_EMPTY_PATH), EBADF);

	/* Setting nothing. */
	CHECK_EQ(fset(dir, "f", &none, sizeof(none), 0), 0);
	CHECK_EQ(fset(dir, "d", &none, sizeof(none), 0), 0);
	CHECK_EQ(fset(fd, "", &none, sizeof(none), AT_EMPTY_PATH), 0);
	struct file_attr ign = { .fa_xflags = 0x80000000u, .fa_nextents = 3 };
	CHECK_EQ(fset(dir, "f", &ign, sizeof(ign), 0), 0);
	memset(big, 0, sizeof(big));
	CHECK_EQ(fset(dir, "f", big, sizeof(big), 0), 0);
	big[40] = 1;
	CHECK_ERR(fset(dir, "f", big, sizeof(big), 0), E2BIG);

	struct file_attr bad = { .fa_xflags = 0x1000 }; /* FS_XFLAG_EXTSZINHERIT */
	CHECK_ERR(fset(dir, "f", &bad, sizeof(bad), 0), EINVAL);
	bad.fa_xflags = 1ULL << 40;
	CHECK_ERR(fset(dir, "f", &bad, sizeof(bad), 0), EINVAL);
	struct file_attr proj = { .fa_projid = 5 };
	CHECK_ERR(fset(dir, "f", &proj, sizeof(proj), 0), EOPNOTSUPP);
	CHECK_ERR(fset(dir, "l", &none, sizeof(none), AT_SYMLINK_NOFOLLOW), EOPNOTSUPP);
	CHECK_ERR(fset(p[0], "", &none, sizeof(none), AT_EMPTY_PATH), EOPNOTSUPP);
	CHECK_ERR(fset(AT_FDCWD, "/dev/null", &none, sizeof(none), 0), EOPNOTSUPP);
	CHECK_ERR(fset(dir, "f", &none, 23, 0), EINVAL);
	CHECK_ERR(fset(dir, "f", &none, sizeof(none), 0x2), EINVAL);
	CHECK_ERR(fset(dir, "f", (void *)8, sizeof(none), 0), EFAULT);
	CHECK_ERR(fset(-1, "f", &none, sizeof(none), 0), EBADF);

	CHECK_EQ(fget(dir, "f", &fa, sizeof(fa), 0), 0);
	CHECK_MEM(&fa, &none, sizeof(fa));

	close(p[0]);
	close(p[1]);
	close(opath);
	close(fd);
	CHECK_OK(unlinkat(dir, "l", 0));
	CHECK_OK(unlinkat(dir, "f", 0));
	CHECK_OK(unlinkat(dir, "d", AT_REMOVEDIR));
	close(dir);
	CHECK_OK(rmdir(scratch));
	return check_finish();
}
