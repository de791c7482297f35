/*
 * proc_exec: replacing a process's program.
 *
 * Shells, init systems and every fork-exec spawner hand a new program its
 * arguments, environment and descriptors through execve, and scripts run
 * through the "#!" line; what survives the exec (and what must not) is the
 * contract between the two programs.
 * The program execs itself (in forked children, never in the main process)
 * and checks in the new image: argv and envp arrive exactly, empty and blank
 * arguments included, with the pid unchanged; a NULL argv arrives as one
 * empty argument; descriptors without FD_CLOEXEC survive with their offset,
 * FD_CLOEXEC ones are closed; handled signals go back to SIG_DFL, ignored
 * ones stay ignored, the mask and pending signals are kept and the
 * alternate stack is dropped; an exec from a second thread, or with a second
 * thread running, leaves one thread whose tid is the old pid. A "#!" script
 * (conformance/data/script) runs its interpreter with argv = interpreter,
 * the optional argument as one word, the script's path as given (or
 * /dev/fd/N[/name] for execveat), then the remaining arguments; execveat
 * of a close-on-exec script fd is ENOENT. Errors: ENOENT (missing file or
 * directory, empty path), ENOTDIR, EACCES (no execute bit, a directory),
 * ENOEXEC (neither ELF nor script), E2BIG (one argument over 128 KiB, or
 * too many bytes in all), EFAULT; execveat with AT_EMPTY_PATH on an fd
 * (also O_PATH), relative to a directory fd, ELOOP for AT_SYMLINK_NOFOLLOW
 * on a symlink, EINVAL for unknown flags, EBADF for a bad dirfd.
 */
// covers: execve execveat
#include "check.h"

#include <dirent.h>
#include <libgen.h>
#include <pthread.h>

extern char **environ;

/* The descriptor a script run by proc_exec reports its argv on. */
#define REPORT_FD 100

/* The size of a "#!" interpreter's report. */
#define REPORT_MAX 4096

static const char *self; /* this program, as the runner started it */

static long sys_execveat(int dirfd, const char *path, char *const argv[],
			 char *const envp[], int flags)
{
	return syscall(SYS_execveat, dirfd, path, argv, envp, flags);
}

static char *env_none[] = { NULL };

/* count_tasks is the number of threads in /proc/self/task, or -1 if there
 * is no /proc. */
static int count_tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/*
 * The new images: "self --exec-child TEST ARGS..." checks what it inherited
 * and exits with the result.
 */

static void child_argv(int argc, char **argv)
{
	static const char *want_env[] = { "FOO=bar", "EMPTY=", "X=a b", NULL };
	int i;

	CHECK_EQ(argc, 7);
	if (argc != 7)
		return;
	CHECK_STR(argv[0], "custom argv0");
	CHECK_STR(argv[3], "a b");
	CHECK_STR(argv[4], "");
	CHECK_STR(argv[5], "last");
	CHECK(argv[7] == NULL);
	/* Same process: same pid. */
	CHECK_EQ(getpid(), atol(argv[6]));
	for (i = 0; want_env[i] && environ[i]; i++)
		CHECK_STR(environ[i], want_env[i]);
	CHECK(want_env[i] == NULL && environ[i] == NULL);
}

static void child_fds(int argc, char **argv)
{
	char buf[64];
	int keep, closed;

	CHECK_EQ(argc, 5);
	if (argc != 5)
		return;
	keep = atoi(argv[3]);
	closed = atoi(argv[4]);
	CHECK_EQ(fcntl(keep, F_GETFD), 0);
	/* The open file survived, offset and all. */
	CHECK_EQ(sys_lseek(keep, 0, SEEK_CUR), 7);
	CHECK_EQ(read(keep, buf, sizeof(buf)), HELLO_LEN - 7);
	CHECK_MEM(buf, HELLO_TEXT + 7, HELLO_LEN - 7);
	CHECK_ERR(fcntl(closed, F_GETFD), EBADF);
}

