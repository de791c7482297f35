/*
 * file_open_stat: opening, naming and listing files.
 *
 * Checks: openat relative to AT_FDCWD and to a directory fd, the errors
 * ENOENT, ENOTDIR (O_DIRECTORY on a file, a file as a path component), ELOOP
 * (O_NOFOLLOW on a symlink), EISDIR (a directory for writing), EEXIST
 * (O_CREAT|O_EXCL) and, in the sandbox, EROFS (the rootfs is read-only);
 * lowest-free descriptor numbers and close; fstat/newfstatat/statx fields
 * (type, permission bits, size, nlink, inode stable across calls and paths,
 * AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH); readlinkat truncation and EINVAL on a
 * non-link; getdents64 listing exactly the known entries with their types
 * and inodes, and again after rewinding; faccessat; getcwd, chdir, fchdir.
 */
// covers: openat close fstat newfstatat statx readlinkat getdents64 faccessat faccessat2 getcwd chdir fchdir
#include "check.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static void test_openat(void)
{
	int dir = CHECK_OK(openat(AT_FDCWD, DATA_DIR, O_RDONLY | O_DIRECTORY));
	struct stat a, b;
	int fd;

	fd = CHECK_OK(syscall(SYS_openat, dir, "hello.txt", O_RDONLY));
	CHECK_OK(fstat(fd, &a));
	close(fd);
	fd = CHECK_OK(syscall(SYS_openat, AT_FDCWD, HELLO_PATH, O_RDONLY));
	CHECK_OK(fstat(fd, &b));
	close(fd);
	CHECK_EQ(a.st_ino, b.st_ino);
	CHECK_EQ(a.st_dev, b.st_dev);

	/* An absolute path ignores the directory fd, even a bad one. */
	fd = CHECK_OK(syscall(SYS_openat, 9999, "/", O_RDONLY | O_DIRECTORY));
	close(fd);

	CHECK_ERR(syscall(SYS_openat, dir, "missing", O_RDONLY), ENOENT);
	CHECK_ERR(syscall(SYS_openat, dir, "missing/x", O_RDONLY), ENOENT);
	CHECK_ERR(syscall(SYS_openat, dir, "hello.txt/x", O_RDONLY), ENOTDIR);
	CHECK_ERR(syscall(SYS_openat, dir, "hello.txt", O_RDONLY | O_DIRECTORY),
		  ENOTDIR);
	CHECK_ERR(syscall(SYS_openat, dir, "link", O_RDONLY | O_NOFOLLOW), ELOOP);
	CHECK_ERR(syscall(SYS_openat, dir, "", O_RDONLY), ENOENT);
	CHECK_ERR(syscall(SYS_openat, dir, "dir", O_WRONLY), EISDIR);
	CHECK_ERR(syscall(SYS_openat, dir, "hello.txt",
			  O_WRONLY | O_CREAT | O_EXCL, 0644), EEXIST);
	/* A relative path needs a directory fd. */
	fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	CHECK_ERR(syscall(SYS_openat, fd, "x", O_RDONLY), ENOTDIR);
	close(fd);
	CHECK_ERR(syscall(SYS_openat, 9999, "x", O_RDONLY), EBADF);
	CHECK_ERR(syscall(SYS_openat, dir, (void *)1, O_RDONLY), EFAULT);

	/* Following the symlink reaches the file itself. */
	fd = CHECK_OK(syscall(SYS_openat, dir, "link", O_RDONLY));
	CHECK_OK(fstat(fd, &b));
	CHECK_EQ(b.st_ino, a.st_ino);
	close(fd);

	/* Outside a container the rootfs is an ordinary writable directory:
	 * only the sandbox is known to refuse writes. */
	if (!check_native)
		CHECK_ERR(syscall(SYS_openat, dir, "hello.txt", O_WRONLY), EROFS);
	close(dir);
}

static void test_fd_numbers(void)
{
	int a = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	int b = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	int c;

	CHECK(a > 2 && b > a);
	/* The lowest free number is reused. */
	CHECK_EQ(syscall(SYS_close, a), 0);
	c = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	CHECK_EQ(c, a);
	CHECK_EQ(syscall(SYS_close, c), 0);
	CHECK_EQ(syscall(SYS_close, b), 0);
	CHECK_ERR(syscall(SYS_close, b), EBADF);
	CHECK_ERR(syscall(SYS_close, -1), EBADF);
}

