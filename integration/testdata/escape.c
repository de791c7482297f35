/*
 * escape: a container that tries to get out, run in moat and in runc
 * (integration/escape_test.go). Never run it on the host: as root there
 * its calls would succeed.
 *
 * Each case prints one line, "case: result". A result is "held" when the
 * attempt did no harm, "BROKEN: why" when the container reached something
 * of the host, or, for a call, what it answered ("EPERM", "ok"): moat must
 * refuse each; runc, which the test runs without a seccomp profile, shows
 * which of them the host kernel would have let through.
 *
 * argv[1] is the name of a file beside the bundle's rootfs on the host
 * (in the bundle directory), which no path in the container may reach.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <linux/reboot.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *outcome(long r)
{
	return r == -1 ? strerrorname_np(errno) : "ok";
}

static void result(const char *name, const char *what)
{
	printf("%s: %s\n", name, what);
}

/* The runtime's binary through /proc/self/exe (CVE-2019-5736): the
 * container's exe is its own program, which is busy. */
static void exe_write(void)
{
	int fd = open("/proc/self/exe", O_WRONLY);

	result("write /proc/self/exe", fd < 0 ? strerrorname_np(errno) : "ok");
	if (fd >= 0)
		close(fd);
}

/* A descriptor the runtime left open (CVE-2024-21626). */
static void leaked_fds(void)
{
	char buf[64] = "held";
	int fd;

	for (fd = 3; fd < 4096; fd++)
		if (fcntl(fd, F_GETFD) != -1) {
			snprintf(buf, sizeof(buf), "BROKEN: fd %d is open", fd);
			break;
		}
	result("leaked descriptors", buf);
}

/* The host file beside the rootfs, by every path that might name it. */
static void host_file(const char *name)
{
	const char *prefixes[] = { "/..", "/../..", "/proc/self/root/..", "/proc/1/root/..",
				   "/proc/self/cwd/..", "/tmp/../.." };
	char path[256];
	size_t i;
	int found = 0;

	for (i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", prefixes[i], name);
		if (access(path, F_OK) == 0) {
			printf("host file: BROKEN: %s exists\n", path);
			found = 1;
		}
	}
	/* Symlinks, absolute and relative, made where the container may
	 * write. */
	snprintf(path, sizeof(path), "../../../../%s", name);
	unlink("/tmp/rel");
	unlink("/tmp/abs");
	if (symlink(path, "/tmp/rel") == 0 && access("/tmp/rel", F_OK) == 0) {
		result("host file", "BROKEN: through a relative symlink");
		found = 1;
	}
	snprintf(path, sizeof(path), "/../../%s", name);
	if (symlink(path, "/tmp/abs") == 0 && access("/tmp/abs", F_OK) == 0) {
		result("host file", "BROKEN: through an absolute symlink");
		found = 1;
	}
	if (!found)
		result("host file", "held");
}

/* `..` of the root is the root. */
static void dotdot(void)
{
	struct stat root, up;
	int i;

	stat("/", &root);
	if (chdir("/") != 0) {
		result("chdir ..", "BROKEN: chdir /");
		return;
	}
	for (i = 0; i < 64; i++)
		if (chdir("..") != 0)
			break;
	stat(".", &up);
	result("chdir ..", root.st_dev == up.st_dev && root.st_ino == up.st_ino ? "held" : "BROKEN: left the root");
}

/* A system call from code the program made: it goes where every other
 * call goes (its answer is the sandbox's getpid, 1). */
static void jit_syscall(void)
{
	/* mov eax, SYS_getpid; syscall; ret */
	static const unsigned char code[] = { 0xb8, SYS_getpid, 0, 0, 0, 0x0f, 0x05, 0xc3 };
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char buf[64];
	long r;

	if (page == MAP_FAILED) {
		result("syscall from a JIT page", strerrorname_np(errno));
		return;
	}
	memcpy(page, code, sizeof(code));
	r = ((long (*)(void))page)();
	snprintf(buf, sizeof(buf), "getpid %ld, as getpid() %ld", r, (long)getpid());
	result("syscall from a JIT page", r == getpid() ? "held" : buf);
}

/* Calls that reach the kernel's guts: each must be refused. */
static void denied_calls(void)
{
	char buf[256]; /* larger than io_uring_params, which the call writes */
	struct perf_event_attr pe;
	union bpf_attr attr;

	result("mount", outcome(mount("none", "/tmp", "tmpfs", 0, NULL)));
	result("umount2", outcome(umount2("/", MNT_DETACH)));
	result("pivot_root", outcome(syscall(SYS_pivot_root, "/tmp", "/tmp")));
	result("unshare mount", outcome(unshare(CLONE_NEWNS)));
	result("setns", outcome(setns(0, 0)));
	result("keyctl", outcome(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0)));
	memset(&attr, 0, sizeof(attr));
	result("bpf", outcome(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof(attr))));
	memset(&pe, 0, sizeof(pe));
	pe.size = sizeof(pe);
	pe.type = PERF_TYPE_SOFTWARE;
	pe.config = PERF_COUNT_SW_CPU_CLOCK;
	result("perf_event_open", outcome(syscall(SYS_perf_event_open, &pe, 0, -1, -1, 0)));
	result("userfaultfd", outcome(syscall(SYS_userfaultfd, 0)));
	memset(buf, 0, sizeof(buf));
	result("io_uring_setup", outcome(syscall(SYS_io_uring_setup, 1, buf)));
	result("kexec_load", outcome(syscall(SYS_kexec_load, 0, 0, NULL, 0)));
	result("init_module", outcome(syscall(SYS_init_module, buf, 1, "")));
	result("reboot", outcome(syscall(SYS_reboot, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2,
					 LINUX_REBOOT_CMD_CAD_OFF, NULL)));
	result("open_by_handle_at", outcome(syscall(SYS_open_by_handle_at, AT_FDCWD, buf, O_RDONLY)));
	result("iopl", outcome(syscall(SYS_iopl, 3)));
	result("ioperm", outcome(syscall(SYS_ioperm, 0x80, 1, 1)));
	result("process_vm_writev", outcome(syscall(SYS_process_vm_writev, 2, NULL, 0, NULL, 0, 0)));
	result("ptrace attach", outcome(syscall(SYS_ptrace, 16 /* PTRACE_ATTACH */, 2, 0, 0)));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: escape HOST-FILE-NAME\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	exe_write();
	leaked_fds();
	host_file(argv[1]);
	dotdot();
	jit_syscall();
	denied_calls();
	return 0;
}
