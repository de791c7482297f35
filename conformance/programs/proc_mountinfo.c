/*
 * proc_mountinfo: /proc/self/mountinfo and /proc/self/mounts as tools parse
 * them (findmnt, libmount, psutil, container engines).
 *
 * Checks: every mountinfo line is "id parent major:minor root point options
 * [optional fields] - type source superoptions", with unique ids, a root
 * and point that are absolute paths, options and super options that start
 * with "rw" or "ro"; every parent id is listed but that of the root mount
 * ("/"); the major:minor of the topmost mount at each point is the st_dev
 * of the point (btrfs, whose subvolumes have devices of their own, aside);
 * /proc/self/mounts lists as many mounts, each as six fields ending "0 0",
 * and /proc/mounts is the same text. In the sandbox the config's mounts are
 * there: / with a parent outside the list, /proc of type proc with
 * relatime among its options, and /tmp a tmpfs with nosuid and nodev and
 * size=65536k among its super options, as Linux's tmpfs shows its size.
 */
// covers: openat read newfstatat
#include "check.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#define MAX_MOUNTS 512

struct mount {
	long id, parent;
	unsigned major, minor;
	char root[512], point[512], opts[256], type[64], source[256], super[512];
};

static struct mount mounts[MAX_MOUNTS];
static int nmounts;

static long read_file(const char *path, char *buf, size_t size)
{
	long len = 0, r;
	int fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);

	if (fd < 0)
		return -1;
	while (len < (long)size - 1 && (r = read(fd, buf + len, size - 1 - len)) > 0)
		len += r;
	close(fd);
	buf[len] = 0;
	return len;
}

/* unescape turns Linux's \ooo escapes back into bytes, in place. */
static void unescape(char *s)
{
	char *out = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] && s[3]) {
			*out++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*out++ = *s;
		}
	}
	*out = 0;
}

static int rw_or_ro(const char *opts)
{
	return (strncmp(opts, "rw", 2) == 0 || strncmp(opts, "ro", 2) == 0) &&
	       (opts[2] == 0 || opts[2] == ',');
}

static void parse_mountinfo(char *text)
{
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line && nmounts < MAX_MOUNTS;
	     line = strtok_r(NULL, "\n", &save)) {
		struct mount *m = &mounts[nmounts];
		char *sep = strstr(line, " - ");
		int n;

		n = sscanf(line, "%ld %ld %u:%u %511s %511s %255s", &m->id, &m->parent, &m->major,
			   &m->minor, m->root, m->point, m->opts);
		CHECK_EQ(n, 7);
		CHECK(sep != NULL);
		if (n != 7 || !sep)
			continue;
		n = sscanf(sep + 3, "%63s %255s %511s", m->type, m->source, m->super);
		CHECK_EQ(n, 3);
		unescape(m->root);
		unescape(m->point);
		/* A namespace file bound somewhere (ip netns add) has the
		 * namespace as its root, "net:[4026531840]". */
		CHECK(m->root[0] == '/' || strcmp(m->type, "nsfs") == 0);
		CHECK(m->point[0] == '/');
		CHECK(rw_or_ro(m->opts));
		CHECK(rw_or_ro(m->super));
		nmounts++;
	}
}

static struct mount *topmost(const char *point)
{
	struct mount *found = NULL;
	int i;

	/* Mounts are listed parents first: the last at a point hides the others. */
	for (i = 0; i < nmounts; i++)
		if (strcmp(mounts[i].point, point) == 0)
			found = &mounts[i];
	return found;
}

static int listed(long id)
{
	int i;

	for (i = 0; i < nmounts; i++)
		if (mounts[i].id == id)
			return 1;
	return 0;
}

static int has_opt(const char *opts, const char *opt)
{
	size_t n = strlen(opt);
	const char *p = opts;

	while ((p = strstr(p, opt)) != NULL) {
		if ((p == opts || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
			return 1;
		p += n;
	}
	return 0;
}

static void test_mountinfo(void)
{
	static char text[1 << 17];
	int i, j;

	CHECK(read_file("/proc/self/mountinfo", text, sizeof(text)) > 0);
	parse_mountinfo(text);
	CHECK(nmounts > 0);
	for (i = 0; i < nmounts; i++) {
		struct stat st;

		for (j = 0; j < i; j++)
			if (mounts[j].id == mounts[i].id)
				check_fail(__FILE__, __LINE__, "mount id %ld listed twice", mounts[i].id);
		if (!listed(mounts[i].parent) && strcmp(mounts[i].point, "/") != 0)
			check_fail(__FILE__, __LINE__, "%s: parent %ld not listed", mounts[i].point,
				   mounts[i].parent);
		if (topmost(mounts[i].point) != &mounts[i] || strcmp(mounts[i].type, "btrfs") == 0)
			continue;
		if (stat(mounts[i].point, &st) != 0)
			continue; /* a point this process cannot reach */
		if (major(st.st_dev) != mounts[i].major || minor(st.st_dev) != mounts[i].minor)
			check_fail(__FILE__, __LINE__, "%s: mountinfo says %u:%u, stat %u:%u",
				   mounts[i].point, mounts[i].major, mounts[i].minor, major(st.st_dev),
				   minor(st.st_dev));
	}
}

static void test_mounts(void)
{
	static char text[1 << 17], link[1 << 17];
	char *line, *save = NULL;
	int lines = 0;

	CHECK(read_file("/proc/self/mounts", text, sizeof(text)) > 0);
	CHECK(read_file("/proc/mounts", link, sizeof(link)) > 0);
	CHECK_STR(link, text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char src[512], point[512], type[64], opts[512];
		int a = -1, b = -1;

		CHECK_EQ(sscanf(line, "%511s %511s %63s %511s %d %d", src, point, type, opts, &a, &b), 6);
		CHECK(a == 0 && b == 0);
		CHECK(rw_or_ro(opts));
		lines++;
	}
	CHECK_EQ(lines, nmounts);
}

static void test_sandbox_mounts(void)
{
	struct mount *root = topmost("/"), *proc = topmost("/proc"), *tmp = topmost("/tmp");

	CHECK(root != NULL);
	if (root)
		CHECK(!listed(root->parent));
	CHECK(proc != NULL);
	if (proc) {
		CHECK_STR(proc->type, "proc");
		CHECK(has_opt(proc->opts, "relatime"));
	}
	CHECK(tmp != NULL);
	if (tmp) {
		CHECK_STR(tmp->type, "tmpfs");
		CHECK(has_opt(tmp->opts, "nosuid"));
		CHECK(has_opt(tmp->opts, "nodev"));
		CHECK(has_opt(tmp->super, "size=65536k"));
	}
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_mountinfo();
	test_mounts();
	if (!check_native)
		test_sandbox_mounts();
	return check_finish();
}
