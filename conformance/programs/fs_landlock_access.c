/*
 * fs_landlock_access.c - what a Landlock domain allows and denies, each
 * case in a child that restricts itself while its parent stays free: a
 * read-only tree (writes, creates, removes, renames, truncation and exec
 * denied with EACCES), a read-write one, the rights an open file keeps
 * (ftruncate), rules that follow the file and not its name, layers (each
 * must allow), REFER (EXDEV for a move that is not allowed or would gain
 * rights, EACCES first), the domain kept across fork and execve, and
 * (ABI 5) ioctl on a device opened without IOCTL_DEV.
 */
// covers: landlock_create_ruleset landlock_add_rule landlock_restrict_self
#include "check.h"
#include <ftw.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

/* The C library's headers may predate ABIs 3 and 5. */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

/* The rights of Landlock's ABI 3. */
#define FS_ALL ((LANDLOCK_ACCESS_FS_TRUNCATE << 1) - 1)
#define FS_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

static char base[64];

/* at returns base/name in a static buffer (one of four, in turn). */
static const char *at(const char *name)
{
	static char bufs[4][128];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", base, name);
	return b;
}

static int new_ruleset(uint64_t handled)
{
	struct landlock_ruleset_attr attr = { .handled_access_fs = handled };

	return CHECK_OK(syscall(SYS_landlock_create_ruleset, &attr, sizeof(attr.handled_access_fs), 0));
}

/* allow adds a rule for path (relative to the working directory). */
static void allow(int ruleset, const char *path, uint64_t access)
{
	struct landlock_path_beneath_attr rule = { .allowed_access = access };

	rule.parent_fd = open(path, O_PATH);
	if (rule.parent_fd < 0) {
		check_fail(__FILE__, __LINE__, "open %s: %s", path, check_errname(errno));
		return;
	}
	CHECK_OK(syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0));
	close(rule.parent_fd);
}

/* enforce adds the ruleset to the caller's domain and closes it. */
static void enforce(int ruleset)
{
	CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK_OK(syscall(SYS_landlock_restrict_self, ruleset, 0));
	close(ruleset);
}

static void make_file(const char *path, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	if (fd < 0) {
		check_fail(__FILE__, __LINE__, "create %s: %s", path, check_errname(errno));
		return;
	}
	CHECK_EQ(write(fd, "data", 4), 4);
	close(fd);
}

/* copy_self copies the running program to path, executable. */
static void copy_self(const char *path)
{
	char buf[65536];
	int in = CHECK_OK(open("/proc/self/exe", O_RDONLY));
	int out = CHECK_OK(open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755));
	ssize_t n;

	while ((n = read(in, buf, sizeof(buf))) > 0)
		CHECK_EQ(write(out, buf, n), n);
	close(in);
	close(out);
}

/* opens reports whether path opens with flags (then closes it). */
static int opens(const char *path, int flags)
{
	int fd = open(path, flags, 0644);

	if (fd >= 0)
		close(fd);
	return fd >= 0 ? 0 : errno;
}

