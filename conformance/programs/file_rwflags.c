/*
 * file_rwflags: preadv2 and pwritev2, preadv and pwritev with RWF_* flags,
 * in a fresh directory under /tmp and on pipes and sockets.
 *
 * Checks: at an offset they leave the file offset alone, at -1 they use
 * and move it; RWF_APPEND writes at the end (at an offset without moving
 * the file offset, at -1 moving it there); on an O_APPEND file pwritev2
 * (and pwrite) append, RWF_NOAPPEND writes at the offset; RWF_APPEND with
 * RWF_NOAPPEND EINVAL; RWF_HIPRI, RWF_DSYNC and RWF_SYNC taken; unknown
 * flags and RWF_ATOMIC EOPNOTSUPP, but a transfer of no bytes answers 0
 * whatever the flags; RWF_NOWAIT on an empty pipe or socket EAGAIN, with
 * data it reads, and /dev/null takes it; RWF_DONTCACHE on a pipe
 * EOPNOTSUPP; RWF_NOSIGNAL on a pipe without reader EPIPE and no SIGPIPE;
 * a directory EISDIR with RWF_HIPRI, EOPNOTSUPP with other flags; EINVAL
 * for an offset below -1 (before the fd is looked at) and 1025 iovecs,
 * EBADF for a bad fd and the wrong access mode, ESPIPE for a pipe at an
 * offset, EFAULT for an iovec array outside the address space.
 */
// covers: preadv2 pwritev2 pwrite64
// places: bind root
#include "check.h"

#include <limits.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>

#ifndef RWF_NOAPPEND
#define RWF_NOAPPEND 0x20
#endif
#ifndef RWF_ATOMIC
#define RWF_ATOMIC 0x40
#endif
#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x80
#endif
#ifndef RWF_NOSIGNAL
#define RWF_NOSIGNAL 0x100
#endif

static char scratch[64];

/* The offset in one long (the high half is ignored on x86-64), the
 * flags as an int. */
static long p2(int fd, const struct iovec *iov, int n, long off, int flags)
{
	return syscall(SYS_preadv2, fd, iov, n, off, 0L, flags);
}

static long w2(int fd, const struct iovec *iov, int n, long off, int flags)
{
	return syscall(SYS_pwritev2, fd, iov, n, off, 0L, flags);
}

static long size_of(int fd)
{
	struct stat st;

	CHECK_OK(fstat(fd, &st));
	return st.st_size;
}

static void test_read(void)
{
	char a[5], b[32];
	struct iovec iov[2] = { { a, 5 }, { b, sizeof(b) } };
	int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));

	CHECK_EQ(p2(fd, iov, 2, 0, 0), HELLO_LEN);
	CHECK_MEM(a, "Hello", 5);
	CHECK_MEM(b, HELLO_TEXT + 5, HELLO_LEN - 5);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_CUR), 0);
	/* -1: the file offset, which moves. */
	CHECK_EQ(sys_lseek(fd, 7, SEEK_SET), 7);
	CHECK_EQ(p2(fd, iov, 1, -1, 0), 5);
	CHECK_MEM(a, HELLO_TEXT + 7, 5);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_CUR), 12);
	/* Flags Linux takes on any file, and those it never takes. */
	CHECK_EQ(p2(fd, iov, 1, 0, RWF_HIPRI), 5);
	CHECK_EQ(p2(fd, iov, 1, 0, RWF_DSYNC | RWF_SYNC), 5);
	CHECK_EQ(p2(fd, iov, 1, 0, RWF_NOSIGNAL), 5);
	CHECK_ERR(p2(fd, iov, 1, 0, RWF_ATOMIC), EOPNOTSUPP);
	CHECK_ERR(p2(fd, iov, 1, 0, 0x200), EOPNOTSUPP);
	CHECK_ERR(p2(fd, iov, 1, 0, -1), EOPNOTSUPP);
	/* Nothing to move: 0, the flags unread. */
	struct iovec none = { a, 0 };
	CHECK_EQ(p2(fd, &none, 1, 0, 0x200), 0);
	CHECK_EQ(p2(fd, iov, 0, 0, 0x200), 0);
	close(fd);
}

