/*
 * proc_fork_wait: creating processes and collecting them.
 *
 * Every shell, make, init and server forks and waits; a wrong pid, status or
 * parent, a zombie reaped twice or never, a parent that vfork does not
 * suspend, breaks them all.
 * Checks: fork (the raw system call), clone (how the C library's fork works),
 * clone with only SIGCHLD and clone3 with exit_signal SIGCHLD all return 0 in
 * the child and the child's pid in the parent, and the child's getppid is the
 * parent; clone3's CLONE_CLEAR_SIGHAND makes the child's caught signals
 * default and keeps ignored ones (EINVAL with CLONE_SIGHAND, or for a flag
 * clone3 does not know); exit statuses 0, 3, 255 and 256 (which reads 0), exit_group's;
 * death by SIGKILL from kill, by SIGSEGV from a bad pointer and by a signal to
 * the child's process group; wait4 with WNOHANG (0 while the child runs,
 * ECHILD without children), for a given pid against -1, ECHILD for a pid
 * that is no child; WUNTRACED and WCONTINUED after SIGSTOP and SIGCONT, a stop
 * reported once; a child cloned with no exit signal is seen only with __WALL;
 * waitid with WEXITED|WNOWAIT leaves the zombie to be found again, its
 * siginfo (si_signo, si_pid, si_uid, si_status, si_code CLD_EXITED,
 * CLD_KILLED, CLD_STOPPED, CLD_CONTINUED), WNOHANG with nothing to report
 * zeroes si_pid, EINVAL for no state or a bad idtype; a zombie answers
 * kill(pid, 0) and is reaped exactly once (then ESRCH and ECHILD); vfork
 * suspends the parent until the child exits and shares its memory; orphans
 * go to the nearest PR_SET_CHILD_SUBREAPER (in a container the sandbox's
 * init is this program, pid 1) which can wait for them; wait4 fills rusage;
 * kill's EINVAL and ESRCH. Sessions and groups: setsid makes a new session
 * and group named after the caller (getsid, getpgid), EPERM for a group
 * leader; setpgid moves a child into a new group and back, EPERM for a
 * session leader or a child in another session, ESRCH for a non-child,
 * EINVAL for a negative group.
 */
// covers: fork vfork clone clone3 wait4 waitid exit_group getppid kill setsid setpgid getsid getpgid prctl
#include "check.h"

#include <linux/sched.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/resource.h>

/* A pid that no process has: above the largest pid_max (4194304). */
#define NO_PID 0x3ffffff0

static long sys_wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	return syscall(SYS_wait4, pid, status, options, ru);
}

static long sys_waitid(int idtype, pid_t id, siginfo_t *si, int options)
{
	return syscall(SYS_waitid, idtype, id, si, options, NULL);
}

/* block_on reads fd until EOF: a child parked until the parent closes the
 * other end (or the child is killed). */
static void block_on(int fd)
{
	char c;

	while (read(fd, &c, 1) == -1 && errno == EINTR)
		;
}

/* parked_child forks a child that waits until *release is closed (or
 * written to) and then exits with status code. */
static pid_t parked_child(int *release, int code)
{
	int p[2];
	pid_t pid;

	CHECK_OK(pipe2(p, O_CLOEXEC));
	pid = check_fork();
	if (pid == 0) {
		close(p[1]);
		block_on(p[0]);
		_exit(code);
	}
	close(p[0]);
	*release = p[1];
	return pid;
}

/* report_ids is the child's side of test_create: it sends its pid and
 * parent's pid, as the kernel reports them, through fd. */
static void report_ids(int fd)
{
	long ids[2] = { syscall(SYS_getpid), syscall(SYS_getppid) };

	if (write(fd, ids, sizeof(ids)) != sizeof(ids))
		_exit(100);
}

static void on_usr1(int sig) { (void)sig; }

