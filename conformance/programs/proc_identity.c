/*
 * proc_identity: changing user and group ids, and the capabilities that
 * go with them.
 *
 * Daemons that start as root and drop to a service user, sudo, su, login
 * and container init processes all rely on the id-changing calls doing
 * exactly what the credentials rules say, and on capabilities following the
 * ids: a process that drops to a non-root uid must lose its privileges, and
 * one without CAP_SETUID must not gain them.
 * Natively the program runs as root with (almost) every capability; in the
 * container it runs as uid 0 with the capabilities the config grants, which
 * in the conformance config is none. Each check takes the branch the
 * process's own capabilities (from capget) call for, and every identity
 * change happens in a forked child.
 * Checks: capget with _LINUX_CAPABILITY_VERSION_3 (and 1), EINVAL for an
 * unknown version which is answered with the preferred one (with a NULL data
 * pointer, the way to ask, without the error), ESRCH for a missing pid, another process's sets;
 * in the container all sets are empty. capset: dropping from the effective
 * set and raising back from the permitted set, EPERM for raising what is
 * not permitted and for another process, EINVAL for a bad version. With
 * CAP_SETUID: setresuid, setreuid and setuid set the ids by the privileged
 * rules, effective capabilities go when the effective uid leaves 0 and come
 * back with it, all of them go when no uid is 0, after which setuid(0) is
 * EPERM and only the unprivileged rules apply; setfsuid returns the previous
 * fsuid, drops the file-system capabilities and changes permission checks.
 * Without CAP_SETUID: only the current ids can be set (EPERM otherwise),
 * setfsuid changes nothing. The same for setresgid, setregid, setgid and
 * setfsgid with CAP_SETGID; setgroups then getgroups (EINVAL for a list too
 * small or too long), EPERM without CAP_SETGID. getuid and geteuid follow.
 */
// covers: setuid setgid setreuid setregid setresuid setresgid setfsuid setfsgid setgroups getgroups capget capset getuid geteuid getgid getegid getresuid getresgid
#include "check.h"

#include <stdint.h>

/* A pid that no process has: above the largest pid_max (4194304). */
#define NO_PID 0x3ffffff0

/* The capability sets as 64-bit masks. */
struct caps {
	uint64_t eff, prm, inh;
};

#define CAP(c) (1ULL << (c))

static int caps_get(pid_t pid, struct caps *c)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, pid };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &hdr, d) != 0)
		return -1;
	c->eff = d[0].effective | (uint64_t)d[1].effective << 32;
	c->prm = d[0].permitted | (uint64_t)d[1].permitted << 32;
	c->inh = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
	return 0;
}

static long caps_set(const struct caps *c)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	d[0].effective = (uint32_t)c->eff;
	d[1].effective = c->eff >> 32;
	d[0].permitted = (uint32_t)c->prm;
	d[1].permitted = c->prm >> 32;
	d[0].inheritable = (uint32_t)c->inh;
	d[1].inheritable = c->inh >> 32;
	return syscall(SYS_capset, &hdr, d);
}

static struct caps now(void)
{
	struct caps c = { 0, 0, 0 };

	CHECK_EQ(caps_get(0, &c), 0);
	return c;
}

/* The capabilities setfsuid drops and restores (CAP_FS_MASK). */
#define FS_CAPS                                                               \
	(CAP(CAP_CHOWN) | CAP(CAP_DAC_OVERRIDE) | CAP(CAP_DAC_READ_SEARCH) | \
	 CAP(CAP_FOWNER) | CAP(CAP_FSETID) | CAP(CAP_LINUX_IMMUTABLE) |      \
	 CAP(CAP_MAC_OVERRIDE) | CAP(CAP_MKNOD))

static void check_ids(long r, long e, long s, int line)
{
	uid_t gr = -1, ge = -1, gs = -1;

	if (syscall(SYS_getresuid, &gr, &ge, &gs) != 0 || gr != (uid_t)r ||
	    ge != (uid_t)e || gs != (uid_t)s)
		check_fail(__FILE__, line, "uids are %d %d %d, not %ld %ld %ld",
			   (int)gr, (int)ge, (int)gs, r, e, s);
	if (syscall(SYS_getuid) != r || syscall(SYS_geteuid) != e)
		check_fail(__FILE__, line, "getuid/geteuid say %ld %ld, not %ld %ld",
			   syscall(SYS_getuid), syscall(SYS_geteuid), r, e);
}

