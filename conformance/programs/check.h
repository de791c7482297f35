/*
 * check.h - the assertion helpers and test data every conformance program
 * shares.
 *
 * A program calls check_init(argc, argv) first, asserts with the CHECK
 * macros, and ends with `return check_finish();`. A failed check prints one
 * line on stderr, "file.c:LINE: expected ..., got ...", and the program goes
 * on, so one run reports every mismatch; the exit status is 1 if any check
 * failed. stderr is unbuffered, so the lines survive a crash that follows.
 *
 * The runner calls every program as `prog MODE HOSTNAME`: MODE is "--native"
 * on the host and "--sandbox" inside a container, HOSTNAME is the hostname the
 * container's config sets. The working directory is the root of the bundle's
 * rootfs in both cases ("/" inside the container), which is why the data paths
 * below are relative: the same binary finds the same files either way.
 *
 * Each program is one translation unit, so the definitions here are plain
 * (not extern) and functions are static inline to stay warning-free when a
 * program does not use them.
 */
#ifndef CONFORMANCE_CHECK_H
#define CONFORMANCE_CHECK_H

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * The data files the runner puts in the rootfs (conformance/data.go writes
 * them; keep the two in step).
 */
#define DATA_DIR "conformance/data"
#define HELLO_PATH DATA_DIR "/hello.txt"
#define HELLO_TEXT "Hello, moat conformance!\n"
#define HELLO_LEN ((long)sizeof(HELLO_TEXT) - 1)
#define BLOB_PATH DATA_DIR "/blob.bin" /* BLOB_LEN bytes of blob_byte(i) */
#define BLOB_LEN 12388L                /* three pages and 100 bytes */
#define LINK_PATH DATA_DIR "/link"     /* symlink to "hello.txt" */
#define LINK_TARGET "hello.txt"
#define LIST_DIR DATA_DIR "/dir" /* holds exactly: a, b (files), sub (dir) */
/*
 * SCRIPT_PATH is an executable (0755) "#!" script whose interpreter is the
 * proc_exec program, named by a path relative to the working directory (the
 * kernel resolves it like any other path, so the script works natively and
 * in the container alike), with one optional argument that has blanks in it.
 * GARBAGE_PATH is executable too, but neither an ELF file nor a script.
 */
#define SCRIPT_PATH DATA_DIR "/script"
#define SCRIPT_INTERP "conformance/bin/proc_exec"
#define SCRIPT_ARG "--script-mode one arg"
#define SCRIPT_TEXT "#!" SCRIPT_INTERP " " SCRIPT_ARG "\n"
#define GARBAGE_PATH DATA_DIR "/garbage"
#define GARBAGE_TEXT "this is neither an ELF file nor a script\n"

/* blob_byte is the content of blob.bin at offset i: no period divides 4096,
 * so a page read from the wrong offset cannot match by accident. */
static inline unsigned char blob_byte(long i)
{
	return (unsigned char)((i * 31 + 7) % 251);
}

/* all_zero reports whether n bytes at p are all zero. */
static inline int all_zero(const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		if (b[i])
			return 0;
	return 1;
}

int check_failures;
int check_native;           /* running on the host, not in a container */
const char *check_hostname; /* the hostname the container config sets */
/* check_place is where /tmp is: "native" on the host; in the sandbox
 * "tmpfs" (the bundle's), "bind" (a host directory) or "root" (the
 * writable root itself), as the runner's CONFORMANCE_PLACE says. */
const char *check_place;

static inline void check_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static inline void check_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	check_failures++;
	fprintf(stderr, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* check_errname names an errno value the way the man pages do. */
static inline const char *check_errname(int e)
{
	const char *name = strerrorname_np(e);

	return name ? name : "no error";
}

/*
 * check_readlink is where the symlink at path points (a namespace file's
 * "pid:[4026531836]"), or its errno's name in parentheses; two calls'
 * answers may be used together.
 */
static inline const char *check_readlink(const char *path)
{
	static char buf[2][64];
	static int which;
	char *b = buf[which++ & 1];
	long n = readlink(path, b, 63);

	if (n < 0)
		snprintf(b, 64, "(%s)", check_errname(errno));
	else
		b[n] = '\0';
	return b;
}

static inline void check_init(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "--native") != 0 &&
			  strcmp(argv[1], "--sandbox") != 0)) {
		fprintf(stderr, "usage: %s --native|--sandbox HOSTNAME\n", argv[0]);
		exit(2);
	}
	check_native = strcmp(argv[1], "--native") == 0;
	check_hostname = argv[2];
	check_place = check_native ? "native" : getenv("CONFORMANCE_PLACE");
	if (!check_place)
		check_place = "tmpfs";
}

/* check_ro_root: in the sandbox under the bundle's read-only root (every
 * place but "root"), where changes to the image fail with EROFS. */
