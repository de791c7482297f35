/*
 * fs_tmpfs: changing a writable file system, in a fresh directory under /tmp
 * (natively the host's /tmp; in the container the tmpfs the bundle mounts
 * there).
 *
 * Checks: open(O_CREAT) with O_EXCL, the umask, the creator as owner, a
 * dangling symlink's target created, EISDIR for "name/", and O_TRUNC; file
 * data (holes read as zeros, ftruncate and truncate growing and shrinking,
 * O_APPEND, an unlinked file still readable and writable through its
 * descriptor, mmap of a written file); mkdir/rmdir/unlink with their errnos
 * (EEXIST, ENOENT, ENOTDIR, EISDIR, ENOTEMPTY, EINVAL, EBUSY) and link counts;
 * rename and renameat2 (replacing, EISDIR/ENOTDIR/ENOTEMPTY, EINVAL for a
 * directory into itself, RENAME_NOREPLACE, RENAME_EXCHANGE, EXDEV); hard
 * links and linkat's flags; symlinks; mknod of regular files; chmod, chown
 * (the setuid and setgid bits it clears) and the setgid directory's group;
 * utimensat/utimes/utime/futimesat with UTIME_NOW and UTIME_OMIT; the
 * timestamps that creating, writing, truncating, renaming and unlinking
 * update; fallocate; fsync, fdatasync, sync, syncfs; statfs and fstatfs
 * (TMPFS_MAGIC and the mount's flags and size in the container); and, in the
 * container, EROFS for every change to the read-only rootfs. Checks that
 * depend on a capability (CAP_CHOWN, CAP_FSETID, CAP_MKNOD,
 * CAP_DAC_READ_SEARCH) assert what Linux does with or without it, as
 * /proc/self/status reports it.
 */
// covers: open openat creat mkdir mkdirat rmdir unlink unlinkat rename renameat renameat2 link linkat symlink symlinkat mknod mknodat chmod fchmod fchmodat chown fchown fchownat lchown truncate ftruncate utime utimes utimensat futimesat fallocate fsync fdatasync sync syncfs statfs fstatfs
// places: bind root
#include "check.h"

#include <dirent.h>
#include <linux/capability.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <time.h>
#include <utime.h>

#define TMPFS_MAGIC_ 0x01021994
#define PROC_MAGIC_ 0x9fa0
#define TMP_SIZE (65536L * 1024) /* the bundle's size=65536k */

static char scratch[64]; /* the test directory */
static int sfd;          /* open on it */
static int on_tmpfs;     /* the scratch directory is on a tmpfs */

/* P names a file in the scratch directory, in one of eight buffers that
 * are reused in turn. */
static const char *P(const char *name)
{
	static char bufs[8][PATH_MAX];
	static int next;
	char *b = bufs[next++ % 8];

	snprintf(b, PATH_MAX, "%s/%s", scratch, name);
	return b;
}

/* has_cap reports whether capability cap is in the effective set. */
static int has_cap(int cap)
{
	unsigned long long eff = strtoull(proc_status("CapEff"), NULL, 16);

	return (eff >> cap) & 1;
}

static struct stat st_of(const char *path)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	if (lstat(path, &st) != 0)
		check_fail(__FILE__, __LINE__, "lstat %s: %s", path, check_errname(errno));
	return st;
}

static long long ns(struct timespec ts)
{
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* tick sleeps long enough for a file system's clock to move (Linux takes
 * file times from a clock that advances once per jiffy). */
static void tick(void)
{
	struct timespec ts = { 0, 30 * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ns(ts);
}

/* put writes a small file. */
static void put(const char *path, const char *text)
{
	int fd = CHECK_OK(syscall(SYS_open, path, O_WRONLY | O_CREAT | O_TRUNC, 0644));

	CHECK_EQ(syscall(SYS_write, fd, text, strlen(text)), (long)strlen(text));
	close(fd);
}

static void test_create(void)
{
	struct stat st, dst;
	char buf[16];
	int fd, fd2;

	dst = st_of(scratch);
	tick();
	fd = CHECK_OK(syscall(SYS_open, P("f"), O_RDWR | O_CREAT | O_EXCL, 0666));
	CHECK_OK(fstat(fd, &st));
	CHECK(S_ISREG(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 0644); /* the umask is 022 */
	CHECK_EQ(st.st_size, 0);
	CHECK_EQ(st.st_nlink, 1);
	CHECK_EQ(st.st_uid, geteuid());
	CHECK_EQ(st.st_gid, getegid());
	/* A new name changes its directory. */
	CHECK(ns(st_of(scratch).st_mtim) > ns(dst.st_mtim));
	CHECK(ns(st_of(scratch).st_ctim) > ns(dst.st_ctim));
	close(fd);

	CHECK_ERR(syscall(SYS_open, P("f"), O_RDWR | O_CREAT | O_EXCL, 0600), EEXIST);
	/* Without O_EXCL the existing file is opened, its mode unchanged. */
	fd = CHECK_OK(syscall(SYS_openat, sfd, "f", O_RDWR | O_CREAT, 0600));
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_mode & 07777, 0644);
	close(fd);
	CHECK_ERR(syscall(SYS_open, P("f/"), O_RDWR | O_CREAT, 0600), EISDIR);
	CHECK_ERR(syscall(SYS_open, P("new/"), O_RDWR | O_CREAT, 0600), EISDIR);
	CHECK_ERR(syscall(SYS_open, P("missing/x"), O_RDWR | O_CREAT, 0600), ENOENT);
	CHECK_ERR(syscall(SYS_open, P("f/x"), O_RDWR | O_CREAT, 0600), ENOTDIR);
	CHECK_ERR(syscall(SYS_open, P("new2"), O_RDWR | O_CREAT | O_DIRECTORY, 0600), EINVAL);
	CHECK_ERR(syscall(SYS_open, scratch, O_RDONLY | O_CREAT, 0600), EISDIR);

	/* The creator may write a file it creates read-only. */
	fd = CHECK_OK(syscall(SYS_open, P("ro"), O_RDWR | O_CREAT, 0444));
	CHECK_EQ(syscall(SYS_write, fd, "x", 1), 1);
	close(fd);
	CHECK_EQ(st_of(P("ro")).st_mode & 07777, 0444);

	/* The umask comes off the mode. */
	umask(077);
	fd = CHECK_OK(syscall(SYS_creat, P("masked"), 0666));
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_mode & 07777, 0600);
	close(fd);
	umask(022);

	/* O_CREAT through a dangling symlink creates its target; with
	 * O_EXCL the symlink itself is in the way. */
	CHECK_OK(syscall(SYS_symlink, "target", P("dangling")));
	fd = CHECK_OK(syscall(SYS_open, P("dangling"), O_WRONLY | O_CREAT, 0600));
	close(fd);
	CHECK(S_ISREG(st_of(P("target")).st_mode));
	CHECK_ERR(syscall(SYS_open, P("dangling"), O_WRONLY | O_CREAT | O_EXCL, 0600), EEXIST);
	CHECK_OK(syscall(SYS_symlink, "target2", P("dangling2")));
	CHECK_ERR(syscall(SYS_open, P("dangling2"), O_WRONLY | O_CREAT | O_EXCL, 0600), EEXIST);
	CHECK_ERR(syscall(SYS_open, P("dangling2"), O_WRONLY | O_CREAT | O_NOFOLLOW, 0600), ELOOP);

	/* O_TRUNC empties an existing file and changes its times. */
	put(P("t"), "hello");
	st = st_of(P("t"));
	tick();
	fd = CHECK_OK(syscall(SYS_open, P("t"), O_WRONLY | O_TRUNC));
	close(fd);
	CHECK_EQ(st_of(P("t")).st_size, 0);
	CHECK(ns(st_of(P("t")).st_mtim) > ns(st.st_mtim));

	/* Two opens of one new file share it. */
	fd = CHECK_OK(syscall(SYS_open, P("shared"), O_RDWR | O_CREAT | O_EXCL, 0644));
	fd2 = CHECK_OK(syscall(SYS_open, P("shared"), O_RDONLY));
	CHECK_EQ(syscall(SYS_write, fd, "abc", 3), 3);
	CHECK_EQ(syscall(SYS_read, fd2, buf, sizeof(buf)), 3);
	CHECK_MEM(buf, "abc", 3);
	close(fd);
	close(fd2);
}