static void child_signals(void)
{
	struct sigaction sa;
	sigset_t set;
	stack_t ss;

	CHECK_EQ(sigaction(SIGUSR1, NULL, &sa), 0);
	CHECK(sa.sa_handler == SIG_DFL);
	CHECK_EQ(sigaction(SIGUSR2, NULL, &sa), 0);
	CHECK(sa.sa_handler == SIG_IGN);
	CHECK_EQ(sigaction(SIGINT, NULL, &sa), 0);
	CHECK(sa.sa_handler == SIG_DFL);
	/* The mask is kept, and so is a pending signal. */
	CHECK_EQ(sigprocmask(SIG_BLOCK, NULL, &set), 0);
	CHECK(sigismember(&set, SIGTERM));
	CHECK(sigismember(&set, SIGHUP));
	CHECK(!sigismember(&set, SIGUSR1));
	CHECK_EQ(sigpending(&set), 0);
	CHECK(sigismember(&set, SIGHUP));
	CHECK(!sigismember(&set, SIGTERM));
	/* The alternate stack was in the old memory: gone. */
	CHECK_EQ(sigaltstack(NULL, &ss), 0);
	CHECK_EQ(ss.ss_flags, SS_DISABLE);
}

static void child_thread(int argc, char **argv)
{
	int n;

	CHECK_EQ(argc, 4);
	if (argc != 4)
		return;
	/* The thread that called execve took over the thread group's id. */
	CHECK_EQ(getpid(), atol(argv[3]));
	CHECK_EQ(syscall(SYS_gettid), getpid());
	n = count_tasks();
	if (n != -1)
		CHECK_EQ(n, 1);
}

static int exec_child(int argc, char **argv)
{
	const char *test = argc > 2 ? argv[2] : "";

	if (strcmp(test, "argv") == 0)
		child_argv(argc, argv);
	else if (strcmp(test, "fds") == 0)
		child_fds(argc, argv);
	else if (strcmp(test, "signals") == 0)
		child_signals();
	else if (strcmp(test, "thread") == 0)
		child_thread(argc, argv);
	else if (strcmp(test, "plain") != 0)
		check_fail(__FILE__, __LINE__, "unknown --exec-child test \"%s\"",
			   test);
	return check_finish();
}

/* script_mode is the interpreter of conformance/data/script: it writes its
 * argv, one argument a line, to REPORT_FD. */
static int script_mode(int argc, char **argv)
{
	char buf[REPORT_MAX];
	size_t len = 0;
	int i;

	for (i = 0; i < argc; i++)
		len += snprintf(buf + len, sizeof(buf) - len, "%s\n", argv[i]);
	if (len >= sizeof(buf) || write(REPORT_FD, buf, len) != (long)len)
		return 99;
	return 0;
}

/*
 * The parent's side.
 */

/* CHECK_EXEC_ERR asserts that an exec fails with errno err, trying it in a
 * child so that an exec that wrongly succeeds cannot replace this program. */
#define CHECK_EXEC_ERR(call, err)                                             \
	do {                                                                  \
		pid_t exec_pid_ = check_fork();                               \
		if (exec_pid_ == 0) {                                         \
			errno = 0;                                            \
			long exec_r_ = (long)(call);                          \
			int exec_e_ = errno;                                  \
			if (exec_r_ != -1 || exec_e_ != (err))                \
				check_fail(__FILE__, __LINE__,                \
					   "expected %s to fail with %s, got %ld (%s)", \
					   #call, #err, exec_r_,              \
					   check_errname(exec_e_));           \
			check_child_exit();                                   \
		}                                                             \
		CHECK_CHILD(exec_pid_, "exited 0");                           \
	} while (0)

/* exec_failed ends a child whose exec returned. */
static void exec_failed(const char *what)
{
	fprintf(stderr, "proc_exec.c: %s failed: %s\n", what,
		check_errname(errno));
	_exit(127);
}