/* check_created checks a child that ran report_ids and exits with code. */
static void check_created(long ret, int rfd, int code, const char *how)
{
	long ids[2] = { -1, -1 };
	int status = -1;

	if (ret <= 0) {
		check_fail(__FILE__, __LINE__, "%s returned %ld (%s)", how, ret,
			   check_errname(errno));
		return;
	}
	CHECK_EQ(read(rfd, ids, sizeof(ids)), sizeof(ids));
	CHECK_EQ(ids[0], ret);
	CHECK_EQ(ids[1], getpid());
	CHECK_EQ(sys_wait4(ret, &status, 0, NULL), ret);
	CHECK_STR(check_status_str(status), code == 0 ? "exited 0" : "exited 9");
}

static void test_create(void)
{
	struct clone_args ca;
	int p[2];
	long r;

	CHECK_OK(pipe2(p, O_CLOEXEC));

	/* The fork system call itself (the C library's fork uses clone). */
	fflush(NULL);
	r = syscall(SYS_fork);
	if (r == 0) {
		report_ids(p[1]);
		syscall(SYS_exit_group, 0);
	}
	check_created(r, p[0], 0, "fork");

	/* The C library's fork: clone with CLONE_CHILD_SETTID and friends. */
	r = check_fork();
	if (r == 0) {
		report_ids(p[1]);
		_exit(9);
	}
	check_created(r, p[0], 9, "fork()");

	/* clone with nothing but the exit signal is a fork. */
	fflush(NULL);
	r = syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, 0);
	if (r == 0) {
		report_ids(p[1]);
		syscall(SYS_exit_group, 0);
	}
	check_created(r, p[0], 0, "clone(SIGCHLD)");

	/* And so is clone3 with exit_signal SIGCHLD. */
	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = SIGCHLD;
	fflush(NULL);
	r = syscall(SYS_clone3, &ca, sizeof(ca));
	if (r == 0) {
		report_ids(p[1]);
		syscall(SYS_exit_group, 9);
	}
	check_created(r, p[0], 9, "clone3");
	/* clone3 refuses a size below the first version of the struct, and
	 * an exit signal that is no signal. */
	CHECK_ERR(syscall(SYS_clone3, &ca, 63), EINVAL);
	ca.exit_signal = 65;
	CHECK_ERR(syscall(SYS_clone3, &ca, sizeof(ca)), EINVAL);
	/* CLONE_CLEAR_SIGHAND: the child's caught signals are default, its
	 * ignored ones stay ignored; EINVAL with shared handlers (a thread's
	 * included), and for a flag clone3 does not know. */
	ca.exit_signal = SIGCHLD;
	ca.flags = CLONE_CLEAR_SIGHAND;
	CHECK_OK(signal(SIGUSR1, on_usr1) == SIG_ERR ? -1 : 0);
	CHECK_OK(signal(SIGUSR2, SIG_IGN) == SIG_ERR ? -1 : 0);
	fflush(NULL);
	r = syscall(SYS_clone3, &ca, sizeof(ca));
	if (r == 0) {
		struct sigaction a1, a2;

		sigaction(SIGUSR1, NULL, &a1);
		sigaction(SIGUSR2, NULL, &a2);
		report_ids(p[1]);
		syscall(SYS_exit_group, a1.sa_handler == SIG_DFL && a2.sa_handler == SIG_IGN ? 9 : 1);
	}
	check_created(r, p[0], 9, "clone3(CLONE_CLEAR_SIGHAND)");
	ca.flags = CLONE_CLEAR_SIGHAND | CLONE_SIGHAND | CLONE_VM;
	CHECK_ERR(syscall(SYS_clone3, &ca, sizeof(ca)), EINVAL);
	ca.flags = 1ULL << 40;
	CHECK_ERR(syscall(SYS_clone3, &ca, sizeof(ca)), EINVAL);
	signal(SIGUSR1, SIG_DFL);
	signal(SIGUSR2, SIG_DFL);

	close(p[0]);
	close(p[1]);
}

static void test_exit_status(void)
{
	static const int codes[] = { 0, 3, 255, 256 };
	int status;
	pid_t pid;
	size_t i;

	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		pid = check_fork();
		if (pid == 0)
			_exit(codes[i]);
		status = -1;
		CHECK_EQ(sys_wait4(pid, &status, 0, NULL), pid);
		CHECK(WIFEXITED(status));
		CHECK(!WIFSIGNALED(status));
		/* Only the low 8 bits reach the parent: 256 reads 0. */
		CHECK_EQ(WEXITSTATUS(status), codes[i] & 0xff);
	}

	pid = check_fork();
	if (pid == 0) {
		syscall(SYS_exit_group, 42);
		_exit(1);
	}
	CHECK_CHILD(pid, "exited 42");
}

