/*
 * file_legacy: the older file calls that x86-64 keeps beside the *at ones.
 *
 * Static binaries and older C libraries still call open, stat, lstat,
 * access, readlink and creat by their own numbers, so a runtime must give
 * them the same answers as openat, newfstatat, faccessat and readlinkat.
 * Checks: open finds the same file as openat and fails the same ways; stat
 * and lstat fill the same fields as newfstatat (lstat of the data symlink is
 * S_IFLNK with the target's length as size); access F_OK/R_OK, ENOENT,
 * EINVAL, and EROFS for W_OK in the sandbox; readlink's result, silent
 * truncation and EINVAL on a non-link; creat, natively in a scratch
 * directory under /tmp (write-only, the umask applied, truncating an
 * existing file without changing its mode), in the sandbox EROFS on the
 * read-only rootfs; EISDIR for a directory either way; sendfile to /dev/null
 * with an offset pointer (the pointer advances, the file offset does not)
 * and without (the file offset advances), short at end of file, count 0,
 * EBADF for the wrong access modes, EINVAL for a negative offset and an
 * O_APPEND output; EINVAL for an input that is a pipe (what Go's io.Copy
 * from an os.Pipe to a TCP connection tries first: EAGAIN from an empty
 * one made it wait forever for the socket to be writable), a socket or a
 * directory, with the pipe's data left in it, and ESPIPE for a pipe with
 * an offset; preadv and pwritev with two iovecs
 * at an offset, leaving the file offset alone, with their EINVAL and EBADF
 * cases.
 */
// covers: open creat stat lstat access readlink sendfile preadv pwritev
#include "check.h"

#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

/*
 * preadv and pwritev take the offset split in two longs (low, high); on
 * x86-64 the low one holds all 64 bits and the high one is ignored. These
 * wrappers pass it with its real type, like sys_pread64.
 */
static long sys_preadv(int fd, const struct iovec *iov, int n, long off)
{
	return syscall(SYS_preadv, fd, iov, n, off, 0L);
}

static long sys_pwritev(int fd, const struct iovec *iov, int n, long off)
{
	return syscall(SYS_pwritev, fd, iov, n, off, 0L);
}

/* CHECK_SAME_STAT asserts that two stat results describe the same file in the
 * same state (st_atime aside: reading may move it). */
#define CHECK_SAME_STAT(a, b)                                              \
	do {                                                               \
		CHECK_EQ((a).st_dev, (b).st_dev);                          \
		CHECK_EQ((a).st_ino, (b).st_ino);                          \
		CHECK_EQ((a).st_mode, (b).st_mode);                        \
		CHECK_EQ((a).st_nlink, (b).st_nlink);                      \
		CHECK_EQ((a).st_uid, (b).st_uid);                          \
		CHECK_EQ((a).st_gid, (b).st_gid);                          \
		CHECK_EQ((a).st_rdev, (b).st_rdev);                        \
		CHECK_EQ((a).st_size, (b).st_size);                        \
		CHECK_EQ((a).st_blksize, (b).st_blksize);                  \
		CHECK_EQ((a).st_blocks, (b).st_blocks);                    \
		CHECK_EQ((a).st_mtim.tv_sec, (b).st_mtim.tv_sec);          \
		CHECK_EQ((a).st_mtim.tv_nsec, (b).st_mtim.tv_nsec);        \
		CHECK_EQ((a).st_ctim.tv_sec, (b).st_ctim.tv_sec);          \
		CHECK_EQ((a).st_ctim.tv_nsec, (b).st_ctim.tv_nsec);        \
	} while (0)

static void test_open(void)
{
	struct stat a, b;
	int fd, fd2;

	fd = CHECK_OK(syscall(SYS_open, HELLO_PATH, O_RDONLY));
	fd2 = CHECK_OK(syscall(SYS_openat, AT_FDCWD, HELLO_PATH, O_RDONLY));
	CHECK_OK(fstat(fd, &a));
	CHECK_OK(fstat(fd2, &b));
	CHECK_SAME_STAT(a, b);
	close(fd2);
	close(fd);
	/* Through the symlink to the same file; not with O_NOFOLLOW. */
	fd = CHECK_OK(syscall(SYS_open, LINK_PATH, O_RDONLY));
	CHECK_OK(fstat(fd, &b));
	CHECK_EQ(b.st_ino, a.st_ino);
	close(fd);
	CHECK_ERR(syscall(SYS_open, LINK_PATH, O_RDONLY | O_NOFOLLOW), ELOOP);
	CHECK_ERR(syscall(SYS_open, DATA_DIR "/missing", O_RDONLY), ENOENT);
	CHECK_ERR(syscall(SYS_open, HELLO_PATH, O_RDONLY | O_DIRECTORY), ENOTDIR);
	CHECK_ERR(syscall(SYS_open, HELLO_PATH "/x", O_RDONLY), ENOTDIR);
	CHECK_ERR(syscall(SYS_open, DATA_DIR, O_WRONLY), EISDIR);
	CHECK_ERR(syscall(SYS_open, "", O_RDONLY), ENOENT);
	CHECK_ERR(syscall(SYS_open, (void *)1, O_RDONLY), EFAULT);
	if (!check_native)
		CHECK_ERR(syscall(SYS_open, HELLO_PATH, O_RDWR), EROFS);
}

