/*
 * ptrace_stops: a tracer's view of its tracee's stops, as strace and gdb
 * rely on it.
 *
 * Checks: PTRACE_TRACEME (EPERM the second time) and the SIGSTOP a tracee
 * raises as a signal-delivery-stop (wait status 0x137f, GETSIGINFO's
 * SI_TKILL from the tracee); system-call-stops with PTRACE_O_TRACESYSGOOD
 * (status SIGTRAP|0x80, orig_rax the call and rax -ENOSYS at entry, the
 * result at exit, the event message and PTRACE_GET_SYSCALL_INFO telling
 * entry from exit), a call skipped by orig_rax -1 with the tracer's rax, a
 * signal the tracer injects at a system-call-exit-stop (sent from the
 * kernel, SI_KERNEL); signal-delivery-stops whose signal the tracer
 * suppresses or replaces; EIO for a bad request or signal, ESRCH for a
 * tracee that runs; PTRACE_SEIZE's EIO for an address or unknown options,
 * EPERM for one already traced, no stop of its own, PTRACE_INTERRUPT's
 * PTRACE_EVENT_STOP (0x80057f, si_code 0x8005) with an interrupted pause's
 * -ERESTARTNOHAND, PTRACE_LISTEN leaving it unreported, the restarted call
 * after; PTRACE_ATTACH's SIGSTOP (SI_KERNEL, no sender) to a running task
 * and its group-stop (GETSIGINFO EINVAL) for a stopped one; strace's start
 * (seize and interrupt a stopped child, SIGCONT: a group-stop with
 * SIGSTOP, LISTEN, a PTRACE_EVENT_STOP with SIGTRAP, the SIGCONT from the
 * tracer delivered); fork, vfork, vfork-done, clone, exec and exit events
 * with their messages (the new task's id, the old thread id, the wait
 * status), the new child's first stop (SIGSTOP from no one, or a seized
 * tracee's PTRACE_EVENT_STOP), exec's SIGTRAP without PTRACE_O_TRACEEXEC,
 * the exit-stop of execve with rax 0; PTRACE_KILL; PTRACE_O_EXITKILL; a
 * pending signal-delivery-stop's signal delivered when the tracer dies
 * having not waited for it; a traced child's end seen by its parent only
 * once the tracer (its grandparent) has reaped it; /proc/PID/status's
 * "t (tracing stop)" and TracerPid. Every tracer is an ancestor of its
 * tracee, which any YAMA ptrace_scope up to 1 (moat's) allows.
 */
// covers: ptrace wait4 waitid
#include "check.h"

#include <sys/ptrace.h> /* before linux/ptrace.h, whose names it defines as enums */
#include <linux/audit.h>
#include <linux/ptrace.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/user.h>

static long pt(long req, pid_t pid, unsigned long addr, unsigned long data)
{
	return syscall(SYS_ptrace, req, pid, addr, data);
}

/* wstatus waits for pid with __WALL and returns the raw status. */
static int wstatus(pid_t pid)
{
	int st = 0;

	while (waitpid(pid, &st, __WALL) == -1 && errno == EINTR)
		;
	return st;
}

#define CHECK_STOP(pid, want) CHECK_EQ(wstatus(pid), (want) << 8 | 0x7f)

/* sig_info is GETSIGINFO's signal, code and sender; -errno on failure. */
static int sig_info(pid_t pid, int *code, int *sender)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (pt(PTRACE_GETSIGINFO, pid, 0, (unsigned long)&si) != 0)
		return -errno;
	*code = si.si_code;
	*sender = si.si_pid;
	return si.si_signo;
}

static unsigned long event_msg(pid_t pid)
{
	unsigned long msg = 0xdead;

	CHECK_OK(pt(PTRACE_GETEVENTMSG, pid, 0, (unsigned long)&msg));
	return msg;
}

static struct user_regs_struct regs(pid_t pid)
{
	struct user_regs_struct r;

