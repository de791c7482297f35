/*
 * fd_dup_fcntl: the descriptor table and the flags on its entries.
 *
 * Every program opens, duplicates and closes descriptors, and shells and
 * servers rely on the fine print: which number a new descriptor gets, what a
 * duplicate shares (the open file: offset and status flags) and what it does
 * not (FD_CLOEXEC), and which errors mark a bad request.
 * Checks: dup takes the lowest free number and shares offset and status
 * flags but not FD_CLOEXEC; dup2 onto itself returns the fd (EBADF for a bad
 * one even then), dup2 onto an open fd replaces its file; dup3 with O_CLOEXEC,
 * and its EINVAL cases; fcntl F_DUPFD's lower bound, F_DUPFD_CLOEXEC,
 * F_GETFD/F_SETFD, F_GETFL (the access mode, and O_LARGEFILE, which the
 * kernel adds to every open on x86-64), F_SETFL changing O_NONBLOCK and
 * O_APPEND but never the access mode, EINVAL for an unknown command; EMFILE,
 * EINVAL and EBADF at a lowered RLIMIT_NOFILE; close_range closing a range or
 * only marking it close-on-exec, and its EINVAL cases; ioctl FIOCLEX,
 * FIONCLEX, FIONBIO and FIONREAD, ENOTTY for a terminal request on a file,
 * EBADF for a bad fd.
 */
// covers: dup dup2 dup3 fcntl close close_range ioctl
#include "check.h"

#include <linux/close_range.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

/* The kernel's O_LARGEFILE: the C library defines it as 0 on x86-64. */
#define KERNEL_O_LARGEFILE 0100000

