/*
 * fs_inotify: inotify, as editors, build watchers, language servers and
 * agent platforms use it to follow a workspace.
 *
 * Checks, in a fresh directory under /tmp: inotify_init1's flags (EINVAL
 * for others); add_watch's errors in Linux's order (EINVAL for unknown bits
 * or none before EBADF, EINVAL for a file that is not an inotify instance
 * and for IN_MASK_ADD with IN_MASK_CREATE, ENOENT, ENOTDIR for IN_ONLYDIR on
 * a file), the same wd for a second watch of a file (through a hard link
 * too), EEXIST for IN_MASK_CREATE then, IN_MASK_ADD; the events of creating,
 * opening, writing (two writes merge), reading, closing, truncating, chmod,
 * link, rename (IN_MOVED_FROM and IN_MOVED_TO with one cookie, IN_MOVE_SELF,
 * a replaced file's IN_ATTRIB, IN_DELETE_SELF and IN_IGNORED), unlink
 * (IN_DELETE_SELF before the directory's IN_DELETE, or at the last close of
 * an open file), mkdir, listing and rmdir of directories (IN_ISDIR),
 * O_TRUNC (IN_OPEN then IN_MODIFY), O_PATH (nothing), IN_EXCL_UNLINK,
 * IN_ONESHOT, IN_DONT_FOLLOW on a symlink; the record format (names padded
 * to 16 bytes with NULs), read(2) with a buffer too small for the next event
 * (EINVAL) and of part of the queue, FIONREAD, EAGAIN with IN_NONBLOCK,
 * poll readiness, a blocking read woken by an event, rm_watch's IN_IGNORED
 * and EINVAL for an unknown wd.
 */
// covers: inotify_init inotify_init1 inotify_add_watch inotify_rm_watch
// places: bind root
#include "check.h"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

static char dir[64];
static int in;