static void test_data(void)
{
	static char big[20000];
	struct stat st, before;
	char buf[64];
	char *map;
	int fd, ro;

	fd = CHECK_OK(syscall(SYS_open, P("data"), O_RDWR | O_CREAT | O_EXCL, 0644));
	/* Writing past the end leaves a hole that reads as zeros. */
	CHECK_EQ(sys_pwrite64(fd, "xyz", 3, 10000), 3);
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_size, 10003);
	CHECK(st.st_blocks > 0);
	memset(big, 1, sizeof(big));
	CHECK_EQ(sys_pread64(fd, big, sizeof(big), 0), 10003);
	CHECK(all_zero(big, 10000));
	CHECK_MEM(big + 10000, "xyz", 3);

	/* ftruncate grows with zeros and shrinks; what it cut stays cut when
	 * the file grows again. */
	CHECK_OK(syscall(SYS_ftruncate, fd, 20000L));
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_size, 20000);
	CHECK_EQ(sys_pread64(fd, big, sizeof(big), 0), 20000);
	CHECK(all_zero(big + 10003, 20000 - 10003));
	CHECK_OK(syscall(SYS_ftruncate, fd, 10001L));
	CHECK_OK(syscall(SYS_ftruncate, fd, 10100L));
	CHECK_EQ(sys_pread64(fd, buf, 4, 10000), 4);
	CHECK_MEM(buf, "x\0\0\0", 4);
	CHECK_OK(syscall(SYS_ftruncate, fd, 0L));
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_size, 0);
	CHECK_EQ(st.st_blocks, 0);
	CHECK_ERR(syscall(SYS_ftruncate, fd, -1L), EINVAL);

	/* ftruncate changes the times even when the size stays. */
	CHECK_OK(fstat(fd, &before));
	tick();
	CHECK_OK(syscall(SYS_ftruncate, fd, 0L));
	CHECK_OK(fstat(fd, &st));
	CHECK(ns(st.st_mtim) > ns(before.st_mtim));
	CHECK(ns(st.st_ctim) > ns(before.st_ctim));

	/* A write changes mtime and ctime. */
	CHECK_OK(fstat(fd, &before));
	tick();
	CHECK_EQ(syscall(SYS_write, fd, "0123456789", 10), 10);
	CHECK_OK(fstat(fd, &st));
	CHECK(ns(st.st_mtim) > ns(before.st_mtim));
	CHECK(ns(st.st_ctim) > ns(before.st_ctim));

	/* O_APPEND writes at the end, wherever the offset is. */
	ro = CHECK_OK(syscall(SYS_open, P("data"), O_WRONLY | O_APPEND));
	CHECK_EQ(sys_lseek(ro, 0, SEEK_SET), 0);
	CHECK_EQ(syscall(SYS_write, ro, "AB", 2), 2);
	CHECK_EQ(sys_lseek(ro, 0, SEEK_CUR), 12);
	close(ro);
	CHECK_EQ(sys_pread64(fd, buf, 12, 0), 12);
	CHECK_MEM(buf, "0123456789AB", 12);
	CHECK_EQ(sys_lseek(fd, 0, SEEK_END), 12);

	/* truncate by name, with its errors. */
	CHECK_OK(syscall(SYS_truncate, P("data"), 5L));
	CHECK_EQ(st_of(P("data")).st_size, 5);
	CHECK_ERR(syscall(SYS_truncate, P("data"), -1L), EINVAL);
	CHECK_ERR(syscall(SYS_truncate, P("missing"), 0L), ENOENT);
	CHECK_ERR(syscall(SYS_truncate, scratch, 0L), EISDIR);
	/* truncate to the same size still changes the times. */
	before = st_of(P("data"));
	tick();
	CHECK_OK(syscall(SYS_truncate, P("data"), 5L));
	CHECK(ns(st_of(P("data")).st_mtim) > ns(before.st_mtim));

	/* A file open read-only cannot be truncated through that descriptor. */
	ro = CHECK_OK(syscall(SYS_open, P("data"), O_RDONLY));
	CHECK_ERR(syscall(SYS_ftruncate, ro, 0L), EINVAL);
	close(ro);
	ro = CHECK_OK(syscall(SYS_open, scratch, O_RDONLY | O_DIRECTORY));
	CHECK_ERR(syscall(SYS_ftruncate, ro, 0L), EINVAL);
	close(ro);
	CHECK_ERR(syscall(SYS_ftruncate, 9999, 0L), EBADF);

	/* What was written can be mapped. */
	CHECK_EQ(sys_pwrite64(fd, "mapped!", 7, 5000), 7);
	map = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, fd, 0);
	CHECK(map != MAP_FAILED);
	if (map != MAP_FAILED) {
		CHECK_MEM(map, "01234", 5);
		CHECK(all_zero(map + 5, 5000 - 5));
		CHECK_MEM(map + 5000, "mapped!", 7);
		munmap(map, 8192);
	}
	close(fd);
}

static void test_unlinked_open(void)
{
	struct stat st;
	char buf[8];
	int fd = CHECK_OK(syscall(SYS_open, P("gone"), O_RDWR | O_CREAT | O_EXCL, 0644));
	ino_t ino;

	CHECK_EQ(syscall(SYS_write, fd, "still", 5), 5);
	CHECK_OK(fstat(fd, &st));
	ino = st.st_ino;
	CHECK_OK(syscall(SYS_unlink, P("gone")));
	CHECK_ERR(syscall(SYS_access, P("gone"), F_OK), ENOENT);
	/* The open file goes on working, with no name. */
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_nlink, 0);
	CHECK_EQ(syscall(SYS_write, fd, " here", 5), 5);
	CHECK_EQ(sys_pread64(fd, buf, 8, 2), 8);
	CHECK_MEM(buf, "ill here", 8);
	/* A new file of that name is another file. */
	put(P("gone"), "new");
	CHECK(st_of(P("gone")).st_ino != ino);
	CHECK_EQ(st_of(P("gone")).st_size, 3);
	close(fd);
}