	memset(&r, 0, sizeof(r));
	CHECK_OK(pt(PTRACE_GETREGS, pid, 0, (unsigned long)&r));
	return r;
}

/* traced_child forks a child that asks to be traced and stops itself;
 * it returns in the parent once the child is in that stop, and in the
 * child (returning 0) once its tracer resumes it. */
static pid_t traced_child(void)
{
	pid_t pid = check_fork();

	if (pid == 0) {
		CHECK_OK(pt(PTRACE_TRACEME, 0, 0, 0));
		CHECK_ERR(pt(PTRACE_TRACEME, 0, 0, 0), EPERM);
		raise(SIGSTOP);
		return 0;
	}
	CHECK_STOP(pid, SIGSTOP);
	return pid;
}

#define SYSGOOD (SIGTRAP | 0x80)

static void syscall_stops(void)
{
	int code, sender;
	pid_t pid = traced_child();

	if (pid == 0) {
		CHECK_EQ(getppid(), getppid()); /* two getppid calls, traced */
		CHECK_EQ(syscall(SYS_getppid), 4242); /* the tracer answers */
		syscall(SYS_kill, 0, 0);
		check_child_exit();
	}
	CHECK_EQ(sig_info(pid, &code, &sender), SIGSTOP);
	CHECK_EQ(code, SI_TKILL);
	CHECK_EQ(sender, pid);
	CHECK_OK(pt(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD));
	/* raise() restores its signal mask first: skip to getppid. */
	for (int i = 0; i < 10; i++) {
		CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
		CHECK_STOP(pid, SYSGOOD);
		if (regs(pid).orig_rax == SYS_getppid)
			break;
		CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
		CHECK_STOP(pid, SYSGOOD);
	}
	struct user_regs_struct r = regs(pid);
	CHECK_EQ(r.orig_rax, SYS_getppid);
	CHECK_EQ((long)r.rax, -ENOSYS);
	CHECK_EQ(sig_info(pid, &code, &sender), SIGTRAP);
	CHECK_EQ(code, SYSGOOD);
	CHECK_EQ(sender, pid);
	CHECK_EQ(event_msg(pid), PTRACE_EVENTMSG_SYSCALL_ENTRY);
	struct ptrace_syscall_info info;
	memset(&info, 0xaa, sizeof(info));
	CHECK_EQ(pt(PTRACE_GET_SYSCALL_INFO, pid, sizeof(info), (unsigned long)&info), 80);
	CHECK_EQ(info.op, PTRACE_SYSCALL_INFO_ENTRY);
	CHECK_EQ(info.arch, AUDIT_ARCH_X86_64);
	CHECK_EQ(info.entry.nr, SYS_getppid);
	CHECK_EQ(info.instruction_pointer, r.rip);
	CHECK_EQ(info.stack_pointer, r.rsp);
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_STOP(pid, SYSGOOD);
	CHECK_EQ(regs(pid).rax, getpid());
	CHECK_EQ(event_msg(pid), PTRACE_EVENTMSG_SYSCALL_EXIT);
	memset(&info, 0xaa, sizeof(info));
	CHECK_EQ(pt(PTRACE_GET_SYSCALL_INFO, pid, sizeof(info), (unsigned long)&info), 33);
	CHECK_EQ(info.op, PTRACE_SYSCALL_INFO_EXIT);
	CHECK_EQ(info.exit.rval, getpid());
	CHECK_EQ(info.exit.is_error, 0);

	/* The second getppid goes on untouched; the third is skipped. */
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_STOP(pid, SYSGOOD);
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_STOP(pid, SYSGOOD);
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_STOP(pid, SYSGOOD);
	r = regs(pid);
	CHECK_EQ(r.orig_rax, SYS_getppid);
	r.orig_rax = -1;
	r.rax = 4242;
	CHECK_OK(pt(PTRACE_SETREGS, pid, 0, (unsigned long)&r));
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_STOP(pid, SYSGOOD);
	r = regs(pid);
	CHECK_EQ((long)r.orig_rax, -1);
	CHECK_EQ(r.rax, 4242);

	/* kill(0, 0): at its exit, the tracer injects SIGUSR2. */
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_STOP(pid, SYSGOOD);
	CHECK_EQ(regs(pid).orig_rax, SYS_kill);
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_STOP(pid, SYSGOOD);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, SIGUSR2));
	CHECK_STOP(pid, SIGUSR2);
	CHECK_EQ(sig_info(pid, &code, &sender), SIGUSR2);
	CHECK_EQ(code, SI_KERNEL);
	CHECK_EQ(sender, 0);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_CHILD(pid, "exited 0");
}