static void test_stat(void)
{
	int dir = CHECK_OK(open(DATA_DIR, O_RDONLY | O_DIRECTORY));
	int fd = CHECK_OK(openat(dir, "hello.txt", O_RDONLY));
	struct stat st, st2, lst, dst;
	struct statx sx;

	CHECK_OK(syscall(SYS_fstat, fd, &st));
	CHECK(S_ISREG(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 0644);
	CHECK_EQ(st.st_size, HELLO_LEN);
	CHECK_EQ(st.st_nlink, 1);
	CHECK(st.st_blksize > 0);
	CHECK_OK(syscall(SYS_fstat, fd, &st2));
	CHECK_EQ(st2.st_ino, st.st_ino);
	CHECK_EQ(st2.st_dev, st.st_dev);

	CHECK_OK(syscall(SYS_newfstatat, dir, "hello.txt", &st2, 0));
	CHECK_EQ(st2.st_ino, st.st_ino);
	CHECK_EQ(st2.st_size, HELLO_LEN);
	/* Without AT_SYMLINK_NOFOLLOW the link is followed... */
	CHECK_OK(syscall(SYS_newfstatat, dir, "link", &st2, 0));
	CHECK_EQ(st2.st_ino, st.st_ino);
	/* ... with it, the link itself: its size is the target's length. */
	CHECK_OK(syscall(SYS_newfstatat, dir, "link", &lst, AT_SYMLINK_NOFOLLOW));
	CHECK(S_ISLNK(lst.st_mode));
	CHECK_EQ(lst.st_size, strlen(LINK_TARGET));
	CHECK(lst.st_ino != st.st_ino);
	/* AT_EMPTY_PATH stats the fd itself. */
	CHECK_OK(syscall(SYS_newfstatat, dir, "", &dst, AT_EMPTY_PATH));
	CHECK(S_ISDIR(dst.st_mode));
	CHECK_ERR(syscall(SYS_newfstatat, dir, "", &dst, 0), ENOENT);
	CHECK_ERR(syscall(SYS_newfstatat, dir, "missing", &dst, 0), ENOENT);
	CHECK_ERR(syscall(SYS_newfstatat, dir, "hello.txt", (void *)1, 0), EFAULT);
	CHECK_ERR(syscall(SYS_newfstatat, dir, "hello.txt", &dst, 0x40000000),
		  EINVAL);
	CHECK_ERR(syscall(SYS_fstat, 9999, &st2), EBADF);

	memset(&sx, 0, sizeof(sx));
	CHECK_OK(syscall(SYS_statx, dir, "hello.txt", 0, STATX_BASIC_STATS, &sx));
	CHECK_EQ(sx.stx_mask & (STATX_TYPE | STATX_MODE | STATX_NLINK |
				STATX_SIZE | STATX_INO),
		 STATX_TYPE | STATX_MODE | STATX_NLINK | STATX_SIZE | STATX_INO);
	CHECK_EQ(sx.stx_ino, st.st_ino);
	CHECK_EQ(sx.stx_size, HELLO_LEN);
	CHECK_EQ(sx.stx_mode, st.st_mode);
	CHECK_EQ(sx.stx_nlink, 1);
	CHECK_EQ(makedev(sx.stx_dev_major, sx.stx_dev_minor), st.st_dev);
	CHECK_OK(syscall(SYS_statx, dir, "link", AT_SYMLINK_NOFOLLOW,
			 STATX_BASIC_STATS, &sx));
	CHECK(S_ISLNK(sx.stx_mode));
	CHECK_EQ(sx.stx_ino, lst.st_ino);
	CHECK_OK(syscall(SYS_statx, fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &sx));
	CHECK_EQ(sx.stx_ino, st.st_ino);
	CHECK_ERR(syscall(SYS_statx, dir, "hello.txt", 0, STATX__RESERVED, &sx),
		  EINVAL);
	CHECK_ERR(syscall(SYS_statx, dir, "hello.txt", 0x40000000,
			  STATX_BASIC_STATS, &sx), EINVAL);
	CHECK_ERR(syscall(SYS_statx, dir, "missing", 0, STATX_BASIC_STATS, &sx),
		  ENOENT);
	close(fd);
	close(dir);
}

static void test_readlinkat(void)
{
	int dir = CHECK_OK(open(DATA_DIR, O_RDONLY | O_DIRECTORY));
	char buf[64];

	/* The target comes back without a terminating NUL. */
	memset(buf, '#', sizeof(buf));
	CHECK_EQ(syscall(SYS_readlinkat, dir, "link", buf, sizeof(buf)),
		 strlen(LINK_TARGET));
	CHECK_MEM(buf, LINK_TARGET, strlen(LINK_TARGET));
	CHECK_EQ(buf[strlen(LINK_TARGET)], '#');
	/* A small buffer truncates silently. */
	memset(buf, '#', sizeof(buf));
	CHECK_EQ(syscall(SYS_readlinkat, dir, "link", buf, 4), 4);
	CHECK_MEM(buf, "hell#", 5);
	CHECK_EQ(syscall(SYS_readlinkat, AT_FDCWD, LINK_PATH, buf, sizeof(buf)),
		 strlen(LINK_TARGET));
	CHECK_ERR(syscall(SYS_readlinkat, dir, "hello.txt", buf, sizeof(buf)),
		  EINVAL);
	CHECK_ERR(syscall(SYS_readlinkat, dir, "link", buf, 0), EINVAL);
	CHECK_ERR(syscall(SYS_readlinkat, dir, "missing", buf, sizeof(buf)),
		  ENOENT);
	close(dir);
}

struct want_entry {
	const char *name;
	unsigned char type;
	int seen;
};

/* list_dir reads the whole directory with small getdents64 calls and checks
 * it holds exactly the wanted entries. */
static void list_dir(int fd)
{
	struct want_entry want[] = {
		{ ".", DT_DIR, 0 }, { "..", DT_DIR, 0 }, { "a", DT_REG, 0 },
		{ "b", DT_REG, 0 }, { "sub", DT_DIR, 0 },
	};
	size_t nwant = sizeof(want) / sizeof(want[0]);
	char buf[64] __attribute__((aligned(8)));
	long n, off, calls = 0;
	size_t i;

	/* 64 bytes hold at most two entries, so the listing takes several
	 * calls and the offset must carry over correctly. */
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		calls++;
		for (off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			struct stat st;

			for (i = 0; i < nwant; i++)
				if (strcmp(d->d_name, want[i].name) == 0)
					break;
			if (i == nwant) {
				check_fail(__FILE__, __LINE__,
					   "unexpected entry \"%s\"", d->d_name);
			} else {
				want[i].seen++;
				CHECK_EQ(d->d_type, want[i].type);
				if (fstatat(fd, d->d_name, &st,
					    AT_SYMLINK_NOFOLLOW) == 0 &&
				    strcmp(d->d_name, "..") != 0)
					CHECK_EQ(d->d_ino, st.st_ino);
			}
			CHECK(d->d_reclen > 0 && d->d_reclen % 8 == 0);
			off += d->d_reclen ? d->d_reclen : n;
		}
	}
	CHECK_EQ(n, 0);
	CHECK(calls >= 2);
	for (i = 0; i < nwant; i++)
		if (want[i].seen != 1)
			check_fail(__FILE__, __LINE__,
				   "expected entry \"%s\" once, saw it %d times",
				   want[i].name, want[i].seen);
}