static void test_signal_death(void)
{
	int release, status;
	pid_t pid;

	/* SIGKILL from the parent. */
	pid = parked_child(&release, 0);
	CHECK_EQ(kill(pid, 0), 0);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	status = -1;
	CHECK_EQ(sys_wait4(pid, &status, 0, NULL), pid);
	CHECK(WIFSIGNALED(status));
	CHECK(!WIFEXITED(status));
	CHECK_EQ(WTERMSIG(status), SIGKILL);
	CHECK(!WCOREDUMP(status));
	close(release);

	/* A write through a bad pointer. Not dumpable, so that no core file
	 * is written whatever the core pattern says: then the status has no
	 * core flag either. */
	pid = check_fork();
	if (pid == 0) {
		volatile uintptr_t bad = 16;

		prctl(PR_SET_DUMPABLE, 0);
		*(volatile int *)bad = 1;
		_exit(0);
	}
	CHECK_CHILD(pid, "killed by SIGSEGV");

	/* A signal to a process group: kill(-pgid). */
	pid = parked_child(&release, 0);
	CHECK_OK(setpgid(pid, pid));
	CHECK_EQ(kill(-pid, SIGTERM), 0);
	CHECK_CHILD(pid, "killed by SIGTERM");
	close(release);

	/* kill's own errors. */
	CHECK_ERR(kill(getpid(), 65), EINVAL);
	CHECK_ERR(kill(getpid(), -1), EINVAL);
	CHECK_ERR(kill(NO_PID, 0), ESRCH);
	CHECK_ERR(kill(NO_PID, SIGKILL), ESRCH);
	CHECK_ERR(kill(-NO_PID, 0), ESRCH);
}

static void test_wait4(void)
{
	int ra, rb, status;
	pid_t a, b;

	/* No children at all: ECHILD, even with WNOHANG. */
	CHECK_ERR(sys_wait4(-1, &status, 0, NULL), ECHILD);
	CHECK_ERR(sys_wait4(-1, &status, WNOHANG, NULL), ECHILD);
	CHECK_ERR(sys_wait4(getpid(), &status, 0, NULL), ECHILD);

	a = parked_child(&ra, 0);
	b = parked_child(&rb, 7);
	/* Running children: WNOHANG answers 0 and leaves status alone. */
	status = 12345;
	CHECK_EQ(sys_wait4(a, &status, WNOHANG, NULL), 0);
	CHECK_EQ(sys_wait4(-1, &status, WNOHANG, NULL), 0);
	CHECK_EQ(status, 12345);
	/* A pid that is not a child is ECHILD while there are children. */
	CHECK_ERR(sys_wait4(getpid(), &status, WNOHANG, NULL), ECHILD);
	CHECK_ERR(sys_wait4(NO_PID, &status, 0, NULL), ECHILD);
	/* WNOWAIT is waitid's alone. */
	CHECK_ERR(sys_wait4(a, &status, WNOWAIT, NULL), EINVAL);

	/* Let b end: wait for a still finds nothing, -1 finds b. */
	close(rb);
	status = -1;
	CHECK_EQ(sys_wait4(-1, &status, 0, NULL), b);
	CHECK_STR(check_status_str(status), "exited 7");
	CHECK_EQ(sys_wait4(a, &status, WNOHANG, NULL), 0);
	close(ra);
	CHECK_EQ(sys_wait4(a, &status, 0, NULL), a);
	CHECK_STR(check_status_str(status), "exited 0");
	CHECK_ERR(sys_wait4(-1, &status, WNOHANG, NULL), ECHILD);

	/* A NULL status pointer is fine. */
	a = parked_child(&ra, 0);
	close(ra);
	CHECK_EQ(sys_wait4(a, NULL, 0, NULL), a);
}