static void signal_stops(void)
{
	int code, sender;
	pid_t pid = traced_child();

	if (pid == 0) {
		kill(getpid(), SIGUSR1); /* suppressed */
		kill(getpid(), SIGUSR1); /* becomes SIGTERM */
		_exit(0);
	}
	CHECK_ERR(pt(0x7777, pid, 0, 0), EIO);
	CHECK_ERR(pt(PTRACE_CONT, pid, 0, 99), EIO);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(pid, SIGUSR1);
	CHECK_EQ(sig_info(pid, &code, &sender), SIGUSR1);
	CHECK_EQ(code, SI_USER);
	CHECK_EQ(sender, pid);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(pid, SIGUSR1);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, SIGTERM));
	CHECK_CHILD(pid, "killed by SIGTERM");

	/* A request on a tracee that runs fails. */
	int fds[2];
	CHECK_OK(pipe(fds));
	pid = traced_child();
	if (pid == 0) {
		char c;
		read(fds[0], &c, 1);
		_exit(0);
	}
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	struct user_regs_struct r;
	CHECK_ERR(pt(PTRACE_GETREGS, pid, 0, (unsigned long)&r), ESRCH);
	CHECK_ERR(pt(PTRACE_CONT, pid, 0, 0), ESRCH);
	CHECK_ERR(pt(PTRACE_INTERRUPT, pid, 0, 0), EIO); /* not seized */
	CHECK_ERR(pt(PTRACE_GETREGS, getppid(), 0, (unsigned long)&r), ESRCH);
	CHECK_OK(write(fds[1], "x", 1));
	CHECK_CHILD(pid, "exited 0");
	close(fds[0]);
	close(fds[1]);
}

static void seize_interrupt_listen(void)
{
	int code, sender;
	pid_t pid = check_fork();

	if (pid == 0) {
		pause();
		_exit(3);
	}
	check_sleep_ms(20);
	CHECK_ERR(pt(PTRACE_SEIZE, pid, 1, 0), EIO);
	CHECK_ERR(pt(PTRACE_SEIZE, pid, 0, 0x80000000), EIO);
	CHECK_OK(pt(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD));
	CHECK_ERR(pt(PTRACE_SEIZE, pid, 0, 0), EPERM);
	CHECK_ERR(pt(PTRACE_ATTACH, pid, 0, 0), EPERM);
	int st;
	CHECK_EQ(waitpid(pid, &st, WNOHANG | __WALL), 0);
	CHECK_OK(pt(PTRACE_INTERRUPT, pid, 0, 0));
	CHECK_STOP(pid, SIGTRAP | PTRACE_EVENT_STOP << 8);
	CHECK_EQ(sig_info(pid, &code, &sender), SIGTRAP);
	CHECK_EQ(code, SIGTRAP | PTRACE_EVENT_STOP << 8);
	CHECK_EQ(sender, pid);
	struct user_regs_struct r = regs(pid);
	CHECK_EQ(r.orig_rax, SYS_pause);
	CHECK_EQ((long)r.rax, -514); /* ERESTARTNOHAND, restarted after */
	CHECK_OK(pt(PTRACE_LISTEN, pid, 0, 0));
	CHECK_EQ(waitpid(pid, &st, WNOHANG | __WALL), 0);
	CHECK_OK(pt(PTRACE_INTERRUPT, pid, 0, 0));
	CHECK_STOP(pid, SIGTRAP | PTRACE_EVENT_STOP << 8);
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_STOP(pid, SYSGOOD); /* pause again, from its entry */
	r = regs(pid);
	CHECK_EQ(r.orig_rax, SYS_pause);
	CHECK_EQ((long)r.rax, -ENOSYS);
	CHECK_ERR(pt(PTRACE_LISTEN, pid, 0, 0), EIO); /* not an event stop */
	CHECK_OK(pt(PTRACE_KILL, pid, 0, 0));
	CHECK_CHILD(pid, "killed by SIGKILL");
}