static void test_argv_env(void)
{
	char *env[] = { "FOO=bar", "EMPTY=", "X=a b", NULL };
	char pid[32];
	pid_t child;

	child = check_fork();
	if (child == 0) {
		char *args[] = { "custom argv0", "--exec-child", "argv", "a b", "",
				 "last", pid, NULL };

		snprintf(pid, sizeof(pid), "%d", getpid());
		execve(self, args, env);
		exec_failed("execve");
	}
	CHECK_CHILD(child, "exited 0");

	/* No argv at all: the new program gets argc 1 and one empty
	 * argument (Linux 5.18 and later). */
	child = check_fork();
	if (child == 0) {
		char *envp[] = { "PROC_EXEC_NULL_ARGV=1", NULL };

		syscall(SYS_execve, self, NULL, envp);
		exec_failed("execve with a NULL argv");
	}
	CHECK_CHILD(child, "exited 0");
}

static void test_fds(void)
{
	pid_t child = check_fork();

	if (child == 0) {
		int keep = CHECK_OK(open(HELLO_PATH, O_RDONLY));
		int closed = CHECK_OK(open(HELLO_PATH, O_RDONLY | O_CLOEXEC));
		char k[16], c[16];
		char *args[] = { "proc_exec", "--exec-child", "fds", k, c, NULL };

		CHECK_EQ(sys_lseek(keep, 7, SEEK_SET), 7);
		snprintf(k, sizeof(k), "%d", keep);
		snprintf(c, sizeof(c), "%d", closed);
		execve(self, args, env_none);
		exec_failed("execve");
	}
	CHECK_CHILD(child, "exited 0");
}

static void handler(int sig)
{
	(void)sig;
}

static void test_signals(void)
{
	pid_t child = check_fork();

	if (child == 0) {
		static char stack[16384];
		char *args[] = { "proc_exec", "--exec-child", "signals", NULL };
		struct sigaction sa;
		sigset_t set;
		stack_t ss = { .ss_sp = stack, .ss_size = sizeof(stack) };

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = handler;
		sa.sa_flags = SA_ONSTACK;
		CHECK_OK(sigaction(SIGUSR1, &sa, NULL));
		CHECK_OK(sigaction(SIGHUP, &sa, NULL));
		sa.sa_handler = SIG_IGN;
		CHECK_OK(sigaction(SIGUSR2, &sa, NULL));
		CHECK_OK(sigaltstack(&ss, NULL));
		sigemptyset(&set);
		sigaddset(&set, SIGTERM);
		sigaddset(&set, SIGHUP);
		CHECK_OK(sigprocmask(SIG_BLOCK, &set, NULL));
		CHECK_OK(kill(getpid(), SIGHUP));
		execve(self, args, env_none);
		exec_failed("execve");
	}
	CHECK_CHILD(child, "exited 0");
}

/* run_script execs a script in a child whose REPORT_FD is a pipe, and
 * returns what the interpreter reported (its argv, a line each). dirfd and
 * flags select execveat; dirfd -1 means execve. */
static const char *run_script(int dirfd, const char *path, int flags)
{
	static char buf[REPORT_MAX];
	size_t len = 0;
	int p[2];
	long r;
	pid_t child;

	CHECK_OK(pipe2(p, O_CLOEXEC));
	child = check_fork();
	if (child == 0) {
		char *args[] = { "ignored argv0", "x", "y z", NULL };

		if (dup2(p[1], REPORT_FD) != REPORT_FD)
			_exit(126);
		if (dirfd == -1)
			execve(path, args, env_none);
		else
			sys_execveat(dirfd, path, args, env_none, flags);
		exec_failed("exec of the script");
	}
	close(p[1]);
	while (len < sizeof(buf) - 1 &&
	       (r = read(p[0], buf + len, sizeof(buf) - 1 - len)) > 0)
		len += r;
	buf[len] = '\0';
	close(p[0]);
	CHECK_CHILD(child, "exited 0");
	return buf;
}

