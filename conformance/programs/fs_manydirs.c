/*
 * fs_manydirs: a tree of tens of thousands of directories and files, as
 * `npm install`, `pip install`, `tar x` and `mkdir -p` of a big package
 * leave in a workspace. Linux bounds such a tree by its file system's
 * inodes only: no count of directories ever made or walked runs out.
 *
 * Checks, in a fresh directory under /tmp: 8,190 directories (90 in each of
 * 90, and those) are made, then each is stat'ed with the inode number it
 * had when made, renamed within its parent once they all exist, listed, and
 * removed (ENOENT after); a directory opened at the start still resolves a
 * name through its descriptor at the end, and a file made at the start
 * takes a hard link at the end with one inode number and a link count of 2;
 * a chain of 1,000 directories, each entered with chdir, is left again with
 * "..". Then 1,440 files in 90 directories are made, one in 16 written,
 * each stat'ed (size, inode number) and removed. (Sized to take seconds
 * natively on a disk and under the runner's 20 s on a bind mount in a
 * loaded sandbox: moat's bind mount takes 0.5 to 1 ms per mkdir or create
 * there. integration/manydirs_test.go makes 40,000 of each, past the
 * point where moat's gofer gives back the nodes of files not in use.)
 */
// covers: mkdir rmdir rename link unlink chdir
// places: bind root
#include "check.h"

#include <dirent.h>
#include <sys/stat.h>

#define WIDE 90 /* directories at the top, and in each of them */
#define FILES 16 /* files in each of WIDE directories */
#define DEEP 1000 /* the chain's length */

static char top[64];
static ino_t inos[WIDE][WIDE];

/* at formats a path under top; the result lives until the second call
 * after, so that one call may take two. */
static const char *at(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *at(const char *fmt, ...)
{
	static char bufs[2][160];
	static int k;
	char *buf = bufs[k = !k];
	va_list ap;
	int n = snprintf(buf, sizeof(bufs[0]), "%s/", top);

	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(bufs[0]) - n, fmt, ap);
	va_end(ap);
	return buf;
}

/* FIRST_FAIL asserts cond and, when it fails, leaves the loop it is in:
 * one line, with errno and the loop's counters, for the first of thousands
 * of like failures. */
