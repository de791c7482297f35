/*
 * file_splice_proc: which /proc files splice(2) and sendfile(2) read, as
 * Linux's file operations decide (the kernel's splice/short_splice_read
 * selftest): a process's files are read with seq_read or read and have no
 * splice_read, nor have /proc/net's, so both calls fail there with EINVAL;
 * the machine's files, the process's mount tables and /proc/sys have one.
 *
 * Checks: splice to a pipe and sendfile to /dev/null from /proc/self's
 * limits, comm, status, stat, cmdline and mem and from /proc/net/unix:
 * EINVAL; from /proc/version, /proc/uptime, /proc/self/mountinfo and
 * /proc/sys/kernel/ostype: the same bytes a read gives (two bytes when two
 * are asked), and sendfile's count.
 */
// covers: splice sendfile
#include "check.h"

#include <sys/sendfile.h>

static long splice_from(const char *path, size_t n, char *out)
{
	int p[2], fd = open(path, O_RDONLY);
	long r;

	if (fd < 0)
		return -2;
	CHECK_OK(pipe(p));
	r = splice(fd, NULL, p[1], NULL, n, SPLICE_F_NONBLOCK);
	int e = errno;
	if (r > 0)
		CHECK_EQ(read(p[0], out, r), r);
	close(p[0]);
	close(p[1]);
	close(fd);
	errno = e;
	return r;
}

static long sendfile_from(const char *path)
{
	int fd = open(path, O_RDONLY), null = open("/dev/null", O_WRONLY);
	long r = sendfile(null, fd, NULL, 4096);
	int e = errno;

	close(fd);
	close(null);
	errno = e;
	return r;
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	static char buf[8192], want[8192];

	const char *none[] = {"/proc/self/limits", "/proc/self/comm", "/proc/self/status",
			      "/proc/self/stat", "/proc/self/cmdline", "/proc/self/mem", "/proc/net/unix"};
	for (unsigned i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		CHECK_ERR(splice_from(none[i], 4096, buf), EINVAL);
		CHECK_ERR(sendfile_from(none[i]), EINVAL);
	}

	const char *some[] = {"/proc/version", "/proc/self/mountinfo", "/proc/sys/kernel/ostype", "/proc/uptime"};
	for (unsigned i = 0; i < sizeof(some) / sizeof(some[0]); i++) {
		int fd = open(some[i], O_RDONLY);
		CHECK(fd >= 0);
		memset(want, 0, sizeof(want));
		long n = read(fd, want, 4096);
		close(fd);
		CHECK(n > 2);
		memset(buf, 0, sizeof(buf));
		long got = splice_from(some[i], 4096, buf);
		CHECK(got > 2);
		/* uptime moves on between the reads: its first figure's length holds. */
		if (i < 3) {
			CHECK_EQ(got, n);
			CHECK_MEM(buf, want, n);
		}
		memset(buf, 0, sizeof(buf));
		CHECK_EQ(splice_from(some[i], 2, buf), 2);
		if (i < 3)
			CHECK_MEM(buf, want, 2);
		long s = sendfile_from(some[i]);
		CHECK(s > 2);
		if (i < 3)
			CHECK_EQ(s, n);
	}
	return check_finish();
}
