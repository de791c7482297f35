/*
 * file_xattr: extended attributes, in a fresh directory under /tmp
 * (natively the host's /tmp; in the container the tmpfs the bundle mounts
 * there), and on the read-only rootfs in the container.
 *
 * Checks: user.* set, get, list and remove on a file and a directory, in
 * the path, l* and f* forms; a get or list of size 0 answers the size, a
 * short buffer ERANGE; XATTR_CREATE (EEXIST) and XATTR_REPLACE (ENODATA);
 * an absent name ENODATA; user.* on a symlink refused (EPERM to write,
 * ENODATA to read); names: empty and 256 bytes ERANGE, an unknown
 * namespace EOPNOTSUPP; a value over 64 KiB E2BIG, 3000 bytes stored;
 * trusted.* only with CAP_SYS_ADMIN (else EPERM to write, ENODATA to read,
 * and not listed); security.* written only with CAP_SYS_ADMIN; bad flags
 * EINVAL; a pipe keeps no user.* (ENODATA to read, EPERM to write, as for
 * any file but a regular one or a directory) and an O_PATH descriptor EBADF; in the
 * container, EROFS on the read-only rootfs.
 */
// covers: setxattr lsetxattr fsetxattr getxattr lgetxattr fgetxattr listxattr llistxattr flistxattr removexattr lremovexattr fremovexattr
// places: bind root
#include "check.h"

#include <limits.h>
#include <sys/stat.h>
#include <sys/xattr.h>

static char scratch[64];

static const char *P(const char *name)
{
	static char bufs[4][PATH_MAX];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, PATH_MAX, "%s/%s", scratch, name);
	return b;
}

static int has_cap(int cap)
{
	unsigned long long eff = strtoull(proc_status("CapEff"), NULL, 16);

	return (eff >> cap) & 1;
}

/* listed reports whether name is in the NUL-separated list of n bytes. */
static int listed(const char *list, ssize_t n, const char *name)
{
	for (ssize_t i = 0; i < n; i += strlen(list + i) + 1)
		if (strcmp(list + i, name) == 0)
			return 1;
	return 0;
}

static void test_user(void)
{
	const char *f = P("file");
	char buf[256];
	int fd = CHECK_OK(open(f, O_CREAT | O_RDWR, 0644));

	CHECK_OK(setxattr(f, "user.colour", "blue", 4, 0));
	CHECK_EQ(getxattr(f, "user.colour", NULL, 0), 4);
	CHECK_EQ(getxattr(f, "user.colour", buf, sizeof(buf)), 4);
	CHECK_MEM(buf, "blue", 4);
	CHECK_ERR(getxattr(f, "user.colour", buf, 3), ERANGE);
	CHECK_ERR(getxattr(f, "user.absent", buf, sizeof(buf)), ENODATA);
	CHECK_ERR(setxattr(f, "user.colour", "red", 3, XATTR_CREATE), EEXIST);
	CHECK_ERR(setxattr(f, "user.size", "1", 1, XATTR_REPLACE), ENODATA);
	CHECK_OK(setxattr(f, "user.colour", "red", 3, XATTR_REPLACE));
	CHECK_EQ(lgetxattr(f, "user.colour", buf, sizeof(buf)), 3);
	CHECK_MEM(buf, "red", 3);
	CHECK_OK(fsetxattr(fd, "user.empty", "", 0, XATTR_CREATE));
	CHECK_EQ(fgetxattr(fd, "user.empty", buf, sizeof(buf)), 0);
	CHECK_ERR(setxattr(f, "user.x", "v", 1, 4), EINVAL);

	ssize_t n = listxattr(f, NULL, 0);
	CHECK(n >= (ssize_t)(sizeof("user.colour") + sizeof("user.empty")));
	char list[1024];
	CHECK_ERR(listxattr(f, list, 1), ERANGE);
	n = CHECK_OK(flistxattr(fd, list, sizeof(list)));
	CHECK(listed(list, n, "user.colour"));
	CHECK(listed(list, n, "user.empty"));
	CHECK_EQ(llistxattr(f, list, sizeof(list)), n);

	CHECK_OK(removexattr(f, "user.colour"));
	CHECK_ERR(removexattr(f, "user.colour"), ENODATA);
	CHECK_OK(fremovexattr(fd, "user.empty"));
	CHECK_ERR(lremovexattr(f, "user.empty"), ENODATA);
	n = CHECK_OK(listxattr(f, list, sizeof(list)));
	CHECK(!listed(list, n, "user.colour"));

	/* Directories keep them too. */
	CHECK_OK(mkdir(P("dir"), 0755));
	CHECK_OK(setxattr(P("dir"), "user.d", "1", 1, 0));
	CHECK_EQ(getxattr(P("dir"), "user.d", buf, sizeof(buf)), 1);
	close(fd);
}