/* same_file reports whether two descriptors refer to the same file. */
static int same_file(int a, int b)
{
	struct stat sa, sb;

	if (fstat(a, &sa) != 0 || fstat(b, &sb) != 0)
		return 0;
	return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

static void test_dup(void)
{
	int hole = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	int hello = CHECK_OK(open(HELLO_PATH, O_RDONLY | O_CLOEXEC));
	int blob = CHECK_OK(open(BLOB_PATH, O_RDONLY));
	int d;

	/* Free a number below the others: dup must take it. */
	CHECK_OK(syscall(SYS_close, hole));
	d = CHECK_OK(syscall(SYS_dup, blob));
	CHECK_EQ(d, hole);
	CHECK(same_file(d, blob));
	CHECK_OK(syscall(SYS_close, d));
	d = CHECK_OK(syscall(SYS_dup, hello));
	CHECK_EQ(d, hole);
	CHECK(same_file(d, hello));
	/* The duplicate is the same open file: one offset, one set of status
	 * flags; the close-on-exec flag belongs to the descriptor. */
	CHECK_EQ(fcntl(hello, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(d, F_GETFD), 0);
	CHECK_EQ(sys_lseek(d, 7, SEEK_SET), 7);
	CHECK_EQ(sys_lseek(hello, 0, SEEK_CUR), 7);
	CHECK_OK(fcntl(d, F_SETFL, O_NONBLOCK));
	CHECK_EQ(fcntl(hello, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	CHECK_OK(fcntl(d, F_SETFL, 0));
	CHECK_EQ(syscall(SYS_close, d), 0);
	/* Closing one leaves the other working. */
	CHECK_EQ(sys_lseek(hello, 0, SEEK_CUR), 7);
	CHECK_ERR(syscall(SYS_close, d), EBADF);
	CHECK_ERR(syscall(SYS_dup, d), EBADF);
	CHECK_ERR(syscall(SYS_dup, -1), EBADF);

	/* dup2 onto itself changes nothing, but still checks the fd. */
	CHECK_EQ(syscall(SYS_dup2, hello, hello), hello);
	CHECK_EQ(fcntl(hello, F_GETFD), FD_CLOEXEC);
	CHECK_ERR(syscall(SYS_dup2, 9999, 9999), EBADF);
	CHECK_ERR(syscall(SYS_dup2, 9999, blob), EBADF);
	CHECK(!same_file(blob, hello)); /* a failed dup2 leaves newfd alone */
	/* dup2 onto an open fd closes its file and puts the old one there,
	 * without close-on-exec. */
	CHECK_OK(fcntl(blob, F_SETFD, FD_CLOEXEC));
	CHECK_EQ(syscall(SYS_dup2, hello, blob), blob);
	CHECK(same_file(blob, hello));
	CHECK_EQ(fcntl(blob, F_GETFD), 0);
	CHECK_EQ(sys_lseek(blob, 0, SEEK_CUR), 7);
	CHECK_OK(syscall(SYS_close, blob));
	/* dup2 onto a free number uses exactly that number. */
	CHECK_EQ(syscall(SYS_dup2, hello, 150), 150);
	CHECK(same_file(150, hello));
	CHECK_OK(syscall(SYS_close, 150));
	CHECK_ERR(syscall(SYS_dup2, hello, -1), EBADF);

	/* dup3 sets close-on-exec on request only, never works in place. */
	CHECK_EQ(syscall(SYS_dup3, hello, 150, O_CLOEXEC), 150);
	CHECK_EQ(fcntl(150, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(syscall(SYS_dup3, hello, 150, 0), 150);
	CHECK_EQ(fcntl(150, F_GETFD), 0);
	CHECK_OK(syscall(SYS_close, 150));
	CHECK_ERR(syscall(SYS_dup3, hello, hello, 0), EINVAL);
	CHECK_ERR(syscall(SYS_dup3, hello, hello, O_CLOEXEC), EINVAL);
	CHECK_ERR(syscall(SYS_dup3, hello, 150, O_NONBLOCK), EINVAL);
	CHECK_ERR(syscall(SYS_dup3, hello, 150, 1), EINVAL);
	CHECK_ERR(fcntl(150, F_GETFD), EBADF); /* the failures made nothing */
	CHECK_ERR(syscall(SYS_dup3, 9999, 150, 0), EBADF);
	CHECK_OK(syscall(SYS_close, hello));
}

static void test_fcntl(void)
{
	int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	int wr = CHECK_OK(open("/dev/null", O_WRONLY));
	int rw = CHECK_OK(open("/dev/null", O_RDWR | O_CLOEXEC));
	int a, b;

	/* F_DUPFD takes the lowest free number at or above its argument. */
	a = CHECK_OK(syscall(SYS_fcntl, fd, F_DUPFD, 100));
	CHECK_EQ(a, 100);
	b = CHECK_OK(syscall(SYS_fcntl, fd, F_DUPFD, 100));
	CHECK_EQ(b, 101);
	CHECK(same_file(b, fd));
	CHECK_EQ(fcntl(b, F_GETFD), 0);
	CHECK_OK(syscall(SYS_close, a));
	a = CHECK_OK(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 100));
	CHECK_EQ(a, 100);
	CHECK_EQ(fcntl(a, F_GETFD), FD_CLOEXEC);
	/* An argument of 0 gives the lowest free number, like dup. */
	b = CHECK_OK(syscall(SYS_fcntl, fd, F_DUPFD, 0));
	CHECK(b < 100);
	CHECK_OK(syscall(SYS_close, b));
	CHECK_OK(syscall(SYS_close, a));
	CHECK_OK(syscall(SYS_close, 101));
	CHECK_ERR(syscall(SYS_fcntl, fd, F_DUPFD, -1L), EINVAL);

	/* F_SETFD keeps only FD_CLOEXEC. */
	CHECK_EQ(syscall(SYS_fcntl, fd, F_GETFD), 0);
	CHECK_EQ(syscall(SYS_fcntl, fd, F_SETFD, 0xff), 0);
	CHECK_EQ(syscall(SYS_fcntl, fd, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(syscall(SYS_fcntl, fd, F_SETFD, 0), 0);
	CHECK_EQ(syscall(SYS_fcntl, fd, F_GETFD), 0);
	CHECK_EQ(syscall(SYS_fcntl, rw, F_GETFD), FD_CLOEXEC);

	/* F_GETFL: the access mode plus the O_LARGEFILE every 64-bit open
	 * gets; O_CLOEXEC is a descriptor flag and does not show. */
	CHECK_EQ(syscall(SYS_fcntl, fd, F_GETFL), O_RDONLY | KERNEL_O_LARGEFILE);
	CHECK_EQ(syscall(SYS_fcntl, wr, F_GETFL), O_WRONLY | KERNEL_O_LARGEFILE);
	CHECK_EQ(syscall(SYS_fcntl, rw, F_GETFL), O_RDWR | KERNEL_O_LARGEFILE);

	/* F_SETFL changes O_NONBLOCK and O_APPEND, and silently ignores the
	 * access mode and the open-time flags. */
	CHECK_EQ(syscall(SYS_fcntl, fd, F_SETFL,
			 O_RDWR | O_NONBLOCK | O_APPEND | O_CREAT | O_TRUNC), 0);
	CHECK_EQ(syscall(SYS_fcntl, fd, F_GETFL),
		 O_RDONLY | O_NONBLOCK | O_APPEND | KERNEL_O_LARGEFILE);
	CHECK_EQ(syscall(SYS_fcntl, fd, F_SETFL, O_APPEND), 0);
	CHECK_EQ(syscall(SYS_fcntl, fd, F_GETFL),
		 O_RDONLY | O_APPEND | KERNEL_O_LARGEFILE);
	CHECK_EQ(syscall(SYS_fcntl, fd, F_SETFL, 0), 0);
	CHECK_EQ(syscall(SYS_fcntl, fd, F_GETFL), O_RDONLY | KERNEL_O_LARGEFILE);
	CHECK_EQ(syscall(SYS_fcntl, wr, F_SETFL, O_RDONLY | O_NONBLOCK), 0);
	CHECK_EQ(syscall(SYS_fcntl, wr, F_GETFL),
		 O_WRONLY | O_NONBLOCK | KERNEL_O_LARGEFILE);
	/* The flags act: the descriptor is still write-only. */
	CHECK_EQ(syscall(SYS_write, wr, "x", 1), 1);

	CHECK_ERR(syscall(SYS_fcntl, fd, 9999, 0), EINVAL);
	CHECK_ERR(syscall(SYS_fcntl, 9999, F_GETFD), EBADF);
	CHECK_ERR(syscall(SYS_fcntl, 9999, F_GETFL), EBADF);
	CHECK_ERR(syscall(SYS_fcntl, 9999, F_DUPFD, 0), EBADF);
	close(fd);
	close(wr);
	close(rw);
}

static void test_nofile_limit(void)
{
	struct rlimit old, rl;
	int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	int top;

	CHECK_OK(getrlimit(RLIMIT_NOFILE, &old));
	/* The lowest free number is top, so everything below it is in use:
	 * with the limit at top+1, top is the last number there is. */
	top = CHECK_OK(syscall(SYS_dup, fd));
	CHECK_OK(syscall(SYS_close, top));
	rl.rlim_cur = top + 1;
	rl.rlim_max = old.rlim_max;
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &rl));
	CHECK_EQ(syscall(SYS_dup, fd), top);
	CHECK_ERR(syscall(SYS_dup, fd), EMFILE);
	CHECK_ERR(syscall(SYS_fcntl, fd, F_DUPFD, 0), EMFILE);
	CHECK_ERR(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 0), EMFILE);
	/* A number at or past the limit is not a full table but a bad
	 * argument: EINVAL for F_DUPFD, EBADF for dup2 and dup3. */
	CHECK_ERR(syscall(SYS_fcntl, fd, F_DUPFD, top + 1), EINVAL);
	CHECK_ERR(syscall(SYS_dup2, fd, top + 1), EBADF);
	CHECK_ERR(syscall(SYS_dup3, fd, top + 1, 0), EBADF);
	/* Replacing an fd below the limit needs no new slot. */
	CHECK_EQ(syscall(SYS_dup2, fd, top), top);
	CHECK_OK(syscall(SYS_close, top));
	CHECK_EQ(syscall(SYS_dup, fd), top);
	CHECK_OK(syscall(SYS_close, top));
	CHECK_OK(setrlimit(RLIMIT_NOFILE, &old));
	close(fd);
}

static void test_close_range(void)
{
	int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	int i;

	for (i = 200; i < 204; i++)
		CHECK_EQ(syscall(SYS_fcntl, fd, F_DUPFD, i), i);

	/* Both ends are included; a partly free range is fine. */
	CHECK_EQ(syscall(SYS_close_range, 200, 201, 0), 0);
	CHECK_ERR(fcntl(200, F_GETFD), EBADF);
	CHECK_ERR(fcntl(201, F_GETFD), EBADF);
	CHECK_EQ(fcntl(202, F_GETFD), 0);
	CHECK_EQ(fcntl(fd, F_GETFD), 0);
	CHECK_EQ(syscall(SYS_close_range, 190, 201, 0), 0);
	CHECK_EQ(fcntl(202, F_GETFD), 0);

	/* CLOSE_RANGE_CLOEXEC marks instead of closing. */
	CHECK_EQ(syscall(SYS_close_range, 202, 202, CLOSE_RANGE_CLOEXEC), 0);
	CHECK_EQ(fcntl(202, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(203, F_GETFD), 0);
	CHECK(same_file(202, fd));

	CHECK_ERR(syscall(SYS_close_range, 203, 202, 0), EINVAL);
	CHECK_ERR(syscall(SYS_close_range, 202, 203, 0x80), EINVAL);
	CHECK_EQ(fcntl(202, F_GETFD), FD_CLOEXEC); /* untouched by failures */
	CHECK_EQ(fcntl(203, F_GETFD), 0);

	/* ~0U as the last fd means "all of them". */
	CHECK_EQ(syscall(SYS_close_range, 202, ~0U, 0), 0);
	CHECK_ERR(fcntl(202, F_GETFD), EBADF);
	CHECK_ERR(fcntl(203, F_GETFD), EBADF);
	CHECK_EQ(fcntl(fd, F_GETFD), 0);
	close(fd);
}

static void test_ioctl(void)
{
	int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	char termios[64];
	int on = 1, off = 0, avail = -1;
	long r;

	CHECK_EQ(syscall(SYS_ioctl, fd, FIOCLEX), 0);
	CHECK_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(syscall(SYS_ioctl, fd, FIONCLEX), 0);
	CHECK_EQ(fcntl(fd, F_GETFD), 0);

	CHECK_EQ(syscall(SYS_ioctl, fd, FIONBIO, &on), 0);
	CHECK_EQ(fcntl(fd, F_GETFL), O_RDONLY | O_NONBLOCK | KERNEL_O_LARGEFILE);
	CHECK_EQ(syscall(SYS_ioctl, fd, FIONBIO, &off), 0);
	CHECK_EQ(fcntl(fd, F_GETFL), O_RDONLY | KERNEL_O_LARGEFILE);
	CHECK_ERR(syscall(SYS_ioctl, fd, FIONBIO, (void *)1), EFAULT);

	/* FIONREAD on a regular file: the bytes from the offset to the end. */
	CHECK_EQ(sys_lseek(fd, 5, SEEK_SET), 5);
	r = CHECK_OK(syscall(SYS_ioctl, fd, FIONREAD, &avail));
	if (r != -1)
		CHECK_EQ(r, 0);
	CHECK_EQ(avail, HELLO_LEN - 5);

	CHECK_ERR(syscall(SYS_ioctl, fd, TCGETS, termios), ENOTTY);
	CHECK_ERR(syscall(SYS_ioctl, 9999, FIONBIO, &on), EBADF);
	CHECK_ERR(syscall(SYS_ioctl, 9999, FIOCLEX), EBADF);
	close(fd);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_dup();
	test_fcntl();
	test_nofile_limit();
	test_close_range();
	test_ioctl();
	return check_finish();
}