static void test_write(void)
{
	char path[PATH_MAX], buf[64];
	struct iovec iov[2] = { { "abc", 3 }, { "de", 2 } };
	struct iovec one = { "XY", 2 };
	struct iovec rd = { buf, sizeof(buf) };

	snprintf(path, sizeof(path), "%s/f", scratch);
	int fd = CHECK_OK(open(path, O_RDWR | O_CREAT | O_TRUNC, 0644));

	CHECK_EQ(w2(fd, iov, 2, 0, 0), 5);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_CUR), 0);
	CHECK_EQ(w2(fd, &one, 1, -1, RWF_DSYNC), 2);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_CUR), 2);
	CHECK_EQ(p2(fd, &rd, 1, 0, 0), 5);
	CHECK_MEM(buf, "XYcde", 5);
	/* RWF_APPEND at an offset: at the end, the file offset stays. */
	CHECK_EQ(w2(fd, &one, 1, 1, RWF_APPEND | RWF_SYNC), 2);
	CHECK_EQ(size_of(fd), 7);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_CUR), 2);
	/* RWF_APPEND at -1: at the end, and the offset goes there. */
	CHECK_EQ(w2(fd, &one, 1, -1, RWF_APPEND | RWF_HIPRI), 2);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_CUR), 9);
	CHECK_EQ(p2(fd, &rd, 1, 0, 0), 9);
	CHECK_MEM(buf, "XYcdeXYXY", 9);
	CHECK_ERR(w2(fd, &one, 1, 0, RWF_APPEND | RWF_NOAPPEND), EINVAL);
	CHECK_ERR(w2(fd, &one, 1, 0, RWF_ATOMIC), EOPNOTSUPP);
	CHECK_ERR(w2(fd, &one, 1, 0, 0x200), EOPNOTSUPP);
	struct iovec none = { "", 0 };
	CHECK_EQ(w2(fd, &none, 1, 0, 0x200), 0);

	/* O_APPEND: pwritev2 and pwrite append; RWF_NOAPPEND does not. */
	int afd = CHECK_OK(open(path, O_RDWR | O_APPEND));
	CHECK_EQ(w2(afd, &one, 1, 0, 0), 2);
	CHECK_EQ(size_of(fd), 11);
	CHECK_EQ(sys_pwrite64(afd, "zz", 2, 0), 2);
	CHECK_EQ(size_of(fd), 13);
	CHECK_EQ(w2(afd, &one, 1, 3, RWF_NOAPPEND), 2);
	CHECK_EQ(size_of(fd), 13);
	CHECK_EQ(p2(fd, &rd, 1, 0, 0), 13);
	CHECK_MEM(buf, "XYcXYXYXYXYzz", 13);

	/* The wrong access mode, a read-only file. */
	int ro = CHECK_OK(open(path, O_RDONLY));
	CHECK_ERR(w2(ro, &one, 1, 0, 0), EBADF);
	int wo = CHECK_OK(open(path, O_WRONLY));
	CHECK_ERR(p2(wo, &rd, 1, 0, 0), EBADF);
	close(wo);
	close(ro);
	close(afd);
	close(fd);
	CHECK_OK(unlink(path));
}

static int sigpipes;

static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