static void test_mkdir_rmdir(void)
{
	struct stat st, parent;
	char name[300];
	int dfd;

	parent = st_of(scratch);
	CHECK_OK(syscall(SYS_mkdir, P("d"), 0777));
	st = st_of(P("d"));
	CHECK(S_ISDIR(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 0755);
	CHECK_EQ(st.st_nlink, 2);
	CHECK_EQ(st.st_uid, geteuid());
	CHECK_EQ(st_of(scratch).st_nlink, parent.st_nlink + 1);
	/* mkdir keeps the sticky bit and drops setuid. */
	CHECK_OK(syscall(SYS_mkdirat, sfd, "sticky/", 05777));
	CHECK_EQ(st_of(P("sticky")).st_mode & 07777, 01755);

	CHECK_ERR(syscall(SYS_mkdir, P("d"), 0755), EEXIST);
	CHECK_ERR(syscall(SYS_mkdir, P("f"), 0755), EEXIST);
	CHECK_ERR(syscall(SYS_mkdir, P("d/."), 0755), EEXIST);
	CHECK_ERR(syscall(SYS_mkdir, P("missing/x"), 0755), ENOENT);
	CHECK_ERR(syscall(SYS_mkdir, P("f/x"), 0755), ENOTDIR);
	CHECK_ERR(syscall(SYS_mkdir, "", 0755), ENOENT);
	memset(name, 'n', 256);
	name[256] = '\0';
	CHECK_ERR(syscall(SYS_mkdirat, sfd, name, 0755), ENAMETOOLONG);
	CHECK_ERR(syscall(SYS_mkdirat, 9999, "x", 0755), EBADF);
	CHECK_ERR(syscall(SYS_mkdirat, CHECK_OK(open(P("f"), O_RDONLY)), "x", 0755), ENOTDIR);

	/* rmdir and unlinkat(AT_REMOVEDIR), with their errors. */
	put(P("d/file"), "x");
	CHECK_ERR(syscall(SYS_rmdir, P("d")), ENOTEMPTY);
	CHECK_ERR(syscall(SYS_rmdir, P("d/file")), ENOTDIR);
	CHECK_ERR(syscall(SYS_rmdir, P("d/.")), EINVAL);
	CHECK_ERR(syscall(SYS_rmdir, P("d/..")), ENOTEMPTY);
	CHECK_ERR(syscall(SYS_rmdir, P("missing")), ENOENT);
	CHECK_ERR(syscall(SYS_rmdir, "/"), EBUSY);
	CHECK_ERR(syscall(SYS_unlinkat, sfd, "d", 0), EISDIR);
	CHECK_ERR(syscall(SYS_unlinkat, sfd, "d", 0x1000), EINVAL);
	CHECK_OK(syscall(SYS_unlink, P("d/file")));
	CHECK_OK(syscall(SYS_unlinkat, sfd, "d/", AT_REMOVEDIR));
	CHECK_ERR(syscall(SYS_access, P("d"), F_OK), ENOENT);
	CHECK_EQ(st_of(scratch).st_nlink, parent.st_nlink + 1); /* "sticky" */
	CHECK_OK(syscall(SYS_rmdir, P("sticky")));
	CHECK_EQ(st_of(scratch).st_nlink, parent.st_nlink);

	/* A removed directory that is still open lists nothing and takes no
	 * new names. */
	CHECK_OK(syscall(SYS_mkdir, P("doomed"), 0755));
	dfd = CHECK_OK(open(P("doomed"), O_RDONLY | O_DIRECTORY));
	CHECK_OK(syscall(SYS_rmdir, P("doomed")));
	CHECK_OK(fstat(dfd, &st));
	CHECK_EQ(st.st_nlink, 0);
	CHECK_ERR(syscall(SYS_openat, dfd, "x", O_WRONLY | O_CREAT, 0644), ENOENT);
	CHECK_ERR(syscall(SYS_mkdirat, dfd, "x", 0755), ENOENT);
	{
		char dents[1024];

		CHECK_ERR(syscall(SYS_getdents64, dfd, dents, sizeof(dents)), ENOENT);
	}
	close(dfd);
}

static void test_unlink(void)
{
	struct stat st, dst;

	put(P("u"), "x");
	CHECK_OK(syscall(SYS_mkdir, P("ud"), 0755));
	CHECK_ERR(syscall(SYS_unlink, P("ud")), EISDIR);
	CHECK_ERR(syscall(SYS_unlink, P("ud/")), EISDIR);
	CHECK_ERR(syscall(SYS_unlink, P("u/")), ENOTDIR);
	CHECK_ERR(syscall(SYS_unlink, P("missing")), ENOENT);
	CHECK_ERR(syscall(SYS_unlink, P("missing/")), ENOENT);
	CHECK_ERR(syscall(SYS_unlink, P("u/x")), ENOTDIR);
	CHECK_ERR(syscall(SYS_unlink, P(".")), EISDIR);
	CHECK_ERR(syscall(SYS_unlinkat, 9999, "u", 0), EBADF);
	/* Unlinking a symlink leaves its target. */
	CHECK_OK(syscall(SYS_symlink, "u", P("ulink")));
	CHECK_OK(syscall(SYS_unlink, P("ulink")));
	CHECK_EQ(st_of(P("u")).st_size, 1);
	/* Unlinking changes the directory's times. */
	dst = st_of(scratch);
	tick();
	CHECK_OK(syscall(SYS_unlinkat, sfd, "u", 0));
	st = st_of(scratch);
	CHECK(ns(st.st_mtim) > ns(dst.st_mtim));
	CHECK(ns(st.st_ctim) > ns(dst.st_ctim));
	CHECK_OK(syscall(SYS_rmdir, P("ud")));
}

static void test_rename(void)
{
	struct stat a, b, st;
	int fd, cwd;
	char buf[PATH_MAX];

	put(P("ra"), "a");
	a = st_of(P("ra"));
	tick();
	CHECK_OK(syscall(SYS_rename, P("ra"), P("rb")));
	CHECK_ERR(syscall(SYS_access, P("ra"), F_OK), ENOENT);
	st = st_of(P("rb"));
	CHECK_EQ(st.st_ino, a.st_ino);
	CHECK(ns(st.st_ctim) > ns(a.st_ctim));

	/* Over an existing file: it is replaced, and a descriptor open on it
	 * sees it unlinked. */
	put(P("rc"), "c");
	fd = CHECK_OK(open(P("rc"), O_RDONLY));
	CHECK_OK(syscall(SYS_renameat, sfd, "rb", sfd, "rc"));
	CHECK_EQ(st_of(P("rc")).st_ino, a.st_ino);
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_nlink, 0);
	close(fd);

	/* Types must agree; a directory is replaced only when empty. */
	CHECK_OK(syscall(SYS_mkdir, P("rd"), 0755));
	CHECK_OK(syscall(SYS_mkdir, P("re"), 0755));
	put(P("re/x"), "x");
	CHECK_ERR(syscall(SYS_rename, P("rc"), P("rd")), EISDIR);
	CHECK_ERR(syscall(SYS_rename, P("rd"), P("rc")), ENOTDIR);
	CHECK_ERR(syscall(SYS_rename, P("rd"), P("re")), ENOTEMPTY);
	CHECK_OK(syscall(SYS_rename, P("re"), P("rd")));
	CHECK_EQ(st_of(P("rd/x")).st_size, 1);
	/* A directory cannot move under itself, nor replace an ancestor. */
	CHECK_ERR(syscall(SYS_rename, P("rd"), P("rd/sub")), EINVAL);
	CHECK_OK(syscall(SYS_mkdir, P("rd/sub"), 0755));
	CHECK_ERR(syscall(SYS_rename, P("rd"), P("rd/sub/deeper")), EINVAL);
	CHECK_ERR(syscall(SYS_rename, P("rd/sub"), P("rd")), ENOTEMPTY);
	/* Names that are not entries. */
	CHECK_ERR(syscall(SYS_rename, P("rd/."), P("rf")), EBUSY);
	CHECK_ERR(syscall(SYS_rename, P("rc"), P("rd/..")), EBUSY);
	CHECK_ERR(syscall(SYS_rename, P("missing"), P("rf")), ENOENT);
	CHECK_ERR(syscall(SYS_rename, P("rc"), P("missing/x")), ENOENT);
	CHECK_ERR(syscall(SYS_rename, P("rc/"), P("rf")), ENOTDIR);
	CHECK_ERR(syscall(SYS_rename, P("rc"), P("rf/")), ENOTDIR);
	CHECK_OK(syscall(SYS_rename, P("rd/"), P("rg/")));
	CHECK_OK(syscall(SYS_rename, P("rg"), P("rd")));
	/* A rename onto itself, or onto another link of the same file,
	 * changes nothing. */
	CHECK_OK(syscall(SYS_rename, P("rc"), P("rc")));
	CHECK_OK(syscall(SYS_link, P("rc"), P("rc2")));
	CHECK_OK(syscall(SYS_rename, P("rc"), P("rc2")));
	CHECK_EQ(st_of(P("rc")).st_nlink, 2);
	CHECK_OK(syscall(SYS_unlink, P("rc2")));
	/* Across mounts. */
	CHECK_ERR(syscall(SYS_rename, P("rc"), "/dev/moat-rename"), EXDEV);
	CHECK_ERR(syscall(SYS_rename, P("rc"), "/proc/moat-rename"), EXDEV);

	/* Moving a directory moves what is under it, and what is open or the
	 * working directory there follows. */
	cwd = CHECK_OK(open(".", O_RDONLY | O_DIRECTORY));
	CHECK_OK(chdir(P("rd/sub")));
	fd = CHECK_OK(open(P("rd"), O_RDONLY | O_DIRECTORY));
	CHECK_OK(syscall(SYS_rename, P("rd"), P("moved")));
	CHECK_EQ(st_of(P("moved/x")).st_size, 1);
	CHECK_ERR(syscall(SYS_access, P("rd/x"), F_OK), ENOENT);
	CHECK(syscall(SYS_getcwd, buf, sizeof(buf)) > 0);
	CHECK_STR(buf + strlen(buf) - strlen("/moved/sub"), "/moved/sub");
	CHECK_EQ(syscall(SYS_faccessat, fd, "x", F_OK, 0), 0);
	put("here", "h");
	CHECK_EQ(st_of(P("moved/sub/here")).st_size, 1);
	CHECK_OK(fchdir(cwd));
	close(cwd);
	close(fd);

	/* renameat2's flags. */
	put(P("n1"), "1");
	put(P("n2"), "22");
	CHECK_ERR(syscall(SYS_renameat2, sfd, "n1", sfd, "n2", RENAME_NOREPLACE), EEXIST);
	CHECK_OK(syscall(SYS_renameat2, sfd, "n1", sfd, "n3", RENAME_NOREPLACE));
	CHECK_ERR(syscall(SYS_renameat2, sfd, "n3", sfd, "n2", RENAME_NOREPLACE | RENAME_EXCHANGE), EINVAL);
	CHECK_ERR(syscall(SYS_renameat2, sfd, "n3", sfd, "n2", 0x100), EINVAL);
	a = st_of(P("n3"));
	b = st_of(P("moved"));
	CHECK_OK(syscall(SYS_renameat2, sfd, "n3", sfd, "moved", RENAME_EXCHANGE));
	CHECK_EQ(st_of(P("n3")).st_ino, b.st_ino);
	CHECK(S_ISDIR(st_of(P("n3")).st_mode));
	CHECK_EQ(st_of(P("moved")).st_ino, a.st_ino);
	CHECK(S_ISREG(st_of(P("moved")).st_mode));
	CHECK_ERR(syscall(SYS_renameat2, sfd, "n3", sfd, "missing", RENAME_EXCHANGE), ENOENT);
	CHECK_OK(syscall(SYS_renameat2, sfd, "n2", sfd, "n4", 0));
}