static void test_getdents64(void)
{
	int fd = CHECK_OK(open(LIST_DIR, O_RDONLY | O_DIRECTORY));
	int file = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	char buf[256] __attribute__((aligned(8)));

	list_dir(fd);
	/* At the end it keeps returning 0; a rewind lists everything again. */
	CHECK_EQ(syscall(SYS_getdents64, fd, buf, sizeof(buf)), 0);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_SET), 0);
	list_dir(fd);

	CHECK_EQ(sys_lseek(fd, 0, SEEK_SET), 0);
	CHECK_ERR(syscall(SYS_getdents64, fd, buf, 8), EINVAL);
	CHECK_ERR(syscall(SYS_getdents64, fd, (void *)1, sizeof(buf)), EFAULT);
	CHECK_ERR(syscall(SYS_getdents64, file, buf, sizeof(buf)), ENOTDIR);
	CHECK_ERR(syscall(SYS_getdents64, 9999, buf, sizeof(buf)), EBADF);
	close(file);
	close(fd);
}

static void test_faccessat(void)
{
	CHECK_EQ(syscall(SYS_faccessat, AT_FDCWD, HELLO_PATH, R_OK), 0);
	CHECK_EQ(syscall(SYS_faccessat, AT_FDCWD, HELLO_PATH, F_OK), 0);
	CHECK_EQ(syscall(SYS_faccessat, AT_FDCWD, DATA_DIR, R_OK | X_OK), 0);
	CHECK_ERR(syscall(SYS_faccessat, AT_FDCWD, DATA_DIR "/missing", F_OK),
		  ENOENT);
	CHECK_ERR(syscall(SYS_faccessat, AT_FDCWD, HELLO_PATH, 0x100), EINVAL);

	/* faccessat2 adds flags: AT_EACCESS, AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH. */
	CHECK_EQ(syscall(SYS_faccessat2, AT_FDCWD, HELLO_PATH, R_OK, AT_EACCESS), 0);
	CHECK_EQ(syscall(SYS_faccessat2, AT_FDCWD, LINK_PATH, F_OK, AT_SYMLINK_NOFOLLOW), 0);
	CHECK_ERR(syscall(SYS_faccessat2, AT_FDCWD, HELLO_PATH, R_OK, 0x1), EINVAL);
	CHECK_ERR(syscall(SYS_faccessat2, AT_FDCWD, HELLO_PATH, 0x100, 0), EINVAL);
	{
		int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
		CHECK_EQ(syscall(SYS_faccessat2, fd, "", R_OK, AT_EMPTY_PATH), 0);
		CHECK_ERR(syscall(SYS_faccessat2, fd, "", R_OK, 0), ENOENT);
		close(fd);
	}
	if (!check_native)
		CHECK_ERR(syscall(SYS_faccessat, AT_FDCWD, HELLO_PATH, W_OK), EROFS);
}

