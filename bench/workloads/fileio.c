/*
 * fileio: the file work an agent's tools do, on a directory DIR (a bind mount
 * of a host ext4 directory at /data, or the root file system), as
 * `fileio ITERATIONS BUDGET_MS MODE DIR NAME`, NAME being the figure's name. What each mode sets up (files it
 * reads, a repository) is made first and not timed; DIR persists between runs
 * on a bind mount, so only the first run of a session makes it there.
 *
 *   seq-write  ITERATIONS MiB written in 1 MiB blocks to a new file: ms/GiB
 *   seq-read   ITERATIONS MiB read in 1 MiB blocks from a 1 GiB file: ms/GiB
 *   rand-read  4 KiB preads at random page offsets of a 256 MiB file: ns/op
 *   open-stat  open, fstat and close of one of 10,000 files: us/op
 *   stat       stat of one of 10,000 paths: us/op
 *   git-status `git status --porcelain` in a 5,000-file repository: ms/op
 *   untar      `tar xf` of a 100 MiB archive of 100 files into a new directory: ms/op
 *   names      mkdir, creat+close, rename, unlink and rmdir, one each, in a
 *              directory made for the run: us per five changes of names
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

enum { MIB = 1 << 20, NFILES = 10000, REPO_FILES = 5000 };

static char path[4096];

static const char *in(const char *dir, const char *name)
{
	snprintf(path, sizeof path, "%s/%s", dir, name);
	return path;
}

/* fill makes name hold size bytes, unless it already does. */
static void fill(const char *name, long size)
{
	struct stat st;
	static char block[MIB];

	if (stat(name, &st) == 0 && st.st_size == size)
		return;
	int fd = open(name, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0)
		fail(name);
	for (long i = 0; i < (long)sizeof block; i++)
		block[i] = (char)(i * 7 + 3);
	for (long done = 0; done < size; done += MIB)
		if (write(fd, block, MIB) != MIB)
			fail("write");
	close(fd);
}

/* run_cmd runs argv with stdout and stderr on /dev/null and waits. */
static void run_cmd(char *const argv[])
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		fail("fork");
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s failed (status %#x)\n", argv[0], status);
		exit(1);
	}
}

/* many makes DIR/many/fNNNNN, NFILES empty files. */
static void many(const char *dir)
{
	char name[4096];

	mkdir(in(dir, "many"), 0755);
	for (int i = 0; i < NFILES; i++) {
		snprintf(name, sizeof name, "%s/many/f%05d", dir, i);
		int fd = open(name, O_CREAT | O_WRONLY, 0644);
		if (fd < 0)
			fail(name);
		close(fd);
	}
}

