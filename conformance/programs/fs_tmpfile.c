/*
 * fs_tmpfile: open(O_TMPFILE), an unnamed file, and the names of files whose
 * name is gone, in a fresh directory under /tmp (natively the host's /tmp;
 * in the container the tmpfs the bundle mounts there).
 *
 * Checks: the file is regular, has no link, the mode given less the umask
 * and the creator as owner, holds data, and adds no entry to its directory;
 * linkat through /proc/self/fd/N with AT_SYMLINK_FOLLOW (and with
 * AT_EMPTY_PATH given CAP_DAC_READ_SEARCH; never from a forked child
 * without it) gives it a name, once: after that
 * name is gone it cannot get another, and with O_EXCL it never could;
 * EINVAL without write access, with O_CREAT, or with __O_TMPFILE but not
 * O_DIRECTORY; ENOTDIR on a file, ENOENT on a missing directory, and, in the
 * container, EROFS on the read-only rootfs. /proc/self/fd shows such a file,
 * an unlinked one and one a rename replaced with " (deleted)" after its
 * name, a renamed one by its new name, and so do /proc/self/maps for a
 * mapping of an unlinked file and /proc/self/cwd for a removed directory,
 * where getcwd fails with ENOENT.
 */
// covers: open openat linkat getcwd
// places: bind root
#include "check.h"

#include <dirent.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/stat.h>

#define O_TMPFILE_BIT (O_TMPFILE & ~O_DIRECTORY) /* __O_TMPFILE */

static char scratch[64]; /* the test directory */

static int has_cap(int cap)
{
	unsigned long long eff = strtoull(proc_status("CapEff"), NULL, 16);

	return (eff >> cap) & 1;
}

/* entries counts the names in the scratch directory, . and .. aside. */
static int entries(void)
{
	DIR *d = opendir(scratch);
	struct dirent *e;
	int n = 0;

	if (!d) {
		check_fail(__FILE__, __LINE__, "opendir: %s", check_errname(errno));
		return -1;
	}
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* fdpath names descriptor fd in /proc/self/fd. */
static const char *fdpath(int fd)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "/proc/self/fd/%d", fd);
	return buf;
}

static void test_unnamed(void)
{
	struct stat st;
	char buf[8];
	mode_t old = umask(022);
	int fd = CHECK_OK(syscall(SYS_open, scratch, O_TMPFILE | O_RDWR, 0777));

	umask(old);
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(S_ISREG(st.st_mode), 1);
	CHECK_EQ(st.st_mode & 07777, 0755);
	CHECK_EQ(st.st_nlink, 0);
	CHECK_EQ(st.st_uid, geteuid());
	CHECK_EQ(st.st_size, 0);
	CHECK_EQ(syscall(SYS_write, fd, "unnamed", 7), 7);
	CHECK_EQ(pread(fd, buf, sizeof(buf), 0), 7);
	CHECK_MEM(buf, "unnamed", 7);
	CHECK_EQ(entries(), 0);
	close(fd);
	CHECK_EQ(entries(), 0);

	/* openat resolves the directory from its dirfd; O_WRONLY is enough. */
	int dir = CHECK_OK(open(scratch, O_RDONLY | O_DIRECTORY));
	fd = CHECK_OK(syscall(SYS_openat, dir, ".", O_TMPFILE | O_WRONLY, 0600));
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_mode & 07777, 0600);
	close(fd);
	close(dir);
}

static void test_link(void)
{
	char path[PATH_MAX], buf[8];
	struct stat st, named;
	int fd = CHECK_OK(syscall(SYS_open, scratch, O_TMPFILE | O_RDWR, 0640));

	CHECK_EQ(syscall(SYS_write, fd, "kept", 4), 4);
	CHECK_OK(fstat(fd, &st));
	snprintf(path, sizeof(path), "%s/named", scratch);
	CHECK_OK(syscall(SYS_linkat, AT_FDCWD, fdpath(fd), AT_FDCWD, path, AT_SYMLINK_FOLLOW));
	CHECK_OK(stat(path, &named));
	CHECK_EQ(named.st_ino, st.st_ino);
	CHECK_EQ(named.st_nlink, 1);
	CHECK_EQ(named.st_size, 4);
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_nlink, 1);
	CHECK_EQ(entries(), 1);

	/* The data is the file's, read through the new name. */
	int rd = CHECK_OK(open(path, O_RDONLY));
	CHECK_EQ(read(rd, buf, sizeof(buf)), 4);
	CHECK_MEM(buf, "kept", 4);
	close(rd);

	/* Named once, unnamed again: it cannot get a name back. */
	CHECK_OK(unlink(path));
	CHECK_ERR(syscall(SYS_linkat, AT_FDCWD, fdpath(fd), AT_FDCWD, path, AT_SYMLINK_FOLLOW), ENOENT);
	close(fd);

	/* With O_EXCL it never can. */
	fd = CHECK_OK(syscall(SYS_open, scratch, O_TMPFILE | O_EXCL | O_RDWR, 0600));
	CHECK_ERR(syscall(SYS_linkat, AT_FDCWD, fdpath(fd), AT_FDCWD, path, AT_SYMLINK_FOLLOW), ENOENT);
	close(fd);
	CHECK_EQ(entries(), 0);

	/* AT_EMPTY_PATH links the descriptor's file given CAP_DAC_READ_SEARCH;
	 * without it, only the credentials that opened the file may (Linux
	 * 6.10's relaxation; earlier kernels refuse them too), which a forked
	 * child's are not. */
	fd = CHECK_OK(syscall(SYS_open, scratch, O_TMPFILE | O_RDWR, 0600));
	if (has_cap(CAP_DAC_READ_SEARCH)) {
		CHECK_OK(syscall(SYS_linkat, fd, "", AT_FDCWD, path, AT_EMPTY_PATH));
		CHECK_EQ(entries(), 1);
		CHECK_OK(unlink(path));
	} else {
		pid_t pid = fork();

		if (pid == 0)
			_exit(syscall(SYS_linkat, fd, "", AT_FDCWD, path, AT_EMPTY_PATH) == -1 && errno == ENOENT ? 0 : 1);
		CHECK_CHILD(pid, "exited 0");
		CHECK_EQ(entries(), 0);
	}
	close(fd);
}

