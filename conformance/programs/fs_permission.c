/*
 * fs_permission: who may walk, open and execute what, by the mode bits and
 * the capabilities that override them (Linux's generic_permission and
 * may_lookup).
 *
 * A path is walked only through directories the caller may search: every
 * component is looked up in a directory that must grant execute permission,
 * "." and ".." included, and those a symlink leads through too; a directory
 * fd given to openat is no exception. Reading a directory's names needs its
 * read bit, not its execute bit. execve needs execute permission on a
 * regular file and not read permission. access(2) asks with the real ids
 * (and, for a real uid 0, the permitted capabilities), AT_EACCESS with the
 * effective ones. CAP_DAC_READ_SEARCH lets its holder search any directory
 * and read any file; CAP_DAC_OVERRIDE lets it write too, and execute any
 * file with at least one execute bit.
 *
 * The program sets up a tree in /tmp as root and checks it in forked
 * children that become uid 1000 or 2000, and as root with its effective
 * capabilities narrowed.
 */
// covers: open openat stat newfstatat access faccessat faccessat2 chdir execve
// capabilities: CAP_CHOWN CAP_SETUID CAP_SETGID CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH CAP_FOWNER
// places: bind root
#include "check.h"

#include <dirent.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define EXIT_NOW "--exit-now" /* argv[1] of the copies the checks execute */
#define EXIT_NOW_STATUS 42

static char scratch[64];

/* P names a file in the scratch directory; eight buffers reused in turn. */
static const char *P(const char *name)
{
	static char bufs[8][PATH_MAX];
	static int next;
	char *b = bufs[next++ % 8];

	snprintf(b, PATH_MAX, "%s/%s", scratch, name);
	return b;
}

static void make_dir(const char *name, unsigned mode, uid_t uid, gid_t gid)
{
	CHECK_OK(mkdir(P(name), 0700));
	CHECK_OK(chown(P(name), uid, gid));
	CHECK_OK(chmod(P(name), mode));
}

static void make_file(const char *name, unsigned mode, uid_t uid, gid_t gid)
{
	int fd = CHECK_OK(open(P(name), O_CREAT | O_EXCL | O_WRONLY, 0600));

	CHECK_EQ(write(fd, "data\n", 5), 5);
	close(fd);
	CHECK_OK(chown(P(name), uid, gid));
	CHECK_OK(chmod(P(name), mode));
}

/* copy_self writes this program's image to name with mode. */
static void copy_self(const char *name, unsigned mode)
{
	char buf[65536];
	int in = CHECK_OK(open("/proc/self/exe", O_RDONLY));
	int out = CHECK_OK(open(P(name), O_CREAT | O_EXCL | O_WRONLY, 0700));
	long n;

	while ((n = read(in, buf, sizeof(buf))) > 0)
		CHECK_EQ(write(out, buf, n), n);
	CHECK_EQ(n, 0);
	close(in);
	close(out);
	CHECK_OK(chmod(P(name), mode));
}

static void set_effective(unsigned long long eff)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	CHECK_OK(syscall(SYS_capget, &hdr, data));
	data[0].effective = (unsigned)eff;
	data[1].effective = (unsigned)(eff >> 32);
	CHECK_OK(syscall(SYS_capset, &hdr, data));
}

static unsigned long long permitted(void)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	CHECK_OK(syscall(SYS_capget, &hdr, data));
	return data[0].permitted | (unsigned long long)data[1].permitted << 32;
}

#define BIT(cap) (1ULL << (cap))

/* become gives a child the ids (groups: just gid) without capabilities. */
static void become(uid_t uid, gid_t gid)
{
	CHECK_OK(setgroups(1, &gid));
	CHECK_OK(setresgid(gid, gid, gid));
	CHECK_OK(setresuid(uid, uid, uid));
}

/* exec_status runs a copy at name (relative to the scratch directory) in a
 * child and describes how it ended: "exited 42" when it ran, "exited
 * 100+errno" when execve failed. */
static const char *exec_status(const char *name)
{
	pid_t pid = check_fork();

	if (pid == 0) {
		char *argv[] = { (char *)P(name), EXIT_NOW, NULL };

		execve(argv[0], argv, (char *[]){ NULL });
		_exit(100 + errno);
	}
	return check_wait_str(pid);
}

static int can_list(const char *name)
{
	DIR *d = opendir(P(name));

	if (!d)
		return -errno;
	closedir(d);
	return 0;
}

