// fs_torture SEED OPS DIR: a file-system torture run. It makes OPS random
// changes (create, write, truncate, rename in its three kinds, unlink,
// link, symlink, mkdir, rmdir, chmod, an O_TMPFILE file linked in) to a few
// hundred names under DIR, chosen from SEED with its own generator, so that
// every run with one seed asks the same of whatever file system DIR is on. It prints each call's
// result (0 or the errno's name) and then the tree it left: every name
// with its type, permissions, size, link count, contents' hash or link
// target, and which names are one file. Two runs agree if and only if the
// file systems behaved alike.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static uint64_t state;

static uint64_t next(void) { // splitmix64
	uint64_t z = (state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static unsigned pick(unsigned n) { return (unsigned)(next() % n); }

#define NDIRS 12
#define NNAMES 300

// A path: one of NNAMES leaf names under one of NDIRS directory paths
// (which may or may not exist at the time).
static void path(char *buf, size_t n) {
	static const char *dirs[NDIRS] = {"", "a/", "b/", "a/c/", "a/c/d/", "b/e/", "f/", "f/g/", "a/h/", "b/e/i/", "j/", "a/c/k/"};
	snprintf(buf, n, "%s%c%u", dirs[pick(NDIRS)], "xyzdd"[pick(5)], pick(NNAMES / NDIRS));
}

static void result(int op, const char *what, int r) {
	if (r < 0)
		printf("%d %s %s\n", op, what, strerrorname_np(errno));
	else
		printf("%d %s 0\n", op, what);
}

static int writes(int fd, off_t off, size_t len) {
	char buf[8192];
	uint64_t v = next();
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (char)(v >> (i % 8 * 8)) + (char)i;
	while (len > 0) {
		size_t k = len < sizeof buf ? len : sizeof buf;
		ssize_t n = pwrite(fd, buf, k, off);
		if (n < 0)
			return -1;
		len -= n, off += n;
	}
	return 0;
}

static void step(int op) {
	char p1[128], p2[128];
	path(p1, sizeof p1);
	path(p2, sizeof p2);
	int fd, r;
	switch (pick(17)) {
	case 0:
	case 1:
		fd = open(p1, O_CREAT | O_EXCL | O_WRONLY, 0644);
		result(op, "create", fd);
		if (fd >= 0) {
			result(op, "write", writes(fd, 0, pick(20000)));
			close(fd);
		}
		break;
	case 2:
		fd = open(p1, O_WRONLY);
		result(op, "open", fd);
		if (fd >= 0) {
			result(op, "pwrite", writes(fd, pick(30000), 1 + pick(9000)));
			close(fd);
		}
		break;
	case 3:
		fd = open(p1, O_WRONLY | O_APPEND);
		result(op, "append", fd < 0 ? -1 : (int)write(fd, "appended", 8));
		if (fd >= 0)
			close(fd);
		break;
	case 4:
		result(op, "truncate", truncate(p1, pick(40000)));
		break;
	case 5:
	case 6:
		result(op, "rename", rename(p1, p2));
		break;
	case 7:
		result(op, "noreplace", (int)syscall(SYS_renameat2, AT_FDCWD, p1, AT_FDCWD, p2, RENAME_NOREPLACE));
		break;
	case 8:
		result(op, "exchange", (int)syscall(SYS_renameat2, AT_FDCWD, p1, AT_FDCWD, p2, RENAME_EXCHANGE));
		break;
	case 9:
		result(op, "unlink", unlink(p1));
		break;
	case 10:
		result(op, "link", link(p1, p2));
		break;
	case 11:
		result(op, "symlink", symlink(p2, p1));
		break;
	case 12:
	case 13: {
		// Directories: the fixed ones, so that names have somewhere to go.
		static const char *mk[] = {"a", "b", "a/c", "a/c/d", "b/e", "f", "f/g", "a/h", "b/e/i", "j", "a/c/k"};
		r = mkdir(pick(3) ? mk[pick(11)] : p1, 0755);
		result(op, "mkdir", r);
		break;
	}
	case 14:
		result(op, "rmdir", rmdir(pick(2) ? p1 : "a/c/d"));
		break;
	case 15:
		result(op, "chmod", chmod(p1, 0600 | pick(0200)));
		break;
	case 16: {
		// An unnamed file in p1's directory, written, then named p2.
		char dir[128], fdp[64];
		char *slash = strrchr(p1, '/');
		snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - p1) : 1, slash ? p1 : ".");
		fd = open(dir, O_TMPFILE | O_RDWR, 0640);
		result(op, "tmpfile", fd);
		if (fd >= 0) {
			result(op, "write", writes(fd, 0, pick(20000)));
			snprintf(fdp, sizeof fdp, "/proc/self/fd/%d", fd);
			result(op, "linkat", linkat(AT_FDCWD, fdp, AT_FDCWD, p2, AT_SYMLINK_FOLLOW));
			close(fd);
		}
		break;
	}
	}
}

static uint64_t hash(const char *p) {
	uint64_t h = 1469598103934665603ull;
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return 0;
	char buf[8192];
	ssize_t n;
	while ((n = read(fd, buf, sizeof buf)) > 0)
		for (ssize_t i = 0; i < n; i++)
			h = (h ^ (unsigned char)buf[i]) * 1099511628211ull;
	close(fd);
	return h;
}

// seen maps inode numbers to the first name that showed them.
static struct {
	ino_t ino;
	char name[256];
} seen[4096];
static int nseen;

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void dump(const char *dir) {
	DIR *d = opendir(dir);
	if (!d) {
		printf("opendir %s %s\n", dir, strerrorname_np(errno));
		return;
	}
	char *names[1024];
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 1024)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof *names, cmp);
	for (int i = 0; i < n; i++) {
		char p[256];
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		struct stat st;
		if (lstat(p, &st) < 0) {
			printf("lstat %s %s\n", p, strerrorname_np(errno));
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			printf("%s dir %o\n", p, st.st_mode & 07777);
			dump(p);
		} else if (S_ISLNK(st.st_mode)) {
			char t[256];
			ssize_t k = readlink(p, t, sizeof t - 1);
			t[k < 0 ? 0 : k] = 0;
			printf("%s link -> %s\n", p, t);
		} else {
			const char *same = "";
			for (int j = 0; j < nseen; j++)
				if (seen[j].ino == st.st_ino)
					same = seen[j].name;
			if (!*same && nseen < 4096) {
				seen[nseen].ino = st.st_ino;
				snprintf(seen[nseen++].name, 256, "%s", p);
			}
			printf("%s file %o size %lld links %lu hash %016llx%s%s\n", p, st.st_mode & 07777, (long long)st.st_size,
			       (unsigned long)st.st_nlink, (unsigned long long)hash(p), *same ? " same-as " : "", same);
		}
		free(names[i]);
	}
}

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: fs_torture SEED OPS DIR\n");
		return 2;
	}
	state = strtoull(argv[1], 0, 10);
	int ops = atoi(argv[2]);
	if (chdir(argv[3]) < 0) {
		perror(argv[3]);
		return 1;
	}
	umask(022);
	setvbuf(stdout, 0, _IOFBF, 1 << 16);
	for (int op = 0; op < ops; op++)
		step(op);
	dump(".");
	printf("done\n");
	return 0;
}
