/*
 * fs_shared: what files share between processes, in a fresh directory under
 * /tmp (natively the host's /tmp; in the container the tmpfs the bundle mounts
 * there).
 *
 * Checks: a MAP_SHARED mapping of a file and read(2)/write(2) see each
 * other's changes, both ways, across a fork and in two unrelated mappings; a
 * MAP_PRIVATE mapping sees the file until it writes a page, then its own copy,
 * which never reaches the file; msync succeeds on a shared mapping; what a
 * process wrote through a mapping is in the file after munmap and after the
 * process exits; a mapping longer than its file raises SIGBUS past the end
 * until the file grows (ftruncate or a write past the end), and then sees
 * the new part, shared or private. FIFOs (mkfifo, mknod S_IFIFO): a reader's open waits for a
 * writer, and gets what a writer that has already closed wrote; a writer's
 * open waits for a reader; O_NONBLOCK: a reader opens at once and reads end
 * of file, a writer with no reader gets ENXIO; O_RDWR never waits; the node
 * stats as a FIFO with its mode, and stays in the directory.
 */
// covers: mmap msync munmap mknod mknodat open read write
// places: bind root
#include "check.h"

#include <sys/mman.h>
#include <sys/stat.h>

static char scratch[64];

static const char *P(const char *name)
{
	static char bufs[4][256];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, 256, "%s/%s", scratch, name);
	return b;
}

static void test_shared_mappings(void)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd = CHECK_OK(open(P("map"), O_CREAT | O_RDWR, 0644));
	char buf[32];

	CHECK_OK(ftruncate(fd, 2 * page));
	char *shared = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char *other = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char *private = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(shared != MAP_FAILED && other != MAP_FAILED && private != MAP_FAILED);
	if (shared == MAP_FAILED || other == MAP_FAILED || private == MAP_FAILED)
		return;

	CHECK_EQ(pwrite(fd, "by write", 8, 10), 8);
	CHECK_MEM(shared + 10, "by write", 8);
	CHECK_MEM(other + 10, "by write", 8);
	CHECK_MEM(private + 10, "by write", 8); /* not written yet: the file's */

	memcpy(shared + page, "by mapping", 10);
	CHECK_EQ(pread(fd, buf, 10, page), 10);
	CHECK_MEM(buf, "by mapping", 10);
	CHECK_MEM(other + page, "by mapping", 10);

	memcpy(private, "private", 7);
	CHECK_EQ(pread(fd, buf, 7, 0), 7);
	CHECK(memcmp(buf, "private", 7) != 0);
	CHECK_EQ(pwrite(fd, "again", 5, 0), 5);
	CHECK_MEM(private, "private", 7); /* its own copy now */
	CHECK_MEM(shared, "again", 5);

	pid_t pid = check_fork();
	if (pid == 0) {
		memcpy(shared + 100, "child", 5);
		CHECK_OK(msync(shared, 2 * page, MS_SYNC));
		CHECK_EQ(pwrite(fd, "child write", 11, 200), 11);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(pread(fd, buf, 5, 100), 5);
	CHECK_MEM(buf, "child", 5);
	CHECK_MEM(shared + 200, "child write", 11);

	/* What a process writes through a mapping outlives it and the mapping. */
	pid = check_fork();
	if (pid == 0) {
		char *m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, page);
		if (m == MAP_FAILED)
			_exit(2);
		memcpy(m + 300, "left behind", 11);
		_exit(0); /* no msync, no munmap */
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_OK(munmap(shared, 2 * page));
	CHECK_OK(munmap(other, 2 * page));
	CHECK_OK(munmap(private, 2 * page));
	close(fd);
	fd = CHECK_OK(open(P("map"), O_RDONLY));
	CHECK_EQ(pread(fd, buf, 11, page + 300), 11);
	CHECK_MEM(buf, "left behind", 11);
	close(fd);
}