/*
 * The tree, made by root:
 *   priv/       0700 root        secret (0644), sub/ (0755) with f (0644)
 *   link        -> priv/secret
 *   grp/        0710 root:3000   f (0644)
 *   own/        0600 1000        f (0644, 1000)
 *   wx/         0300 1000        f (0644, 1000)
 *   other/      0700 1000        f (0600, 1000), prog (0700, 1000), text (0644, 1000)
 *   prog_x      0711 root        (this program: execute without read)
 *   prog_owner  0700 root
 *   prog_text   0644 root
 */
static void make_tree(void)
{
	make_dir("priv", 0755, 0, 0);
	make_file("priv/secret", 0644, 0, 0);
	make_dir("priv/sub", 0755, 0, 0);
	make_file("priv/sub/f", 0644, 0, 0);
	CHECK_OK(chmod(P("priv"), 0700));
	CHECK_OK(symlink("priv/secret", P("link")));
	make_dir("grp", 0700, 0, 3000);
	make_file("grp/f", 0644, 0, 0);
	CHECK_OK(chmod(P("grp"), 0710));
	make_dir("own", 0700, 1000, 1000);
	make_file("own/f", 0644, 1000, 1000);
	CHECK_OK(chmod(P("own"), 0600));
	make_dir("wx", 0700, 1000, 1000);
	make_file("wx/f", 0644, 1000, 1000);
	CHECK_OK(chmod(P("wx"), 0300));
	make_dir("other", 0700, 1000, 1000);
	make_file("other/f", 0600, 1000, 1000);
	make_file("other/text", 0644, 1000, 1000);
	copy_self("other/prog", 0700);
	CHECK_OK(chown(P("other/prog"), 1000, 1000));
	copy_self("prog_x", 0711);
	copy_self("prog_owner", 0700);
	copy_self("prog_text", 0644);
}