static void test_link(void)
{
	struct stat st, a;
	int fd;

	put(P("l1"), "one");
	a = st_of(P("l1"));
	tick();
	CHECK_OK(syscall(SYS_link, P("l1"), P("l2")));
	st = st_of(P("l2"));
	CHECK_EQ(st.st_ino, a.st_ino);
	CHECK_EQ(st.st_nlink, 2);
	CHECK_EQ(st_of(P("l1")).st_nlink, 2);
	CHECK(ns(st.st_ctim) > ns(a.st_ctim));
	CHECK_ERR(syscall(SYS_link, P("l1"), P("l2")), EEXIST);
	CHECK_ERR(syscall(SYS_link, scratch, P("ldir")), EPERM);
	CHECK_ERR(syscall(SYS_link, P("missing"), P("l3")), ENOENT);
	CHECK_ERR(syscall(SYS_link, P("l1"), P("missing/l3")), ENOENT);
	CHECK_ERR(syscall(SYS_link, P("l1"), P("l3/")), ENOENT);
	CHECK_ERR(syscall(SYS_link, P("l1"), "/dev/moat-link"), EXDEV);
	CHECK_OK(syscall(SYS_unlink, P("l1")));
	CHECK_EQ(st_of(P("l2")).st_nlink, 1);

	/* linkat links a symlink itself, or with AT_SYMLINK_FOLLOW what it
	 * points to. */
	CHECK_OK(syscall(SYS_symlink, "l2", P("lsym")));
	CHECK_OK(syscall(SYS_linkat, sfd, "lsym", sfd, "lsym2", 0));
	CHECK(S_ISLNK(st_of(P("lsym2")).st_mode));
	CHECK_OK(syscall(SYS_linkat, sfd, "lsym", sfd, "lfollow", AT_SYMLINK_FOLLOW));
	CHECK_EQ(st_of(P("lfollow")).st_ino, a.st_ino);
	CHECK_EQ(st_of(P("l2")).st_nlink, 2);
	CHECK_ERR(syscall(SYS_linkat, sfd, "l2", sfd, "l5", 0x10000), EINVAL);

	/* AT_EMPTY_PATH links an open file, given CAP_DAC_READ_SEARCH; a file
	 * with no name left cannot get one back. */
	if (has_cap(CAP_DAC_READ_SEARCH)) {
		fd = CHECK_OK(open(P("l2"), O_RDONLY));
		CHECK_OK(syscall(SYS_linkat, fd, "", AT_FDCWD, P("lempty"), AT_EMPTY_PATH));
		CHECK_EQ(st_of(P("lempty")).st_ino, a.st_ino);
		close(fd);
		fd = CHECK_OK(syscall(SYS_open, P("lgone"), O_RDWR | O_CREAT, 0644));
		CHECK_OK(syscall(SYS_unlink, P("lgone")));
		CHECK_ERR(syscall(SYS_linkat, fd, "", AT_FDCWD, P("lback"), AT_EMPTY_PATH), ENOENT);
		close(fd);
	}
	/* Without AT_EMPTY_PATH an empty path is ENOENT. */
	fd = CHECK_OK(open(P("l2"), O_RDONLY));
	CHECK_ERR(syscall(SYS_linkat, fd, "", AT_FDCWD, P("lnone"), 0), ENOENT);
	close(fd);
}

