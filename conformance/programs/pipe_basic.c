/*
 * pipe_basic: the pipe, the oldest way processes talk.
 *
 * Shell pipelines, make -j's job server, the self-pipe trick and most
 * parent-child plumbing run over pipes; they rely on EOF when the last writer
 * goes, on SIGPIPE killing a writer nobody reads, and on small writes never
 * being torn apart.
 * Checks: a pipe's ends are read-only and write-only (EBADF the other way),
 * bytes come out in order; EOF only after every writer is closed (EAGAIN
 * before, with O_NONBLOCK); writing with no reader raises SIGPIPE, which by
 * default kills the writer, and fails with EPIPE when SIGPIPE is ignored,
 * handled (the handler sees SI_USER from its own pid) or blocked (then it
 * stays pending); O_NONBLOCK: EAGAIN reading an empty pipe and writing a full
 * one (a write of at most PIPE_BUF is refused whole, a larger one is partly
 * written); two writers' 1000-byte writes never interleave; a pipe holds
 * 65536 bytes by default (F_GETPIPE_SZ), F_SETPIPE_SZ rounds up to a power of
 * two pages, is EBUSY below the bytes held and EPERM past pipe-max-size
 * without CAP_SYS_RESOURCE, and F_GETPIPE_SZ on a file is EBADF; pipe2 with
 * O_CLOEXEC and O_NONBLOCK sets them on both ends, O_DIRECT makes a packet
 * pipe (one read, one write), other flags are EINVAL; FIONREAD counts the
 * bytes held; close makes the descriptor EBADF. fchmod and fchown of either
 * end change the one inode both share, as fstat of the other end shows.
 */
// covers: pipe pipe2 read write close fcntl fchmod fchown
#include "check.h"

#include <limits.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#define PIPE_SIZE 65536

static int nread(int fd)
{
	int n = -1;

	CHECK_OK(ioctl(fd, FIONREAD, &n));
	return n;
}

static void test_basic(void)
{
	char buf[16];
	int p[2];

	CHECK_EQ(syscall(SYS_pipe, p), 0);
	CHECK(p[0] != p[1]);
	CHECK_EQ(fcntl(p[0], F_GETFL) & O_ACCMODE, O_RDONLY);
	CHECK_EQ(fcntl(p[1], F_GETFL) & O_ACCMODE, O_WRONLY);
	CHECK_EQ(fcntl(p[0], F_GETFD), 0);
	CHECK_EQ(fcntl(p[1], F_GETFD), 0);
	CHECK_EQ(write(p[1], "hello", 5), 5);
	CHECK_EQ(write(p[1], ", you", 5), 5);
	CHECK_EQ(nread(p[0]), 10);
	CHECK_EQ(read(p[0], buf, 4), 4);
	CHECK_MEM(buf, "hell", 4);
	CHECK_EQ(nread(p[0]), 6);
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 6);
	CHECK_MEM(buf, "o, you", 6);
	CHECK_EQ(nread(p[0]), 0);
	CHECK_ERR(read(p[1], buf, 1), EBADF);
	CHECK_ERR(write(p[0], "x", 1), EBADF);
	/* A zero-length write to a pipe is nothing at all. */
	CHECK_EQ(write(p[1], buf, 0), 0);
	CHECK_EQ(nread(p[0]), 0);
	CHECK_EQ(close(p[0]), 0);
	CHECK_EQ(close(p[1]), 0);
	CHECK_ERR(close(p[1]), EBADF);
	CHECK_ERR(syscall(SYS_pipe, (void *)8), EFAULT);
}

static void test_eof(void)
{
	char buf[8];
	int p[2], dup_w;

	CHECK_OK(pipe(p));
	dup_w = CHECK_OK(dup(p[1]));
	CHECK_EQ(write(p[1], "ab", 2), 2);
	CHECK_EQ(close(p[1]), 0);
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 2);
	/* A writer is left: no EOF, only "nothing yet". */
	CHECK_OK(fcntl(p[0], F_SETFL, O_NONBLOCK));
	CHECK_ERR(read(p[0], buf, sizeof(buf)), EAGAIN);
	CHECK_EQ(write(dup_w, "c", 1), 1);
	CHECK_EQ(close(dup_w), 0);
	/* The data first, then EOF (with or without O_NONBLOCK). */
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 1);
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 0);
	CHECK_OK(fcntl(p[0], F_SETFL, 0));
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 0);
	close(p[0]);
}

static volatile int sigpipes;
static siginfo_t sigpipe_info;

static void on_sigpipe(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	sigpipes++;
	sigpipe_info = *si;
}