/* A stranger (uid 2000, not in group 3000) meets closed directories. */
static void check_stranger(void)
{
	struct stat st;
	int priv_path;
	pid_t pid;

	/* Opened as root before the fork: an O_PATH fd on priv. */
	priv_path = CHECK_OK(open(P("priv"), O_PATH | O_DIRECTORY));
	pid = check_fork();
	if (pid == 0) {
		become(2000, 2000);
		CHECK_OK(stat(P("priv"), &st));
		CHECK_ERR(open(P("priv/secret"), O_RDONLY), EACCES);
		CHECK_ERR(stat(P("priv/secret"), &st), EACCES);
		CHECK_ERR(stat(P("priv/nothing"), &st), EACCES);
		CHECK_ERR(stat(P("priv/sub/f"), &st), EACCES);
		CHECK_ERR(stat(P("priv/."), &st), EACCES);
		CHECK_ERR(stat(P("priv/.."), &st), EACCES);
		CHECK_OK(stat(P("priv/"), &st)); /* nothing is looked up in it */
		CHECK_ERR(access(P("priv/secret"), F_OK), EACCES);
		/* Through a symlink the target's directories are walked too. */
		CHECK_OK(lstat(P("link"), &st));
		CHECK_ERR(open(P("link"), O_RDONLY), EACCES);
		/* A directory fd is a start, not a pass. */
		CHECK_ERR(openat(priv_path, "secret", O_RDONLY), EACCES);
		CHECK_ERR(fstatat(priv_path, "sub", &st, 0), EACCES);
		/* Names made or removed are looked up first. */
		CHECK_ERR(mkdir(P("priv/new"), 0755), EACCES);
		CHECK_ERR(unlink(P("priv/secret")), EACCES);
		CHECK_ERR(open(P("priv/secret"), O_CREAT | O_RDONLY, 0644), EACCES);
		CHECK_ERR(chdir(P("priv")), EACCES);
		CHECK_EQ(can_list("priv"), -EACCES);
		/* Group 3000's execute bit is not the stranger's. */
		CHECK_ERR(stat(P("grp/f"), &st), EACCES);
		/* Nor another user's owner bits. */
		CHECK_ERR(open(P("other/f"), O_RDONLY), EACCES);
		CHECK_STR(exec_status("other/prog"), "exited 113"); /* 100 + EACCES */
		/* Execute without read runs; no execute bit for others does not. */
		CHECK_STR(exec_status("prog_x"), "exited 42");
		CHECK_STR(exec_status("prog_owner"), "exited 113");
		CHECK_STR(exec_status("prog_text"), "exited 113");
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	close(priv_path);
}

/* Members and owners get the bits of their class, and only those. */
static void check_classes(void)
{
	struct stat st;
	pid_t pid = check_fork();

	if (pid == 0) {
		gid_t groups[] = { 3000 };

		CHECK_OK(setgroups(1, groups));
		CHECK_OK(setresgid(1000, 1000, 1000));
		CHECK_OK(setresuid(1000, 1000, 1000));
		/* Group execute (0710) lets a member of 3000 through. */
		CHECK_OK(stat(P("grp/f"), &st));
		CHECK_EQ(can_list("grp"), -EACCES);
		/* own/ is 0600: the owner reads its names but cannot walk it. */
		CHECK_EQ(can_list("own"), 0);
		CHECK_ERR(stat(P("own/f"), &st), EACCES);
		CHECK_ERR(open(P("own/f"), O_RDONLY), EACCES);
		CHECK_ERR(chdir(P("own")), EACCES);
		/* wx/ is 0300: walked and written, not listed. */
		CHECK_OK(stat(P("wx/f"), &st));
		CHECK_EQ(can_list("wx"), -EACCES);
		CHECK_OK(chdir(P("wx")));
		CHECK_OK(close(CHECK_OK(open("f", O_RDONLY))));
		CHECK_OK(chdir("/"));
		/* The owner of other/ runs its own 0700 program. */
		CHECK_STR(exec_status("other/prog"), "exited 42");
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
}

/* access(2) asks as the real ids; AT_EACCESS as the effective ones. */
static void check_access_ids(void)
{
	pid_t pid = check_fork();

	if (pid == 0) {
		/* Real uid 1000, effective and saved 0: the capabilities stay. */
		CHECK_OK(setresuid(1000, 0, 0));
		CHECK_OK(open(P("priv/secret"), O_RDONLY));
		CHECK_ERR(access(P("priv/secret"), R_OK), EACCES);
		CHECK_ERR(access(P("priv/secret"), F_OK), EACCES);
		CHECK_OK(syscall(SYS_faccessat2, AT_FDCWD, P("priv/secret"), R_OK, AT_EACCESS));
		CHECK_OK(access(P("other/text"), R_OK)); /* 0644, walked by real uid 1000: its own dir */
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
}

/* Root is bound by the mode bits except as its capabilities say. */
static void check_capabilities(void)
{
	unsigned long long all = permitted();
	struct stat st;

	set_effective(all & ~(BIT(CAP_DAC_OVERRIDE) | BIT(CAP_DAC_READ_SEARCH)));
	CHECK_ERR(stat(P("other/f"), &st), EACCES);
	/* access(2) for a real uid 0 has the permitted set, not the effective. */
	CHECK_OK(access(P("other/f"), R_OK));
	CHECK_STR(exec_status("prog_owner"), "exited 42"); /* root owns it: owner bits */

	set_effective(all & ~BIT(CAP_DAC_OVERRIDE));
	CHECK_OK(stat(P("other/f"), &st));
	CHECK_OK(close(CHECK_OK(open(P("other/f"), O_RDONLY))));
	CHECK_ERR(open(P("other/f"), O_WRONLY), EACCES);
	CHECK_EQ(can_list("other"), 0);
	CHECK_STR(exec_status("other/prog"), "exited 113"); /* reading and searching is not executing */

	set_effective(all & ~BIT(CAP_DAC_READ_SEARCH));
	CHECK_OK(close(CHECK_OK(open(P("other/f"), O_RDWR))));
	CHECK_STR(exec_status("other/prog"), "exited 42");
	CHECK_STR(exec_status("prog_text"), "exited 113"); /* no execute bit at all */

	set_effective(all);
}

static void remove_tree(void)
{
	static const char *files[] = { "priv/secret", "priv/sub/f", "link", "grp/f", "own/f",
				       "wx/f", "other/f", "other/text", "other/prog", "prog_x",
				       "prog_owner", "prog_text" };
	static const char *dirs[] = { "priv/sub", "priv", "grp", "own", "wx", "other" };
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		CHECK_OK(unlink(P(files[i])));
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		CHECK_OK(rmdir(P(dirs[i])));
	CHECK_OK(rmdir(scratch));
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], EXIT_NOW) == 0)
		return EXIT_NOW_STATUS;
	check_init(argc, argv);
	if (!check_has_cap(CAP_SETUID) || !check_has_cap(CAP_CHOWN)) {
		fprintf(stderr, "fs_permission: needs root with CAP_SETUID and CAP_CHOWN\n");
		return 1;
	}
	strcpy(scratch, "/tmp/fs_permission.XXXXXX");
	if (!mkdtemp(scratch)) {
		CHECK(!"mkdtemp");
		return check_finish();
	}
	CHECK_OK(chmod(scratch, 0755));
	make_tree();
	check_stranger();
	check_classes();
	check_access_ids();
	check_capabilities();
	remove_tree();
	return check_finish();
}