static void test_symlink(void)
{
	static char target[PATH_MAX + 1];
	char buf[PATH_MAX];
	struct stat st;
	int fd;

	CHECK_OK(syscall(SYS_symlink, "some/target", P("s")));
	st = st_of(P("s"));
	CHECK(S_ISLNK(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 0777);
	CHECK_EQ(st.st_size, 11);
	CHECK_EQ(st.st_uid, geteuid());
	CHECK_EQ(syscall(SYS_readlink, P("s"), buf, sizeof(buf)), 11);
	CHECK_MEM(buf, "some/target", 11);
	CHECK_ERR(syscall(SYS_symlink, "x", P("s")), EEXIST);
	CHECK_ERR(syscall(SYS_symlink, "", P("s2")), ENOENT);
	CHECK_ERR(syscall(SYS_symlink, "x", P("s3/")), ENOENT);
	CHECK_ERR(syscall(SYS_symlink, "x", P("missing/s")), ENOENT);
	CHECK_OK(syscall(SYS_symlinkat, "s", sfd, "s4"));
	CHECK_EQ(syscall(SYS_readlinkat, sfd, "s4", buf, sizeof(buf)), 1);

	/* A path through a symlink to a directory. */
	CHECK_OK(syscall(SYS_mkdir, P("sd"), 0755));
	CHECK_OK(syscall(SYS_symlink, "sd", P("sdlink")));
	fd = CHECK_OK(syscall(SYS_open, P("sdlink/inner"), O_WRONLY | O_CREAT, 0644));
	close(fd);
	CHECK(S_ISREG(st_of(P("sd/inner")).st_mode));
	CHECK_OK(syscall(SYS_mkdir, P("sdlink/dir"), 0755));
	CHECK(S_ISDIR(st_of(P("sd/dir")).st_mode));

	/* The longest target is PATH_MAX - 1 bytes. */
	memset(target, 't', PATH_MAX - 1);
	CHECK_OK(syscall(SYS_symlink, target, P("long")));
	CHECK_EQ(st_of(P("long")).st_size, PATH_MAX - 1);
	target[PATH_MAX - 1] = 't';
	CHECK_ERR(syscall(SYS_symlink, target, P("toolong")), ENAMETOOLONG);
}

static void test_mknod(void)
{
	struct stat st;

	CHECK_OK(syscall(SYS_mknod, P("node"), S_IFREG | 0666, 0));
	st = st_of(P("node"));
	CHECK(S_ISREG(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 0644);
	CHECK_EQ(st.st_size, 0);
	CHECK_OK(syscall(SYS_mknodat, sfd, "node0", 0640, 0));
	CHECK(S_ISREG(st_of(P("node0")).st_mode));
	CHECK_EQ(st_of(P("node0")).st_mode & 07777, 0640);
	CHECK_ERR(syscall(SYS_mknod, P("node"), S_IFREG | 0644, 0), EEXIST);
	CHECK_ERR(syscall(SYS_mknod, P("nodedir"), S_IFDIR | 0755, 0), EPERM);
	CHECK_ERR(syscall(SYS_mknod, P("nodebad"), 0170000 | 0644, 0), EINVAL);
	CHECK_ERR(syscall(SYS_mknod, P("missing/node"), S_IFREG | 0644, 0), ENOENT);
	if (!has_cap(CAP_MKNOD))
		CHECK_ERR(syscall(SYS_mknod, P("nodechr"), S_IFCHR | 0644, makedev(1, 3)), EPERM);
}

static void test_chmod(void)
{
	struct stat st, before;
	int fd, pfd;

	put(P("m"), "m");
	before = st_of(P("m"));
	tick();
	CHECK_OK(syscall(SYS_chmod, P("m"), 0600));
	st = st_of(P("m"));
	CHECK_EQ(st.st_mode & 07777, 0600);
	CHECK(S_ISREG(st.st_mode));
	CHECK(ns(st.st_ctim) > ns(before.st_ctim));
	CHECK_EQ(ns(st.st_mtim), ns(before.st_mtim));
	/* Only the permission bits are taken. */
	CHECK_OK(syscall(SYS_chmod, P("m"), S_IFDIR | 07777));
	st = st_of(P("m"));
	CHECK(S_ISREG(st.st_mode));
	CHECK_EQ(st.st_mode & 07777, 07777);
	fd = CHECK_OK(open(P("m"), O_RDONLY));
	CHECK_OK(syscall(SYS_fchmod, fd, 0640));
	CHECK_EQ(st_of(P("m")).st_mode & 07777, 0640);
	close(fd);
	CHECK_OK(syscall(SYS_fchmodat, sfd, "m", 0604));
	CHECK_EQ(st_of(P("m")).st_mode & 07777, 0604);
	/* chmod follows a symlink. */
	CHECK_OK(syscall(SYS_symlink, "m", P("mlink")));
	CHECK_OK(syscall(SYS_chmod, P("mlink"), 0611));
	CHECK_EQ(st_of(P("m")).st_mode & 07777, 0611);
	CHECK(S_ISLNK(st_of(P("mlink")).st_mode));
	CHECK_ERR(syscall(SYS_chmod, P("missing"), 0644), ENOENT);
	CHECK_ERR(syscall(SYS_fchmod, 9999, 0644), EBADF);
	pfd = CHECK_OK(open(P("m"), O_PATH));
	CHECK_ERR(syscall(SYS_fchmod, pfd, 0644), EBADF);
	close(pfd);
	/* A directory's mode, and an open file whose name is gone. */
	CHECK_OK(syscall(SYS_mkdir, P("md"), 0755));
	CHECK_OK(syscall(SYS_chmod, P("md"), 0700));
	CHECK_EQ(st_of(P("md")).st_mode & 07777, 0700);
	fd = CHECK_OK(syscall(SYS_open, P("mgone"), O_RDWR | O_CREAT, 0644));
	CHECK_OK(syscall(SYS_unlink, P("mgone")));
	CHECK_OK(syscall(SYS_fchmod, fd, 0600));
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_mode & 07777, 0600);
	close(fd);
}

static void test_chown(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	struct stat st, before;
	int fd;

	put(P("o"), "o");
	before = st_of(P("o"));
	tick();
	/* -1 changes nothing but the change time. */
	CHECK_OK(syscall(SYS_chown, P("o"), -1, -1));
	st = st_of(P("o"));
	CHECK_EQ(st.st_uid, uid);
	CHECK_EQ(st.st_gid, gid);
	CHECK(ns(st.st_ctim) > ns(before.st_ctim));
	CHECK_OK(syscall(SYS_chown, P("o"), uid, gid));

	/* A chown clears setuid, and setgid if the group may execute. */
	CHECK_OK(syscall(SYS_chmod, P("o"), 04755));
	CHECK_OK(syscall(SYS_chown, P("o"), -1, -1));
	CHECK_EQ(st_of(P("o")).st_mode & 07777, 0755);
	CHECK_OK(syscall(SYS_chmod, P("o"), 02755));
	CHECK_OK(syscall(SYS_fchownat, sfd, "o", uid, -1, 0));
	CHECK_EQ(st_of(P("o")).st_mode & 07777, 0755);
	CHECK_OK(syscall(SYS_chmod, P("o"), 02745));
	CHECK_OK(syscall(SYS_chown, P("o"), -1, gid));
	CHECK_EQ(st_of(P("o")).st_mode & 07777, 02745);
	/* Not a directory's. */
	CHECK_OK(syscall(SYS_mkdir, P("od"), 0755));
	CHECK_OK(syscall(SYS_chmod, P("od"), 02755));
	CHECK_OK(syscall(SYS_chown, P("od"), -1, -1));
	CHECK_EQ(st_of(P("od")).st_mode & 07777, 02755);

	/* Giving a file away takes CAP_CHOWN. */
	CHECK_OK(syscall(SYS_symlink, "o", P("olink")));
	if (has_cap(CAP_CHOWN)) {
		CHECK_OK(syscall(SYS_chown, P("o"), 1234, 5678));
		st = st_of(P("o"));
		CHECK_EQ(st.st_uid, 1234);
		CHECK_EQ(st.st_gid, 5678);
		/* lchown changes the link, chown what it points to. */
		CHECK_OK(syscall(SYS_lchown, P("olink"), 4321, -1));
		CHECK_EQ(st_of(P("olink")).st_uid, 4321);
		CHECK_EQ(st_of(P("o")).st_uid, 1234);
		CHECK_OK(syscall(SYS_chown, P("olink"), uid, gid));
		CHECK_EQ(st_of(P("o")).st_uid, uid);
		CHECK_EQ(st_of(P("olink")).st_uid, 4321);
		CHECK_OK(syscall(SYS_fchownat, sfd, "olink", uid, gid, AT_SYMLINK_NOFOLLOW));
		CHECK_EQ(st_of(P("olink")).st_uid, uid);
	} else {
		CHECK_ERR(syscall(SYS_chown, P("o"), 1234, -1), EPERM);
		CHECK_ERR(syscall(SYS_lchown, P("olink"), 1234, -1), EPERM);
		CHECK_OK(syscall(SYS_lchown, P("olink"), uid, gid));
	}
	fd = CHECK_OK(open(P("o"), O_RDONLY));
	CHECK_OK(syscall(SYS_fchown, fd, uid, gid));
	CHECK_OK(syscall(SYS_fchownat, fd, "", -1, -1, AT_EMPTY_PATH));
	close(fd);
	fd = CHECK_OK(open(P("o"), O_PATH));
	CHECK_ERR(syscall(SYS_fchown, fd, uid, gid), EBADF);
	CHECK_OK(syscall(SYS_fchownat, fd, "", uid, gid, AT_EMPTY_PATH));
	close(fd);
	CHECK_ERR(syscall(SYS_fchownat, sfd, "o", uid, gid, 0x4), EINVAL);
	CHECK_ERR(syscall(SYS_chown, P("missing"), uid, gid), ENOENT);
	CHECK_ERR(syscall(SYS_fchown, 9999, uid, gid), EBADF);
}

static void test_setgid_dir(void)
{
	gid_t group = getegid();
	struct stat st;
	int fd;

	CHECK_OK(syscall(SYS_mkdir, P("sg"), 0755));
	CHECK_OK(syscall(SYS_chmod, P("sg"), 02775));
	if (has_cap(CAP_CHOWN)) {
		group = 4242;
		CHECK_OK(syscall(SYS_chown, P("sg"), -1, group));
		CHECK_EQ(st_of(P("sg")).st_mode & 07777, 02775);
	}
	/* What is made in a setgid directory takes its group; a directory
	 * the setgid bit too. */
	CHECK_OK(syscall(SYS_mkdir, P("sg/sub"), 0755));
	st = st_of(P("sg/sub"));
	CHECK_EQ(st.st_gid, group);
	CHECK_EQ(st.st_mode & 07777, 02755);
	fd = CHECK_OK(syscall(SYS_open, P("sg/file"), O_WRONLY | O_CREAT, 0644));
	close(fd);
	st = st_of(P("sg/file"));
	CHECK_EQ(st.st_gid, group);
	CHECK_EQ(st.st_mode & 07777, 0644);
	/* A setgid, group-executable file keeps the bit only if its maker is
	 * in the group or has CAP_FSETID. */
	fd = CHECK_OK(syscall(SYS_open, P("sg/sgfile"), O_WRONLY | O_CREAT, 02755));
	close(fd);
	if (group == getegid() || has_cap(CAP_FSETID))
		CHECK_EQ(st_of(P("sg/sgfile")).st_mode & 07777, 02755);
	else
		CHECK_EQ(st_of(P("sg/sgfile")).st_mode & 07777, 0755);
}

static void test_times(void)
{
	struct timespec ts[2];
	struct timeval tv[2];
	struct utimbuf ub;
	struct stat st, before;
	long long start;
	int fd;

	put(P("tm"), "t");
	start = now_ns() - 1000000000LL; /* file clocks may be a little coarse */
	ts[0] = (struct timespec){ 1000, 500 };
	ts[1] = (struct timespec){ 2000, 600 };
	CHECK_OK(syscall(SYS_utimensat, sfd, "tm", ts, 0));
	st = st_of(P("tm"));
	CHECK_EQ(st.st_atim.tv_sec, 1000);
	CHECK_EQ(st.st_atim.tv_nsec, 500);
	CHECK_EQ(st.st_mtim.tv_sec, 2000);
	CHECK_EQ(st.st_mtim.tv_nsec, 600);
	CHECK(ns(st.st_ctim) >= start);

	/* UTIME_OMIT leaves a time, UTIME_NOW sets it to now. */
	ts[0] = (struct timespec){ 0, UTIME_OMIT };
	ts[1] = (struct timespec){ 0, UTIME_NOW };
	CHECK_OK(syscall(SYS_utimensat, AT_FDCWD, P("tm"), ts, 0));
	st = st_of(P("tm"));
	CHECK_EQ(st.st_atim.tv_sec, 1000);
	CHECK(ns(st.st_mtim) >= start);
	/* Both omitted: nothing happens, and the path is not even looked at. */
	ts[0] = ts[1] = (struct timespec){ 0, UTIME_OMIT };
	CHECK_OK(syscall(SYS_utimensat, AT_FDCWD, P("missing"), ts, 0));
	/* NULL sets both to now. */
	CHECK_OK(syscall(SYS_utimensat, sfd, "tm", NULL, 0));
	st = st_of(P("tm"));
	CHECK(ns(st.st_atim) >= start);
	CHECK(ns(st.st_mtim) >= start);
	ts[0] = (struct timespec){ 0, 1000000000 };
	ts[1] = (struct timespec){ 0, 0 };
	CHECK_ERR(syscall(SYS_utimensat, sfd, "tm", ts, 0), EINVAL);
	ts[0] = (struct timespec){ 0, -1 };
	CHECK_ERR(syscall(SYS_utimensat, sfd, "tm", ts, 0), EINVAL);
	ts[0] = (struct timespec){ 7, 0 };
	CHECK_ERR(syscall(SYS_utimensat, sfd, "tm", ts, 0x8), EINVAL);
	CHECK_ERR(syscall(SYS_utimensat, sfd, "missing", ts, 0), ENOENT);
	/* A NULL path means the file open at dirfd. */
	fd = CHECK_OK(open(P("tm"), O_RDONLY));
	ts[0] = (struct timespec){ 3, 0 };
	ts[1] = (struct timespec){ 4, 0 };
	CHECK_OK(syscall(SYS_utimensat, fd, NULL, ts, 0));
	CHECK_EQ(st_of(P("tm")).st_mtim.tv_sec, 4);
	CHECK_ERR(syscall(SYS_utimensat, fd, NULL, ts, AT_SYMLINK_NOFOLLOW), EINVAL);
	CHECK_ERR(syscall(SYS_utimensat, AT_FDCWD, NULL, ts, 0), EFAULT);
	CHECK_OK(syscall(SYS_utimensat, fd, "", ts, AT_EMPTY_PATH));
	close(fd);
	/* AT_SYMLINK_NOFOLLOW sets the link's own times. */
	CHECK_OK(syscall(SYS_symlink, "tm", P("tmlink")));
	ts[0] = (struct timespec){ 50, 0 };
	ts[1] = (struct timespec){ 60, 0 };
	CHECK_OK(syscall(SYS_utimensat, sfd, "tmlink", ts, AT_SYMLINK_NOFOLLOW));
	CHECK_EQ(st_of(P("tmlink")).st_mtim.tv_sec, 60);
	CHECK_EQ(st_of(P("tm")).st_mtim.tv_sec, 4);

	/* utime: seconds, or now. */
	ub.actime = 5000;
	ub.modtime = 6000;
	CHECK_OK(syscall(SYS_utime, P("tm"), &ub));
	st = st_of(P("tm"));
	CHECK_EQ(st.st_atim.tv_sec, 5000);
	CHECK_EQ(st.st_atim.tv_nsec, 0);
	CHECK_EQ(st.st_mtim.tv_sec, 6000);
	CHECK_OK(syscall(SYS_utime, P("tm"), NULL));
	CHECK(ns(st_of(P("tm")).st_mtim) >= start);
	CHECK_ERR(syscall(SYS_utime, P("missing"), NULL), ENOENT);

	/* utimes and futimesat: microseconds. */
	tv[0] = (struct timeval){ 7000, 7 };
	tv[1] = (struct timeval){ 8000, 8 };
	CHECK_OK(syscall(SYS_utimes, P("tm"), tv));
	st = st_of(P("tm"));
	CHECK_EQ(st.st_atim.tv_nsec, 7000);
	CHECK_EQ(st.st_mtim.tv_sec, 8000);
	CHECK_EQ(st.st_mtim.tv_nsec, 8000);
	tv[1].tv_usec = 1000000;
	CHECK_ERR(syscall(SYS_utimes, P("tm"), tv), EINVAL);
	tv[1].tv_usec = 9;
	CHECK_OK(syscall(SYS_futimesat, sfd, "tm", tv));
	CHECK_EQ(st_of(P("tm")).st_mtim.tv_nsec, 9000);
	CHECK_OK(syscall(SYS_futimesat, AT_FDCWD, P("tm"), NULL));
	CHECK(ns(st_of(P("tm")).st_mtim) >= start);

	/* Reading a file changed since it was last read updates its access
	 * time (relatime). */
	before = st_of(P("tm"));
	ts[0] = (struct timespec){ 100, 0 };
	ts[1] = (struct timespec){ 0, UTIME_NOW };
	CHECK_OK(syscall(SYS_utimensat, sfd, "tm", ts, 0));
	fd = CHECK_OK(open(P("tm"), O_RDONLY));
	{
		char c;

		CHECK_EQ(syscall(SYS_read, fd, &c, 1), 1);
	}
	close(fd);
	CHECK(ns(st_of(P("tm")).st_atim) >= ns(before.st_mtim));
}

static void test_fallocate(void)
{
	struct statfs sf, sf2;
	struct stat st;
	int fd = CHECK_OK(syscall(SYS_open, P("fa"), O_RDWR | O_CREAT | O_EXCL, 0644));
	int ro;
	char c;

	CHECK_OK(syscall(SYS_fallocate, fd, 0, 0L, 8192L));
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_size, 8192);
	CHECK(st.st_blocks >= 16);
	CHECK_EQ(sys_pread64(fd, &c, 1, 8191), 1);
	CHECK_EQ(c, 0);
	/* Inside the file the size stays. */
	CHECK_OK(syscall(SYS_fallocate, fd, 0, 100L, 10L));
	CHECK_OK(fstat(fd, &st));
	CHECK_EQ(st.st_size, 8192);
	CHECK_ERR(syscall(SYS_fallocate, fd, 0, -1L, 10L), EINVAL);
	CHECK_ERR(syscall(SYS_fallocate, fd, 0, 0L, 0L), EINVAL);
	CHECK_ERR(syscall(SYS_fallocate, 9999, 0, 0L, 10L), EBADF);
	ro = CHECK_OK(open(P("fa"), O_RDONLY));
	CHECK_ERR(syscall(SYS_fallocate, ro, 0, 0L, 10L), EBADF);
	close(ro);
	ro = CHECK_OK(open(scratch, O_RDONLY | O_DIRECTORY));
	CHECK_ERR(syscall(SYS_fallocate, ro, 0, 0L, 10L), EBADF);
	close(ro);
	if (on_tmpfs) {
		/* tmpfs allocates and punches holes, nothing else. */
		CHECK_ERR(syscall(SYS_fallocate, fd, FALLOC_FL_COLLAPSE_RANGE, 0L, 4096L), EOPNOTSUPP);
		CHECK_ERR(syscall(SYS_fallocate, fd, FALLOC_FL_ZERO_RANGE, 0L, 4096L), EOPNOTSUPP);
	}
	if (check_tmp_tmpfs()) {
		/* More than the file system holds: ENOSPC, and nothing is
		 * kept of the attempt. */
		CHECK_OK(fstatfs(fd, &sf));
		CHECK_ERR(syscall(SYS_fallocate, fd, 0, 0L, (long)(sf.f_blocks + 1) * sf.f_bsize), ENOSPC);
		CHECK_OK(fstatfs(fd, &sf2));
		CHECK_EQ(sf2.f_bfree, sf.f_bfree);
		CHECK_OK(fstat(fd, &st));
		CHECK_EQ(st.st_size, 8192);
		CHECK_EQ(syscall(SYS_write, fd, "ok", 2), 2);
	}
	close(fd);
}