static void test_cwd(void)
{
	char start[PATH_MAX], buf[PATH_MAX], small[2];
	int dir;
	long n;

	n = CHECK_OK(syscall(SYS_getcwd, start, sizeof(start)));
	/* The raw call returns the length including the NUL. */
	CHECK_EQ(n, strlen(start) + 1);
	if (!check_native)
		CHECK_STR(start, "/");
	CHECK_ERR(syscall(SYS_getcwd, small, 1), ERANGE);

	CHECK_OK(syscall(SYS_chdir, DATA_DIR));
	CHECK_OK(syscall(SYS_getcwd, buf, sizeof(buf)));
	if (!check_native)
		CHECK_STR(buf, "/" DATA_DIR);
	CHECK(strlen(buf) >= strlen(DATA_DIR) &&
	      strcmp(buf + strlen(buf) - strlen(DATA_DIR), DATA_DIR) == 0);
	/* Relative paths now start here. */
	CHECK_EQ(syscall(SYS_faccessat, AT_FDCWD, "hello.txt", R_OK), 0);
	CHECK_OK(syscall(SYS_chdir, ".."));
	CHECK_OK(syscall(SYS_getcwd, buf, sizeof(buf)));
	CHECK(strcmp(buf + strlen(buf) - strlen("/conformance"),
		     "/conformance") == 0);

	CHECK_ERR(syscall(SYS_chdir, "data/hello.txt"), ENOTDIR);
	CHECK_ERR(syscall(SYS_chdir, "data/missing"), ENOENT);

	dir = CHECK_OK(open(start, O_RDONLY | O_DIRECTORY));
	CHECK_OK(syscall(SYS_fchdir, dir));
	CHECK_OK(syscall(SYS_getcwd, buf, sizeof(buf)));
	CHECK_STR(buf, start);
	close(dir);
	dir = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	CHECK_ERR(syscall(SYS_fchdir, dir), ENOTDIR);
	close(dir);
	CHECK_ERR(syscall(SYS_fchdir, 9999), EBADF);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_openat();
	test_fd_numbers();
	test_stat();
	test_readlinkat();
	test_getdents64();
	test_faccessat();
	test_cwd();
	return check_finish();
}
