/*
 * fs_tmpfile: open(O_TMPFILE), an unnamed file in a fresh directory under
 * /tmp (natively the host's /tmp; in the container the tmpfs the bundle
 * mounts there).
 *
 * Checks: the file is regular, has no link, the mode given less the umask
 * and the creator as owner, holds data, and adds no entry to its directory;
 * linkat through /proc/self/fd/N with AT_SYMLINK_FOLLOW (and with
 * AT_EMPTY_PATH given CAP_DAC_READ_SEARCH; never from a forked child
 * without it) gives it a name, once: after that
 * name is gone it cannot get another, and with O_EXCL it never could;
 * EINVAL without write access, with O_CREAT, or with __O_TMPFILE but not
 * O_DIRECTORY; ENOTDIR on a file, ENOENT on a missing directory, and, in the
 * container, EROFS on the read-only rootfs.
 */
// covers: open openat linkat
#include "check.h"

#include <dirent.h>
#include <linux/capability.h>
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
	test_errors(!check_native);
	rmdir(scratch);
	return check_finish();
}
