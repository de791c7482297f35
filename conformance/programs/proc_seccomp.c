/*
 * proc_seccomp: programs that sandbox themselves with seccomp, as
 * Chromium, systemd units and bubblewrap do.
 *
 * Checks: SECCOMP_GET_ACTION_AVAIL knows the eight actions and refuses
 * another (EOPNOTSUPP); SECCOMP_GET_NOTIF_SIZES; a filter without
 * no_new_privs or CAP_SYS_ADMIN is EACCES (where the process starts
 * without no_new_privs); a bad program (empty, not
 * ending in a return, an unknown flag) is EINVAL, an unreadable one EFAULT;
 * an ERRNO filter fails just the call it names, with its errno, and
 * PR_GET_SECCOMP and /proc/self/status then say filter mode and count the
 * filters; of two filters that both answer, the stricter action wins, and
 * of two equal actions the newer filter's; a condition on an argument; a
 * TRAP delivers SIGSYS with si_code SYS_SECCOMP, the call's number, the
 * architecture and the filter's data as si_errno, and the call returns
 * what the handler leaves in rax; KILL_PROCESS and KILL_THREAD end a child
 * by SIGSYS; filters pass to children through fork and survive exec's
 * replacement of the process image (checked through the child's status);
 * TSYNC puts a thread's filter on its siblings; strict mode allows read,
 * write, exit and rt_sigreturn and kills the thread with SIGKILL for
 * anything else.
 */
// covers: seccomp prctl
#include "check.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <ucontext.h>

static long sys_seccomp(unsigned op, unsigned flags, void *args)
{
	return syscall(SYS_seccomp, op, flags, args);
}

#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))

/* deny_call installs a filter that answers call nr with ret, every other
 * call ALLOW, with flags; it returns what seccomp returns. */
static long deny_call(int nr, unsigned ret, unsigned flags)
{
	struct sock_filter f[] = {
		LOAD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
		RET(ret),
		RET(SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	return sys_seccomp(SECCOMP_SET_MODE_FILTER, flags, &prog);
}

static void check_queries(void)
{
	unsigned known[] = { SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_KILL_THREAD,
			     SECCOMP_RET_TRAP, SECCOMP_RET_ERRNO,
			     SECCOMP_RET_USER_NOTIF, SECCOMP_RET_TRACE,
			     SECCOMP_RET_LOG, SECCOMP_RET_ALLOW };
	struct seccomp_notif_sizes sizes;
	unsigned a;
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		CHECK_EQ(sys_seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &known[i]), 0);
	a = 0x7ff80000;
	CHECK_ERR(sys_seccomp(SECCOMP_GET_ACTION_AVAIL, 0, &a), EOPNOTSUPP);
	CHECK_ERR(sys_seccomp(SECCOMP_GET_ACTION_AVAIL, 1, &known[0]), EINVAL);
	CHECK_OK(sys_seccomp(SECCOMP_GET_NOTIF_SIZES, 0, &sizes));
	CHECK_EQ(sizes.seccomp_data, sizeof(struct seccomp_data));
	CHECK_EQ(sizes.seccomp_notif, sizeof(struct seccomp_notif));
	CHECK_EQ(sizes.seccomp_notif_resp, sizeof(struct seccomp_notif_resp));
	CHECK_ERR(sys_seccomp(99, 0, NULL), EINVAL);
}

static void check_refusals(void)
{
	struct sock_filter no_ret[] = { LOAD_NR };
	struct sock_fprog bad = { 1, no_ret }, empty = { 0, no_ret };
	struct sock_fprog unreadable = { 1, (struct sock_filter *)8 };
	pid_t pid = check_fork();

	if (pid == 0) {
		/* Without CAP_SYS_ADMIN (dropped here if held) and
		 * without no_new_privs: EACCES. */
		struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
		struct __user_cap_data_struct data[2];

		memset(data, 0, sizeof(data));
		CHECK_OK(syscall(SYS_capset, &hdr, data));
		/* A container may start with no_new_privs set. */
		if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0)
			CHECK_ERR(deny_call(SYS_getppid, SECCOMP_RET_ERRNO | EPERM, 0), EACCES);
		CHECK_EQ(prctl(PR_GET_SECCOMP), 0);
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK_ERR(sys_seccomp(SECCOMP_SET_MODE_FILTER, 0, &empty), EINVAL);
	CHECK_ERR(sys_seccomp(SECCOMP_SET_MODE_FILTER, 0, &bad), EINVAL);
	CHECK_ERR(sys_seccomp(SECCOMP_SET_MODE_FILTER, 0, &unreadable), EFAULT);
	CHECK_ERR(sys_seccomp(SECCOMP_SET_MODE_FILTER, 0, (void *)8), EFAULT);
	CHECK_ERR(deny_call(SYS_getppid, SECCOMP_RET_ALLOW, 1u << 30), EINVAL);
	CHECK_ERR(sys_seccomp(SECCOMP_SET_MODE_STRICT, 1, NULL), EINVAL);
	CHECK_EQ(prctl(PR_GET_SECCOMP), 0);
}

static volatile int trap_signo, trap_code, trap_nr, trap_errno;
static volatile unsigned trap_arch;

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	ucontext_t *u = uc;

	trap_signo = sig;
	trap_code = si->si_code;
	trap_nr = si->si_syscall;
	trap_arch = si->si_arch;
	trap_errno = si->si_errno;
	u->uc_mcontext.gregs[REG_RAX] = 4242; /* the call's result */
}