static void test_script(void)
{
	char want[REPORT_MAX];
	int dir, fd;

	/* The interpreter's argv: its path as written after "#!", the rest
	 * of the line as one argument, the script's path as passed to execve
	 * (argv[0] is dropped), then the other arguments. */
	CHECK_STR(run_script(-1, SCRIPT_PATH, 0),
		  SCRIPT_INTERP "\n" SCRIPT_ARG "\n" SCRIPT_PATH "\nx\ny z\n");

	/* Through execveat the kernel names the script by its fd. */
	dir = CHECK_OK(open(DATA_DIR, O_RDONLY | O_DIRECTORY));
	snprintf(want, sizeof(want),
		 SCRIPT_INTERP "\n" SCRIPT_ARG "\n/dev/fd/%d/script\nx\ny z\n",
		 dir);
	CHECK_STR(run_script(dir, "script", 0), want);

	fd = CHECK_OK(open(SCRIPT_PATH, O_RDONLY));
	snprintf(want, sizeof(want),
		 SCRIPT_INTERP "\n" SCRIPT_ARG "\n/dev/fd/%d\nx\ny z\n", fd);
	CHECK_STR(run_script(fd, "", AT_EMPTY_PATH), want);
	close(fd);

	/* A close-on-exec fd would be gone when the interpreter opens
	 * /dev/fd/N: the kernel refuses up front. */
	fd = CHECK_OK(open(SCRIPT_PATH, O_RDONLY | O_CLOEXEC));
	{
		char *args[] = { "x", "--unexpected", NULL };

		CHECK_EXEC_ERR(sys_execveat(fd, "", args, env_none,
					    AT_EMPTY_PATH),
			       ENOENT);
	}
	close(fd);
	close(dir);
}

static void test_errors(void)
{
	char *args[] = { "x", "--unexpected", NULL };
	static char big[200 * 1024];
	static char chunk[100 * 1024];
	static char *many[102];
	char *huge[] = { "x", "--unexpected", big, NULL };
	int i;

	CHECK_EXEC_ERR(execve(DATA_DIR "/missing", args, env_none), ENOENT);
	CHECK_EXEC_ERR(execve(DATA_DIR "/missing/x", args, env_none), ENOENT);
	CHECK_EXEC_ERR(execve("", args, env_none), ENOENT);
	CHECK_EXEC_ERR(execve(HELLO_PATH "/x", args, env_none), ENOTDIR);
	/* Root too needs an execute bit; a directory is never executable. */
	CHECK_EXEC_ERR(execve(HELLO_PATH, args, env_none), EACCES);
	CHECK_EXEC_ERR(execve(DATA_DIR, args, env_none), EACCES);
	CHECK_EXEC_ERR(execve(GARBAGE_PATH, args, env_none), ENOEXEC);
	CHECK_EXEC_ERR(syscall(SYS_execve, (char *)1, args, env_none), EFAULT);

	/* One argument over MAX_ARG_STRLEN (32 pages). */
	memset(big, 'a', sizeof(big) - 1);
	CHECK_EXEC_ERR(execve(self, huge, env_none), E2BIG);
	/* Arguments of legal size, but 10 MB of them: more than a quarter of
	 * any stack limit allows (and more than the 6 MB cap). */
	memset(chunk, 'b', sizeof(chunk) - 1);
	many[0] = "x";
	many[1] = "--unexpected";
	for (i = 2; i < 101; i++)
		many[i] = chunk;
	many[101] = NULL;
	CHECK_EXEC_ERR(execve(self, many, env_none), E2BIG);
	/* The same in the environment. */
	CHECK_EXEC_ERR(execve(self, args, many + 2), E2BIG);
}