static inline int check_ro_root(void)
{
	return !check_native && strcmp(check_place, "root") != 0;
}

/* check_tmp_tmpfs: in the sandbox with /tmp the bundle's tmpfs. */
static inline int check_tmp_tmpfs(void)
{
	return !check_native && strcmp(check_place, "tmpfs") == 0;
}

static inline int check_finish(void)
{
	return check_failures ? 1 : 0;
}

/*
 * syscall(2) is variadic, so an int passed where the kernel reads a 64-bit
 * offset arrives with undefined upper bits (-1 becomes 4294967295). These
 * wrappers give the offsets their real type.
 */
static inline long sys_lseek(int fd, long off, int whence)
{
	return syscall(SYS_lseek, fd, off, whence);
}

static inline long sys_pread64(int fd, void *buf, size_t n, long off)
{
	return syscall(SYS_pread64, fd, buf, n, off);
}

static inline long sys_pwrite64(int fd, const void *buf, size_t n, long off)
{
	return syscall(SYS_pwrite64, fd, buf, n, off);
}

/*
 * proc_status returns the value of the "Name:" line of /proc/self/status
 * with the leading blanks cut ("0022", "4 kB"): some process state (the
 * umask, the locked memory) shows nowhere else. When the file or the line is
 * missing it returns a description of that instead, so that a CHECK_STR on
 * the result says what went wrong. The result lives in a static buffer until
 * the next call.
 */
static inline const char *proc_status(const char *name)
{
	static char buf[8192], value[128];
	size_t len = 0, n = strlen(name);
	char *line, *end;
	long r;
	int fd;

	fd = syscall(SYS_openat, AT_FDCWD, "/proc/self/status", O_RDONLY);
	if (fd < 0) {
		snprintf(value, sizeof(value), "(/proc/self/status: %s)",
			 check_errname(errno));
		return value;
	}
	while (len < sizeof(buf) - 1 &&
	       (r = syscall(SYS_read, fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += r;
	close(fd);
	buf[len] = '\0';
	for (line = buf; *line; line = end + (*end == '\n')) {
		end = strchrnul(line, '\n');
		if (strncmp(line, name, n) != 0 || line[n] != ':')
			continue;
		line += n + 1;
		line += strspn(line, " \t");
		snprintf(value, sizeof(value), "%.*s", (int)(end - line), line);
		return value;
	}
	snprintf(value, sizeof(value), "(no %s in /proc/self/status)", name);
	return value;
}

/*
 * Processes. A program that forks asserts in the child as in the parent: the
 * child's failed checks print their own lines, and check_child_exit turns
 * them into its exit status, which the parent asserts with CHECK_CHILD.
 */

/* CHECK_CHILD_TIMEOUT is how many seconds a child of check_fork may live:
 * an alarm then kills it, so that a child stuck on a bug ends as "killed by
 * SIGALRM" instead of hanging the program until the runner's timeout. */
#define CHECK_CHILD_TIMEOUT 5

/*
 * check_fork forks through the C library (the clone system call), with the
 * stdio buffers flushed first so that nothing is written twice. The child
 * starts with no failures of its own and an alarm of CHECK_CHILD_TIMEOUT
 * seconds (a child that handles or blocks SIGALRM loses that guard). It
 * returns what fork returns; a failed fork is reported.
 */
static inline pid_t check_fork(void)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		check_failures = 0;
		alarm(CHECK_CHILD_TIMEOUT);
	} else if (pid < 0) {
		fprintf(stderr, "check.h: fork: %s\n", check_errname(errno));
		check_failures++;
	}
	return pid;
}

/* check_child_exit ends a child: status 0 if its checks passed, 1 if not.
 * It calls _exit, so the parent's atexit handlers and stdio buffers are
 * left alone. */
static inline __attribute__((noreturn)) void check_child_exit(void)
{
	_exit(check_failures ? 1 : 0);
}

/* check_status_str describes a wait status the way CHECK_CHILD compares it:
 * "exited N", "killed by SIGNAME", "killed by SIGNAME (core dumped)",
 * "stopped by SIGNAME", "continued". The result lives in a static buffer
 * until the next call. */
static inline const char *check_status_str(int status)
{
	static char buf[64];
	char sig[24];
	const char *name;
	int n;

	if (WIFEXITED(status)) {
		snprintf(buf, sizeof(buf), "exited %d", WEXITSTATUS(status));
		return buf;
	}
	if (WIFCONTINUED(status))
		return "continued";
	n = WIFSIGNALED(status) ? WTERMSIG(status) : WSTOPSIG(status);
	name = sigabbrev_np(n);
	if (name)
		snprintf(sig, sizeof(sig), "SIG%s", name);
	else
		snprintf(sig, sizeof(sig), "signal %d", n);
	snprintf(buf, sizeof(buf), "%s by %s%s",
		 WIFSIGNALED(status) ? "killed" : "stopped", sig,
		 WIFSIGNALED(status) && WCOREDUMP(status) ? " (core dumped)" : "");
	return buf;
}

/* check_wait_str waits for the child pid with wait4 (again after EINTR)
 * and describes how it ended, or why it could not be waited for. */
static inline const char *check_wait_str(pid_t pid)
{
	static char buf[64];
	int status = 0;
	long r;

	do
		r = syscall(SYS_wait4, pid, &status, 0, NULL);
	while (r == -1 && errno == EINTR);
	if (r == pid)
		return check_status_str(status);
	snprintf(buf, sizeof(buf), "(wait4 returned %ld: %s)", r,
		 r == -1 ? check_errname(errno) : "another pid");
	return buf;
}

/* CHECK_CHILD waits for a child and asserts how it ended, as
 * check_status_str words it: CHECK_CHILD(pid, "exited 0"). */
#define CHECK_CHILD(pid, want) CHECK_STR(check_wait_str(pid), want)

/* check_sigbus reports whether reading p in a child process (without a
 * core dump) raises SIGBUS, as touching a file mapping's page past the
 * file's end does. */
static inline int check_sigbus(volatile char *p)
{
	pid_t pid = check_fork();

	if (pid == 0) {
		struct rlimit none = { 0, 0 };

		setrlimit(RLIMIT_CORE, &none);
		(void)*p;
		_exit(0);
	}
	return !strcmp(check_wait_str(pid), "killed by SIGBUS");
}

/* check_now_ns is CLOCK_MONOTONIC in nanoseconds. */
static inline long long check_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* check_sleep_ms sleeps ms milliseconds, whatever signals arrive. */
static inline void check_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* check_has_cap reports whether the calling thread has capability cap in
 * its effective set: as root natively it usually does; in a container it
 * has only what the config grants (the conformance config grants none). */
static inline int check_has_cap(int cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) != 0)
		return 0;
	return (data[cap / 32].effective >> (cap % 32)) & 1;
}

