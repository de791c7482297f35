/*
 * file_read_write: reading and writing through file descriptors.
 *
 * Reads come from the data files in the (read-only) rootfs, writes go to
 * /dev/null and /dev/zero. Checks: sequential reads and the short read at end
 * of file, pread64 at offsets across page boundaries without moving the file
 * offset, readv/writev scatter-gather counts, lseek for SEEK_SET/CUR/END and
 * its EINVAL cases, pwrite64, EBADF for closed, unknown and wrong-mode
 * descriptors, EFAULT (not a crash) for bad buffers, the partial count when a
 * buffer runs into an unmapped page, and EISDIR for reading a directory.
 */
// covers: read write pread64 pwrite64 readv writev lseek
#include "check.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/uio.h>

static void test_sequential_read(void)
{
	char buf[64];
	int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));

	memset(buf, 0, sizeof(buf));
	CHECK_EQ(syscall(SYS_read, fd, buf, 5), 5);
	CHECK_MEM(buf, "Hello", 5);
	/* Asking for more than is left gives a short read of the rest. */
	CHECK_EQ(syscall(SYS_read, fd, buf, sizeof(buf)), HELLO_LEN - 5);
	CHECK_MEM(buf, HELLO_TEXT + 5, HELLO_LEN - 5);
	/* At end of file a read returns 0, every time. */
	CHECK_EQ(syscall(SYS_read, fd, buf, sizeof(buf)), 0);
	CHECK_EQ(syscall(SYS_read, fd, buf, sizeof(buf)), 0);
	/* A zero-length read succeeds and reads nothing. */
	CHECK_EQ(sys_lseek(fd, 0, SEEK_SET), 0);
	CHECK_EQ(syscall(SYS_read, fd, buf, 0), 0);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_CUR), 0);
	close(fd);
}

static void test_lseek(void)
{
	char c = 0;
	int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));

	CHECK_EQ(sys_lseek(fd, 7, SEEK_SET), 7);
	CHECK_EQ(sys_lseek(fd, 3, SEEK_CUR), 10);
	CHECK_EQ(sys_lseek(fd, -2, SEEK_CUR), 8);
	CHECK_EQ(syscall(SYS_read, fd, &c, 1), 1);
	CHECK_EQ(c, HELLO_TEXT[8]);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_END), HELLO_LEN);
	CHECK_EQ(sys_lseek(fd, -1, SEEK_END), HELLO_LEN - 1);
	CHECK_EQ(syscall(SYS_read, fd, &c, 1), 1);
	CHECK_EQ(c, '\n');
	/* Seeking past the end is allowed; reading there finds nothing. */
	CHECK_EQ(sys_lseek(fd, 100, SEEK_END), HELLO_LEN + 100);
	CHECK_EQ(syscall(SYS_read, fd, &c, 1), 0);
	/* A negative resulting offset and an unknown whence are EINVAL, and
	 * leave the offset alone. */
	CHECK_EQ(sys_lseek(fd, 2, SEEK_SET), 2);
	CHECK_ERR(sys_lseek(fd, -1, SEEK_SET), EINVAL);
	CHECK_ERR(sys_lseek(fd, -3, SEEK_CUR), EINVAL);
	CHECK_ERR(sys_lseek(fd, -HELLO_LEN - 1, SEEK_END), EINVAL);
	CHECK_ERR(sys_lseek(fd, 0, 99), EINVAL);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_CUR), 2);
	close(fd);
	CHECK_ERR(sys_lseek(fd, 0, SEEK_SET), EBADF);
}

static void test_pread(void)
{
	static char buf[BLOB_LEN + 10];
	int fd = CHECK_OK(open(BLOB_PATH, O_RDONLY));
	long i, bad = -1;

	CHECK_EQ(sys_lseek(fd, 5, SEEK_SET), 5);
	/* 4090..4290 straddles the first page boundary. */
	CHECK_EQ(sys_pread64(fd, buf, 200, 4090), 200);
	for (i = 0; i < 200 && bad < 0; i++)
		if ((unsigned char)buf[i] != blob_byte(4090 + i))
			bad = i;
	CHECK_EQ(bad, -1);
	/* pread64 does not move the file offset. */
	CHECK_EQ(sys_lseek(fd, 0, SEEK_CUR), 5);
	/* Short read at the end of the file, nothing past it. */
	CHECK_EQ(sys_pread64(fd, buf, 100, BLOB_LEN - 40), 40);
	CHECK_EQ(sys_pread64(fd, buf, 100, BLOB_LEN), 0);
	CHECK_EQ(sys_pread64(fd, buf, 100, BLOB_LEN + 4096), 0);
	CHECK_ERR(sys_pread64(fd, buf, 100, -1), EINVAL);
	/* The whole file in one call. */
	CHECK_EQ(sys_pread64(fd, buf, sizeof(buf), 0), BLOB_LEN);
	bad = -1;
	for (i = 0; i < BLOB_LEN && bad < 0; i++)
		if ((unsigned char)buf[i] != blob_byte(i))
			bad = i;
	CHECK_EQ(bad, -1);
	close(fd);
}