/* repo makes a git repository of REPO_FILES small files in 50 directories. */
static void repo(const char *dir)
{
	char name[4096];
	struct stat st;

	snprintf(name, sizeof name, "%s/repo/.git", dir);
	if (stat(name, &st) == 0)
		return;
	snprintf(name, sizeof name, "%s/repo", dir);
	mkdir(name, 0755);
	for (int d = 0; d < 50; d++) {
		snprintf(name, sizeof name, "%s/repo/d%02d", dir, d);
		mkdir(name, 0755);
		for (int f = 0; f < REPO_FILES / 50; f++) {
			snprintf(name, sizeof name, "%s/repo/d%02d/f%03d.txt", dir, d, f);
			int fd = open(name, O_CREAT | O_TRUNC | O_WRONLY, 0644);
			if (fd < 0 || dprintf(fd, "file %d of directory %d\n", f, d) < 0)
				fail(name);
			close(fd);
		}
	}
	snprintf(name, sizeof name, "%s/repo", dir);
	char *init[] = {"git", "-C", name, "init", "-q", NULL};
	char *add[] = {"git", "-C", name, "add", ".", NULL};
	char *commit[] = {"git", "-C", name, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-q", "-m", "files", NULL};
	run_cmd(init);
	run_cmd(add);
	run_cmd(commit);
}

int main(int argc, char **argv)
{
	if (argc != 6) {
		fprintf(stderr, "usage: %s ITERATIONS BUDGET_MS MODE DIR NAME\n", argv[0]);
		return 2;
	}
	const char *mode = argv[3], *dir = argv[4], *name_ = argv[5];
	static char block[MIB];
	struct run r;
	long n;

	if (strcmp(mode, "seq-write") == 0) {
		int fd = open(in(dir, "seq-write.dat"), O_CREAT | O_TRUNC | O_WRONLY, 0644);
		if (fd < 0)
			fail(path);
		memset(block, 'w', sizeof block);
		r = run_begin(3, argv);
		while ((n = run_next(&r, 16)) > 0)
			for (long i = 0; i < n; i++)
				if (write(fd, block, MIB) != MIB)
					fail("write");
		run_report(&r, name_, 1024 / 1e6, "ms/GiB");
		close(fd);
		unlink(in(dir, "seq-write.dat"));
	} else if (strcmp(mode, "seq-read") == 0) {
		fill(in(dir, "seq-read.dat"), 1024L * MIB);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			fail(path);
		r = run_begin(3, argv);
		long off = 0;
		while ((n = run_next(&r, 16)) > 0)
			for (long i = 0; i < n; i++, off = (off + MIB) % (1024L * MIB))
				if (pread(fd, block, MIB, off) != MIB)
					fail("pread");
		run_report(&r, name_, 1024 / 1e6, "ms/GiB");
	} else if (strcmp(mode, "rand-read") == 0) {
		fill(in(dir, "rand-read.dat"), 256L * MIB);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			fail(path);
		uint64_t x = 88172645463325252ull;
		r = run_begin(3, argv);
		while ((n = run_next(&r, 1000)) > 0)
			for (long i = 0; i < n; i++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				if (pread(fd, block, 4096, (long)(x % (256 * 256)) * 4096) != 4096)
					fail("pread");
			}
		run_report(&r, name_, 1, "ns/op");
	} else if (strcmp(mode, "open-stat") == 0 || strcmp(mode, "stat") == 0) {
		many(dir);
		char name[4096];
		struct stat st;
		int open_too = strcmp(mode, "open-stat") == 0;
		r = run_begin(3, argv);
		long k = 0;
		while ((n = run_next(&r, 100)) > 0)
			for (long i = 0; i < n; i++, k = (k + 1) % NFILES) {
				snprintf(name, sizeof name, "%s/many/f%05ld", dir, k);
				if (open_too) {
					int fd = open(name, O_RDONLY);
					if (fd < 0 || fstat(fd, &st) != 0)
						fail(name);
					close(fd);
				} else if (stat(name, &st) != 0) {
					fail(name);
				}
			}
		run_report(&r, name_, 1e-3, "us/op");
	} else if (strcmp(mode, "git-status") == 0) {
		repo(dir);
		snprintf(block, sizeof block, "%s/repo", dir);
		char *status[] = {"git", "-C", block, "status", "--porcelain", NULL};
		run_cmd(status); /* refreshes the index once, as a user's first status does */
		r = run_begin(3, argv);
		while ((n = run_next(&r, 1)) > 0)
			run_cmd(status);
		run_report(&r, name_, 1e-6, "ms/op");
	} else if (strcmp(mode, "untar") == 0) {
		mkdir(in(dir, "untar-src"), 0755);
		char name[4096], out[4096];
		for (int i = 0; i < 100; i++) {
			snprintf(name, sizeof name, "%s/untar-src/part%03d", dir, i);
			fill(name, MIB);
		}
		snprintf(name, sizeof name, "%s/untar.tar", dir);
		struct stat st;
		if (stat(name, &st) != 0) {
			char *pack[] = {"tar", "cf", name, "-C", (char *)dir, "untar-src", NULL};
			run_cmd(pack);
		}
		snprintf(out, sizeof out, "%s/untar-%d", dir, getpid());
		r = run_begin(3, argv);
		for (long i = 0; (n = run_next(&r, 1)) > 0; i++) {
			char sub[4200];
			snprintf(sub, sizeof sub, "%s-%ld", out, i);
			if (mkdir(sub, 0755) != 0)
				fail(sub);
			char *unpack[] = {"tar", "xf", name, "-C", sub, NULL};
			run_cmd(unpack);
		}
		run_report(&r, name_, 1e-6, "ms/op");
		char *clean[] = {"sh", "-c", "rm -rf \"$0\"-*", out, NULL};
		run_cmd(clean);
	} else if (strcmp(mode, "names") == 0) {
		char base[4096], sub[4200], f[4300], g[4300];
		snprintf(base, sizeof base, "%s/names-%d", dir, getpid());
		if (mkdir(base, 0755) != 0)
			fail(base);
		r = run_begin(3, argv);
		for (long k = 0; (n = run_next(&r, 100)) > 0;)
			for (long i = 0; i < n; i++, k++) {
				snprintf(sub, sizeof sub, "%s/d%ld", base, k);
				snprintf(f, sizeof f, "%s/f", sub);
				snprintf(g, sizeof g, "%s/g", sub);
				if (mkdir(sub, 0755) != 0)
					fail(sub);
				int fd = open(f, O_CREAT | O_EXCL | O_WRONLY, 0644);
				if (fd < 0)
					fail(f);
				close(fd);
				if (rename(f, g) != 0)
					fail(f);
				if (unlink(g) != 0)
					fail(g);
				if (rmdir(sub) != 0)
					fail(sub);
			}
		run_report(&r, name_, 1e-3, "us/op");
		rmdir(base);
	} else {
		fprintf(stderr, "%s: unknown mode %s\n", argv[0], mode);
		return 2;
	}
	return 0;
}