static void test_stop_continue(void)
{
	int release, status;
	siginfo_t si;
	pid_t pid;

	pid = parked_child(&release, 0);
	CHECK_EQ(kill(pid, SIGSTOP), 0);
	status = -1;
	CHECK_EQ(sys_wait4(pid, &status, WUNTRACED, NULL), pid);
	CHECK(WIFSTOPPED(status));
	CHECK_EQ(WSTOPSIG(status), SIGSTOP);
	CHECK(!WIFEXITED(status));
	/* A stop is reported once; without WUNTRACED not at all. */
	CHECK_EQ(sys_wait4(pid, &status, WNOHANG | WUNTRACED, NULL), 0);
	CHECK_EQ(sys_wait4(pid, &status, WNOHANG, NULL), 0);

	CHECK_EQ(kill(pid, SIGCONT), 0);
	status = -1;
	CHECK_EQ(sys_wait4(pid, &status, WCONTINUED, NULL), pid);
	CHECK(WIFCONTINUED(status));
	CHECK_STR(check_status_str(status), "continued");
	CHECK_EQ(sys_wait4(pid, &status, WNOHANG | WCONTINUED, NULL), 0);

	/* The same through waitid, and its codes. */
	CHECK_EQ(kill(pid, SIGSTOP), 0);
	memset(&si, 0, sizeof(si));
	CHECK_EQ(sys_waitid(P_PID, pid, &si, WSTOPPED), 0);
	CHECK_EQ(si.si_signo, SIGCHLD);
	CHECK_EQ(si.si_code, CLD_STOPPED);
	CHECK_EQ(si.si_pid, pid);
	CHECK_EQ(si.si_status, SIGSTOP);
	CHECK_EQ(kill(pid, SIGCONT), 0);
	memset(&si, 0, sizeof(si));
	CHECK_EQ(sys_waitid(P_PID, pid, &si, WCONTINUED), 0);
	CHECK_EQ(si.si_code, CLD_CONTINUED);
	CHECK_EQ(si.si_pid, pid);
	CHECK_EQ(si.si_status, SIGCONT);

	/* Stopped and continued, it still runs to its end. */
	close(release);
	CHECK_CHILD(pid, "exited 0");
}

static void test_waitid(void)
{
	int release, status;
	siginfo_t si;
	pid_t pid;

	CHECK_ERR(sys_waitid(P_ALL, 0, &si, WEXITED), ECHILD);

	pid = parked_child(&release, 5);
	/* Nothing to report yet: 0, and si_pid and si_signo zeroed. */
	memset(&si, 0x5a, sizeof(si));
	CHECK_EQ(sys_waitid(P_PID, pid, &si, WEXITED | WNOHANG), 0);
	CHECK_EQ(si.si_pid, 0);
	CHECK_EQ(si.si_signo, 0);
	/* No state asked for, or a bad idtype: EINVAL. */
	CHECK_ERR(sys_waitid(P_PID, pid, &si, WNOHANG), EINVAL);
	CHECK_ERR(sys_waitid(42, pid, &si, WEXITED), EINVAL);

	close(release);
	memset(&si, 0, sizeof(si));
	CHECK_EQ(sys_waitid(P_PID, pid, &si, WEXITED | WNOWAIT), 0);
	CHECK_EQ(si.si_signo, SIGCHLD);
	CHECK_EQ(si.si_code, CLD_EXITED);
	CHECK_EQ(si.si_pid, pid);
	CHECK_EQ(si.si_uid, getuid());
	CHECK_EQ(si.si_status, 5);
	/* WNOWAIT left the zombie: it answers kill(pid, 0), and waitid (by
	 * P_ALL this time) finds it again and reaps it. */
	CHECK_EQ(kill(pid, 0), 0);
	memset(&si, 0, sizeof(si));
	CHECK_EQ(sys_waitid(P_ALL, 0, &si, WEXITED), 0);
	CHECK_EQ(si.si_pid, pid);
	CHECK_EQ(si.si_status, 5);
	CHECK_EQ(si.si_code, CLD_EXITED);
	/* Reaped exactly once. */
	CHECK_ERR(sys_waitid(P_PID, pid, &si, WEXITED | WNOHANG), ECHILD);
	CHECK_ERR(sys_wait4(pid, &status, WNOHANG, NULL), ECHILD);
	CHECK_ERR(kill(pid, 0), ESRCH);

	/* A killed child: CLD_KILLED and the signal in si_status. */
	pid = parked_child(&release, 0);
	CHECK_EQ(kill(pid, SIGKILL), 0);
	memset(&si, 0, sizeof(si));
	CHECK_EQ(sys_waitid(P_PID, pid, &si, WEXITED), 0);
	CHECK_EQ(si.si_code, CLD_KILLED);
	CHECK_EQ(si.si_status, SIGKILL);
	CHECK_EQ(si.si_pid, pid);
	close(release);
	CHECK_ERR(sys_wait4(pid, &status, 0, NULL), ECHILD);
}