static void test_execveat(void)
{
	char *args[] = { "proc_exec", "--exec-child", "plain", NULL };
	char *bad[] = { "x", "--unexpected", NULL };
	char dirbuf[4096];
	int fd, dir, file;
	pid_t child;

	/* AT_EMPTY_PATH: exec the file the fd refers to, even close-on-exec
	 * (an ELF file is read before the fds are closed) and O_PATH. */
	fd = CHECK_OK(open(self, O_RDONLY | O_CLOEXEC));
	child = check_fork();
	if (child == 0) {
		sys_execveat(fd, "", args, env_none, AT_EMPTY_PATH);
		exec_failed("execveat(fd, \"\", AT_EMPTY_PATH)");
	}
	CHECK_CHILD(child, "exited 0");
	CHECK_EXEC_ERR(sys_execveat(fd, "", bad, env_none, 0), ENOENT);
	CHECK_EXEC_ERR(sys_execveat(AT_FDCWD, self, bad, env_none, 0x4000),
		       EINVAL);
	close(fd);

	fd = CHECK_OK(open(self, O_PATH));
	child = check_fork();
	if (child == 0) {
		sys_execveat(fd, "", args, env_none, AT_EMPTY_PATH);
		exec_failed("execveat(O_PATH fd, \"\", AT_EMPTY_PATH)");
	}
	CHECK_CHILD(child, "exited 0");
	close(fd);

	/* A path relative to a directory fd. */
	snprintf(dirbuf, sizeof(dirbuf), "%s", self);
	dir = CHECK_OK(open(dirname(dirbuf), O_RDONLY | O_DIRECTORY));
	snprintf(dirbuf, sizeof(dirbuf), "%s", self);
	child = check_fork();
	if (child == 0) {
		sys_execveat(dir, basename(dirbuf), args, env_none, 0);
		exec_failed("execveat(dirfd, name)");
	}
	CHECK_CHILD(child, "exited 0");
	close(dir);

	/* AT_SYMLINK_NOFOLLOW refuses a final symlink. */
	CHECK_EXEC_ERR(sys_execveat(AT_FDCWD, LINK_PATH, bad, env_none,
				    AT_SYMLINK_NOFOLLOW),
		       ELOOP);
	CHECK_EXEC_ERR(sys_execveat(9999, "proc_exec", bad, env_none, 0), EBADF);
	file = CHECK_OK(open(HELLO_PATH, O_RDONLY));
	CHECK_EXEC_ERR(sys_execveat(file, "x", bad, env_none, 0), ENOTDIR);
	close(file);
}

static void *exec_from_thread(void *arg)
{
	char *args[] = { "proc_exec", "--exec-child", "thread", arg, NULL };

	execve(self, args, env_none);
	exec_failed("execve from a thread");
	return NULL;
}

static void *spin(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void test_threads(void)
{
	pthread_t t;
	pid_t child;

	/* A second thread execs: it becomes the thread group leader. */
	child = check_fork();
	if (child == 0) {
		static char pid[32];

		snprintf(pid, sizeof(pid), "%d", getpid());
		CHECK_EQ(pthread_create(&t, NULL, exec_from_thread, pid), 0);
		for (;;)
			pause();
	}
	CHECK_CHILD(child, "exited 0");

	/* The main thread execs while another runs: that one is gone. */
	child = check_fork();
	if (child == 0) {
		static char pid[32];
		char *args[] = { "proc_exec", "--exec-child", "thread", pid, NULL };

		snprintf(pid, sizeof(pid), "%d", getpid());
		CHECK_EQ(pthread_create(&t, NULL, spin, NULL), 0);
		execve(self, args, env_none);
		exec_failed("execve with a second thread");
	}
	CHECK_CHILD(child, "exited 0");
}

int main(int argc, char **argv)
{
	const char *null_argv = getenv("PROC_EXEC_NULL_ARGV");

	if (null_argv) {
		CHECK_EQ(argc, 1);
		CHECK_STR(argv[0], "");
		CHECK(argv[1] == NULL);
		return check_finish();
	}
	if (argc > 1 && strcmp(argv[1], "--exec-child") == 0)
		return exec_child(argc, argv);
	if (argc > 1 && strncmp(argv[1], "--script-mode", 13) == 0)
		return script_mode(argc, argv);
	if (argc > 1 && strcmp(argv[1], "--unexpected") == 0) {
		fprintf(stderr, "proc_exec.c: an exec that should have failed ran\n");
		return 3;
	}
	check_init(argc, argv);
	self = argv[0];
	test_argv_env();
	test_fds();
	test_signals();
	test_script();
	test_errors();
	test_execveat();
	test_threads();
	return check_finish();
}