static void attach(void)
{
	int code, sender;
	pid_t pid = check_fork();

	if (pid == 0) {
		for (;;)
			pause();
	}
	check_sleep_ms(20);
	CHECK_ERR(pt(PTRACE_ATTACH, getpid(), 0, 0), EPERM);
	CHECK_OK(pt(PTRACE_ATTACH, pid, 0, 0));
	CHECK_STOP(pid, SIGSTOP);
	CHECK_EQ(sig_info(pid, &code, &sender), SIGSTOP);
	CHECK_EQ(code, SI_KERNEL);
	CHECK_EQ(sender, 0);
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	int fd = CHECK_OK(open(path, O_RDONLY));
	long n = CHECK_OK(read(fd, buf, sizeof(buf) - 1));
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	CHECK(strstr(buf, "State:\tt (tracing stop)\n") != NULL);
	char tracer[32];
	snprintf(tracer, sizeof(tracer), "TracerPid:\t%d\n", getpid());
	CHECK(strstr(buf, tracer) != NULL);
	CHECK_OK(pt(PTRACE_DETACH, pid, 0, 0));

	/* Attaching to a stopped task: its group-stop, then the SIGSTOP. */
	kill(pid, SIGSTOP);
	int st;
	CHECK_EQ(waitpid(pid, &st, WUNTRACED), pid);
	CHECK_EQ(st, SIGSTOP << 8 | 0x7f);
	CHECK_OK(pt(PTRACE_ATTACH, pid, 0, 0));
	CHECK_STOP(pid, SIGSTOP);
	CHECK_EQ(sig_info(pid, &code, &sender), -EINVAL);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(pid, SIGSTOP);
	CHECK_EQ(sig_info(pid, &code, &sender), SIGSTOP);
	CHECK_EQ(code, SI_KERNEL);
	kill(pid, SIGKILL);
	CHECK_CHILD(pid, "killed by SIGKILL");
}

/* strace's start: the child stops itself, the tracer seizes and
 * interrupts it, then continues it with SIGCONT. */
static void strace_start(void)
{
	int code, sender;
	pid_t pid = check_fork();

	if (pid == 0) {
		kill(getpid(), SIGSTOP);
		_exit(5);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, WSTOPPED), pid);
	CHECK_EQ(st, SIGSTOP << 8 | 0x7f);
	CHECK_OK(pt(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXIT));
	CHECK_OK(pt(PTRACE_INTERRUPT, pid, 0, 0));
	CHECK_OK(kill(pid, SIGCONT));
	CHECK_STOP(pid, SIGSTOP | PTRACE_EVENT_STOP << 8);
	CHECK_EQ(sig_info(pid, &code, &sender), SIGSTOP);
	CHECK_EQ(code, SIGSTOP | PTRACE_EVENT_STOP << 8);
	CHECK_OK(pt(PTRACE_LISTEN, pid, 0, 0));
	CHECK_STOP(pid, SIGTRAP | PTRACE_EVENT_STOP << 8);
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_STOP(pid, SIGCONT);
	CHECK_EQ(sig_info(pid, &code, &sender), SIGCONT);
	CHECK_EQ(code, SI_USER);
	CHECK_EQ(sender, getpid());
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, SIGCONT));
	CHECK_STOP(pid, SYSGOOD); /* exit_group's entry */
	CHECK_EQ(regs(pid).orig_rax, SYS_exit_group);
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_STOP(pid, SIGTRAP | PTRACE_EVENT_EXIT << 8);
	CHECK_EQ(event_msg(pid), 5 << 8);
	CHECK_EQ(sig_info(pid, &code, &sender), SIGTRAP);
	CHECK_EQ(code, SIGTRAP | PTRACE_EVENT_EXIT << 8);
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_CHILD(pid, "exited 5");
}