static void test_limits(void)
{
	const char *f = P("file");
	char name[300];
	static char big[65537];

	CHECK_ERR(setxattr(f, "", "v", 1, 0), ERANGE);
	memset(name, 'n', sizeof(name));
	memcpy(name, "user.", 5);
	name[256] = 0;
	CHECK_ERR(setxattr(f, name, "v", 1, 0), ERANGE);
	CHECK_ERR(getxattr(f, name, NULL, 0), ERANGE);
	name[255] = 0;
	CHECK_OK(setxattr(f, name, "v", 1, 0));
	CHECK_ERR(setxattr(f, "unknown.ns", "v", 1, 0), EOPNOTSUPP);
	CHECK_ERR(getxattr(f, "unknown.ns", NULL, 0), EOPNOTSUPP);
	CHECK_ERR(setxattr(f, "user.big", big, sizeof(big), 0), E2BIG);
	/* What fits in any file system's attribute space (an ext4 block),
	 * on a file of its own. */
	close(CHECK_OK(open(P("big"), O_CREAT | O_WRONLY, 0644)));
	CHECK_OK(setxattr(P("big"), "user.big", big, 3000, 0));
	CHECK_EQ(getxattr(P("big"), "user.big", NULL, 0), 3000);
}

static void test_symlink_and_others(void)
{
	char buf[16];
	int p[2];

	CHECK_OK(symlink("file", P("link")));
	CHECK_ERR(lsetxattr(P("link"), "user.l", "v", 1, 0), EPERM);
	CHECK_ERR(lgetxattr(P("link"), "user.l", buf, sizeof(buf)), ENODATA);
	/* Through the link, the file's. */
	CHECK_OK(setxattr(P("link"), "user.via", "v", 1, 0));
	CHECK_EQ(getxattr(P("file"), "user.via", buf, sizeof(buf)), 1);

	CHECK_OK(pipe(p));
	CHECK_ERR(fgetxattr(p[0], "user.x", buf, sizeof(buf)), ENODATA);
	CHECK_ERR(fsetxattr(p[1], "user.x", "v", 1, 0), EPERM);
	close(p[0]);
	close(p[1]);
	int opath = CHECK_OK(open(P("file"), O_PATH));
	CHECK_ERR(fgetxattr(opath, "user.via", buf, sizeof(buf)), EBADF);
	close(opath);
}

static void test_privileged(void)
{
	const char *f = P("file");
	char buf[16], list[1024];
	ssize_t n;

	if (has_cap(CAP_SYS_ADMIN)) {
		CHECK_OK(setxattr(f, "trusted.t", "v", 1, 0));
		CHECK_EQ(getxattr(f, "trusted.t", buf, sizeof(buf)), 1);
		n = CHECK_OK(listxattr(f, list, sizeof(list)));
		CHECK(listed(list, n, "trusted.t"));
		CHECK_OK(setxattr(f, "security.s", "v", 1, 0));
		CHECK_OK(removexattr(f, "trusted.t"));
	} else {
		CHECK_ERR(setxattr(f, "trusted.t", "v", 1, 0), EPERM);
		CHECK_ERR(getxattr(f, "trusted.t", buf, sizeof(buf)), ENODATA);
		CHECK_ERR(setxattr(f, "security.s", "v", 1, 0), EPERM);
	}
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	strcpy(scratch, "/tmp/moat-xattr-XXXXXX");
	if (!mkdtemp(scratch)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	test_user();
	test_limits();
	test_symlink_and_others();
	test_privileged();
	if (check_ro_root())
		CHECK_ERR(setxattr(HELLO_PATH, "user.ro", "v", 1, 0), EROFS);
	return check_finish();
}