static void test_epipe(void)
{
	struct sigaction sa;
	sigset_t set;
	int p[2];
	pid_t pid;

	CHECK_OK(pipe(p));
	CHECK_EQ(close(p[0]), 0);

	/* Default action: the writer dies of SIGPIPE. */
	pid = check_fork();
	if (pid == 0) {
		signal(SIGPIPE, SIG_DFL);
		if (write(p[1], "x", 1) == -1)
			_exit(errno);
		_exit(0);
	}
	CHECK_CHILD(pid, "killed by SIGPIPE");

	/* Ignored: EPIPE. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;
	CHECK_OK(sigaction(SIGPIPE, &sa, NULL));
	CHECK_ERR(write(p[1], "x", 1), EPIPE);

	/* Handled: the handler runs, then EPIPE. */
	sa.sa_sigaction = on_sigpipe;
	sa.sa_flags = SA_SIGINFO;
	CHECK_OK(sigaction(SIGPIPE, &sa, NULL));
	CHECK_ERR(write(p[1], "x", 1), EPIPE);
	CHECK_EQ(sigpipes, 1);
	CHECK_EQ(sigpipe_info.si_signo, SIGPIPE);
	CHECK_EQ(sigpipe_info.si_code, SI_USER);
	CHECK_EQ(sigpipe_info.si_pid, getpid());

	/* Blocked: EPIPE, and SIGPIPE waits. */
	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	CHECK_OK(sigprocmask(SIG_BLOCK, &set, NULL));
	CHECK_ERR(write(p[1], "x", 1), EPIPE);
	CHECK_EQ(sigpipes, 1);
	CHECK_OK(sigpending(&set));
	CHECK(sigismember(&set, SIGPIPE));
	CHECK_OK(sigprocmask(SIG_UNBLOCK, &set, NULL));
	CHECK_EQ(sigpipes, 2);
	signal(SIGPIPE, SIG_DFL);
	close(p[1]);
}

