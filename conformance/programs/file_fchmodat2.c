/*
 * file_fchmodat2: fchmodat2, fchmodat with flags, in a fresh directory
 * under /tmp.
 *
 * Checks: flags 0 and AT_SYMLINK_NOFOLLOW change a file's mode; through
 * a symlink without flags the target's; AT_SYMLINK_NOFOLLOW on a symlink
 * EOPNOTSUPP, the link and the target unchanged; AT_EMPTY_PATH changes
 * the file open at dirfd, an O_PATH descriptor's too, and one on a
 * symlink (O_PATH|O_NOFOLLOW) EOPNOTSUPP; unknown flags EINVAL, an empty
 * path without AT_EMPTY_PATH ENOENT, a missing file ENOENT, a bad dirfd
 * EBADF, a path outside the address space EFAULT.
 */
// covers: fchmodat2
// places: bind root
#include "check.h"

#include <limits.h>
#include <sys/stat.h>

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

static long fchmodat2(int dirfd, const char *path, mode_t mode, int flags)
{
	return syscall(SYS_fchmodat2, dirfd, path, mode, flags);
}

static unsigned mode_of(int dirfd, const char *name, int flags)
{
	struct stat st;

	CHECK_OK(fstatat(dirfd, name, &st, flags));
	return st.st_mode & 07777;
}

int main(int argc, char **argv)
{
	char scratch[64] = "/tmp/moat-fchmodat2-XXXXXX";

	check_init(argc, argv);
	if (!mkdtemp(scratch)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	int dir = CHECK_OK(open(scratch, O_RDONLY | O_DIRECTORY));
	int fd = CHECK_OK(openat(dir, "f", O_RDWR | O_CREAT | O_EXCL, 0644));
	CHECK_OK(symlinkat("f", dir, "l"));

	CHECK_EQ(fchmodat2(dir, "f", 0600, 0), 0);
	CHECK_EQ(mode_of(dir, "f", 0), 0600);
	CHECK_EQ(fchmodat2(dir, "f", 0640, AT_SYMLINK_NOFOLLOW), 0);
	CHECK_EQ(mode_of(dir, "f", 0), 0640);
	CHECK_EQ(fchmodat2(dir, "l", 0604, 0), 0);
	CHECK_EQ(mode_of(dir, "f", 0), 0604);

	unsigned link_mode = mode_of(dir, "l", AT_SYMLINK_NOFOLLOW);
	CHECK_ERR(fchmodat2(dir, "l", 0600, AT_SYMLINK_NOFOLLOW), EOPNOTSUPP);
	CHECK_EQ(mode_of(dir, "l", AT_SYMLINK_NOFOLLOW), link_mode);
	CHECK_EQ(mode_of(dir, "f", 0), 0604);

	CHECK_EQ(fchmodat2(fd, "", 0660, AT_EMPTY_PATH), 0);
	CHECK_EQ(mode_of(dir, "f", 0), 0660);
	int opath = CHECK_OK(openat(dir, "f", O_PATH));
	CHECK_EQ(fchmodat2(opath, "", 0644, AT_EMPTY_PATH), 0);
	CHECK_EQ(mode_of(dir, "f", 0), 0644);
	int lpath = CHECK_OK(openat(dir, "l", O_PATH | O_NOFOLLOW));
	CHECK_ERR(fchmodat2(lpath, "", 0600, AT_EMPTY_PATH), EOPNOTSUPP);
	CHECK_ERR(fchmodat2(lpath, "", 0600, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW), EOPNOTSUPP);

	CHECK_ERR(fchmodat2(dir, "f", 0600, AT_REMOVEDIR), EINVAL);
	CHECK_ERR(fchmodat2(dir, "f", 0600, -1), EINVAL);
	CHECK_ERR(fchmodat2(fd, "", 0600, 0), ENOENT);
	CHECK_ERR(fchmodat2(dir, "missing", 0600, 0), ENOENT);
	CHECK_ERR(fchmodat2(-1, "f", 0600, 0), EBADF);
	CHECK_ERR(fchmodat2(dir, (const char *)8, 0600, 0), EFAULT);
	CHECK_EQ(mode_of(dir, "f", 0), 0644);

	close(lpath);
	close(opath);
	close(fd);
	CHECK_OK(unlinkat(dir, "l", 0));
	CHECK_OK(unlinkat(dir, "f", 0));
	close(dir);
	CHECK_OK(rmdir(scratch));
	return check_finish();
}