static void test_sync(void)
{
	int fd = CHECK_OK(syscall(SYS_open, P("sy"), O_RDWR | O_CREAT, 0644));
	int dir = CHECK_OK(open(scratch, O_RDONLY | O_DIRECTORY));
	int null = CHECK_OK(open("/dev/null", O_WRONLY));
	int path = CHECK_OK(open(P("sy"), O_PATH));

	CHECK_EQ(syscall(SYS_write, fd, "s", 1), 1);
	CHECK_OK(syscall(SYS_fsync, fd));
	CHECK_OK(syscall(SYS_fdatasync, fd));
	CHECK_OK(syscall(SYS_fsync, dir));
	CHECK_ERR(syscall(SYS_fsync, null), EINVAL);
	CHECK_ERR(syscall(SYS_fdatasync, null), EINVAL);
	CHECK_ERR(syscall(SYS_fsync, 9999), EBADF);
	CHECK_ERR(syscall(SYS_fdatasync, 9999), EBADF);
	CHECK_ERR(syscall(SYS_fsync, path), EBADF);
	CHECK_OK(syscall(SYS_sync));
	CHECK_OK(syscall(SYS_syncfs, fd));
	CHECK_ERR(syscall(SYS_syncfs, 9999), EBADF);
	close(fd);
	close(dir);
	close(null);
	close(path);
}