/* A child cloned with exit signal 0 is a "clone child": only __WALL or
 * __WCLONE waits see it. */
static void test_clone_child(void)
{
	int status = -1;
	long pid;

	fflush(NULL);
	pid = syscall(SYS_clone, 0, NULL, NULL, NULL, 0);
	if (pid == 0)
		syscall(SYS_exit_group, 6);
	CHECK(pid > 0);
	CHECK_ERR(sys_wait4(pid, &status, 0, NULL), ECHILD);
	CHECK_EQ(sys_wait4(pid, &status, __WALL, NULL), pid);
	CHECK_STR(check_status_str(status), "exited 6");
}

static void test_vfork(void)
{
	static volatile int shared;
	static volatile long child_pid;
	long long t0 = check_now_ns();
	pid_t pid;

	shared = 0;
	child_pid = 0;
	fflush(NULL);
	pid = vfork();
	if (pid == 0) {
		struct timespec ts = { 0, 30 * 1000000 };

		/* The child runs in the parent's memory, while the parent
		 * waits: what it writes, the parent sees. */
		child_pid = syscall(SYS_getpid);
		shared = 1;
		syscall(SYS_nanosleep, &ts, NULL);
		shared = 2;
		_exit(4);
	}
	CHECK(pid > 0);
	/* The parent resumed only after the child exited. */
	CHECK_EQ(shared, 2);
	CHECK_EQ(child_pid, pid);
	CHECK(check_now_ns() - t0 >= 30 * 1000000LL);
	CHECK_CHILD(pid, "exited 4");
}

/* orphan_test: this process forks a child B that forks C and exits; C then
 * reports its new parent through fd and exits with 8; the subreaper (this
 * process) can wait for C. */
static void orphan_test(int expect_parent)
{
	int ids[2], go[2];
	long ppid = -1;
	int status = -1;
	pid_t b, c = -1;

	CHECK_OK(pipe2(ids, O_CLOEXEC));
	CHECK_OK(pipe2(go, O_CLOEXEC));
	b = check_fork();
	if (b == 0) {
		pid_t grandchild = check_fork();

		if (grandchild == 0) {
			close(go[1]);
			/* Until B has been reaped. */
			block_on(go[0]);
			ppid = syscall(SYS_getppid);
			if (write(ids[1], &ppid, sizeof(ppid)) != sizeof(ppid))
				_exit(100);
			_exit(8);
		}
		if (write(ids[1], &grandchild, sizeof(grandchild)) !=
		    sizeof(grandchild))
			_exit(100);
		_exit(0);
	}
	close(go[0]);
	CHECK_EQ(read(ids[0], &c, sizeof(c)), sizeof(c));
	CHECK_CHILD(b, "exited 0");
	/* B is gone: C has been re-parented already. */
	close(go[1]);
	CHECK_EQ(read(ids[0], &ppid, sizeof(ppid)), sizeof(ppid));
	CHECK_EQ(ppid, expect_parent);
	CHECK_EQ(sys_wait4(-1, &status, 0, NULL), c);
	CHECK_STR(check_status_str(status), "exited 8");
	close(ids[0]);
	close(ids[1]);
}