static void test_stat(void)
{
	struct stat st, at, lst, lat;

	CHECK_OK(syscall(SYS_stat, HELLO_PATH, &st));
	CHECK_OK(syscall(SYS_newfstatat, AT_FDCWD, HELLO_PATH, &at, 0));
	CHECK_SAME_STAT(st, at);
	CHECK(S_ISREG(st.st_mode));
	CHECK_EQ(st.st_size, HELLO_LEN);

	/* stat follows the link, lstat does not. */
	CHECK_OK(syscall(SYS_stat, LINK_PATH, &lst));
	CHECK_SAME_STAT(lst, at);
	CHECK_OK(syscall(SYS_lstat, LINK_PATH, &lst));
	CHECK_OK(syscall(SYS_newfstatat, AT_FDCWD, LINK_PATH, &lat,
			 AT_SYMLINK_NOFOLLOW));
	CHECK_SAME_STAT(lst, lat);
	CHECK(S_ISLNK(lst.st_mode));
	CHECK_EQ(lst.st_size, strlen(LINK_TARGET));
	CHECK(lst.st_ino != st.st_ino);
	/* On anything but a link lstat is stat. */
	CHECK_OK(syscall(SYS_lstat, HELLO_PATH, &lst));
	CHECK_SAME_STAT(lst, at);
	CHECK_OK(syscall(SYS_stat, LIST_DIR, &st));
	CHECK(S_ISDIR(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 0755);

	CHECK_ERR(syscall(SYS_stat, DATA_DIR "/missing", &st), ENOENT);
	CHECK_ERR(syscall(SYS_lstat, DATA_DIR "/missing", &st), ENOENT);
	CHECK_ERR(syscall(SYS_stat, HELLO_PATH "/x", &st), ENOTDIR);
	CHECK_ERR(syscall(SYS_stat, "", &st), ENOENT);
	CHECK_ERR(syscall(SYS_stat, HELLO_PATH, (void *)1), EFAULT);
	CHECK_ERR(syscall(SYS_lstat, (void *)1, &st), EFAULT);
}

static void test_access(void)
{
	CHECK_EQ(syscall(SYS_access, HELLO_PATH, F_OK), 0);
	CHECK_EQ(syscall(SYS_access, HELLO_PATH, R_OK), 0);
	CHECK_EQ(syscall(SYS_access, LINK_PATH, R_OK), 0);
	CHECK_EQ(syscall(SYS_access, DATA_DIR, R_OK | X_OK), 0);
	CHECK_ERR(syscall(SYS_access, DATA_DIR "/missing", F_OK), ENOENT);
	CHECK_ERR(syscall(SYS_access, HELLO_PATH "/x", F_OK), ENOTDIR);
	CHECK_ERR(syscall(SYS_access, HELLO_PATH, 0x100), EINVAL);
	if (!check_native)
		CHECK_ERR(syscall(SYS_access, HELLO_PATH, W_OK), EROFS);
}

static void test_readlink(void)
{
	char buf[64];

	memset(buf, '#', sizeof(buf));
	CHECK_EQ(syscall(SYS_readlink, LINK_PATH, buf, sizeof(buf)),
		 strlen(LINK_TARGET));
	CHECK_MEM(buf, LINK_TARGET "#", strlen(LINK_TARGET) + 1);
	memset(buf, '#', sizeof(buf));
	CHECK_EQ(syscall(SYS_readlink, LINK_PATH, buf, 3), 3);
	CHECK_MEM(buf, "hel#", 4);
	CHECK_ERR(syscall(SYS_readlink, HELLO_PATH, buf, sizeof(buf)), EINVAL);
	CHECK_ERR(syscall(SYS_readlink, LINK_PATH, buf, 0), EINVAL);
	CHECK_ERR(syscall(SYS_readlink, DATA_DIR "/missing", buf, sizeof(buf)),
		  ENOENT);
	CHECK_ERR(syscall(SYS_readlink, LINK_PATH, (void *)1, sizeof(buf)),
		  EFAULT);
}

/* test_creat_native creates files in a scratch directory of the host. */
static void test_creat_native(void)
{
	char dir[] = "/tmp/moat-conformance-XXXXXX", path[PATH_MAX];
	struct stat st;
	char c;
	mode_t old;
	int fd;

	if (!mkdtemp(dir)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/new", dir);
	old = umask(027);
	/* creat is open(O_CREAT|O_WRONLY|O_TRUNC): a write-only descriptor
	 * on a new empty file whose mode has the umask taken out. */
	fd = CHECK_OK(syscall(SYS_creat, path, 0666));
	CHECK_EQ(fcntl(fd, F_GETFL) & O_ACCMODE, O_WRONLY);
	CHECK_OK(fstat(fd, &st));
	CHECK(S_ISREG(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 0640);
	CHECK_EQ(st.st_size, 0);
	CHECK_EQ(syscall(SYS_write, fd, "data", 4), 4);
	CHECK_ERR(syscall(SYS_read, fd, &c, 1), EBADF);
	close(fd);
	/* An existing file is truncated and keeps its mode. */
	fd = CHECK_OK(syscall(SYS_creat, path, 0600));
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_size, 0);
	CHECK_EQ(st.st_mode & 07777, 0640);
	close(fd);
	umask(old);
	snprintf(path, sizeof(path), "%s/missing/new", dir);
	CHECK_ERR(syscall(SYS_creat, path, 0644), ENOENT);
	CHECK_ERR(syscall(SYS_creat, dir, 0644), EISDIR);
	snprintf(path, sizeof(path), "%s/new", dir);
	unlink(path);
	rmdir(dir);
}

static void test_creat(void)
{
	if (check_native) {
		test_creat_native();
	} else {
		/* Creating and truncating both need a writable file system. */
		CHECK_ERR(syscall(SYS_creat, DATA_DIR "/new", 0644), EROFS);
		CHECK_ERR(syscall(SYS_creat, HELLO_PATH, 0644), EROFS);
		CHECK_ERR(syscall(SYS_faccessat, AT_FDCWD, DATA_DIR "/new", F_OK),
			  ENOENT);
		CHECK_ERR(syscall(SYS_creat, DATA_DIR "/missing/new", 0644), ENOENT);
	}
	CHECK_ERR(syscall(SYS_creat, LIST_DIR, 0644), EISDIR);
}

static void test_sendfile(void)
{
	int in = CHECK_OK(open(BLOB_PATH, O_RDONLY));
	int out = CHECK_OK(open("/dev/null", O_WRONLY));
	int wronly = CHECK_OK(open("/dev/null", O_WRONLY));
	int append = CHECK_OK(open("/dev/null", O_WRONLY | O_APPEND));
	int rdonly = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	long off;

	/* With an offset pointer the pointer advances, the file offset not. */
	CHECK_EQ(sys_lseek(in, 5, SEEK_SET), 5);
	off = 100;
	CHECK_EQ(syscall(SYS_sendfile, out, in, &off, 1000), 1000);
	CHECK_EQ(off, 1100);
	CHECK_EQ(sys_lseek(in, 0, SEEK_CUR), 5);
	/* Without one the file offset advances. */
	CHECK_EQ(syscall(SYS_sendfile, out, in, NULL, 1000), 1000);
	CHECK_EQ(sys_lseek(in, 0, SEEK_CUR), 1005);
	/* Short at the end of the file, then nothing. */
	off = BLOB_LEN - 10;
	CHECK_EQ(syscall(SYS_sendfile, out, in, &off, 1000), 10);
	CHECK_EQ(off, BLOB_LEN);
	CHECK_EQ(syscall(SYS_sendfile, out, in, &off, 1000), 0);
	CHECK_EQ(off, BLOB_LEN);
	CHECK_EQ(sys_lseek(in, BLOB_LEN - 3, SEEK_SET), BLOB_LEN - 3);
	CHECK_EQ(syscall(SYS_sendfile, out, in, NULL, 1000), 3);
	CHECK_EQ(sys_lseek(in, 0, SEEK_CUR), BLOB_LEN);
	/* A count of 0 moves nothing. */
	CHECK_EQ(sys_lseek(in, 5, SEEK_SET), 5);
	off = 100;
	CHECK_EQ(syscall(SYS_sendfile, out, in, &off, 0), 0);
	CHECK_EQ(off, 100);
	CHECK_EQ(syscall(SYS_sendfile, out, in, NULL, 0), 0);
	CHECK_EQ(sys_lseek(in, 0, SEEK_CUR), 5);

	/* The input must be readable, the output writable. */
	CHECK_ERR(syscall(SYS_sendfile, out, wronly, NULL, 10), EBADF);
	CHECK_ERR(syscall(SYS_sendfile, rdonly, in, NULL, 10), EBADF);
	CHECK_ERR(syscall(SYS_sendfile, out, 9999, NULL, 10), EBADF);
	CHECK_ERR(syscall(SYS_sendfile, 9999, in, NULL, 10), EBADF);
	off = -1;
	CHECK_ERR(syscall(SYS_sendfile, out, in, &off, 10), EINVAL);
	CHECK_ERR(syscall(SYS_sendfile, out, in, (void *)1, 10), EFAULT);
	/* An output opened for appending is refused (man 2 sendfile). */
	CHECK_ERR(syscall(SYS_sendfile, append, in, NULL, 10), EINVAL);
	CHECK_EQ(sys_lseek(in, 0, SEEK_CUR), 5); /* nothing was consumed */
	close(in);
	close(out);
	close(wronly);
	close(append);
	close(rdonly);
}

/* The input must be a file that can be read at an offset. */
static void test_sendfile_sources(void)
{
	int out = CHECK_OK(open("/dev/null", O_WRONLY));
	int dir = CHECK_OK(open(LIST_DIR, O_RDONLY | O_DIRECTORY));
	int p[2], sp[2];
	long off = 0;
	char buf[4];

	CHECK_OK(pipe2(p, O_NONBLOCK));
	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, sp));
	CHECK_ERR(syscall(SYS_sendfile, out, p[0], NULL, 10), EINVAL); /* empty */
	CHECK_EQ(write(p[1], "ab", 2), 2);
	CHECK_ERR(syscall(SYS_sendfile, out, p[0], NULL, 10), EINVAL);
	CHECK_ERR(syscall(SYS_sendfile, out, p[0], &off, 10), ESPIPE);
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 2); /* nothing was consumed */
	CHECK_EQ(write(sp[0], "ab", 2), 2);
	CHECK_ERR(syscall(SYS_sendfile, out, sp[1], NULL, 10), EINVAL);
	CHECK_EQ(read(sp[1], buf, sizeof(buf)), 2);
	CHECK_ERR(syscall(SYS_sendfile, out, dir, NULL, 10), EINVAL);
	close(p[0]);
	close(p[1]);
	close(sp[0]);
	close(sp[1]);
	close(dir);
	close(out);
}