static void *spin_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void fork_clone_exit_events(void)
{
	int code, sender;

	/* fork, traced child first stopped by a SIGSTOP from no one. */
	pid_t pid = traced_child();
	if (pid == 0) {
		pid_t c = fork();
		if (c == 0)
			_exit(7);
		int st;
		waitpid(c, &st, 0);
		_exit(WEXITSTATUS(st) + 1);
	}
	CHECK_OK(pt(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEFORK));
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(pid, SIGTRAP | PTRACE_EVENT_FORK << 8);
	CHECK_EQ(sig_info(pid, &code, &sender), SIGTRAP);
	CHECK_EQ(code, SIGTRAP | PTRACE_EVENT_FORK << 8);
	pid_t grandchild = event_msg(pid);
	CHECK_STOP(grandchild, SIGSTOP);
	CHECK_EQ(sig_info(grandchild, &code, &sender), SIGSTOP);
	CHECK_EQ(code, SI_USER);
	CHECK_EQ(sender, 0);
	CHECK_OK(pt(PTRACE_CONT, grandchild, 0, 0));
	CHECK_EQ(wstatus(grandchild), 7 << 8);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(pid, SIGCHLD);
	CHECK_EQ(sig_info(pid, &code, &sender), SIGCHLD);
	CHECK_EQ(code, CLD_EXITED);
	CHECK_EQ(sender, grandchild);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, SIGCHLD));
	CHECK_CHILD(pid, "exited 8");

	/* vfork: the event, the child, then vfork-done in the parent. */
	pid = traced_child();
	if (pid == 0) {
		pid_t c = vfork();
		if (c == 0)
			_exit(2);
		int st;
		waitpid(c, &st, 0);
		_exit(WEXITSTATUS(st));
	}
	CHECK_OK(pt(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEVFORK | PTRACE_O_TRACEVFORKDONE));
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(pid, SIGTRAP | PTRACE_EVENT_VFORK << 8);
	grandchild = event_msg(pid);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(grandchild, SIGSTOP);
	CHECK_OK(pt(PTRACE_CONT, grandchild, 0, 0));
	CHECK_EQ(wstatus(grandchild), 2 << 8);
	CHECK_STOP(pid, SIGTRAP | PTRACE_EVENT_VFORK_DONE << 8);
	CHECK_EQ(event_msg(pid), grandchild);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(pid, SIGCHLD);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_CHILD(pid, "exited 2");

	/* A thread: the clone event, and exit events with the status. */
	pid = traced_child();
	if (pid == 0) {
		pthread_t t;
		pthread_create(&t, NULL, spin_thread, NULL);
		check_sleep_ms(50);
		syscall(SYS_exit_group, 3);
	}
	CHECK_OK(pt(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXIT));
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(pid, SIGTRAP | PTRACE_EVENT_CLONE << 8);
	pid_t thread = event_msg(pid);
	CHECK(thread != pid);
	CHECK_STOP(thread, SIGSTOP);
	CHECK_OK(pt(PTRACE_CONT, thread, 0, 0));
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(pid, SIGTRAP | PTRACE_EVENT_EXIT << 8);
	CHECK_EQ(event_msg(pid), 3 << 8);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	/* The thread ends too; its own exit event depends on the kernel. */
	for (int seen = 0; seen < 2;) {
		int st = 0;
		pid_t got = waitpid(-1, &st, __WALL);
		if (got == -1)
			break;
		if (WIFSTOPPED(st)) {
			CHECK_EQ(got, thread);
			CHECK_EQ(st >> 8, SIGTRAP | PTRACE_EVENT_EXIT << 8);
			pt(PTRACE_CONT, got, 0, 0);
			continue;
		}
		CHECK(got == pid || got == thread);
		CHECK_EQ(st, 3 << 8);
		seen++;
	}

	/* A seized tracee's new child stops with PTRACE_EVENT_STOP first. */
	pid = check_fork();
	if (pid == 0) {
		kill(getpid(), SIGSTOP);
		pid_t c = fork();
		if (c == 0)
			_exit(0);
		int st;
		waitpid(c, &st, 0);
		_exit(0);
	}
	int st;
	CHECK_EQ(waitpid(pid, &st, WSTOPPED), pid);
	CHECK_OK(pt(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACEFORK | PTRACE_O_EXITKILL));
	CHECK_OK(kill(pid, SIGCONT));
	CHECK_STOP(pid, SIGSTOP | PTRACE_EVENT_STOP << 8); /* the seize's trap */
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(pid, SIGTRAP | PTRACE_EVENT_STOP << 8); /* SIGCONT's notification */
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(pid, SIGCONT);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, SIGCONT));
	CHECK_STOP(pid, SIGTRAP | PTRACE_EVENT_FORK << 8);
	grandchild = event_msg(pid);
	CHECK_STOP(grandchild, SIGTRAP | PTRACE_EVENT_STOP << 8);
	CHECK_EQ(sig_info(grandchild, &code, &sender), SIGTRAP);
	CHECK_EQ(code, SIGTRAP | PTRACE_EVENT_STOP << 8);
	CHECK_EQ(sender, grandchild);
	kill(pid, SIGKILL);
	kill(grandchild, SIGKILL);
	CHECK_EQ(wstatus(grandchild), SIGKILL);
	CHECK_CHILD(pid, "killed by SIGKILL");
}