static void test_statfs(void)
{
	struct statfs sf, sf2;
	int fd = CHECK_OK(open(scratch, O_RDONLY | O_DIRECTORY));
	int path = CHECK_OK(open(scratch, O_PATH));

	CHECK_OK(syscall(SYS_statfs, scratch, &sf));
	CHECK_OK(syscall(SYS_fstatfs, fd, &sf2));
	CHECK_EQ(sf.f_type, sf2.f_type);
	CHECK_EQ(sf.f_blocks, sf2.f_blocks);
	CHECK(sf.f_bfree <= sf.f_blocks);
	CHECK(sf.f_bavail <= sf.f_blocks);
	CHECK_EQ(sf.f_namelen, 255);
	CHECK(sf.f_bsize > 0);
	CHECK_EQ(sf.f_flags & ST_RDONLY, 0);
	CHECK_OK(syscall(SYS_fstatfs, path, &sf2));
	CHECK_EQ(sf2.f_type, sf.f_type);
	if (check_tmp_tmpfs()) {
		/* The bundle mounts /tmp as tmpfs, nosuid, nodev, 64 MiB. */
		CHECK_EQ(sf.f_type, TMPFS_MAGIC_);
		CHECK_EQ(sf.f_bsize, 4096);
		CHECK_EQ(sf.f_blocks * sf.f_bsize, TMP_SIZE);
		CHECK(sf.f_flags & ST_NOSUID);
		CHECK(sf.f_flags & ST_NODEV);
		CHECK(!(sf.f_flags & ST_NOEXEC));
		/* Writing a page uses one. */
		{
			int f = CHECK_OK(syscall(SYS_open, P("sf"), O_RDWR | O_CREAT, 0644));
			static char page[4096];

			CHECK_EQ(syscall(SYS_write, f, page, sizeof(page)), 4096);
			CHECK_OK(syscall(SYS_fstatfs, f, &sf2));
			CHECK_EQ(sf2.f_bfree, sf.f_bfree - 1);
			close(f);
			CHECK_OK(syscall(SYS_unlink, P("sf")));
			CHECK_OK(syscall(SYS_statfs, scratch, &sf2));
			CHECK_EQ(sf2.f_bfree, sf.f_bfree);
		}
		CHECK_OK(syscall(SYS_statfs, "/", &sf2));
		CHECK(sf2.f_flags & ST_RDONLY);
	}
	CHECK_OK(syscall(SYS_statfs, "/proc", &sf2));
	CHECK_EQ(sf2.f_type, PROC_MAGIC_);
	CHECK_ERR(syscall(SYS_statfs, P("missing"), &sf2), ENOENT);
	CHECK_ERR(syscall(SYS_fstatfs, 9999, &sf2), EBADF);
	close(fd);
	close(path);
}