/* setup makes the tree every case works on, under base. */
static void setup(void)
{
	static const char *dirs[] = { "ro", "ro/sub", "rw", "rw/sub", "noexec", "trunc",
				      "b", "b/w", "ga", "gb", "gc" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		CHECK_OK(mkdir(at(dirs[i]), 0755));
	make_file(at("ro/f"), 0644);
	make_file(at("ro/sub/g"), 0644);
	copy_self(at("ro/prog"));
	copy_self(at("noexec/prog"));
	make_file(at("trunc/t"), 0644);
	make_file(at("b/w/f"), 0644);
	make_file(at("ga/f"), 0644);
	make_file(at("gb/g"), 0644);
	make_file(at("gb/g2"), 0644);
	make_file(at("gb/e"), 0644);
	make_file(at("gb/h"), 0644);
	make_file(at("rw/a"), 0644);
}

/* read_only_domain: the whole tree readable, base/ro executable,
 * base/rw open to everything, base/trunc writable but not truncatable. */
static void read_only_domain(void)
{
	int rs = new_ruleset(FS_ALL);

	allow(rs, "/", FS_READ);
	allow(rs, "conformance/bin", LANDLOCK_ACCESS_FS_EXECUTE);
	allow(rs, at("ro"), LANDLOCK_ACCESS_FS_EXECUTE);
	allow(rs, at("rw"), FS_ALL);
	allow(rs, at("trunc"), LANDLOCK_ACCESS_FS_WRITE_FILE);
	enforce(rs);
}

/* bind_unix binds a new unix socket to path: 0 or the errno. */
static int bind_unix(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = CHECK_OK(socket(AF_UNIX, SOCK_STREAM, 0)), r;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	r = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	close(fd);
	return r < 0 ? errno : 0;
}

/* denied_in_ro checks what read_only_domain denies in base/ro. */
static void denied_in_ro(void)
{
	CHECK_EQ(opens(at("ro/f"), O_RDONLY), 0);
	CHECK_EQ(opens(at("ro/f"), O_WRONLY), EACCES);
	CHECK_EQ(opens(at("ro/f"), O_RDWR), EACCES);
	CHECK_EQ(opens(at("ro/new"), O_WRONLY | O_CREAT), EACCES);
	CHECK_ERR(mkdir(at("ro/d"), 0755), EACCES);
	CHECK_ERR(mknod(at("ro/p"), S_IFIFO | 0644, 0), EACCES);
	CHECK_ERR(symlink("f", at("ro/l")), EACCES);
	CHECK_EQ(bind_unix(at("ro/sock")), EACCES); /* MAKE_SOCK */
	CHECK_ERR(unlink(at("ro/f")), EACCES);
	CHECK_ERR(rmdir(at("ro/sub")), EACCES);
	CHECK_ERR(rename(at("ro/f"), at("ro/f2")), EACCES);
	CHECK_ERR(rename(at("ro/f"), at("rw/f")), EACCES); /* no REMOVE_FILE in ro */
	CHECK_ERR(link(at("ro/f"), at("rw/lf")), EXDEV);   /* no REFER in ro */
	CHECK_ERR(truncate(at("ro/f"), 0), EACCES);
}

static int execed_checks(void)
{
	/* The program execve ran keeps the domain. */
	CHECK_EQ(opens(at("ro/f"), O_WRONLY), EACCES);
	CHECK_EQ(opens(at("ro/f"), O_RDONLY), 0);
	CHECK_EQ(opens(at("rw/execed"), O_WRONLY | O_CREAT), 0);
	return check_finish();
}

static void read_only_tree(char **argv)
{
	int before = CHECK_OK(open(at("trunc/t"), O_WRONLY));
	int fd;
	pid_t pid;

	read_only_domain();
	denied_in_ro();

	/* base/rw allows everything. */
	CHECK_EQ(opens(at("rw/x"), O_RDWR | O_CREAT), 0);
	CHECK_OK(mkdir(at("rw/d"), 0755));
	CHECK_OK(mknod(at("rw/p"), S_IFIFO | 0644, 0));
	CHECK_OK(symlink("x", at("rw/l")));
	CHECK_EQ(bind_unix(at("rw/sock")), 0);
	CHECK_OK(rename(at("rw/x"), at("rw/x2")));
	CHECK_OK(rename(at("rw/x2"), at("rw/sub/x"))); /* REFER, no gain */
	CHECK_OK(link(at("rw/sub/x"), at("rw/hl")));
	CHECK_OK(truncate(at("rw/hl"), 0));
	CHECK_OK(unlink(at("rw/hl")));
	CHECK_OK(rmdir(at("rw/d")));

	/* Truncation: a right of its own, which an open file keeps. */
	CHECK_EQ(opens(at("trunc/t"), O_WRONLY), 0);
	CHECK_EQ(opens(at("trunc/t"), O_WRONLY | O_TRUNC), EACCES);
	CHECK_ERR(truncate(at("trunc/t"), 0), EACCES);
	fd = CHECK_OK(open(at("trunc/t"), O_WRONLY));
	CHECK_ERR(ftruncate(fd, 0), EACCES);
	close(fd);
	CHECK_OK(ftruncate(before, 1)); /* opened before the domain */
	close(before);

	/* What Landlock does not check: O_PATH, stat, access, chdir. */
	CHECK_EQ(opens(at("ro/f"), O_PATH), 0);
	{
		struct stat st;

		CHECK_OK(stat(at("ro/f"), &st));
	}
	CHECK_OK(access(at("ro/f"), W_OK));
	{
		int cwd = CHECK_OK(open(".", O_PATH | O_DIRECTORY));

		CHECK_OK(chdir(at("ro")));
		CHECK_OK(fchdir(cwd));
		close(cwd);
	}

	/* A child inherits the domain; a program it runs keeps it. */
	pid = check_fork();
	if (pid == 0) {
		char base_env[96];
		char *env[] = { "LANDLOCK_EXECED=1", base_env, NULL };
		char *args[] = { (char *)at("noexec/prog"), argv[1], argv[2], NULL };

		snprintf(base_env, sizeof(base_env), "LANDLOCK_BASE=%s", base);
		denied_in_ro();
		CHECK_ERR(execve(at("noexec/prog"), args, env), EACCES);
		args[0] = (char *)at("ro/prog");
		fflush(NULL);
		execve(at("ro/prog"), args, env);
		check_fail(__FILE__, __LINE__, "execve %s: %s", at("ro/prog"), check_errname(errno));
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
}

/* rules_follow_files: a rule is on a directory, not its name. */
static void rules_follow_files(void)
{
	int rs = new_ruleset(LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |
			     LANDLOCK_ACCESS_FS_REMOVE_DIR);

	allow(rs, at("b"), LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR);
	allow(rs, at("b/w"), LANDLOCK_ACCESS_FS_WRITE_FILE);
	enforce(rs);
	CHECK_EQ(opens(at("b/w/f"), O_WRONLY), 0);
	CHECK_OK(rename(at("b/w"), at("b/w2")));
	CHECK_EQ(opens(at("b/w2/f"), O_WRONLY), 0);
	CHECK_OK(mkdir(at("b/w"), 0755));
	/* Making a file is not handled, writing it is: the file is made,
	 * the open refused. */
	CHECK_EQ(opens(at("b/w/f"), O_WRONLY | O_CREAT), EACCES);
	CHECK_OK(access(at("b/w/f"), F_OK));
}

/* layers: each layer must allow an access. */
static void layers(void)
{
	int rs = new_ruleset(LANDLOCK_ACCESS_FS_WRITE_FILE);

	allow(rs, at("rw"), LANDLOCK_ACCESS_FS_WRITE_FILE);
	enforce(rs);
	CHECK_EQ(opens(at("rw/a"), O_WRONLY), 0);
	rs = new_ruleset(LANDLOCK_ACCESS_FS_WRITE_FILE);
	allow(rs, at("rw/sub"), LANDLOCK_ACCESS_FS_WRITE_FILE);
	allow(rs, at("ro"), LANDLOCK_ACCESS_FS_WRITE_FILE);
	enforce(rs);
	CHECK_EQ(opens(at("rw/a"), O_WRONLY), EACCES);
	CHECK_EQ(opens(at("rw/sub/y"), O_WRONLY | O_CREAT), 0);
	CHECK_EQ(opens(at("ro/f"), O_WRONLY), EACCES); /* the first layer denies it */
	CHECK_EQ(opens(at("ro/f"), O_RDONLY), 0);       /* reading is not handled */
	rs = new_ruleset(LANDLOCK_ACCESS_FS_READ_FILE);
	enforce(rs);
	CHECK_EQ(opens(at("ro/f"), O_RDONLY), EACCES);
}

/* refer: moving a file to another directory. */
static void refer(void)
{
	const uint64_t names = LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REMOVE_FILE;
	int rs = new_ruleset(LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | names |
			     LANDLOCK_ACCESS_FS_REFER);

	allow(rs, at("ga"), LANDLOCK_ACCESS_FS_READ_FILE | names | LANDLOCK_ACCESS_FS_REFER);
	allow(rs, at("gb"), LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | names |
				    LANDLOCK_ACCESS_FS_REFER);
	allow(rs, at("gc"), LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_REMOVE_FILE |
				    LANDLOCK_ACCESS_FS_REFER);
	allow(rs, at("rw"), LANDLOCK_ACCESS_FS_READ_FILE | names);
	enforce(rs);
	CHECK_ERR(rename(at("ga/f"), at("gb/f")), EXDEV); /* it would gain WRITE_FILE */
	CHECK_OK(rename(at("gb/g"), at("ga/g")));         /* it loses it */
	CHECK_ERR(rename(at("gb/h"), at("gc/h")), EACCES); /* no MAKE_REG in gc */
	CHECK_ERR(rename(at("ga/f"), at("rw/f")), EXDEV);  /* no REFER in rw */
	CHECK_ERR(syscall(SYS_renameat2, AT_FDCWD, at("ga/f"), AT_FDCWD, at("gb/e"), RENAME_EXCHANGE),
		  EXDEV);
	CHECK_OK(link(at("gb/g2"), at("ga/l")));
	CHECK_OK(rename(at("ga/l"), at("ga/l2"))); /* the same directory needs no REFER */
}

/* refer_unhandled: a ruleset that does not name REFER still denies it. */
static void refer_unhandled(void)
{
	int rs = new_ruleset(LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REMOVE_FILE);

	allow(rs, at("rw"), LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_REMOVE_FILE);
	enforce(rs);
	CHECK_ERR(rename(at("rw/a"), at("rw/sub/a")), EXDEV);
	CHECK_OK(rename(at("rw/a"), at("rw/a2")));
	CHECK_OK(rename(at("rw/a2"), at("rw/a")));
}

/* outside_files: files in no file system a task could name (a pipe, a
 * namespace) reopened through /proc are not restricted. */
static void outside_files(void)
{
	int p[2], rs, fd;
	char path[64];

	CHECK_OK(pipe(p));
	rs = new_ruleset(FS_READ | LANDLOCK_ACCESS_FS_WRITE_FILE);
	enforce(rs);
	CHECK_EQ(opens("/proc/self/status", O_RDONLY), EACCES);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", p[1]);
	fd = CHECK_OK(open(path, O_WRONLY));
	CHECK_EQ(write(fd, "x", 1), 1);
	close(fd);
	CHECK_EQ(opens("/proc/self/ns/uts", O_RDONLY), 0);
}

/* ioctl_dev: a device opened under a domain handling IOCTL_DEV takes
 * only the requests Landlock always lets through, unless a rule allows
 * IOCTL_DEV there; other files, and devices opened before, take all. */
static void ioctl_dev(void)
{
	int before = CHECK_OK(open("/dev/null", O_RDWR)), rs, null, zero, file, n = 0;

	rs = new_ruleset(LANDLOCK_ACCESS_FS_IOCTL_DEV);
	allow(rs, "/dev/zero", LANDLOCK_ACCESS_FS_IOCTL_DEV);
	enforce(rs);
	null = CHECK_OK(open("/dev/null", O_RDWR));
	zero = CHECK_OK(open("/dev/zero", O_RDONLY));
	file = CHECK_OK(open(at("ro/f"), O_RDONLY));
	CHECK_ERR(ioctl(null, FIONREAD, &n), EACCES);
	CHECK_OK(ioctl(null, FIOCLEX));
	CHECK_OK(ioctl(null, FIONBIO, &n));
	errno = 0;
	CHECK(ioctl(zero, FIONREAD, &n) == 0 || errno != EACCES);
	CHECK(ioctl(before, FIONREAD, &n) == 0 || errno != EACCES);
	CHECK_OK(ioctl(file, FIONREAD, &n));
	CHECK_EQ(n, 4);
	close(null);
	close(zero);
	close(file);
	close(before);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	return remove(path);
}

int main(int argc, char **argv)
{
	void (*cases[])(void) = { rules_follow_files, layers, refer, refer_unhandled, outside_files, ioctl_dev };
	int abi;
	pid_t pid;

	check_init(argc, argv);
	if (getenv("LANDLOCK_EXECED")) {
		snprintf(base, sizeof(base), "%s", getenv("LANDLOCK_BASE"));
		return execed_checks();
	}
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	CHECK(abi >= 3);
	if (abi < 3)
		return check_finish();
	CHECK(mkdtemp(strcpy(base, "/tmp/landlock.XXXXXX")) != NULL);
	setenv("LANDLOCK_BASE", base, 1);
	setup();

	pid = check_fork();
	if (pid == 0) {
		read_only_tree(argv);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (cases[i] == ioctl_dev && abi < 5)
			continue;
		pid = check_fork();
		if (pid == 0) {
			cases[i]();
			check_child_exit();
		}
		CHECK_CHILD(pid, "exited 0");
	}
	/* What the domains denied did not happen; the free parent may. */
	CHECK_ERR(access(at("ro/new"), F_OK), ENOENT);
	CHECK_OK(access(at("ga/f"), F_OK));
	CHECK_OK(access(at("rw/execed"), F_OK));
	CHECK_EQ(opens(at("ro/f"), O_WRONLY), 0);
	CHECK_OK(nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS));
	return check_finish();
}
