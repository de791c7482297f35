/*
 * fs_landlock_args.c - Landlock's three calls with good and bad
 * arguments: the ABI version and errata queries, the ruleset struct's size
 * rules, the rights a ruleset and a rule may name, the kinds of fd each
 * call takes, the ruleset fd itself, no_new_privs or CAP_SYS_ADMIN for
 * landlock_restrict_self, and the limit of 16 layers.
 */
// covers: landlock_create_ruleset landlock_add_rule landlock_restrict_self
#include "check.h"
#include <linux/landlock.h>
#include <stdint.h>
#include <sys/prctl.h>

/* The C library's headers may predate ABI 7. */
#ifndef LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF
#define LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF (1U << 0)
#define LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF (1U << 2)
#endif

static long create_ruleset(const void *attr, size_t size, unsigned flags)
{
	return syscall(SYS_landlock_create_ruleset, attr, size, flags);
}

static long add_rule(int fd, int type, const void *attr, unsigned flags)
{
	return syscall(SYS_landlock_add_rule, fd, type, attr, flags);
}

static long restrict_self(int fd, unsigned flags)
{
	return syscall(SYS_landlock_restrict_self, fd, flags);
}

/* drop_sys_admin takes CAP_SYS_ADMIN out of the effective set. */
static void drop_sys_admin(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	CHECK_OK(syscall(SYS_capget, &h, d));
	d[0].effective &= ~(1u << CAP_SYS_ADMIN);
	CHECK_OK(syscall(SYS_capset, &h, d));
}

