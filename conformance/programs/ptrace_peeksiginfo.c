/*
 * ptrace_peeksiginfo: PTRACE_PEEKSIGINFO, a tracer's read of its stopped
 * tracee's pending signals without taking them (CRIU dumps them so).
 *
 * Checks, on a child that blocks SIGRTMIN and SIGUSR1 and is sent queued
 * SIGRTMINs to its thread and to its process, interleaved: the thread's
 * queue and, with PTRACE_PEEKSIGINFO_SHARED, the process's read back in
 * the order sent with their si_code and si_int, one at a time by offset
 * and all at once, a standard signal among them (SIGUSR1, sent twice)
 * once, at its place, and last the SIGSTOP that PTRACE_ATTACH sent
 * (SI_KERNEL); an offset past the end gives 0, nr 0 gives 0;
 * unknown flags and a negative nr are EINVAL, an unreadable argument
 * EFAULT, a buffer whose second half is read-only gets the records that
 * fit (the count), a read-only one EFAULT; the signals are still pending
 * after (the child takes them with sigtimedwait once detached, in order).
 */
// covers: ptrace rt_sigqueueinfo rt_tgsigqueueinfo
#include "check.h"

#include <sys/ptrace.h>
#include <sys/mman.h>

#ifndef PTRACE_PEEKSIGINFO
#define PTRACE_PEEKSIGINFO 0x4209
#endif
#ifndef PTRACE_PEEKSIGINFO_SHARED
#define PTRACE_PEEKSIGINFO_SHARED 1
#endif

struct peek_args {
	unsigned long long off;
	unsigned int flags;
	int nr;
};

#define N 6

static long peek(pid_t pid, unsigned long long off, unsigned flags, int nr, void *buf)
{
	struct peek_args a = {off, flags, nr};
	return syscall(SYS_ptrace, PTRACE_PEEKSIGINFO, pid, &a, buf);
}

static void queue(pid_t pid, int thread, int sig, int code, int value)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = sig;
	si.si_code = code;
	si.si_int = value;
	if (thread)
		CHECK_OK(syscall(SYS_rt_tgsigqueueinfo, pid, pid, sig, &si));
	else
		CHECK_OK(syscall(SYS_rt_sigqueueinfo, pid, sig, &si));
}

int main(int argc, char **argv)
{
	check_init(argc, argv);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN);
	sigaddset(&set, SIGUSR1);
	CHECK_OK(sigprocmask(SIG_BLOCK, &set, NULL));

	pid_t pid = check_fork();
	if (pid == 0) {
		/* Wait to be attached, stopped and let go, then take the signals. */
		raise(SIGSTOP);
		siginfo_t si;
		struct timespec zero = {0, 0};
		/* Thread queue first (lower-numbered SIGUSR1 first), each in order. */
		CHECK_EQ(sigtimedwait(&set, &si, &zero), SIGUSR1);
		for (int i = 0; i < N; i++) {
			CHECK_EQ(sigtimedwait(&set, &si, &zero), SIGRTMIN);
			CHECK_EQ(si.si_code, -1);
			CHECK_EQ(si.si_int, i);
		}
		for (int i = 0; i < N; i++) {
			CHECK_EQ(sigtimedwait(&set, &si, &zero), SIGRTMIN);
			CHECK_EQ(si.si_code, -2);
			CHECK_EQ(si.si_int, 100 + i);
		}
		CHECK_ERR(sigtimedwait(&set, &si, &zero), EAGAIN);
		check_child_exit();
	}
	int status;
	CHECK_EQ(waitpid(pid, &status, WUNTRACED), pid);
	CHECK(WIFSTOPPED(status));

	for (int i = 0; i < N; i++) {
		queue(pid, 1, SIGRTMIN, -1, i);
		queue(pid, 0, SIGRTMIN, -2, 100 + i);
		if (i == 2) {
			queue(pid, 1, SIGUSR1, -1, 50);
			queue(pid, 1, SIGUSR1, -1, 51);
		}
	}
	CHECK_OK(ptrace(PTRACE_ATTACH, pid, NULL, NULL));
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFSTOPPED(status));

	siginfo_t got[N + 2];
	/* The thread's queue: 0 1 2 USR1 3 4 5. */
	int want_sig[N + 1], want_int[N + 1];
	for (int i = 0, k = 0; i < N; i++) {
		want_sig[k] = SIGRTMIN;
		want_int[k++] = i;
		if (i == 2) {
			want_sig[k] = SIGUSR1;
			want_int[k++] = 50;
		}
	}
	/* Then the SIGSTOP of PTRACE_ATTACH, from the kernel. */
	memset(got, 0, sizeof(got));
	CHECK_EQ(peek(pid, 0, 0, N + 2, got), N + 2);
	for (int k = 0; k < N + 1; k++) {
		CHECK_EQ(got[k].si_signo, want_sig[k]);
		CHECK_EQ(got[k].si_code, -1);
		CHECK_EQ(got[k].si_int, want_int[k]);
	}
	CHECK_EQ(got[N + 1].si_signo, SIGSTOP);
	CHECK_EQ(got[N + 1].si_code, SI_KERNEL);
	for (int k = 0; k < N + 1; k++) {
		memset(got, 0, sizeof(got));
		CHECK_EQ(peek(pid, k, 0, 1, got), 1);
		CHECK_EQ(got[0].si_int, want_int[k]);
	}
	CHECK_EQ(peek(pid, N + 2, 0, 1, got), 0);
	CHECK_EQ(peek(pid, 1ULL << 40, 0, 1, got), 0);
	CHECK_EQ(peek(pid, 0, 0, 0, got), 0);

	/* The process's queue, in pieces of 4. */
	int seen = 0;
	for (;;) {
		memset(got, 0, sizeof(got));
		long n = peek(pid, seen, PTRACE_PEEKSIGINFO_SHARED, 4, got);
		CHECK(n >= 0 && n <= 4);
		if (n <= 0)
			break;
		for (int k = 0; k < n; k++) {
			CHECK_EQ(got[k].si_signo, SIGRTMIN);
			CHECK_EQ(got[k].si_code, -2);
			CHECK_EQ(got[k].si_int, 100 + seen + k);
		}
		seen += n;
	}
	CHECK_EQ(seen, N);

	CHECK_ERR(peek(pid, 0, ~0U, 1, got), EINVAL);
	CHECK_ERR(peek(pid, 0, 2, 1, got), EINVAL);
	CHECK_ERR(peek(pid, 0, 0, -1, got), EINVAL);
	CHECK_ERR(syscall(SYS_ptrace, PTRACE_PEEKSIGINFO, pid, (void *)8, got), EFAULT);

	long page = sysconf(_SC_PAGESIZE);
	char *rw = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(rw != MAP_FAILED);
	CHECK_OK(mprotect(rw + page, page, PROT_READ));
	CHECK_EQ(peek(pid, 0, 0, N, rw + page - 2 * sizeof(siginfo_t)), 2);
	CHECK_ERR(peek(pid, 0, 0, N, rw + page), EFAULT);
	munmap(rw, 2 * page);

	CHECK_OK(ptrace(PTRACE_DETACH, pid, NULL, NULL));
	kill(pid, SIGCONT);
	CHECK_CHILD(pid, "exited 0");
	return check_finish();
}