static void test_orphans(void)
{
	int v = -1;
	pid_t a;

	/* This process as the subreaper (in the container it is pid 1, the
	 * init of its pid namespace, which adopts orphans anyway). */
	CHECK_EQ(prctl(PR_GET_CHILD_SUBREAPER, &v), 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	CHECK_EQ(prctl(PR_GET_CHILD_SUBREAPER, &v), 0);
	CHECK_EQ(v, 1);
	orphan_test(getpid());

	/* A nearer subreaper wins: a child A that is one. */
	a = check_fork();
	if (a == 0) {
		CHECK_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
		orphan_test(getpid());
		check_child_exit();
	}
	CHECK_CHILD(a, "exited 0");
	CHECK_EQ(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
}

static void test_rusage(void)
{
	struct rusage ru;
	int status = -1;
	pid_t pid;

	pid = check_fork();
	if (pid == 0) {
		/* Touch fresh memory, so that there are page faults. */
		static char page[16 * 4096];

		memset(page, 1, sizeof(page));
		_exit(0);
	}
	memset(&ru, 0xff, sizeof(ru));
	CHECK_EQ(sys_wait4(pid, &status, 0, &ru), pid);
	CHECK_STR(check_status_str(status), "exited 0");
	CHECK(ru.ru_utime.tv_sec >= 0 && ru.ru_utime.tv_usec >= 0 &&
	      ru.ru_utime.tv_usec < 1000000);
	CHECK(ru.ru_stime.tv_sec >= 0 && ru.ru_stime.tv_usec >= 0 &&
	      ru.ru_stime.tv_usec < 1000000);
	CHECK(ru.ru_maxrss > 0);
	CHECK(ru.ru_minflt >= 16);
	CHECK(ru.ru_majflt >= 0 && ru.ru_majflt < 1000000);
}

static void test_sessions(void)
{
	int release, ready[2];
	pid_t pid, mine = getpgrp();
	char c;

	/* A child (in our group, so no leader) makes its own session. */
	pid = check_fork();
	if (pid == 0) {
		pid_t me = getpid();

		CHECK_EQ(syscall(SYS_setsid), me);
		CHECK_EQ(syscall(SYS_getsid, 0), me);
		CHECK_EQ(syscall(SYS_getpgid, 0), me);
		/* Now a group leader: not again. */
		CHECK_ERR(syscall(SYS_setsid), EPERM);
		/* A session leader keeps its group. */
		CHECK_ERR(syscall(SYS_setpgid, 0, 0), EPERM);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");

	/* The parent moves a child to a new group and back. */
	pid = parked_child(&release, 0);
	CHECK_EQ(syscall(SYS_getpgid, pid), mine);
	CHECK_EQ(syscall(SYS_setpgid, pid, 0), 0);
	CHECK_EQ(syscall(SYS_getpgid, pid), pid);
	CHECK_EQ(syscall(SYS_setpgid, pid, mine), 0);
	CHECK_EQ(syscall(SYS_getpgid, pid), mine);
	CHECK_EQ(syscall(SYS_getsid, pid), syscall(SYS_getsid, 0));
	CHECK_ERR(syscall(SYS_setpgid, pid, -1), EINVAL);
	CHECK_ERR(syscall(SYS_setpgid, NO_PID, 0), ESRCH);
	/* A group that does not exist in this session. */
	CHECK_ERR(syscall(SYS_setpgid, pid, NO_PID), EPERM);
	close(release);
	CHECK_CHILD(pid, "exited 0");

	/* A child in another session is out of reach. */
	CHECK_OK(pipe2(ready, O_CLOEXEC));
	pid = check_fork();
	if (pid == 0) {
		int r = syscall(SYS_setsid) == getpid() ? 0 : 1;

		close(ready[1]);
		if (read(ready[0], &c, 1) != 0)
			_exit(100);
		_exit(r);
	}
	/* Until it has called setsid (for at most a second). */
	for (int i = 0; i < 1000 && syscall(SYS_getsid, pid) != pid; i++)
		check_sleep_ms(1);
	CHECK_ERR(syscall(SYS_setpgid, pid, pid), EPERM);
	CHECK_ERR(syscall(SYS_setpgid, pid, mine), EPERM);
	close(ready[1]);
	close(ready[0]);
	CHECK_CHILD(pid, "exited 0");
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	test_wait4();
	test_create();
	test_exit_status();
	test_signal_death();
	test_stop_continue();
	test_waitid();
	test_clone_child();
	test_vfork();
	test_orphans();
	test_rusage();
	test_sessions();
	return check_finish();
}