static void test_preadv_pwritev(void)
{
	int fd = CHECK_OK(open(BLOB_PATH, O_RDONLY));
	int null = CHECK_OK(open("/dev/null", O_WRONLY));
	char a[10], b[20], want[30];
	struct iovec iov[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	long i;

	for (i = 0; i < 30; i++)
		want[i] = blob_byte(4096 + i);
	CHECK_EQ(sys_lseek(fd, 7, SEEK_SET), 7);
	/* The iovecs fill in order from the offset; the file offset stays. */
	CHECK_EQ(sys_preadv(fd, iov, 2, 4096), 30);
	CHECK_MEM(a, want, 10);
	CHECK_MEM(b, want + 10, 20);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_CUR), 7);
	/* Near the end only the first iovec is (partly) filled. */
	memset(a, 0, sizeof(a));
	memset(b, '#', sizeof(b));
	CHECK_EQ(sys_preadv(fd, iov, 2, BLOB_LEN - 4), 4);
	for (i = 0; i < 4; i++)
		CHECK_EQ((unsigned char)a[i], blob_byte(BLOB_LEN - 4 + i));
	CHECK_EQ(b[0], '#');
	CHECK_EQ(sys_preadv(fd, iov, 2, BLOB_LEN), 0);
	CHECK_EQ(sys_preadv(fd, iov, 0, 0), 0);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_CUR), 7);

	CHECK_EQ(sys_pwritev(null, iov, 2, 1234), 30);
	CHECK_EQ(sys_pwritev(null, iov, 1, 0), 10);
	CHECK_EQ(sys_pwritev(null, iov, 0, 0), 0);

	CHECK_ERR(sys_preadv(fd, iov, 2, -1), EINVAL);
	CHECK_ERR(sys_pwritev(null, iov, 2, -1), EINVAL);
	CHECK_ERR(sys_preadv(fd, iov, -1, 0), EINVAL);
	CHECK_ERR(sys_preadv(fd, iov, 1025, 0), EINVAL); /* above IOV_MAX */
	CHECK_ERR(sys_preadv(null, iov, 2, 0), EBADF);
	CHECK_ERR(sys_pwritev(fd, iov, 2, 0), EBADF);
	CHECK_ERR(sys_preadv(9999, iov, 2, 0), EBADF);
	CHECK_ERR(sys_preadv(fd, (void *)1, 2, 0), EFAULT);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_CUR), 7);
	close(fd);
	close(null);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_open();
	test_stat();
	test_access();
	test_readlink();
	test_creat();
	test_sendfile();
	test_sendfile_sources();
	test_preadv_pwritev();
	return check_finish();
}
