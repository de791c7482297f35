/*
 * many_dirs DIR N: makes N directories under DIR, N/200 in each of 200
 * (and those 200), stats each (its inode number must be the one it had when
 * made), removes them all; then N files in 200 directories, the same way.
 * Prints one line per phase, "PHASE SECONDS", and exits 1 with a line on
 * stderr at the first call that fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TOP 200

static const char *dir;
static long per;
static ino_t *inos;
static struct timespec t0;

static const char *at(int i, long j, const char *kind)
{
	static char buf[4096];

	if (j < 0)
		snprintf(buf, sizeof(buf), "%s/%s%03d", dir, kind, i);
	else
		snprintf(buf, sizeof(buf), "%s/%s%03d/%ld", dir, kind, i, j);
	return buf;
}

static void fail(const char *what, const char *path)
{
	fprintf(stderr, "%s %s: %s\n", what, path, strerror(errno));
	exit(1);
}

static void phase(const char *name)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	printf("%s %.2f\n", name, (t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9);
	fflush(stdout);
	t0 = t;
}

static void tree(const char *kind, int files)
{
	struct stat st;
	int i, fd;
	long j;

	for (i = 0; i < TOP; i++) {
		if (mkdir(at(i, -1, kind), 0755))
			fail("mkdir", at(i, -1, kind));
		for (j = 0; j < per; j++) {
			const char *p = at(i, j, kind);

			if (files) {
				if ((fd = open(p, O_CREAT | O_EXCL | O_WRONLY, 0644)) < 0)
					fail("create", p);
				close(fd);
			} else if (mkdir(p, 0755)) {
				fail("mkdir", p);
			}
			if (lstat(p, &st))
				fail("stat", p);
			inos[i * per + j] = st.st_ino;
		}
	}
	phase(files ? "create" : "mkdir");
	for (i = 0; i < TOP; i++)
		for (j = 0; j < per; j++) {
			if (lstat(at(i, j, kind), &st))
				fail("stat", at(i, j, kind));
			if (st.st_ino != inos[i * per + j]) {
				errno = ESTALE;
				fail("inode number changed", at(i, j, kind));
			}
		}
	phase("stat");
	for (i = 0; i < TOP; i++) {
		for (j = 0; j < per; j++)
			if ((files ? unlink(at(i, j, kind)) : rmdir(at(i, j, kind))))
				fail("remove", at(i, j, kind));
		if (rmdir(at(i, -1, kind)))
			fail("rmdir", at(i, -1, kind));
	}
	phase("remove");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: many_dirs DIR N\n");
		return 2;
	}
	dir = argv[1];
	per = atol(argv[2]) / TOP;
	inos = calloc(TOP * per, sizeof(*inos));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	tree("d", 0);
	tree("f", 1);
	return 0;
}
