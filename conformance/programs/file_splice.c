/*
 * file_splice: the in-kernel copies, as cp (copy_file_range), web servers
 * and shells' pipelines (splice, tee) and zero-copy loggers (vmsplice) use
 * them; and O_DIRECT, which databases and dd open files with.
 *
 * Checks, on files in a fresh directory under /tmp: splice from a file to
 * a pipe (at an offset given, which moves, or at the file's own offset),
 * from a pipe to a file, from a pipe to a pipe; 0 for a length of 0 (even
 * with a bad fd), EINVAL for unknown flags, for a pipe spliced to itself,
 * for no pipe at all, for a directory, for an O_APPEND output and for a
 * negative offset, ESPIPE for an offset on a pipe, EBADF for the wrong
 * access mode and O_PATH; 0 at the end of the file and of a pipe with no
 * writer; EAGAIN with SPLICE_F_NONBLOCK or an O_NONBLOCK pipe, EPIPE with
 * no reader. tee copies without consuming, EINVAL for one pipe or a file,
 * EAGAIN when empty. vmsplice writes into a pipe's write end and reads
 * from its read end, EBADF for a file, EAGAIN only with SPLICE_F_NONBLOCK.
 * copy_file_range with and without offsets, short at the end of the file,
 * EXDEV across file systems (checked before a length of 0), EINVAL for
 * flags, pipes and overlapping ranges of one file, EISDIR, EBADF for the
 * access modes and O_APPEND, EOVERFLOW for a negative offset. O_DIRECT
 * opens and moves aligned blocks, and shows in F_GETFL. A splice out of a
 * packet pipe (O_DIRECT) that ends inside a packet leaves the packet's rest,
 * which the next read returns; data spliced across the end of the pipe's
 * ring arrives whole.
 */
// covers: splice tee vmsplice copy_file_range
// places: bind root
#include "check.h"

#include <sys/stat.h>
#include <sys/uio.h>

static char dir[64];