/* check_filters runs in a child: its filters stay there. */
static void check_filters(void)
{
	struct sigaction sa;
	char buf[8];
	pid_t pid;

	CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	CHECK_EQ(deny_call(SYS_getppid, SECCOMP_RET_ERRNO | EXDEV, 0), 0);
	CHECK_ERR(syscall(SYS_getppid), EXDEV);
	CHECK(syscall(SYS_getpid) > 0);
	CHECK_EQ(prctl(PR_GET_SECCOMP), SECCOMP_MODE_FILTER);
	CHECK_STR(proc_status("Seccomp"), "2");
	CHECK_STR(proc_status("Seccomp_filters"), "1");
	CHECK_ERR(sys_seccomp(SECCOMP_SET_MODE_STRICT, 0, NULL), EINVAL);

	/* The newer filter's ERRNO wins a tie; TRAP beats ERRNO. */
	CHECK_EQ(deny_call(SYS_getppid, SECCOMP_RET_ERRNO | ENOTTY, 0), 0);
	CHECK_ERR(syscall(SYS_getppid), ENOTTY);
	CHECK_STR(proc_status("Seccomp_filters"), "2");

	/* A condition on an argument: dup(7) fails, dup(0) does not. */
	{
		struct sock_filter f[] = {
			LOAD_NR,
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_dup, 0, 3),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 7, 0, 1),
			RET(SECCOMP_RET_ERRNO | EMLINK),
			RET(SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
		long fd;

		CHECK_OK(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0));
		CHECK_ERR(syscall(SYS_dup, 7), EMLINK);
		fd = CHECK_OK(syscall(SYS_dup, 0));
		if (fd >= 0)
			close(fd);
	}

	/* TRAP: SIGSYS with the call's facts, the handler's rax returned. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	CHECK_OK(sigaction(SIGSYS, &sa, NULL));
	CHECK_EQ(deny_call(SYS_getpgrp, SECCOMP_RET_TRAP | 77, 0), 0);
	CHECK_EQ(syscall(SYS_getpgrp), 4242);
	CHECK_EQ(trap_signo, SIGSYS);
	CHECK_EQ(trap_code, 1); /* SYS_SECCOMP */
	CHECK_EQ(trap_nr, SYS_getpgrp);
	CHECK_EQ(trap_arch, AUDIT_ARCH_X86_64);
	CHECK_EQ(trap_errno, 77);

	/* KILL_PROCESS and KILL_THREAD in children, which inherit all. */
	CHECK_EQ(deny_call(SYS_getsid, SECCOMP_RET_KILL_PROCESS, 0), 0);
	CHECK_EQ(deny_call(SYS_getpriority, SECCOMP_RET_KILL_THREAD, 0), 0);
	pid = check_fork();
	if (pid == 0) {
		CHECK_ERR(syscall(SYS_getppid), ENOTTY);
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* no core file */
		syscall(SYS_getsid, 0);
		_exit(99);
	}
	CHECK_CHILD(pid, "killed by SIGSYS");
	pid = check_fork();
	if (pid == 0) {
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
		syscall(SYS_getpriority, 0, 0);
		_exit(99);
	}
	CHECK_CHILD(pid, "killed by SIGSYS");
	CHECK_EQ(read(-1, buf, 1), -1);
}

static volatile int sibling_done;
static int sibling_errno;

static void *sibling(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&sibling_done, __ATOMIC_ACQUIRE))
		sched_yield();
	errno = 0;
	if (syscall(SYS_getppid) == -1)
		sibling_errno = errno;
	return NULL;
}

/* check_tsync runs in a child: a filter with TSYNC reaches a sibling
 * thread that had none. */
static void check_tsync(void)
{
	pthread_t th;

	CHECK_OK(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
	if (pthread_create(&th, NULL, sibling, NULL) != 0) {
		CHECK(!"pthread_create");
		return;
	}
	CHECK_EQ(deny_call(SYS_getppid, SECCOMP_RET_ERRNO | EROFS, SECCOMP_FILTER_FLAG_TSYNC), 0);
	__atomic_store_n(&sibling_done, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	CHECK_EQ(sibling_errno, EROFS);
}

/* check_strict: write works, getpid kills with SIGKILL. */
static void check_strict(void)
{
	pid_t pid = check_fork();

	if (pid == 0) {
		static const char msg[] = "";
		long r;

		if (sys_seccomp(SECCOMP_SET_MODE_STRICT, 0, NULL) != 0)
			_exit(3);
		r = syscall(SYS_write, 1, msg, 0);
		if (r != 0)
			syscall(SYS_exit, 4);
		syscall(SYS_getpid);
		syscall(SYS_exit, 5);
	}
	CHECK_CHILD(pid, "killed by SIGKILL");
}

int main(int argc, char **argv)
{
	pid_t pid;

	check_init(argc, argv);
	check_queries();
	check_strict();
	pid = check_fork();
	if (pid == 0) {
		check_refusals();
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	pid = check_fork();
	if (pid == 0) {
		check_filters();
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	pid = check_fork();
	if (pid == 0) {
		check_tsync();
		check_child_exit();
	}
	CHECK_CHILD(pid, "exited 0");
	CHECK_EQ(prctl(PR_GET_SECCOMP), 0);
	return check_finish();
}