int main(int argc, char **argv)
{
	uint64_t attr[4] = { 0 }, big[8] = { 0 };
	struct landlock_path_beneath_attr rule;
	char buf[8];
	int abi, fd, dir, pfd[2];
	pid_t pid;

	check_init(argc, argv);
	abi = create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	CHECK(abi >= 5);
	if (abi >= 3) {
		long errata = create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_ERRATA);

		/* Erratum 3 (disconnected directories) belongs to ABI 1,
		 * erratum 1 (TCP sockets alone) to ABI 4. */
		CHECK(errata >= 0 && (errata & (1 << 2)) && (abi < 4 || (errata & 1)));
	}
	/* The queries take no struct, one flag at a time. */
	CHECK_ERR(create_ruleset(attr, 0, LANDLOCK_CREATE_RULESET_VERSION), EINVAL);
	CHECK_ERR(create_ruleset(NULL, 8, LANDLOCK_CREATE_RULESET_VERSION), EINVAL);
	CHECK_ERR(create_ruleset(NULL, 0, 3), EINVAL);
	CHECK_ERR(create_ruleset(NULL, 0, 1 << 4), EINVAL);

	/* The struct: present, at least handled_access_fs, at most a page,
	 * anything past what the kernel knows zero. */
	CHECK_ERR(create_ruleset(NULL, 0, 0), EFAULT);
	CHECK_ERR(create_ruleset(NULL, 8, 0), EFAULT);
	CHECK_ERR(create_ruleset(attr, 7, 0), EINVAL);
	CHECK_ERR(create_ruleset(attr, 4097, 0), E2BIG);
	CHECK_ERR(create_ruleset((void *)8, 8, 0), EFAULT);
	big[0] = LANDLOCK_ACCESS_FS_READ_FILE;
	big[7] = 1;
	CHECK_ERR(create_ruleset(big, sizeof(big), 0), E2BIG);
	big[7] = 0;
	fd = CHECK_OK(create_ruleset(big, sizeof(big), 0));
	close(fd);
	/* Rights: none is ENOMSG, an unknown one EINVAL. */
	CHECK_ERR(create_ruleset(attr, 8, 0), ENOMSG);
	attr[0] = 1ULL << 40;
	CHECK_ERR(create_ruleset(attr, 8, 0), EINVAL);
	attr[0] = 0;
	attr[1] = 1ULL << 40; /* handled_access_net */
	CHECK_ERR(create_ruleset(attr, 16, 0), EINVAL);
	attr[1] = 0;
	attr[2] = 1ULL << 40; /* scoped */
	CHECK_ERR(create_ruleset(attr, 24, 0), abi >= 6 ? EINVAL : E2BIG);
	attr[2] = 0;

	attr[0] = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
		  LANDLOCK_ACCESS_FS_WRITE_FILE;
	fd = CHECK_OK(create_ruleset(attr, 8, 0));
	/* The ruleset fd: read-write, close-on-exec, neither read nor
	 * written, not seekable, an anonymous inode. */
	CHECK_EQ(fcntl(fd, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDWR);
	CHECK_ERR(read(fd, buf, sizeof(buf)), EINVAL);
	CHECK_ERR(write(fd, buf, sizeof(buf)), EINVAL);
	CHECK_ERR(lseek(fd, 0, SEEK_SET), ESPIPE);
	{
		char path[64], link[64] = "";

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		CHECK_OK(readlink(path, link, sizeof(link) - 1));
		CHECK_STR(link, "anon_inode:[landlock-ruleset]");
	}

	/* landlock_add_rule: flags, then the ruleset fd, then the rule. */
	dir = CHECK_OK(open(DATA_DIR, O_PATH | O_DIRECTORY));
	rule.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE;
	rule.parent_fd = dir;
	CHECK_ERR(add_rule(fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 1), EINVAL);
	CHECK_ERR(add_rule(-1, LANDLOCK_RULE_PATH_BENEATH, &rule, 0), EBADF);
	CHECK_ERR(add_rule(dir, LANDLOCK_RULE_PATH_BENEATH, &rule, 0), EBADF); /* O_PATH */
	CHECK_ERR(add_rule(0, LANDLOCK_RULE_PATH_BENEATH, &rule, 0), EBADFD);
	CHECK_ERR(add_rule(fd, 0, &rule, 0), EINVAL);
	CHECK_ERR(add_rule(fd, 3, &rule, 0), EINVAL);
	CHECK_ERR(add_rule(fd, LANDLOCK_RULE_PATH_BENEATH, NULL, 0), EFAULT);
	rule.allowed_access = 0;
	CHECK_ERR(add_rule(fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0), ENOMSG);
	rule.allowed_access = LANDLOCK_ACCESS_FS_EXECUTE; /* not handled */
	CHECK_ERR(add_rule(fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0), EINVAL);
	rule.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE;
	rule.parent_fd = -1;
	CHECK_ERR(add_rule(fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0), EBADF);
	/* A rule's file must be in a file system: not a pipe, not a ruleset. */
	CHECK_OK(pipe(pfd));
	rule.parent_fd = pfd[0];
	CHECK_ERR(add_rule(fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0), EBADFD);
	rule.parent_fd = fd;
	CHECK_ERR(add_rule(fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0), EBADFD);
	/* A file takes only the rights on files. */
	rule.parent_fd = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	rule.allowed_access = LANDLOCK_ACCESS_FS_READ_DIR;
	CHECK_ERR(add_rule(fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0), EINVAL);
	rule.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE;
	CHECK_OK(add_rule(fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0));
	close(rule.parent_fd);
	/* A directory, through an O_PATH fd; the same rule twice is fine. */
	rule.parent_fd = dir;
	rule.allowed_access = LANDLOCK_ACCESS_FS_READ_DIR;
	CHECK_OK(add_rule(fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0));
	CHECK_OK(add_rule(fd, LANDLOCK_RULE_PATH_BENEATH, &rule, 0));

	/* landlock_restrict_self: the ruleset fd's kind, then (with
	 * no_new_privs) the flags; without no_new_privs or CAP_SYS_ADMIN,
	 * EPERM before anything else. */
	pid = check_fork();
	if (pid == 0) {
		if (check_has_cap(CAP_SYS_ADMIN))
			drop_sys_admin();
		/* A container's process may have no_new_privs already. */
		if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0) {
			CHECK_ERR(restrict_self(fd, 0), EPERM);
			CHECK_ERR(restrict_self(-1, 1u << 31), EPERM);
			CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
		}
		CHECK_ERR(restrict_self(fd, 1u << 31), EINVAL);
		CHECK_ERR(restrict_self(-1, 0), EBADF);
		if (abi >= 7) {
			/* The audit flags; LOG_SUBDOMAINS_OFF alone needs no
			 * ruleset, and adds no layer. */
			CHECK_OK(restrict_self(-1, LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF));
			CHECK_ERR(restrict_self(-1, LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF), EBADF);
		}
		CHECK_ERR(restrict_self(dir, 0), EBADF); /* O_PATH */
		CHECK_ERR(restrict_self(pfd[0], 0), EBADFD);
		/* Sixteen layers, and not one more. */
		for (int i = 0; i < 16; i++)
			CHECK_OK(restrict_self(fd, 0));
		CHECK_ERR(restrict_self(fd, 0), E2BIG);
		/* The domain restricts: a file outside the rules is denied. */
		CHECK_ERR(open("/proc/self/status", O_RDONLY), EACCES);
		CHECK_OK(close(CHECK_OK(open(HELLO_PATH, O_RDONLY))));
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	/* The parent is not restricted by its child's domain. */
	CHECK_OK(close(CHECK_OK(open("/proc/self/status", O_RDONLY))));
	return check_finish();
}