static const char *path(const char *name)
{
	static char buf[4][128];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

static int make_file(const char *name, const char *text)
{
	int fd = CHECK_OK(open(path(name), O_RDWR | O_CREAT | O_TRUNC, 0644));

	CHECK_EQ(write(fd, text, strlen(text)), (long)strlen(text));
	return fd;
}

static const char *drain(int fd)
{
	static char buf[256];
	long n = read(fd, buf, sizeof(buf) - 1);

	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static void test_splice(void)
{
	int f = make_file("f", "hello world"), p[2], q[2], d, ap, ro, o;
	loff_t off = 6, neg = -1;
	char buf[16];

	CHECK_OK(pipe(p));
	CHECK_OK(pipe(q));
	CHECK_EQ(splice(f, &off, p[1], NULL, 5, 0), 5);
	CHECK_EQ(off, 11);
	CHECK_EQ(sys_lseek(f, 0, SEEK_CUR), 11); /* the file's offset stays */
	CHECK_EQ(splice(f, NULL, p[1], NULL, 5, 0), 0); /* at its end */
	CHECK_EQ(sys_lseek(f, 0, SEEK_SET), 0);
	CHECK_EQ(splice(f, NULL, p[1], NULL, 6, SPLICE_F_MOVE | SPLICE_F_MORE), 6);
	CHECK_EQ(sys_lseek(f, 0, SEEK_CUR), 6);
	CHECK_EQ(splice(p[0], NULL, q[1], NULL, 3, 0), 3);
	CHECK_STR(drain(q[0]), "wor");
	off = 20;
	CHECK_EQ(splice(p[0], NULL, f, &off, 100, 0), 8);
	CHECK_EQ(off, 28);
	CHECK_EQ(sys_pread64(f, buf, 8, 20), 8);
	CHECK_MEM(buf, "ldhello ", 8);

	CHECK_EQ(splice(99, NULL, f, NULL, 0, 0), 0);
	CHECK_ERR(splice(99, NULL, f, NULL, 5, 0), EBADF);
	CHECK_ERR(splice(f, NULL, p[1], NULL, 5, 0x100), EINVAL);
	CHECK_ERR(splice(p[0], NULL, p[1], NULL, 5, 0), EINVAL);
	CHECK_ERR(splice(f, NULL, f, NULL, 5, 0), EINVAL);
	d = CHECK_OK(open(dir, O_RDONLY | O_DIRECTORY));
	CHECK_ERR(splice(d, NULL, p[1], NULL, 5, 0), EINVAL);
	ap = CHECK_OK(open(path("f"), O_WRONLY | O_APPEND));
	CHECK_ERR(splice(p[0], NULL, ap, NULL, 5, 0), EINVAL);
	CHECK_ERR(splice(f, &neg, p[1], NULL, 5, 0), EINVAL);
	CHECK_ERR(splice(p[0], NULL, f, &neg, 5, 0), EINVAL);
	off = 0;
	CHECK_ERR(splice(p[0], &off, f, NULL, 5, 0), ESPIPE);
	CHECK_ERR(splice(f, NULL, p[1], &off, 5, 0), ESPIPE);
	CHECK_ERR(splice(f, NULL, p[0], NULL, 5, 0), EBADF);
	CHECK_ERR(splice(p[1], NULL, f, NULL, 5, 0), EBADF);
	ro = CHECK_OK(open(path("f"), O_RDONLY));
	CHECK_ERR(splice(p[0], NULL, ro, NULL, 5, 0), EBADF);
	o = CHECK_OK(open(path("f"), O_PATH));
	CHECK_ERR(splice(o, NULL, p[1], NULL, 5, 0), EBADF);

	/* Empty pipes, full pipes, pipes with no one at the other end. */
	CHECK_ERR(splice(p[0], NULL, f, NULL, 5, SPLICE_F_NONBLOCK), EAGAIN);
	CHECK_OK(fcntl(p[0], F_SETFL, O_NONBLOCK));
	CHECK_ERR(splice(p[0], NULL, f, NULL, 5, 0), EAGAIN);
	CHECK_OK(fcntl(p[0], F_SETFL, 0));
	close(q[1]);
	CHECK_EQ(splice(q[0], NULL, f, NULL, 5, 0), 0);
	close(q[0]);
	{
		static char big[65536];

		CHECK_OK(fcntl(p[1], F_SETFL, O_NONBLOCK));
		CHECK_EQ(write(p[1], big, sizeof(big)), (long)sizeof(big));
		CHECK_ERR(splice(f, &(loff_t){ 0 }, p[1], NULL, 5, 0), EAGAIN);
		CHECK_OK(fcntl(p[1], F_SETFL, 0));
		CHECK_ERR(splice(f, &(loff_t){ 0 }, p[1], NULL, 5, SPLICE_F_NONBLOCK), EAGAIN);
		while (read(p[0], big, sizeof(big)) == sizeof(big))
			break;
	}
	CHECK_OK(pipe(q));
	close(q[0]);
	signal(SIGPIPE, SIG_IGN);
	CHECK_ERR(splice(f, &(loff_t){ 0 }, q[1], NULL, 5, 0), EPIPE);
	signal(SIGPIPE, SIG_DFL);
	close(q[1]);
	close(p[0]);
	close(p[1]);
	close(d);
	close(ap);
	close(ro);
	close(o);
	close(f);
}

static void test_tee_vmsplice(void)
{
	int p[2], q[2], f = make_file("g", "x");
	char buf[16];
	struct iovec iov[2] = { { "ab", 2 }, { "cde", 3 } };

	CHECK_OK(pipe(p));
	CHECK_OK(pipe(q));
	CHECK_EQ(vmsplice(p[1], iov, 2, 0), 5);
	CHECK_EQ(tee(p[0], q[1], 100, 0), 5);
	CHECK_EQ(tee(p[0], q[1], 2, 0), 2);
	CHECK_STR(drain(q[0]), "abcdeab");
	iov[0].iov_base = buf;
	iov[0].iov_len = 3;
	CHECK_EQ(vmsplice(p[0], iov, 1, 0), 3);
	CHECK_MEM(buf, "abc", 3);
	CHECK_STR(drain(p[0]), "de");
	CHECK_ERR(tee(p[0], q[1], 5, SPLICE_F_NONBLOCK), EAGAIN);
	CHECK_ERR(tee(p[0], p[1], 5, 0), EINVAL);
	CHECK_ERR(tee(f, q[1], 5, 0), EINVAL);
	CHECK_ERR(tee(p[1], q[1], 5, 0), EBADF);
	CHECK_ERR(tee(p[0], q[1], 5, 0x100), EINVAL);
	CHECK_EQ(tee(99, q[1], 0, 0), 0);
	CHECK_ERR(vmsplice(f, iov, 1, 0), EBADF);
	CHECK_ERR(vmsplice(p[1], iov, 1, 0x100), EINVAL);
	CHECK_EQ(vmsplice(p[1], iov, 0, 0), 0);
	/* The file's O_NONBLOCK does not count for vmsplice; the flag does. */
	CHECK_OK(fcntl(p[0], F_SETFL, O_NONBLOCK));
	CHECK_ERR(vmsplice(p[0], iov, 1, SPLICE_F_NONBLOCK), EAGAIN);
	close(p[1]);
	CHECK_EQ(vmsplice(p[0], iov, 1, 0), 0); /* no writer: the end */
	close(p[0]);
	close(q[0]);
	close(q[1]);
	close(f);
}

static void test_copy_file_range(void)
{
	int a = make_file("a", "0123456789"), b = make_file("b", ""), p[2], d;
	int ap = CHECK_OK(open(path("ap"), O_WRONLY | O_CREAT | O_APPEND, 0644));
	int ro = CHECK_OK(open(path("a"), O_RDONLY)), wo = CHECK_OK(open(path("a"), O_WRONLY));
	loff_t in = 2, out = 0, neg = -1;
	struct stat sa, sh;
	char buf[16];
	int h;

	CHECK_EQ(copy_file_range(a, &in, b, &out, 5, 0), 5);
	CHECK_EQ(in, 7);
	CHECK_EQ(out, 5);
	CHECK_EQ(sys_lseek(a, 0, SEEK_CUR), 10);
	CHECK_EQ(sys_lseek(b, 0, SEEK_CUR), 0);
	CHECK_EQ(sys_lseek(a, 8, SEEK_SET), 8);
	CHECK_EQ(copy_file_range(a, NULL, b, NULL, 100, 0), 2); /* short at EOF */
	CHECK_EQ(sys_lseek(a, 0, SEEK_CUR), 10);
	CHECK_EQ(sys_lseek(b, 0, SEEK_CUR), 2);
	CHECK_EQ(sys_pread64(b, buf, 5, 0), 5);
	CHECK_MEM(buf, "89456", 5);
	CHECK_EQ(copy_file_range(a, &(loff_t){ 20 }, b, NULL, 5, 0), 0);
	CHECK_EQ(copy_file_range(a, &(loff_t){ 0 }, a, &(loff_t){ 5 }, 5, 0), 5);
	CHECK_ERR(copy_file_range(a, &(loff_t){ 0 }, a, &(loff_t){ 3 }, 5, 0), EINVAL);
	CHECK_ERR(copy_file_range(a, &(loff_t){ 0 }, b, &(loff_t){ 0 }, 5, 1), EINVAL);
	CHECK_ERR(copy_file_range(a, &(loff_t){ 0 }, ap, NULL, 5, 0), EBADF);
	CHECK_ERR(copy_file_range(wo, &(loff_t){ 0 }, b, NULL, 5, 0), EBADF);
	CHECK_ERR(copy_file_range(a, &(loff_t){ 0 }, ro, NULL, 5, 0), EBADF);
	d = CHECK_OK(open(dir, O_RDONLY | O_DIRECTORY));
	CHECK_ERR(copy_file_range(d, &(loff_t){ 0 }, b, NULL, 5, 0), EISDIR);
	CHECK_ERR(copy_file_range(a, &(loff_t){ 0 }, d, NULL, 5, 0), EISDIR);
	CHECK_OK(pipe(p));
	CHECK_ERR(copy_file_range(p[0], NULL, b, NULL, 5, 0), EINVAL);
	CHECK_ERR(copy_file_range(a, &(loff_t){ 0 }, p[1], NULL, 5, 0), EINVAL);
	CHECK_ERR(copy_file_range(a, &neg, b, NULL, 5, 0), EOVERFLOW);
	CHECK_ERR(copy_file_range(99, &(loff_t){ 0 }, b, NULL, 5, 0), EBADF);
	CHECK_ERR(copy_file_range(a, (loff_t *)8, b, NULL, 5, 0), EFAULT);

	/* Across file systems: EXDEV, even for nothing. */
	h = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	CHECK_OK(fstat(a, &sa));
	CHECK_OK(fstat(h, &sh));
	if (sa.st_dev != sh.st_dev) {
		CHECK_ERR(copy_file_range(h, &(loff_t){ 0 }, b, &(loff_t){ 0 }, 5, 0), EXDEV);
		CHECK_ERR(copy_file_range(h, &(loff_t){ 0 }, b, &(loff_t){ 0 }, 0, 0), EXDEV);
	} else {
		CHECK_EQ(copy_file_range(h, &(loff_t){ 0 }, b, &(loff_t){ 0 }, 5, 0), 5);
	}
	if (check_tmp_tmpfs())
		CHECK(sa.st_dev != sh.st_dev); /* the image and /tmp */
	close(h);
	close(p[0]);
	close(p[1]);
	close(d);
	close(ap);
	close(ro);
	close(wo);
	close(a);
	close(b);
}

static void test_pipe_buffers(void)
{
	char buf[16384], want[10240];
	int a[2], b[2];
	long got, n;
	size_t i;

	/* A packet pipe's rest stays after a splice that ends inside it. */
	CHECK_EQ(pipe2(a, O_DIRECT | O_NONBLOCK), 0);
	CHECK_EQ(pipe2(b, O_NONBLOCK), 0);
	CHECK_EQ(write(a[1], "abc", 3), 3);
	CHECK_EQ(write(a[1], "defg", 4), 4);
	CHECK_EQ(splice(a[0], NULL, b[1], NULL, 5, 0), 5);
	/* Linux carries the packet boundaries into the other pipe (a read
	 * there takes "abc", then "de"); only the bytes are checked. */
	got = 0;
	while (got < 5 && (n = read(b[0], buf + got, sizeof(buf) - got)) > 0)
		got += n;
	CHECK_EQ(got, 5);
	CHECK_MEM(buf, "abcde", 5);
	CHECK_EQ(read(a[0], buf, sizeof(buf)), 2);
	CHECK_MEM(buf, "fg", 2);
	CHECK_ERR(read(a[0], buf, sizeof(buf)), EAGAIN);
	close(a[0]);
	close(a[1]);

	/* Data starting 4 KiB before the end of a 64 KiB pipe's ring. */
	CHECK_EQ(pipe2(a, O_NONBLOCK), 0);
	memset(buf, 0, sizeof(buf));
	for (i = 0; i < 15; i++) { /* 60 KiB in and out */
		CHECK_EQ(write(a[1], buf, 4096), 4096);
		CHECK_EQ(read(a[0], buf, 4096), 4096);
	}
	for (i = 0; i < sizeof(want); i++)
		want[i] = (char)(i * 7);
	CHECK_EQ(write(a[1], want, sizeof(want)), (long)sizeof(want));
	CHECK_EQ(splice(a[0], NULL, b[1], NULL, sizeof(want), 0), (long)sizeof(want));
	CHECK_EQ(read(b[0], buf, sizeof(buf)), (long)sizeof(want));
	CHECK_MEM(buf, want, sizeof(want));
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
}

static void test_odirect(void)
{
	static char block[2 * 4096] __attribute__((aligned(4096)));
	int fd = CHECK_OK(open(path("direct"), O_RDWR | O_CREAT | O_DIRECT, 0644));
	int i;

	CHECK(fcntl(fd, F_GETFL) & O_DIRECT);
	for (i = 0; i < 4096; i++)
		block[i] = (char)(i * 7);
	CHECK_EQ(write(fd, block, 4096), 4096);
	memset(block + 4096, 0, 4096);
	CHECK_EQ(sys_pread64(fd, block + 4096, 4096, 0), 4096);
	CHECK_MEM(block + 4096, block, 4096);
	CHECK_OK(fcntl(fd, F_SETFL, 0));
	CHECK(!(fcntl(fd, F_GETFL) & O_DIRECT));
	CHECK_OK(fcntl(fd, F_SETFL, O_DIRECT));
	CHECK(fcntl(fd, F_GETFL) & O_DIRECT);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *names[] = { "f", "g", "a", "b", "ap", "direct" };
	size_t i;

	check_init(argc, argv);
	strcpy(dir, "/tmp/moat-splice-XXXXXX");
	if (!mkdtemp(dir)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	test_splice();
	test_tee_vmsplice();
	test_copy_file_range();
	test_pipe_buffers();
	test_odirect();
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unlink(path(names[i]));
	rmdir(dir);
	return check_finish();
}