static const char *self; /* this program, as the runner started it */

static void exec_events(void)
{
	int code, sender;
	static char *envp[] = { NULL };

	/* Without PTRACE_O_TRACEEXEC: a SIGTRAP from the tracee itself. */
	pid_t pid = traced_child();
	if (pid == 0) {
		static char *args[] = { "ptrace_stops", "--exit", "6", NULL };
		execve(self, args, envp);
		_exit(99);
	}
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_STOP(pid, SIGTRAP);
	CHECK_EQ(sig_info(pid, &code, &sender), SIGTRAP);
	CHECK_EQ(code, SI_USER);
	CHECK_EQ(sender, pid);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_CHILD(pid, "exited 6");

	/* With it: the event (the old thread id), then execve's exit-stop. */
	pid = traced_child();
	if (pid == 0) {
		static char *args[] = { "ptrace_stops", "--exit", "6", NULL };
		execve(self, args, envp);
		_exit(99);
	}
	CHECK_OK(pt(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD));
	for (int i = 0; i < 10; i++) {
		CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
		CHECK_STOP(pid, SYSGOOD);
		if (regs(pid).orig_rax == SYS_execve)
			break;
		CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
		CHECK_STOP(pid, SYSGOOD);
	}
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_STOP(pid, SIGTRAP | PTRACE_EVENT_EXEC << 8);
	CHECK_EQ(event_msg(pid), pid);
	CHECK_OK(pt(PTRACE_SYSCALL, pid, 0, 0));
	CHECK_STOP(pid, SYSGOOD);
	struct user_regs_struct r = regs(pid);
	CHECK_EQ(r.orig_rax, SYS_execve);
	CHECK_EQ(r.rax, 0);
	CHECK_OK(pt(PTRACE_CONT, pid, 0, 0));
	CHECK_CHILD(pid, "exited 6");
}