static void check_gids(long r, long e, long s, int line)
{
	gid_t gr = -1, ge = -1, gs = -1;

	if (syscall(SYS_getresgid, &gr, &ge, &gs) != 0 || gr != (gid_t)r ||
	    ge != (gid_t)e || gs != (gid_t)s)
		check_fail(__FILE__, line, "gids are %d %d %d, not %ld %ld %ld",
			   (int)gr, (int)ge, (int)gs, r, e, s);
}

#define CHECK_IDS(r, e, s) check_ids(r, e, s, __LINE__)
#define CHECK_GIDS(r, e, s) check_gids(r, e, s, __LINE__)

static void test_capget(void)
{
	struct __user_cap_header_struct hdr;
	struct __user_cap_data_struct d[2];
	struct caps c, child;
	pid_t pid;
	int go[2];

	c = now();
	CHECK_EQ(c.eff & ~c.prm, 0);
	CHECK_EQ(check_has_cap(CAP_SETUID), (c.eff & CAP(CAP_SETUID)) != 0);
	if (!check_native) {
		/* The conformance config grants no capabilities. */
		CHECK_EQ(c.eff, 0);
		CHECK_EQ(c.prm, 0);
		CHECK_EQ(c.inh, 0);
	}
	/* Version 1: the low 32 bits only. */
	hdr.version = _LINUX_CAPABILITY_VERSION_1;
	hdr.pid = 0;
	memset(d, 0, sizeof(d));
	CHECK_EQ(syscall(SYS_capget, &hdr, d), 0);
	CHECK_EQ(d[0].effective, (uint32_t)c.eff);
	CHECK_EQ(d[0].permitted, (uint32_t)c.prm);

	/* An unknown version: EINVAL, and the header says which to use.
	 * With NULL data that is how to ask: no error then. */
	hdr.version = 0x12345678;
	CHECK_ERR(syscall(SYS_capget, &hdr, d), EINVAL);
	CHECK_EQ(hdr.version, _LINUX_CAPABILITY_VERSION_3);
	hdr.version = 0;
	CHECK_EQ(syscall(SYS_capget, &hdr, NULL), 0);
	CHECK_EQ(hdr.version, _LINUX_CAPABILITY_VERSION_3);
	CHECK_EQ(syscall(SYS_capget, &hdr, NULL), 0);
	hdr.pid = NO_PID;
	CHECK_ERR(syscall(SYS_capget, &hdr, d), ESRCH);
	hdr.pid = -1;
	CHECK_ERR(syscall(SYS_capget, &hdr, d), EINVAL);

	/* Another process's sets: a child inherits them. */
	CHECK_OK(pipe2(go, O_CLOEXEC));
	pid = check_fork();
	if (pid == 0) {
		char b;

		close(go[1]);
		if (read(go[0], &b, 1) != 0)
			_exit(100);
		_exit(0);
	}
	close(go[0]);
	memset(&child, 0x5a, sizeof(child));
	CHECK_EQ(caps_get(pid, &child), 0);
	CHECK_EQ(child.eff, c.eff);
	CHECK_EQ(child.prm, c.prm);
	CHECK_EQ(child.inh, c.inh);
	/* capset works on the caller only. */
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	hdr.pid = pid;
	memset(d, 0, sizeof(d));
	CHECK_ERR(syscall(SYS_capset, &hdr, d), EPERM);
	close(go[1]);
	CHECK_CHILD(pid, "exited 0");
}