static void test_nonblock(void)
{
	static char buf[2 * PIPE_SIZE];
	long n, total = 0;
	int p[2];

	CHECK_EQ(pipe2(p, O_NONBLOCK), 0);
	CHECK_EQ(fcntl(p[0], F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	CHECK_EQ(fcntl(p[1], F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	CHECK_EQ(fcntl(p[0], F_GETFD), 0);
	CHECK_ERR(read(p[0], buf, 1), EAGAIN);

	memset(buf, 'z', sizeof(buf));
	while ((n = write(p[1], buf, 4096)) > 0)
		total += n;
	CHECK_EQ(n, -1);
	CHECK_EQ(errno, EAGAIN);
	CHECK_EQ(total, PIPE_SIZE);
	CHECK_EQ(nread(p[0]), PIPE_SIZE);
	/* Full: a write of at most PIPE_BUF is refused whole. */
	CHECK_ERR(write(p[1], buf, 1), EAGAIN);
	CHECK_ERR(write(p[1], buf, PIPE_BUF), EAGAIN);
	CHECK_EQ(nread(p[0]), PIPE_SIZE);
	/* Room for 4096 bytes: a bigger write is cut to that. */
	CHECK_EQ(read(p[0], buf, 4096), 4096);
	CHECK_EQ(write(p[1], buf, 3 * 4096), 4096);
	CHECK_EQ(nread(p[0]), PIPE_SIZE);
	CHECK_EQ(read(p[0], buf, sizeof(buf)), PIPE_SIZE);
	close(p[0]);
	close(p[1]);
}

#define RECORD 1000
#define RECORDS 200

static void test_atomic(void)
{
	static char data[2 * RECORD * RECORDS + 1];
	long len = 0, r, i;
	pid_t pids[2];
	int p[2], w;

	CHECK_OK(pipe(p));
	for (w = 0; w < 2; w++) {
		pids[w] = check_fork();
		if (pids[w] == 0) {
			char rec[RECORD];

			close(p[0]);
			memset(rec, 'A' + w, sizeof(rec));
			for (i = 0; i < RECORDS; i++)
				if (write(p[1], rec, RECORD) != RECORD)
					_exit(1);
			_exit(0);
		}
	}
	close(p[1]);
	while (len < (long)sizeof(data) &&
	       (r = read(p[0], data + len, sizeof(data) - len)) > 0)
		len += r;
	CHECK_EQ(len, 2 * RECORD * RECORDS);
	/* Every record in one piece. */
	for (i = 0; i + RECORD <= len; i += RECORD) {
		if (memchr(data + i, data[i] == 'A' ? 'B' : 'A', RECORD)) {
			check_fail(__FILE__, __LINE__,
				   "the writes were interleaved at offset %ld", i);
			break;
		}
	}
	CHECK_CHILD(pids[0], "exited 0");
	CHECK_CHILD(pids[1], "exited 0");
	close(p[0]);
}

static long pipe_max_size(void)
{
	char buf[32] = "";
	int fd = open("/proc/sys/fs/pipe-max-size", O_RDONLY);

	if (fd < 0)
		return -1;
	if (read(fd, buf, sizeof(buf) - 1) <= 0)
		buf[0] = '\0';
	close(fd);
	return buf[0] ? atol(buf) : -1;
}

static void test_pipe_size(void)
{
	static char buf[8192];
	long max;
	int p[2], fd;

	CHECK_OK(pipe(p));
	CHECK_EQ(fcntl(p[0], F_GETPIPE_SZ), PIPE_SIZE);
	CHECK_EQ(fcntl(p[1], F_GETPIPE_SZ), PIPE_SIZE);
	/* Rounded up to a power of two pages, and the same on both ends. */
	CHECK_EQ(fcntl(p[1], F_SETPIPE_SZ, 5000), 8192);
	CHECK_EQ(fcntl(p[0], F_GETPIPE_SZ), 8192);
	CHECK_EQ(fcntl(p[0], F_SETPIPE_SZ, 3 * 4096), 4 * 4096);
	CHECK_EQ(fcntl(p[0], F_SETPIPE_SZ, 1), 4096);
	CHECK_EQ(fcntl(p[0], F_SETPIPE_SZ, 0), 4096);
	CHECK_EQ(fcntl(p[0], F_SETPIPE_SZ, PIPE_SIZE), PIPE_SIZE);
	/* Not below what it holds. */
	CHECK_EQ(write(p[1], buf, sizeof(buf)), sizeof(buf));
	CHECK_ERR(fcntl(p[0], F_SETPIPE_SZ, 4096), EBUSY);
	CHECK_EQ(fcntl(p[0], F_GETPIPE_SZ), PIPE_SIZE);
	CHECK_EQ(fcntl(p[0], F_SETPIPE_SZ, 8192), 8192);
	CHECK_EQ(nread(p[0]), sizeof(buf));
	CHECK_ERR(fcntl(p[0], F_SETPIPE_SZ, 0x80000001U), EINVAL);
	max = pipe_max_size();
	if (max > 0 && !check_has_cap(CAP_SYS_RESOURCE))
		CHECK_ERR(fcntl(p[0], F_SETPIPE_SZ, max * 2), EPERM);
	close(p[0]);
	close(p[1]);

	fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	CHECK_ERR(fcntl(fd, F_GETPIPE_SZ), EBADF);
	CHECK_ERR(fcntl(fd, F_SETPIPE_SZ, 4096), EBADF);
	close(fd);
}

static void test_pipe2_flags(void)
{
	char buf[16];
	int p[2];

	CHECK_EQ(pipe2(p, O_CLOEXEC), 0);
	CHECK_EQ(fcntl(p[0], F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(p[1], F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(p[0], F_GETFL) & O_NONBLOCK, 0);
	close(p[0]);
	close(p[1]);

	CHECK_EQ(pipe2(p, O_CLOEXEC | O_NONBLOCK), 0);
	CHECK_EQ(fcntl(p[1], F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(p[1], F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	/* O_NONBLOCK is on the open file: F_SETFL turns it off. */
	CHECK_OK(fcntl(p[1], F_SETFL, 0));
	CHECK_EQ(fcntl(p[1], F_GETFL) & O_NONBLOCK, 0);
	CHECK_EQ(fcntl(p[0], F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	close(p[0]);
	close(p[1]);

	/* O_DIRECT: packets. A read takes one write's bytes, no more. */
	CHECK_EQ(pipe2(p, O_DIRECT), 0);
	CHECK_EQ(fcntl(p[1], F_GETFL) & O_DIRECT, O_DIRECT);
	CHECK_EQ(write(p[1], "abc", 3), 3);
	CHECK_EQ(write(p[1], "de", 2), 2);
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 3);
	CHECK_MEM(buf, "abc", 3);
	CHECK_EQ(read(p[0], buf, sizeof(buf)), 2);
	CHECK_MEM(buf, "de", 2);
	close(p[0]);
	close(p[1]);

	CHECK_ERR(pipe2(p, O_APPEND), EINVAL);
	CHECK_ERR(pipe2(p, O_RDWR), EINVAL);
	CHECK_ERR(pipe2(p, 0x10000000), EINVAL);
	CHECK_ERR(syscall(SYS_pipe2, (void *)8, 0), EFAULT);
}

static void test_attrs(void)
{
	struct stat st;
	int p[2];

	CHECK_EQ(pipe(p), 0);
	CHECK_EQ(fchmod(p[0], 0640), 0);
	CHECK_EQ(fstat(p[1], &st), 0);
	CHECK_EQ(st.st_mode, S_IFIFO | 0640);
	CHECK_EQ(fchown(p[1], -1, getegid()), 0);
	CHECK_EQ(fstat(p[0], &st), 0);
	CHECK_EQ(st.st_gid, getegid());
	CHECK_EQ(st.st_uid, geteuid());
	close(p[0]);
	close(p[1]);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_basic();
	test_eof();
	test_epipe();
	test_nonblock();
	test_atomic();
	test_pipe_size();
	test_pipe2_flags();
	test_attrs();
	return check_finish();
}