/* fdlink is /proc/self/fd/fd's target. */
static const char *fdlink(int fd)
{
	static char buf[PATH_MAX];
	ssize_t n = readlink(fdpath(fd), buf, sizeof(buf) - 1);

	buf[n < 0 ? 0 : n] = 0;
	return buf;
}

static void test_deleted_names(void)
{
	char want[PATH_MAX], a[128], b[128], dir[128];
	struct stat st;
	int fd = CHECK_OK(syscall(SYS_open, scratch, O_TMPFILE | O_RDWR, 0600));

	CHECK_OK(fstat(fd, &st));
	snprintf(want, sizeof(want), "%s/#%llu (deleted)", scratch, (unsigned long long)st.st_ino);
	CHECK_STR(fdlink(fd), want);
	close(fd);

	/* Unlinked, then mapped: both name it " (deleted)". */
	snprintf(a, sizeof(a), "%s/a", scratch);
	snprintf(b, sizeof(b), "%s/b", scratch);
	fd = CHECK_OK(syscall(SYS_open, a, O_RDWR | O_CREAT, 0600));
	CHECK_EQ(ftruncate(fd, 4096), 0);
	CHECK_STR(fdlink(fd), a);
	CHECK_OK(unlink(a));
	snprintf(want, sizeof(want), "%s (deleted)", a);
	CHECK_STR(fdlink(fd), want);
	char *m = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	CHECK_EQ(m != MAP_FAILED, 1);
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[PATH_MAX + 128];
	int found = 0;
	while (maps && fgets(line, sizeof(line), maps)) {
		unsigned long lo;
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%lx-", &lo) == 1 && lo == (unsigned long)m)
			found = strlen(line) > strlen(want) && !strcmp(line + strlen(line) - strlen(want), want);
	}
	if (maps)
		fclose(maps);
	CHECK_EQ(found, 1);
	munmap(m, 4096);
	close(fd);

	/* Renamed: the new name; replaced by a rename: " (deleted)". */
	fd = CHECK_OK(syscall(SYS_open, a, O_RDWR | O_CREAT, 0600));
	CHECK_OK(rename(a, b));
	CHECK_STR(fdlink(fd), b);
	int fd2 = CHECK_OK(syscall(SYS_open, a, O_RDWR | O_CREAT, 0600));
	CHECK_OK(rename(a, b));
	snprintf(want, sizeof(want), "%s (deleted)", b);
	CHECK_STR(fdlink(fd), want);
	CHECK_STR(fdlink(fd2), b);
	close(fd);
	close(fd2);
	CHECK_OK(unlink(b));

	/* A removed working directory. */
	char cwd[PATH_MAX], buf[PATH_MAX];
	CHECK_EQ(getcwd(cwd, sizeof(cwd)) != NULL, 1);
	snprintf(dir, sizeof(dir), "%s/d", scratch);
	CHECK_OK(mkdir(dir, 0700));
	CHECK_OK(chdir(dir));
	CHECK_OK(rmdir(dir));
	CHECK_ERR(syscall(SYS_getcwd, buf, sizeof(buf)), ENOENT);
	snprintf(want, sizeof(want), "%s (deleted)", dir);
	ssize_t n = readlink("/proc/self/cwd", buf, sizeof(buf) - 1);
	buf[n < 0 ? 0 : n] = 0;
	CHECK_STR(buf, want);
	CHECK_OK(chdir(cwd));
}

static void test_errors(int sandbox)
{
	char file[PATH_MAX], missing[PATH_MAX];

	CHECK_ERR(syscall(SYS_open, scratch, O_TMPFILE | O_RDONLY, 0600), EINVAL);
	CHECK_ERR(syscall(SYS_open, scratch, O_TMPFILE | O_RDWR | O_CREAT, 0600), EINVAL);
	CHECK_ERR(syscall(SYS_open, scratch, O_TMPFILE_BIT | O_RDWR, 0600), EINVAL);

	snprintf(file, sizeof(file), "%s/file", scratch);
	close(CHECK_OK(syscall(SYS_open, file, O_WRONLY | O_CREAT, 0600)));
	CHECK_ERR(syscall(SYS_open, file, O_TMPFILE | O_RDWR, 0600), ENOTDIR);
	CHECK_OK(unlink(file));
	snprintf(missing, sizeof(missing), "%s/missing", scratch);
	CHECK_ERR(syscall(SYS_open, missing, O_TMPFILE | O_RDWR, 0600), ENOENT);

	if (sandbox)
		CHECK_ERR(syscall(SYS_open, "/", O_TMPFILE | O_RDWR, 0600), EROFS);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	strcpy(scratch, "/tmp/moat-tmpfile-XXXXXX");
	if (!mkdtemp(scratch)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	test_unnamed();
	test_link();
	test_deleted_names();
	test_errors(check_ro_root());
	rmdir(scratch);
	return check_finish();
}