/* forked_tracee forks, in a tracer, the child it will trace: the YAMA
 * scope moat has lets only an ancestor attach. */
static pid_t forked_tracee(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

static void tracer_goes(void)
{
	/* The tracees outlive their tracers, which made them: they come to
	 * this process, their subreaper. */
	CHECK_OK(prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0));
	int fds[2];
	CHECK_OK(pipe(fds));

	/* PTRACE_O_EXITKILL: the tracee dies with its tracer. */
	pid_t tracer = check_fork();
	if (tracer == 0) {
		pid_t child = forked_tracee();
		CHECK_OK(write(fds[1], &child, sizeof(child)));
		CHECK_OK(pt(PTRACE_SEIZE, child, 0, PTRACE_O_EXITKILL));
		check_child_exit();
	}
	pid_t child = 0;
	CHECK_EQ(read(fds[0], &child, sizeof(child)), sizeof(child));
	CHECK_CHILD(tracer, "exited 0");
	CHECK_CHILD(child, "killed by SIGKILL");

	/* A signal-delivery-stop the tracer never waited for: the signal is
	 * delivered once it has gone. */
	tracer = check_fork();
	if (tracer == 0) {
		pid_t child = forked_tracee();
		CHECK_OK(write(fds[1], &child, sizeof(child)));
		CHECK_OK(pt(PTRACE_SEIZE, child, 0, 0));
		kill(child, SIGUSR1);
		check_sleep_ms(50);
		check_child_exit();
	}
	CHECK_EQ(read(fds[0], &child, sizeof(child)), sizeof(child));
	CHECK_CHILD(tracer, "exited 0");
	CHECK_CHILD(child, "killed by SIGUSR1");
	close(fds[0]);
	close(fds[1]);

	/* A traced child's end: its parent sees it once the tracer (its
	 * grandparent) has reaped it. */
	int go[2], ended[2], looked[2], pidpipe[2];
	CHECK_OK(pipe(go));
	CHECK_OK(pipe(ended));
	CHECK_OK(pipe(looked));
	CHECK_OK(pipe(pidpipe));
	pid_t parent = check_fork();
	if (parent == 0) {
		char c;
		int st;
		pid_t child = fork();
		if (child == 0) {
			read(go[0], &c, 1);
			_exit(9);
		}
		CHECK_OK(write(pidpipe[1], &child, sizeof(child)));
		CHECK_EQ(read(ended[0], &c, 1), 1);
		CHECK_EQ(waitpid(child, &st, WNOHANG), 0);
		CHECK_OK(write(looked[1], "x", 1));
		CHECK_EQ(waitpid(child, &st, 0), child);
		CHECK_EQ(st, 9 << 8);
		check_child_exit();
	}
	CHECK_EQ(read(pidpipe[0], &child, sizeof(child)), sizeof(child));
	siginfo_t si;
	char c;
	CHECK_OK(pt(PTRACE_SEIZE, child, 0, 0));
	CHECK_OK(write(go[1], "x", 1));
	CHECK_OK(waitid(P_PID, child, &si, WEXITED | WNOWAIT));
	CHECK_OK(write(ended[1], "x", 1));
	CHECK_EQ(read(looked[0], &c, 1), 1);
	CHECK_EQ(wstatus(child), 9 << 8);
	CHECK_CHILD(parent, "exited 0");
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--exit") == 0)
		return atoi(argv[2]); /* what exec_events runs */
	check_init(argc, argv);
	self = argv[0];
	syscall_stops();
	signal_stops();
	seize_interrupt_listen();
	attach();
	strace_start();
	fork_clone_exit_events();
	exec_events();
	tracer_goes();
	return check_finish();
}