/* CHECK asserts that a condition holds. */
#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond))                                               \
			check_fail(__FILE__, __LINE__, "expected %s", #cond); \
	} while (0)

/* CHECK_EQ asserts that an integer expression has the wanted value. */
#define CHECK_EQ(got, want)                                                  \
	do {                                                                 \
		long long check_g_ = (long long)(got);                       \
		long long check_w_ = (long long)(want);                      \
		if (check_g_ != check_w_)                                    \
			check_fail(__FILE__, __LINE__,                       \
				   "expected %s == %lld, got %lld", #got,    \
				   check_w_, check_g_);                      \
	} while (0)

/* CHECK_STR asserts that a string equals the wanted one. */
#define CHECK_STR(got, want)                                                 \
	do {                                                                 \
		const char *check_gs_ = (got), *check_ws_ = (want);          \
		if (strcmp(check_gs_, check_ws_) != 0)                       \
			check_fail(__FILE__, __LINE__,                       \
				   "expected %s == \"%s\", got \"%s\"", #got, \
				   check_ws_, check_gs_);                    \
	} while (0)

/* CHECK_MEM asserts that n bytes at got equal those at want. */
#define CHECK_MEM(got, want, n)                                              \
	do {                                                                 \
		if (memcmp((got), (want), (n)) != 0)                         \
			check_fail(__FILE__, __LINE__,                       \
				   "expected %s to hold %s (%ld bytes)", #got, \
				   #want, (long)(n));                        \
	} while (0)

/*
 * CHECK_OK asserts that a call returning -1 on error succeeds, and yields its
 * result (a pointer result arrives as a long; MAP_FAILED is -1 too).
 */
#define CHECK_OK(call)                                                       \
	({                                                                   \
		long check_r_ = (long)(call);                                \
		if (check_r_ == -1)                                          \
			check_fail(__FILE__, __LINE__,                       \
				   "expected %s to succeed, got -1 (%s)",    \
				   #call, check_errname(errno));             \
		check_r_;                                                    \
	})

/* CHECK_ERR asserts that a call returning -1 on error fails with errno err. */
#define CHECK_ERR(call, err)                                                 \
	do {                                                                 \
		errno = 0;                                                   \
		long check_r_ = (long)(call);                                \
		int check_e_ = errno;                                        \
		if (check_r_ != -1 || check_e_ != (err))                     \
			check_fail(__FILE__, __LINE__,                       \
				   "expected %s to fail with %s, got %ld (%s)", \
				   #call, #err, check_r_,                    \
				   check_r_ == -1 ? check_errname(check_e_)  \
						  : "no error");             \
	} while (0)

#endif
