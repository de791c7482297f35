/*
 * fs_mountns: mount namespaces, mount and umount2.
 *
 * Tools that sandbox themselves (unshare -m, bubblewrap) give a process a
 * private copy of the mount tree and mount tmpfs, proc and binds in it.
 * Checks: without CAP_SYS_ADMIN (the container) mount, umount2 and
 * unshare(CLONE_NEWNS) are EPERM, and umount2 of an unknown flag EINVAL.
 * With it (natively, in a child of its own): after unshare(CLONE_NEWNS)
 * and making / private, a tmpfs mounted on /tmp takes files, shows in
 * /proc/self/mountinfo with its size, and is neither seen nor listed by
 * the parent; a bind of it, remounted read-only, refuses a create (EROFS)
 * while the original takes one; umount2 of a mount with a mount on it is
 * EBUSY, of a directory that is no mount EINVAL, and after it what the
 * mount hid shows again; an unknown type is ENODEV, an unknown tmpfs
 * option EINVAL, a missing target ENOENT. pivot_root as bubblewrap
 * makes it (--ro-bind / /): a tmpfs becomes the root with the old one
 * below it (EBUSY for a put_old on the root's mount), then a read-only
 * bind of the old root does, stacked over "." and unmounted from below:
 * the old tree shows, read-only (EROFS).
 */
// covers: mount umount2 pivot_root
#include "check.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>

static int has_line(const char *path, const char *part)
{
	static char buf[65536];
	long n, len = 0;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return 0;
	while (len < (long)sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	return strstr(buf, part) != NULL;
}

static void check_unprivileged(void)
{
	CHECK_ERR(mount("t", "/tmp", "tmpfs", 0, NULL), EPERM);
	CHECK_ERR(umount2("/tmp", 0), EPERM);
	CHECK_ERR(unshare(CLONE_NEWNS), EPERM);
}

static void check_privileged(void)
{
	int to_parent[2], to_child[2];
	char c;
	pid_t pid;

	CHECK_OK(pipe(to_parent));
	CHECK_OK(pipe(to_child));
	pid = check_fork();
	if (pid == 0) {
		int fd;

		CHECK_OK(unshare(CLONE_NEWNS));
		CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
		CHECK_OK(mount("conf-mnt", "/tmp", "tmpfs", MS_NOSUID, "size=1m"));
		fd = CHECK_OK(open("/tmp/made-in-ns", O_CREAT | O_WRONLY, 0644));
		close(fd);
		CHECK(has_line("/proc/self/mountinfo", " /tmp rw,nosuid"));
		CHECK(has_line("/proc/self/mountinfo", "tmpfs conf-mnt rw,size=1024k"));
		CHECK_OK(mkdir("/tmp/sub", 0755));
		CHECK_OK(mkdir("/tmp/ro", 0755));
		CHECK_OK(mount("/tmp/sub", "/tmp/ro", NULL, MS_BIND, NULL));
		CHECK_OK(mount(NULL, "/tmp/ro", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL));
		CHECK_ERR(open("/tmp/ro/f", O_CREAT | O_WRONLY, 0644), EROFS);
		fd = CHECK_OK(open("/tmp/sub/f", O_CREAT | O_WRONLY, 0644));
		close(fd);
		CHECK_OK(access("/tmp/ro/f", F_OK));
		CHECK_ERR(umount2("/tmp", 0), EBUSY);
		CHECK_ERR(umount2("/tmp/sub", 0), EINVAL);
		CHECK_ERR(umount2("/tmp", 0x100), EINVAL);
		CHECK_ERR(mount("x", "/tmp/sub", "conf-nosuchfs", 0, NULL), ENODEV);
		CHECK_ERR(mount("x", "/tmp/sub", "tmpfs", 0, "conf-bogus=1"), EINVAL);
		CHECK_ERR(mount("x", "/tmp/nowhere", "tmpfs", 0, NULL), ENOENT);
		CHECK_OK(umount2("/tmp/ro", 0));
		CHECK_EQ(write(to_parent[1], "x", 1), 1);
		CHECK_EQ(read(to_child[0], &c, 1), 1);
		CHECK_OK(umount2("/tmp", 0));
		CHECK_ERR(access("/tmp/made-in-ns", F_OK), ENOENT);
		check_child_exit();
	}
	CHECK_EQ(read(to_parent[0], &c, 1), 1);
	CHECK_ERR(access("/tmp/made-in-ns", F_OK), ENOENT);
	CHECK(!has_line("/proc/self/mountinfo", "conf-mnt"));
	CHECK_EQ(write(to_child[1], "x", 1), 1);
	CHECK_CHILD(pid, "exited 0");
}

/* pivot_child follows bwrap --ro-bind / / in a child of its own. */
static void pivot_child(void)
{
	int old;

	CHECK_OK(unshare(CLONE_NEWNS));
	CHECK_OK(mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL));
	CHECK_OK(mount("conf-pivot", "/tmp", "tmpfs", MS_NODEV | MS_NOSUID, NULL));
	CHECK_OK(mkdir("/tmp/base", 0755));
	CHECK_OK(mount("tmpfs", "/tmp/base", "tmpfs", MS_NODEV | MS_NOSUID, NULL));
	CHECK_OK(chdir("/tmp/base"));
	CHECK_OK(mkdir("newroot", 0755));
	CHECK_OK(mount("newroot", "newroot", NULL, MS_MGC_VAL | MS_SILENT | MS_BIND | MS_REC, NULL));
	CHECK_OK(mkdir("oldroot", 0755));
	CHECK_ERR(syscall(SYS_pivot_root, "/tmp/base", "/"), EBUSY);
	CHECK_OK(syscall(SYS_pivot_root, "/tmp/base", "oldroot"));
	CHECK_OK(chdir("/"));
	CHECK_OK(access("/oldroot/bin", F_OK));
	CHECK_OK(mount("/oldroot/", "/newroot/", NULL, MS_SILENT | MS_BIND | MS_REC, NULL));
	CHECK_OK(mount("none", "/newroot/", NULL, MS_SILENT | MS_BIND | MS_REMOUNT | MS_RDONLY, NULL));
	CHECK_OK(mount("oldroot", "oldroot", NULL, MS_SILENT | MS_REC | MS_PRIVATE, NULL));
	CHECK_OK(umount2("oldroot", MNT_DETACH));
	old = CHECK_OK(open("/", O_DIRECTORY | O_RDONLY));
	CHECK_OK(chdir("/newroot"));
	CHECK_OK(syscall(SYS_pivot_root, ".", "."));
	CHECK_OK(fchdir(old));
	CHECK_OK(umount2(".", MNT_DETACH));
	CHECK_OK(chdir("/"));
	CHECK_ERR(access("/newroot", F_OK), ENOENT);
	CHECK_ERR(access("/oldroot", F_OK), ENOENT);
	CHECK_ERR(mkdir("/conf-pivot-made", 0755), EROFS);
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	CHECK_ERR(umount2("/tmp", 0x100), EINVAL);
	if (check_has_cap(CAP_SYS_ADMIN)) {
		pid_t pid;

		check_privileged();
		pid = check_fork();
		if (pid == 0) {
			pivot_child();
			check_child_exit();
		}
		CHECK_CHILD(pid, "exited 0");
	} else {
		check_unprivileged();
		CHECK_ERR(syscall(SYS_pivot_root, "/tmp", "/tmp"), EPERM);
	}
	return check_finish();
}