static void test_mapping_grows(void)
{
	long page = sysconf(_SC_PAGESIZE);
	int fd = CHECK_OK(open(P("grow"), O_CREAT | O_RDWR | O_TRUNC, 0644));
	char buf[8];

	CHECK_EQ(write(fd, "head", 4), 4);
	char *sh = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	char *pv = mmap(NULL, 3 * page, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(sh != MAP_FAILED && pv != MAP_FAILED);
	if (sh == MAP_FAILED || pv == MAP_FAILED)
		return;
	CHECK_EQ(check_sigbus(sh + page), 1);
	CHECK_EQ(check_sigbus(pv + page), 1);

	/* ftruncate grows it to two pages: the second is there, as zeros,
	 * in both mappings, and what the shared one writes is the file's. */
	CHECK_OK(ftruncate(fd, 2 * page));
	CHECK_EQ(check_sigbus(sh + page), 0);
	CHECK_EQ(sh[page], 0);
	CHECK_EQ(pv[page + 1], 0);
	sh[page] = 'x';
	CHECK_EQ(pread(fd, buf, 1, page), 1);
	CHECK_EQ(buf[0], 'x');
	CHECK_EQ(pv[page], 'x');
	CHECK_EQ(check_sigbus(sh + 2 * page), 1);

	/* A write past the end grows it into the third page. */
	CHECK_EQ(pwrite(fd, "tail", 4, 2 * page + 8), 4);
	CHECK_EQ(check_sigbus(sh + 2 * page), 0);
	CHECK_MEM(sh + 2 * page + 8, "tail", 4);
	CHECK_MEM(pv + 2 * page + 8, "tail", 4);
	munmap(sh, 3 * page);
	munmap(pv, 3 * page);
	close(fd);
}

static void test_fifos(void)
{
	char buf[32];
	struct stat st;

	CHECK_OK(mkfifo(P("fifo"), 0640));
	CHECK_OK(stat(P("fifo"), &st));
	CHECK_EQ(st.st_mode, S_IFIFO | 0640);
	CHECK_OK(mknod(P("fifo2"), S_IFIFO | 0600, 0));

	CHECK_ERR(open(P("fifo"), O_WRONLY | O_NONBLOCK), ENXIO);
	int r = CHECK_OK(open(P("fifo"), O_RDONLY | O_NONBLOCK));
	CHECK_EQ(read(r, buf, sizeof buf), 0);
	close(r);

	/* The writer opens, writes and closes before the reader wakes. */
	pid_t pid = check_fork();
	if (pid == 0) {
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
		int w = open(P("fifo"), O_WRONLY);
		CHECK(w >= 0);
		CHECK_EQ(write(w, "hello", 5), 5);
		close(w);
		check_child_exit();
	}
	r = CHECK_OK(open(P("fifo"), O_RDONLY));
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(read(r, buf, sizeof buf), 5);
	CHECK_MEM(buf, "hello", 5);
	CHECK_EQ(read(r, buf, sizeof buf), 0);
	close(r);

	/* A writer waits for a reader. */
	pid = check_fork();
	if (pid == 0) {
		int w = open(P("fifo2"), O_WRONLY);
		CHECK(w >= 0);
		CHECK_EQ(write(w, "to you", 6), 6);
		close(w);
		check_child_exit();
	}
	struct timespec ts = {0, 50 * 1000 * 1000};
	nanosleep(&ts, NULL);
	r = CHECK_OK(open(P("fifo2"), O_RDONLY));
	CHECK_EQ(read(r, buf, 6), 6);
	CHECK_MEM(buf, "to you", 6);
	CHECK_CHILD(pid, "exited 0");
	close(r);

	int rw = CHECK_OK(open(P("fifo"), O_RDWR));
	CHECK_EQ(write(rw, "xy", 2), 2);
	CHECK_EQ(read(rw, buf, sizeof buf), 2);
	close(rw);
	CHECK_OK(stat(P("fifo"), &st));
	CHECK(S_ISFIFO(st.st_mode));
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	strcpy(scratch, "/tmp/moat-shared-XXXXXX");
	if (!mkdtemp(scratch)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	test_shared_mappings();
	test_mapping_grows();
	test_fifos();
	return check_finish();
}