static const char *path(const char *name)
{
	static char buf[4][128];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

static const struct {
	unsigned bit;
	const char *name;
} bits[] = {
	{ IN_ACCESS, "ACCESS" },	 { IN_MODIFY, "MODIFY" },
	{ IN_ATTRIB, "ATTRIB" },	 { IN_CLOSE_WRITE, "CLOSE_WRITE" },
	{ IN_CLOSE_NOWRITE, "CLOSE_NOWRITE" }, { IN_OPEN, "OPEN" },
	{ IN_MOVED_FROM, "MOVED_FROM" }, { IN_MOVED_TO, "MOVED_TO" },
	{ IN_CREATE, "CREATE" },	 { IN_DELETE, "DELETE" },
	{ IN_DELETE_SELF, "DELETE_SELF" }, { IN_MOVE_SELF, "MOVE_SELF" },
	{ IN_IGNORED, "IGNORED" },	 { IN_Q_OVERFLOW, "Q_OVERFLOW" },
	{ IN_ISDIR, "ISDIR" },
};

/*
 * events reads what the instance holds and describes it, one event per
 * line as "wd MASK|MASK name"; a MOVED_TO whose cookie is not the last
 * MOVED_FROM's, a cookie on another event, a name not padded with NULs to a
 * multiple of 16 are written into the line, so that the comparison fails.
 */
static const char *events(void)
{
	static char out[4096];
	char buf[4096];
	unsigned cookie = 0;
	long n;
	size_t len = 0;
	char *p;

	out[0] = '\0';
	n = read(in, buf, sizeof(buf));
	if (n < 0) {
		snprintf(out, sizeof(out), "(read: %s)", check_errname(errno));
		return out;
	}
	for (p = buf; p < buf + n;) {
		struct inotify_event *e = (struct inotify_event *)p;
		const char *sep = "";
		size_t k;

		len += snprintf(out + len, sizeof(out) - len, "%s%d ",
				len ? "\n" : "", e->wd);
		for (k = 0; k < sizeof(bits) / sizeof(bits[0]); k++)
			if (e->mask & bits[k].bit) {
				len += snprintf(out + len, sizeof(out) - len, "%s%s",
						sep, bits[k].name);
				sep = "|";
			}
		if (e->len) {
			size_t l = strnlen(e->name, e->len);

			len += snprintf(out + len, sizeof(out) - len, " %s", e->name);
			if (e->len % 16 || l == e->len || !all_zero(e->name + l, e->len - l))
				len += snprintf(out + len, sizeof(out) - len, " (bad padding)");
		}
		if (e->mask & IN_MOVED_FROM)
			cookie = e->cookie;
		else if (e->mask & IN_MOVED_TO) {
			if (!e->cookie || e->cookie != cookie)
				len += snprintf(out + len, sizeof(out) - len, " (cookie)");
		} else if (e->cookie)
			len += snprintf(out + len, sizeof(out) - len, " (cookie)");
		p += sizeof(*e) + e->len;
	}
	return out;
}

static int nread(void)
{
	int n = -1;

	CHECK_OK(ioctl(in, FIONREAD, &n));
	return n;
}

static void test_errors(void)
{
	int fd = CHECK_OK(open(path("f"), O_CREAT | O_RDWR, 0644));

	CHECK_ERR(inotify_init1(O_RDWR), EINVAL);
	CHECK_ERR(inotify_add_watch(in, dir, 0), EINVAL);
	CHECK_ERR(inotify_add_watch(999, dir, IN_MODIFY | 0x08000000), EINVAL);
	CHECK_ERR(inotify_add_watch(999, dir, IN_MODIFY), EBADF);
	CHECK_ERR(inotify_add_watch(fd, dir, IN_MODIFY), EINVAL);
	CHECK_ERR(inotify_add_watch(in, dir, IN_MODIFY | IN_MASK_ADD | IN_MASK_CREATE), EINVAL);
	CHECK_ERR(inotify_add_watch(in, path("none"), IN_MODIFY), ENOENT);
	CHECK_ERR(inotify_add_watch(in, path("f"), IN_MODIFY | IN_ONLYDIR), ENOTDIR);
	CHECK_ERR(inotify_rm_watch(in, 12345), EINVAL);
	CHECK_ERR(inotify_rm_watch(fd, 1), EINVAL);
	CHECK_ERR(read(in, (char[64]){ 0 }, 64), EAGAIN);
	close(fd);
	CHECK_OK(unlink(path("f")));
}

static void test_files(void)
{
	int wd, wf, wg, fd;
	char c;

	wd = CHECK_OK(inotify_add_watch(in, dir, IN_ALL_EVENTS));
	CHECK_EQ(wd, 1);
	fd = CHECK_OK(open(path("f"), O_CREAT | O_WRONLY, 0644));
	CHECK_STR(events(), "1 CREATE f\n1 OPEN f");
	wf = CHECK_OK(inotify_add_watch(in, path("f"), IN_ALL_EVENTS));
	CHECK_EQ(wf, 2);
	CHECK_EQ(write(fd, "ab", 2), 2);
	CHECK_STR(events(), "1 MODIFY f\n2 MODIFY");
	CHECK_EQ(write(fd, "c", 1), 1);
	CHECK_EQ(write(fd, "d", 1), 1); /* the dir's event merges with nothing,
					   the file's with nothing either */
	CHECK_EQ(nread(), 4 * 32 - 2 * 16);
	CHECK_ERR(read(in, (char[31]){ 0 }, 31), EINVAL);
	CHECK_STR(events(), "1 MODIFY f\n2 MODIFY\n1 MODIFY f\n2 MODIFY");
	close(fd);
	CHECK_STR(events(), "1 CLOSE_WRITE f\n2 CLOSE_WRITE");

	/* With only the directory watching, two writes are one event. */
	CHECK_OK(inotify_rm_watch(in, wf));
	CHECK_STR(events(), "2 IGNORED");
	fd = CHECK_OK(open(path("f"), O_RDWR | O_TRUNC));
	CHECK_EQ(write(fd, "x", 1), 1);
	CHECK_EQ(write(fd, "y", 1), 1);
	CHECK_EQ(pread(fd, &c, 1, 0), 1);
	CHECK_EQ(pread(fd, &c, 1, 5), 0); /* nothing read: no event */
	CHECK_OK(ftruncate(fd, 100));
	close(fd);
	CHECK_STR(events(), "1 OPEN f\n1 MODIFY f\n1 ACCESS f\n1 MODIFY f\n1 CLOSE_WRITE f");
	fd = CHECK_OK(open(path("f"), O_PATH));
	close(fd);
	CHECK_OK(chmod(path("f"), 0600));
	CHECK_STR(events(), "1 ATTRIB f");

	/* A second name is the same inode: the same watch. */
	wf = CHECK_OK(inotify_add_watch(in, path("f"), IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF));
	CHECK_OK(link(path("f"), path("g")));
	CHECK_STR(events(), "3 ATTRIB\n1 CREATE g");
	CHECK_EQ(inotify_add_watch(in, path("g"), IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF), wf);
	CHECK_ERR(inotify_add_watch(in, path("g"), IN_MODIFY | IN_MASK_CREATE), EEXIST);
	CHECK_EQ(inotify_add_watch(in, path("g"), IN_MODIFY | IN_MASK_ADD), wf);
	CHECK_OK(truncate(path("g"), 1));
	CHECK_STR(events(), "1 MODIFY g\n3 MODIFY");

	/* Renames. */
	CHECK_OK(rename(path("g"), path("h")));
	CHECK_STR(events(), "1 MOVED_FROM g\n1 MOVED_TO h\n3 MOVE_SELF");
	fd = CHECK_OK(open(path("x"), O_CREAT | O_WRONLY, 0644));
	close(fd);
	wg = CHECK_OK(inotify_add_watch(in, path("x"), IN_ALL_EVENTS));
	events();
	CHECK_OK(rename(path("h"), path("x")));
	{
		char want[256];

		snprintf(want, sizeof(want),
			 "1 MOVED_FROM h\n1 MOVED_TO x\n%d ATTRIB\n3 MOVE_SELF\n%d DELETE_SELF\n%d IGNORED",
			 wg, wg, wg);
		CHECK_STR(events(), want);
	}

	/* Unlink: of a name of two, of the last name of a closed file, of an
	 * open one. */
	CHECK_OK(link(path("f"), path("g")));
	events();
	CHECK_OK(unlink(path("g")));
	CHECK_STR(events(), "3 ATTRIB\n1 DELETE g");
	CHECK_OK(unlink(path("x")));
	CHECK_STR(events(), "3 ATTRIB\n1 DELETE x");
	fd = CHECK_OK(open(path("f"), O_RDONLY));
	events();
	CHECK_OK(unlink(path("f")));
	CHECK_STR(events(), "3 ATTRIB\n1 DELETE f");
	close(fd);
	CHECK_STR(events(), "1 CLOSE_NOWRITE f\n3 DELETE_SELF\n3 IGNORED");
	CHECK_OK(inotify_rm_watch(in, wd));
	CHECK_STR(events(), "1 IGNORED");
}

static void test_dirs(void)
{
	int wd, ws, fd;
	char want[256];

	CHECK_OK(mkdir(path("sub"), 0755));
	wd = CHECK_OK(inotify_add_watch(in, dir, IN_ALL_EVENTS | IN_ONLYDIR));
	ws = CHECK_OK(inotify_add_watch(in, path("sub"), IN_ALL_EVENTS));
	fd = CHECK_OK(open(path("sub"), O_RDONLY | O_DIRECTORY));
	CHECK_OK(syscall(SYS_getdents64, fd, (char[4096]){ 0 }, 4096));
	close(fd);
	snprintf(want, sizeof(want),
		 "%d OPEN|ISDIR sub\n%d OPEN|ISDIR\n%d ACCESS|ISDIR sub\n%d ACCESS|ISDIR\n"
		 "%d CLOSE_NOWRITE|ISDIR sub\n%d CLOSE_NOWRITE|ISDIR",
		 wd, ws, wd, ws, wd, ws);
	CHECK_STR(events(), want);
	CHECK_OK(mkdir(path("sub/inner"), 0755));
	CHECK_OK(rename(path("sub/inner"), path("moved")));
	snprintf(want, sizeof(want), "%d CREATE|ISDIR inner\n%d MOVED_FROM|ISDIR inner\n%d MOVED_TO|ISDIR moved",
		 ws, ws, wd);
	CHECK_STR(events(), want);
	CHECK_OK(rmdir(path("moved")));
	CHECK_OK(rmdir(path("sub")));
	snprintf(want, sizeof(want), "%d DELETE|ISDIR moved\n%d DELETE_SELF\n%d IGNORED\n%d DELETE|ISDIR sub",
		 wd, ws, ws, wd);
	CHECK_STR(events(), want);
	CHECK_OK(inotify_rm_watch(in, wd));
	events();
}

static void test_flags(void)
{
	int wd, wf, fd;
	char want[256];

	/* IN_EXCL_UNLINK: no events of a file once unlinked. */
	fd = CHECK_OK(open(path("f"), O_CREAT | O_RDWR, 0644));
	wd = CHECK_OK(inotify_add_watch(in, dir, IN_ALL_EVENTS | IN_EXCL_UNLINK));
	CHECK_OK(unlink(path("f")));
	CHECK_EQ(write(fd, "x", 1), 1);
	close(fd);
	snprintf(want, sizeof(want), "%d DELETE f", wd);
	CHECK_STR(events(), want);

	/* IN_ONESHOT: one event, then IN_IGNORED. */
	fd = CHECK_OK(open(path("g"), O_CREAT | O_RDWR, 0644));
	wf = CHECK_OK(inotify_add_watch(in, path("g"), IN_MODIFY | IN_ONESHOT));
	CHECK_OK(inotify_rm_watch(in, wd));
	events();
	CHECK_EQ(write(fd, "x", 1), 1);
	CHECK_EQ(write(fd, "x", 1), 1);
	snprintf(want, sizeof(want), "%d MODIFY\n%d IGNORED", wf, wf);
	CHECK_STR(events(), want);
	CHECK_ERR(inotify_rm_watch(in, wf), EINVAL);
	close(fd);

	/* IN_DONT_FOLLOW watches a symlink itself. */
	CHECK_OK(symlink("g", path("l")));
	wd = CHECK_OK(inotify_add_watch(in, path("l"), IN_ATTRIB | IN_DONT_FOLLOW));
	wf = CHECK_OK(inotify_add_watch(in, path("l"), IN_ATTRIB));
	CHECK(wd != wf);
	CHECK_OK(chmod(path("l"), 0644));
	snprintf(want, sizeof(want), "%d ATTRIB", wf);
	CHECK_STR(events(), want);
	CHECK_OK(unlink(path("l")));
	/* The watch did not ask for IN_DELETE_SELF: only IN_IGNORED. */
	snprintf(want, sizeof(want), "%d ATTRIB\n%d IGNORED", wd, wd);
	CHECK_STR(events(), want);
	CHECK_OK(unlink(path("g")));
	events();
}

static void test_wait(void)
{
	struct pollfd p;
	int blocking = CHECK_OK(inotify_init());
	pid_t pid;
	char buf[64];

	CHECK_OK(inotify_add_watch(blocking, dir, IN_CREATE));
	p.fd = blocking;
	p.events = POLLIN;
	CHECK_EQ(poll(&p, 1, 0), 0);
	pid = check_fork();
	if (pid == 0) {
		check_sleep_ms(50);
		close(CHECK_OK(open(path("late"), O_CREAT | O_WRONLY, 0644)));
		check_child_exit();
	}
	CHECK_EQ(read(blocking, buf, sizeof(buf)), 32);
	CHECK_STR(((struct inotify_event *)buf)->name, "late");
	CHECK_CHILD(pid, "exited 0");
	close(CHECK_OK(open(path("later"), O_CREAT | O_WRONLY, 0644)));
	CHECK_EQ(poll(&p, 1, 0), 1);
	CHECK_EQ(p.revents, POLLIN);
	close(blocking);
	unlink(path("late"));
	unlink(path("later"));
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	strcpy(dir, "/tmp/moat-inotify-XXXXXX");
	if (!mkdtemp(dir)) {
		check_fail(__FILE__, __LINE__, "mkdtemp: %s", check_errname(errno));
		return check_finish();
	}
	in = CHECK_OK(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
	CHECK_EQ(fcntl(in, F_GETFD), FD_CLOEXEC);
	CHECK_EQ(fcntl(in, F_GETFL) & (O_ACCMODE | O_NONBLOCK), O_RDONLY | O_NONBLOCK);

	test_errors();
	test_files();
	test_dirs();
	test_flags();
	test_wait();

	close(in);
	rmdir(dir);
	return check_finish();
}