static void test_readv(void)
{
	char a[3], b[64];
	struct iovec iov[3] = {
		{ a, sizeof(a) }, { NULL, 0 }, { b, sizeof(b) },
	};
	int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));

	/* Fills the first buffer, skips the empty one, stops at EOF in the
	 * last one. */
	CHECK_EQ(syscall(SYS_readv, fd, iov, 3), HELLO_LEN);
	CHECK_MEM(a, "Hel", 3);
	CHECK_MEM(b, HELLO_TEXT + 3, HELLO_LEN - 3);
	CHECK_EQ(syscall(SYS_readv, fd, iov, 3), 0);
	CHECK_ERR(syscall(SYS_readv, fd, iov, -1), EINVAL);
	CHECK_ERR(syscall(SYS_readv, fd, (void *)1, 1), EFAULT);
	close(fd);
}

static void test_write(void)
{
	char buf[100];
	struct iovec iov[2] = { { buf, 10 }, { buf + 10, 90 } };
	int null = CHECK_OK(open("/dev/null", O_WRONLY));
	int zero = CHECK_OK(open("/dev/zero", O_RDWR));

	memset(buf, 'x', sizeof(buf));
	CHECK_EQ(syscall(SYS_write, null, buf, sizeof(buf)), sizeof(buf));
	CHECK_EQ(syscall(SYS_write, null, buf, 0), 0);
	CHECK_EQ(syscall(SYS_writev, null, iov, 2), 100);
	CHECK_EQ(sys_pwrite64(null, buf, 50, 4096), 50);
	CHECK_EQ(syscall(SYS_write, zero, buf, 30), 30);
	CHECK_EQ(sys_pwrite64(zero, buf, 30, 1), 30);
	CHECK_ERR(sys_pwrite64(null, buf, 1, -1), EINVAL);
	CHECK_ERR(syscall(SYS_writev, null, iov, -1), EINVAL);
	/* A descriptor opened for writing only cannot be read. */
	CHECK_ERR(syscall(SYS_read, null, buf, 1), EBADF);
	CHECK_ERR(sys_pread64(null, buf, 1, 0), EBADF);
	close(null);
	close(zero);
}

static void test_bad_fds(void)
{
	char buf[8];
	int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));

	/* A descriptor opened for reading only cannot be written. */
	CHECK_ERR(syscall(SYS_write, fd, buf, 1), EBADF);
	CHECK_ERR(sys_pwrite64(fd, buf, 1, 0), EBADF);
	close(fd);
	CHECK_ERR(syscall(SYS_read, fd, buf, 1), EBADF);
	CHECK_ERR(syscall(SYS_read, -1, buf, 1), EBADF);
	CHECK_ERR(syscall(SYS_write, 9999, buf, 1), EBADF);
	CHECK_ERR(sys_pread64(9999, buf, 1, 0), EBADF);
	CHECK_ERR(syscall(SYS_readv, -1, NULL, 0), EBADF);
}

static void test_efault(void)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd = CHECK_OK(open(BLOB_PATH, O_RDONLY));
	int zero = CHECK_OK(open("/dev/zero", O_RDONLY));
	char *p;
	long i, bad = -1;

	CHECK_ERR(syscall(SYS_read, fd, (void *)1, 10), EFAULT);
	CHECK_ERR(sys_pread64(fd, (void *)1, 10, 0), EFAULT);
	CHECK_ERR(syscall(SYS_read, zero, (void *)1, 10), EFAULT);
	/* Kernel addresses are as bad as unmapped ones. */
	CHECK_ERR(syscall(SYS_read, zero, (void *)0xffffffffff600000UL, 8),
		  EFAULT);

	/* A buffer that runs into an unmapped page gets the bytes that fit:
	 * the call returns the partial count, not EFAULT. */
	p = (char *)CHECK_OK(mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	CHECK_OK(munmap(p + page, page));
	CHECK_EQ(sys_pread64(fd, p + page - 100, 1000, 0), 100);
	for (i = 0; i < 100 && bad < 0; i++)
		if ((unsigned char)p[page - 100 + i] != blob_byte(i))
			bad = i;
	CHECK_EQ(bad, -1);
	munmap(p, page);
	close(fd);
	close(zero);
}

static void test_eisdir(void)
{
	char buf[8];
	int fd = CHECK_OK(open(DATA_DIR, O_RDONLY));

	CHECK_ERR(syscall(SYS_read, fd, buf, sizeof(buf)), EISDIR);
	CHECK_ERR(sys_pread64(fd, buf, sizeof(buf), 0), EISDIR);
	close(fd);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_sequential_read();
	test_lseek();
	test_pread();
	test_readv();
	test_write();
	test_bad_fds();
	test_efault();
	test_eisdir();
	return check_finish();
}