/* test_listing lists the directory and checks that a name is there, or not. */
static int listed(const char *dir, const char *name)
{
	char buf[8192];
	int fd = open(dir, O_RDONLY | O_DIRECTORY);
	long n, off;
	int found = 0;

	if (fd < 0)
		return -1;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);

			if (strcmp(d->d_name, name) == 0)
				found = 1;
			off += d->d_reclen;
		}
	}
	close(fd);
	return found;
}

static void test_listing(void)
{
	CHECK_OK(syscall(SYS_mkdir, P("ls"), 0755));
	put(P("ls/one"), "1");
	CHECK_OK(syscall(SYS_symlink, "one", P("ls/two")));
	CHECK_EQ(listed(P("ls"), "one"), 1);
	CHECK_EQ(listed(P("ls"), "two"), 1);
	CHECK_OK(syscall(SYS_rename, P("ls/one"), P("ls/three")));
	CHECK_EQ(listed(P("ls"), "one"), 0);
	CHECK_EQ(listed(P("ls"), "three"), 1);
	CHECK_OK(syscall(SYS_unlink, P("ls/two")));
	CHECK_EQ(listed(P("ls"), "two"), 0);
	CHECK_EQ(listed(P("ls"), "."), 1);
}

/* test_readonly: in the container the rootfs is read-only. */
static void test_readonly(void)
{
	struct timespec ts[2] = { { 1, 0 }, { 2, 0 } };

	CHECK_ERR(syscall(SYS_mkdir, "/moat-new", 0755), EROFS);
	CHECK_ERR(syscall(SYS_mkdir, DATA_DIR, 0755), EEXIST);
	CHECK_ERR(syscall(SYS_unlink, HELLO_PATH), EROFS);
	CHECK_ERR(syscall(SYS_unlink, DATA_DIR "/missing"), EROFS);
	CHECK_ERR(syscall(SYS_rmdir, LIST_DIR "/sub"), EROFS);
	CHECK_ERR(syscall(SYS_rename, HELLO_PATH, DATA_DIR "/renamed"), EROFS);
	CHECK_ERR(syscall(SYS_rename, P("f"), DATA_DIR "/renamed"), EXDEV);
	CHECK_ERR(syscall(SYS_link, HELLO_PATH, DATA_DIR "/linked"), EROFS);
	CHECK_ERR(syscall(SYS_symlink, "x", DATA_DIR "/symlinked"), EROFS);
	CHECK_ERR(syscall(SYS_mknod, DATA_DIR "/node", S_IFREG | 0644, 0), EROFS);
	CHECK_ERR(syscall(SYS_chmod, HELLO_PATH, 0600), EROFS);
	CHECK_ERR(syscall(SYS_chmod, DATA_DIR "/missing", 0600), ENOENT);
	CHECK_ERR(syscall(SYS_chown, HELLO_PATH, 0, 0), EROFS);
	CHECK_ERR(syscall(SYS_truncate, HELLO_PATH, 0L), EROFS);
	CHECK_ERR(syscall(SYS_utimensat, AT_FDCWD, HELLO_PATH, ts, 0), EROFS);
	CHECK_ERR(syscall(SYS_utimensat, AT_FDCWD, HELLO_PATH, NULL, 0), EROFS);
	CHECK_ERR(syscall(SYS_open, DATA_DIR "/created", O_WRONLY | O_CREAT, 0644), EROFS);
	CHECK_ERR(syscall(SYS_access, DATA_DIR "/created", F_OK), ENOENT);
}

/* cleanup removes the scratch directory's tree. */
static void cleanup(const char *dir)
{
	char buf[8192], path[PATH_MAX];
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
	long n, off;

	if (fd < 0)
		return;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);

			off += d->d_reclen;
			if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
			if (d->d_type == DT_DIR)
				cleanup(path);
			else
				unlink(path);
		}
	}
	close(fd);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	struct statfs sf;

	check_init(argc, argv);
	umask(022);
	strcpy(scratch, "/tmp/moat-tmpfs-XXXXXX");
	if (!mkdtemp(scratch)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	sfd = CHECK_OK(open(scratch, O_RDONLY | O_DIRECTORY));
	on_tmpfs = fstatfs(sfd, &sf) == 0 && sf.f_type == TMPFS_MAGIC_;
	if (check_tmp_tmpfs())
		CHECK(on_tmpfs);

	test_create();
	test_data();
	test_unlinked_open();
	test_mkdir_rmdir();
	test_unlink();
	test_rename();
	test_link();
	test_symlink();
	test_mknod();
	test_chmod();
	test_chown();
	test_setgid_dir();
	test_times();
	test_fallocate();
	test_sync();
	test_statfs();
	test_listing();
	if (check_ro_root())
		test_readonly();

	close(sfd);
	cleanup(scratch);
	return check_finish();
}