static void test_capset(void)
{
	pid_t pid = check_fork();

	if (pid == 0) {
		struct __user_cap_header_struct hdr = { 0x12345678, 0 };
		struct __user_cap_data_struct d[2];
		struct caps c = now(), orig = c, got;
		int cap;

		memset(d, 0, sizeof(d));
		CHECK_ERR(syscall(SYS_capset, &hdr, d), EINVAL);
		/* Setting what is already there is always allowed. */
		CHECK_EQ(caps_set(&c), 0);
		/* Raising something not permitted is not. */
		for (cap = 0; cap < 41 && (c.prm & CAP(cap)); cap++)
			;
		if (cap < 41) {
			c.eff |= CAP(cap);
			c.prm |= CAP(cap);
			CHECK_ERR(caps_set(&c), EPERM);
			CHECK_EQ(caps_get(0, &got), 0);
			CHECK_EQ(got.eff, orig.eff);
			c = orig;
		}
		if (orig.eff & CAP(CAP_KILL)) {
			/* Out of the effective set and back. */
			c.eff &= ~CAP(CAP_KILL);
			CHECK_EQ(caps_set(&c), 0);
			got = now();
			CHECK_EQ(got.eff, orig.eff & ~CAP(CAP_KILL));
			CHECK_EQ(got.prm, orig.prm);
			CHECK_EQ(caps_set(&orig), 0);
			CHECK_EQ(now().eff, orig.eff);
			/* Out of the permitted set: for good. */
			c.prm &= ~CAP(CAP_KILL);
			CHECK_EQ(caps_set(&c), 0);
			CHECK_EQ(now().prm, orig.prm & ~CAP(CAP_KILL));
			CHECK_ERR(caps_set(&orig), EPERM);
		}
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
}

static void privileged_uids(void)
{
	struct caps full = now(), c;
	long r;

	/* setreuid(-1, 1000): only the effective uid leaves 0 (the saved
	 * uid follows it); the effective capabilities go, the permitted
	 * ones stay. */
	CHECK_EQ(syscall(SYS_setreuid, -1, 1000), 0);
	CHECK_IDS(0, 1000, 1000);
	c = now();
	CHECK_EQ(c.eff, 0);
	CHECK_EQ(c.prm, full.prm);
	/* Back to euid 0: the effective set is the permitted set again. */
	CHECK_EQ(syscall(SYS_setreuid, -1, 0), 0);
	CHECK_IDS(0, 0, 1000);
	CHECK_EQ(now().eff, full.prm);

	/* setfsuid: returns the old fsuid, drops the file-system caps. */
	CHECK_EQ(syscall(SYS_setfsuid, 1000), 0);
	CHECK_EQ(syscall(SYS_setfsuid, 1000), 1000);
	CHECK_EQ(syscall(SYS_setfsuid, -1), 1000); /* only asks */
	c = now();
	CHECK_EQ(c.eff, full.eff & ~FS_CAPS);
	/* Permission checks use the fsuid: not the owner, no override. */
	if (check_native)
		CHECK_ERR(open(HELLO_PATH, O_WRONLY), EACCES);
	CHECK_EQ(syscall(SYS_setfsuid, 0), 1000);
	CHECK_EQ(now().eff, full.eff);
	CHECK_IDS(0, 0, 1000);

	/* setresuid to three non-zero uids: every capability goes. */
	CHECK_EQ(syscall(SYS_setresuid, 1000, 1001, 1002), 0);
	CHECK_IDS(1000, 1001, 1002);
	c = now();
	CHECK_EQ(c.eff, 0);
	CHECK_EQ(c.prm, 0);
	/* The fsuid followed the euid. */
	CHECK_EQ(syscall(SYS_setfsuid, -1), 1001);
	/* Now the unprivileged rules: only ids already held. */
	CHECK_ERR(syscall(SYS_setuid, 0), EPERM);
	CHECK_ERR(syscall(SYS_setresuid, -1, 0, -1), EPERM);
	CHECK_ERR(syscall(SYS_setresuid, 5, -1, -1), EPERM);
	CHECK_ERR(syscall(SYS_setreuid, 0, -1), EPERM);
	/* Unprivileged setuid changes only the euid. */
	CHECK_EQ(syscall(SYS_setuid, 1002), 0);
	CHECK_IDS(1000, 1002, 1002);
	CHECK_EQ(syscall(SYS_setresuid, -1, 1000, -1), 0);
	CHECK_IDS(1000, 1000, 1002);
	CHECK_EQ(syscall(SYS_setresuid, -1, -1, -1), 0);
	CHECK_IDS(1000, 1000, 1002);
	/* setfsuid to an id not held: refused, silently. */
	r = syscall(SYS_setfsuid, 4242);
	CHECK_EQ(r, 1000);
	CHECK_EQ(syscall(SYS_setfsuid, -1), 1000);
	CHECK_ERR(syscall(SYS_setgroups, 0, NULL), EPERM);
	CHECK_ERR(syscall(SYS_setgid, 4242), EPERM);
	CHECK_EQ(now().eff, 0);
}

static void privileged_setuid(void)
{
	/* The privileged setuid sets all three. */
	CHECK_EQ(syscall(SYS_setuid, 1234), 0);
	CHECK_IDS(1234, 1234, 1234);
	CHECK_EQ(now().prm, 0);
	CHECK_ERR(syscall(SYS_setuid, 0), EPERM);
}

static void unprivileged_root(void)
{
	/* uid 0 without CAP_SETUID: no other uid. */
	CHECK_ERR(syscall(SYS_setuid, 1000), EPERM);
	CHECK_ERR(syscall(SYS_setresuid, 1000, -1, -1), EPERM);
	CHECK_ERR(syscall(SYS_setresuid, -1, -1, 1000), EPERM);
	CHECK_ERR(syscall(SYS_setreuid, -1, 1000), EPERM);
	CHECK_IDS(0, 0, 0);
	/* The ids it has, it can set. */
	CHECK_EQ(syscall(SYS_setuid, 0), 0);
	CHECK_EQ(syscall(SYS_setresuid, 0, 0, 0), 0);
	CHECK_EQ(syscall(SYS_setreuid, 0, 0), 0);
	CHECK_IDS(0, 0, 0);
	/* setfsuid to another uid: no change, the old fsuid returned. */
	CHECK_EQ(syscall(SYS_setfsuid, 1000), 0);
	CHECK_EQ(syscall(SYS_setfsuid, -1), 0);
}

static void test_uids(void)
{
	pid_t pid;

	CHECK_IDS(syscall(SYS_getuid), syscall(SYS_geteuid),
		  syscall(SYS_geteuid));
	if (!check_native)
		CHECK_IDS(0, 0, 0);
	if (syscall(SYS_getuid) != 0 || syscall(SYS_geteuid) != 0) {
		fprintf(stderr, "proc_identity.c: not root: uid checks skipped\n");
		return;
	}
	pid = check_fork();
	if (pid == 0) {
		if (check_has_cap(CAP_SETUID))
			privileged_uids();
		else
			unprivileged_root();
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	if (check_has_cap(CAP_SETUID)) {
		pid = check_fork();
		if (pid == 0) {
			privileged_setuid();
			check_child_exit();
		}
		CHECK_CHILD(pid, "exited 0");
	}
}

static void privileged_gids(void)
{
	gid_t list[4] = { 0, 0, 0, 0 }, want[3] = { 3, 1, 2 };
	static gid_t many[65537];

	CHECK_EQ(syscall(SYS_setresgid, 100, 200, 300), 0);
	CHECK_GIDS(100, 200, 300);
	CHECK_EQ(syscall(SYS_getgid), 100);
	CHECK_EQ(syscall(SYS_getegid), 200);
	CHECK_EQ(syscall(SYS_setregid, 400, -1), 0);
	/* The real gid was set: the saved gid follows the effective. */
	CHECK_GIDS(400, 200, 200);
	CHECK_EQ(syscall(SYS_setfsgid, 700), 200);
	CHECK_EQ(syscall(SYS_setfsgid, -1), 700);
	CHECK_EQ(syscall(SYS_setgid, 500), 0);
	CHECK_GIDS(500, 500, 500);
	/* setfsgid follows the egid. */
	CHECK_EQ(syscall(SYS_setfsgid, -1), 500);

	/* Supplementary groups (Linux keeps them sorted; compared as a set
	 * here). */
	CHECK_EQ(syscall(SYS_setgroups, 3, want), 0);
	CHECK_EQ(syscall(SYS_getgroups, 0, NULL), 3);
	CHECK_EQ(syscall(SYS_getgroups, 4, list), 3);
	CHECK((list[0] == 1 || list[0] == 2 || list[0] == 3) &&
	      (list[1] == 1 || list[1] == 2 || list[1] == 3) &&
	      (list[2] == 1 || list[2] == 2 || list[2] == 3) &&
	      list[0] != list[1] && list[1] != list[2] && list[0] != list[2]);
	CHECK_ERR(syscall(SYS_getgroups, 2, list), EINVAL);
	CHECK_ERR(syscall(SYS_setgroups, 65537, many), EINVAL);
	CHECK_EQ(syscall(SYS_setgroups, 0, NULL), 0);
	CHECK_EQ(syscall(SYS_getgroups, 0, NULL), 0);
}

static void unprivileged_gids(void)
{
	gid_t one = 5;

	CHECK_ERR(syscall(SYS_setgid, 500), EPERM);
	CHECK_ERR(syscall(SYS_setresgid, 100, -1, -1), EPERM);
	CHECK_ERR(syscall(SYS_setregid, -1, 100), EPERM);
	CHECK_ERR(syscall(SYS_setgroups, 1, &one), EPERM);
	CHECK_EQ(syscall(SYS_setgid, 0), 0);
	CHECK_EQ(syscall(SYS_setresgid, 0, 0, 0), 0);
	CHECK_EQ(syscall(SYS_setregid, 0, 0), 0);
	CHECK_GIDS(0, 0, 0);
	CHECK_EQ(syscall(SYS_setfsgid, 100), 0);
	CHECK_EQ(syscall(SYS_setfsgid, -1), 0);
}

static void test_gids(void)
{
	pid_t pid;

	if (syscall(SYS_getgid) != 0 || syscall(SYS_getegid) != 0)
		return;
	pid = check_fork();
	if (pid == 0) {
		if (check_has_cap(CAP_SETGID))
			privileged_gids();
		else
			unprivileged_gids();
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_capget();
	test_capset();
	test_uids();
	test_gids();
	return check_finish();
}