static void test_pipes(void)
{
	char buf[16];
	struct iovec rd = { buf, sizeof(buf) }, wr = { "pipe", 4 };
	int p[2], s[2];

	CHECK_OK(pipe(p));
	CHECK_ERR(p2(p[0], &rd, 1, -1, RWF_NOWAIT), EAGAIN);
	CHECK_ERR(p2(p[0], &rd, 1, 0, 0), ESPIPE);
	CHECK_ERR(w2(p[1], &wr, 1, 0, 0), ESPIPE);
	CHECK_EQ(w2(p[1], &wr, 1, -1, RWF_NOWAIT), 4);
	CHECK_EQ(p2(p[0], &rd, 1, -1, RWF_NOWAIT), 4);
	CHECK_MEM(buf, "pipe", 4);
	CHECK_ERR(p2(p[0], &rd, 1, -1, RWF_DONTCACHE), EOPNOTSUPP);
	CHECK_ERR(w2(p[1], &wr, 1, -1, RWF_DONTCACHE), EOPNOTSUPP);
	CHECK_ERR(w2(p[1], &wr, 1, -1, RWF_ATOMIC), EOPNOTSUPP);

	/* No reader: EPIPE, and SIGPIPE only without RWF_NOSIGNAL. */
	struct sigaction sa = { .sa_handler = on_sigpipe };
	CHECK_OK(sigaction(SIGPIPE, &sa, NULL));
	close(p[0]);
	CHECK_ERR(w2(p[1], &wr, 1, -1, RWF_NOSIGNAL), EPIPE);
	CHECK_EQ(sigpipes, 0);
	CHECK_ERR(w2(p[1], &wr, 1, -1, 0), EPIPE);
	CHECK_EQ(sigpipes, 1);
	close(p[1]);

	CHECK_OK(socketpair(AF_UNIX, SOCK_STREAM, 0, s));
	CHECK_ERR(p2(s[0], &rd, 1, -1, RWF_NOWAIT), EAGAIN);
	CHECK_EQ(w2(s[1], &wr, 1, -1, RWF_NOWAIT), 4);
	CHECK_EQ(p2(s[0], &rd, 1, -1, RWF_NOWAIT), 4);
	CHECK_ERR(p2(s[0], &rd, 1, 0, 0), ESPIPE);
	close(s[0]);
	CHECK_ERR(w2(s[1], &wr, 1, -1, RWF_NOSIGNAL), EPIPE);
	CHECK_EQ(sigpipes, 1);
	close(s[1]);

	int null = CHECK_OK(open("/dev/null", O_RDWR));
	CHECK_EQ(p2(null, &rd, 1, 0, RWF_NOWAIT), 0);
	CHECK_EQ(w2(null, &wr, 1, 0, RWF_NOWAIT), 4);
	close(null);
}

static void test_errors(void)
{
	char buf[16];
	struct iovec rd = { buf, sizeof(buf) };
	struct iovec many[1025];
	int fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	int dir = CHECK_OK(open(DATA_DIR, O_RDONLY | O_DIRECTORY));

	for (int i = 0; i < 1025; i++)
		many[i] = rd;
	CHECK_ERR(p2(fd, &rd, 1, -2, 0), EINVAL);
	CHECK_ERR(p2(-1, &rd, 1, -2, 0), EINVAL);
	CHECK_ERR(w2(-1, &rd, 1, -2, 0), EINVAL);
	CHECK_ERR(p2(-1, &rd, 1, -1, 0), EBADF);
	CHECK_ERR(p2(9999, &rd, 1, 0, 0), EBADF);
	CHECK_ERR(w2(-1, &rd, 1, 0, 0), EBADF);
	CHECK_ERR(p2(fd, many, 1025, 0, 0), EINVAL);
	CHECK_ERR(p2(fd, (struct iovec *)8, 1, 0, 0), EFAULT);
	CHECK_ERR(p2(fd, (struct iovec *)-4096L, 1, 0, 0), EFAULT);
	CHECK_ERR(p2(dir, &rd, 1, 0, RWF_HIPRI), EISDIR);
	CHECK_ERR(p2(dir, &rd, 1, 0, RWF_DSYNC), EOPNOTSUPP);
	CHECK_ERR(p2(dir, &rd, 1, 0, 0x200), EOPNOTSUPP);
	close(dir);
	close(fd);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_read();
	test_pipes();
	test_errors();
	strcpy(scratch, "/tmp/moat-rwflags-XXXXXX");
	if (!mkdtemp(scratch)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	test_write();
	CHECK_OK(rmdir(scratch));
	return check_finish();
}