#define FIRST_FAIL(cond)                                                   \
	if (!(cond)) {                                                     \
		check_fail(__FILE__, __LINE__, "expected %s at %d/%d, got %s", \
			   #cond, i, j, check_errname(errno));                  \
		goto out;                                                  \
	}

static int count_entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -errno;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void wide_tree(void)
{
	struct stat st, fst;
	int i, j, held, n;

	CHECK_OK(mkdir(at("d000"), 0755));
	held = CHECK_OK(open(at("d000"), O_RDONLY | O_DIRECTORY));
	CHECK_OK(close(CHECK_OK(open(at("first"), O_CREAT | O_WRONLY, 0644))));
	CHECK_OK(stat(at("first"), &fst));
	for (i = 0; i < WIDE; i++) {
		FIRST_FAIL(i == 0 || mkdir(at("d%03d", i), 0755) == 0);
		for (j = 0; j < WIDE; j++) {
			FIRST_FAIL(mkdir(at("d%03d/s%03d", i, j), 0755) == 0);
			FIRST_FAIL(stat(at("d%03d/s%03d", i, j), &st) == 0);
			inos[i][j] = st.st_ino;
		}
	}
	for (i = 0; i < WIDE; i++)
		for (j = 0; j < WIDE; j++) {
			FIRST_FAIL(stat(at("d%03d/s%03d", i, j), &st) == 0);
			FIRST_FAIL(S_ISDIR(st.st_mode) && st.st_ino == inos[i][j]);
		}
	/* A rename, once every directory was walked: of the first made, and
	 * of one in every parent. */
	for (i = 0; i < WIDE; i++) {
		FIRST_FAIL(rename(at("d%03d/s000", i), at("d%03d/r000", i)) == 0);
		FIRST_FAIL(stat(at("d%03d/r000", i), &st) == 0);
		FIRST_FAIL(st.st_ino == inos[i][0]);
		FIRST_FAIL(mkdir(at("d%03d/r000/inner", i), 0755) == 0);
		FIRST_FAIL(rmdir(at("d%03d/r000/inner", i)) == 0);
	}
	CHECK_EQ(count_entries(at("d%03d", WIDE / 2)), WIDE);
	/* The descriptor opened first still reaches its directory. */
	CHECK_OK(close(CHECK_OK(openat(held, "r000", O_RDONLY | O_DIRECTORY))));
	CHECK_OK(fstat(held, &st));
	CHECK_EQ(st.st_nlink, WIDE + 2);
	CHECK_OK(close(held));
	CHECK_OK(link(at("first"), at("d%03d/linked", WIDE - 1)));
	CHECK_OK(stat(at("d%03d/linked", WIDE - 1), &st));
	CHECK_EQ(st.st_ino, fst.st_ino);
	CHECK_EQ(st.st_nlink, 2);
	CHECK_OK(unlink(at("d%03d/linked", WIDE - 1)));
	CHECK_OK(unlink(at("first")));
	for (i = 0; i < WIDE; i++) {
		for (j = 0; j < WIDE; j++)
			FIRST_FAIL(rmdir(at(j ? "d%03d/s%03d" : "d%03d/r%03d", i, j)) == 0);
		FIRST_FAIL(rmdir(at("d%03d", i)) == 0);
	}
	n = 0;
	for (i = 0; i < WIDE; i++)
		n += stat(at("d%03d", i), &st) == 0 || errno != ENOENT;
	CHECK_EQ(n, 0);
out:;
}

static void deep_chain(void)
{
	char cwd[PATH_MAX];
	int i, j = 0;

	CHECK(getcwd(cwd, sizeof(cwd)) != NULL);
	CHECK_OK(chdir(top));
	for (i = 0; i < DEEP; i++) {
		FIRST_FAIL(mkdir("c", 0755) == 0);
		FIRST_FAIL(chdir("c") == 0);
	}
	for (i = 0; i < DEEP; i++) {
		FIRST_FAIL(chdir("..") == 0);
		FIRST_FAIL(rmdir("c") == 0);
	}
	CHECK_EQ(count_entries("."), 0);
out:
	CHECK_OK(chdir(cwd));
}

/* file_data is what file j of directory i holds: its number, in one file
 * of DATA_EVERY (the others are empty), so that the files' pages fit the
 * bundle's 64 MiB tmpfs, where each file with data takes a page. */
#define DATA_EVERY 16
static int file_data(char *buf, int i, int j)
{
	if (j % DATA_EVERY)
		return 0;
	return sprintf(buf, "%d", i * FILES + j);
}

static void many_files(void)
{
	struct stat st;
	char data[16];
	int i, j, fd, len;

	for (i = 0; i < WIDE; i++) {
		FIRST_FAIL(mkdir(at("f%03d", i), 0755) == 0);
		for (j = 0; j < FILES; j++) {
			fd = open(at("f%03d/%03d", i, j), O_CREAT | O_EXCL | O_WRONLY, 0644);
			FIRST_FAIL(fd >= 0);
			len = file_data(data, i, j);
			FIRST_FAIL(write(fd, data, len) == len);
			FIRST_FAIL(close(fd) == 0);
			FIRST_FAIL(stat(at("f%03d/%03d", i, j), &st) == 0);
			inos[i][j] = st.st_ino;
		}
	}
	for (i = 0; i < WIDE; i++)
		for (j = 0; j < FILES; j++) {
			FIRST_FAIL(stat(at("f%03d/%03d", i, j), &st) == 0);
			len = file_data(data, i, j);
			FIRST_FAIL(S_ISREG(st.st_mode) && st.st_size == len && st.st_ino == inos[i][j]);
		}
	for (i = 0; i < WIDE; i++) {
		for (j = 0; j < FILES; j++)
			FIRST_FAIL(unlink(at("f%03d/%03d", i, j)) == 0);
		FIRST_FAIL(rmdir(at("f%03d", i)) == 0);
	}
out:;
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	snprintf(top, sizeof(top), "/tmp/manydirs.XXXXXX");
	if (!mkdtemp(top)) {
		CHECK(!"mkdtemp");
		return check_finish();
	}
	wide_tree();
	deep_chain();
	many_files();
	CHECK_EQ(count_entries(top), 0);
	CHECK_OK(rmdir(top));
	return check_finish();
}
